// Package app is the one wiring of ticketd: Main opens the Pebble store,
// the actor system, the mail and webhook deliverers, the audit log and the
// HTTP server with every route, in that order, and closes them in reverse.
// cmd/ticketd fills a Config from flags and environment variables and runs
// a Main; the end-to-end, HTTP and browser tests and the benchmarks run the
// same Main on a temporary data dir and a loopback port (Addr
// "127.0.0.1:0": URL is the bound address once Open returned).
//
// Config holds every setting with DefaultConfig's values as defaults;
// Validate checks it and Open calls Validate. Tuning adjusts the parts'
// own knobs that no flag sets (tests shorten the webhook backoff with it).
//
// # Background work
//
// Besides serving, an open Main sweeps expired Idempotency-Key answers
// hourly and resumes refunds that a crash or a failed write left pending
// (at start, then every minute). Close stops them.
//
// # Concurrency
//
// Open, Run and Close are called by one goroutine, in that order; Open
// returns once the listener is bound and serving. System and Server are
// safe for concurrent use between Open and Close.
package app
