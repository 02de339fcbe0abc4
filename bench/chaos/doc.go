// Package chaos is the chaos run of ticketd (cmd/chaos, `make chaos`): for
// each fault in turn (kill -9, a full tmpfs, an fsync EIO injected by
// strace, an idle-connection flood, a refusing SMTP relay) it runs the real
// binary under a Supervisor that restarts it whenever it exits, floods it
// with orders, and reports what was lost, oversold, how long writes took
// to return and what a read-only client saw (chaos.go; the Report in
// report.go, the floods and probes in floods.go, the SMTP relay in
// relay.go, the Supervisor in supervisor.go).
//
// # Concurrency
//
// Run drives one fault at a time from its goroutine; the floods, readers,
// probers and pollers of a phase run on their own goroutines until the
// phase's context ends, each keeping its samples behind its own mutex. A
// Supervisor watches its process on a goroutine of its own; its methods
// are safe for concurrent use.
package chaos
