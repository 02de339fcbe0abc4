// Package webhooks delivers signed outbound webhooks to the endpoints a
// business unit configured (the console's "automations").
//
// # Flow
//
// An event actor writes a webhook event (actors.HookEvent, key prefix
// actors.HookPrefix) in the same Pebble batch as the change that causes it
// (a registration created, confirmed or cancelled, a check-in, a paid
// order), so the queue is exactly as durable as the change. The Service's
// delivery goroutine, woken by Wake (wired to actors.Config.OnOutbox) and
// by a poll ticker, does rounds of two steps:
//
//  1. Fan-out: each queue entry becomes one task per enabled endpoint of the
//     event's unit subscribed to its type; the entry is deleted in the same
//     batch. The JSON body {id, type, createdAt, data} is built here once,
//     so every attempt sends the same bytes and the same event id.
//  2. Delivery: due tasks (their keys sort by due time) are POSTed with a
//     Webhook-Signature header. A 2xx answer deletes the task; anything else
//     reschedules it with exponential, jittered backoff (Config.BackoffMin
//     doubling up to BackoffMax, drawn from [d/2, d)) until
//     Config.MaxAttempts, after which it is dropped. Config.DisableAfter
//     consecutive failed attempts of an endpoint disable it; the tasks of a
//     disabled or deleted endpoint are dropped when they come due.
//
// Every attempt is appended to the endpoint's delivery log (status code,
// attempt, latency, error) in the same batch that deletes or reschedules
// its task; the log keeps the newest Config.LogMax entries per endpoint and
// goes with the endpoint when it is deleted.
//
// # Signatures
//
// Webhook-Signature is "t=<unix seconds>,v1=<hex HMAC-SHA256>" over the
// bytes "<t>.<body>" keyed by the endpoint's secret ("whsec_..." as
// shown, the whole string is the key). After RotateSecret the old secret
// still signs for Config.RotationGrace: the header then carries a second
// v1 (new first, old second), so a receiver that verifies any v1 keeps
// working while it switches. Verify implements the receiver side.
//
// # Key schema (persistence index entries, JSON values; endpoints and tasks
// carry "v":1, the version of their format)
//
//	whep/<endpointId>                               endpoint configuration
//	whq/<16 hex due unix ns>/<endpointId>/<hook>    delivery task (hook = queue key after "hook/")
//	whlog/<endpointId>/<16 hex unix ns>-<8 hex seq> one delivery attempt (Delivery)
//
// # Concurrency
//
// Service methods are safe for concurrent use; endpoint changes commit
// under one mutex (console traffic is rare). One goroutine delivers,
// sequentially, each POST bounded by Config.Timeout; an endpoint that fails
// is skipped for the rest of its round so a dead receiver costs one timeout
// per round, not one per task.
package webhooks
