// Package bench is the load benchmark harness of ticketd: it
// builds and starts the real service as a child process on a fresh data
// dir, sets up data through the public APIs, drives it with a fasthttp
// client in closed-loop (as fast as it answers) and open-loop (fixed rate,
// latency from each request's intended send time, so queueing is not
// hidden) runs, records latencies in HdrHistograms, checks correctness after
// every scenario, and writes a Markdown table, a JSON file and a PNG chart
// per run to bench/results.
//
// Scenarios: ceiling (a bare fasthttp server decoding the same JSON, the
// yardstick every throughput is divided by), flash-sale (capacity above the
// buyers, and far below them), queue-drop (a waiting room: joins before
// onSaleAt, polls, admission in queue order, sold_out to every waiter),
// checkin-burst (with duplicate scans),
// integrator-mix (Developer API traffic alone and during a drop), durability
// (group-commit factor from /metrics, and the same drop with fsync off in a
// bench-only build), kill9 (kill -9 mid-drop, every acknowledged order must
// survive), recovery (an event of a million changes, with and without a
// snapshot) and scale (many events, memory per registration and per idle
// event).
//
// The chaos run (package chaos, cmd/chaos, `make chaos`) is separate.
// The parts both drive the service with (the HTTP client, the open- and
// closed-loop Load, the child servers and their roles, metrics scraping,
// CPU sampling, the Seeder) are package load.
//
// Concurrency: a Run uses one goroutine but for the Loads it starts (see
// package load); the reports are built and written by that goroutine.
// Nothing here is used by the service.
package bench
