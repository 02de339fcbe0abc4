// Package load holds what the benchmarks (package bench) and the chaos run
// (package chaos) drive the service with: the HTTP Client and its setup
// calls (events, registrations, pagination), the Load runner (closed loop:
// as fast as the server answers; open loop: a fixed rate, latency from
// each request's intended send time, so queueing is not hidden) recording
// into HdrHistograms, the child servers (StartServer: the ticketd binary,
// or this binary re-executed in a Role: the bare fasthttp ceiling server,
// the service with fsync off, the integrator's MixSpec client), /metrics
// scraping, CPU sampling from /proc, and the Seeder.
//
// Seeding large logs through HTTP is slow, so the Seeder writes them
// in-process through the service's own wiring (app.Main) and its
// application layer (package ops), on a data dir no service uses; the
// measured part is always the service process starting on it afterwards.
//
// # Concurrency
//
// A Load runs its own goroutines and returns when done; a Client is safe
// for concurrent use (its fasthttp HostClient is); a Seeder may be asked
// from many goroutines (Register does); the other types are used from one
// goroutine.
package load
