// Package webhooks delivers signed outbound webhooks to the endpoints a
// business unit configured (the console's "automations").
//
// # Flow
//
// An event actor has Owed (actors.OwedWork, wired by app.Main) write a
// webhook event into the webhook inbox (HookEvent, key prefix
// InboxPrefix) in the same Pebble batch as the change that causes it (a
// registration created, confirmed or cancelled, a check-in, a paid or
// refunded order, a door conflict), only for the types some endpoint of
// the event's unit subscribes to (Owed.Want: Subscribed), so the inbox is
// exactly as durable as the change. The Service's
// sender loop (package outbox), woken by Wake (wired to
// actors.Config.OnOwed), when a task comes due and by a poll ticker,
// does rounds of two steps:
//
//  1. Fan-out: each queue entry becomes one task per enabled endpoint of the
//     event's unit subscribed to its type, in the outbox queue TaskQueue;
//     the entry is deleted in the same batch. The JSON body {id, type,
//     createdAt, data} is built here once, so every attempt sends the same
//     bytes and the same event id.
//  2. Hand-off: due tasks go to their endpoint's lane. Each endpoint has at
//     most one POST in flight and at most Config.Concurrency endpoints are
//     delivered to at once, each on its own goroutine, so a slow or dead
//     endpoint holds up only its own tasks, never another endpoint's or
//     another unit's. A task handed to a lane is leased (its due time
//     moved past the time its lane needs), so rounds look past it and a
//     crash brings it back.
//
// A worker POSTs its lane's tasks in order, each with a Webhook-Signature
// header and bounded by Config.Timeout. A 2xx answer deletes the task;
// anything else counts an attempt and reschedules it with exponential,
// jittered backoff (Config.BackoffMin doubling up to BackoffMax) until
// Config.MaxAttempts, after which it is dropped; and the endpoint itself
// backs off (by its consecutive failures): the rest of its lane, and its
// tasks that come due meanwhile, wait for it without being charged.
// Config.DisableAfter consecutive failed attempts disable an endpoint; the
// tasks of a disabled or deleted endpoint are dropped when they come due.
// A task's attempts and due time are durable (package outbox); an
// endpoint's backoff is kept in memory and starts afresh after a restart.
//
// Every attempt is appended to the endpoint's delivery log (status code,
// attempt, latency, error, and the body it sent) in the same batch that
// deletes or reschedules its task; the log keeps the newest Config.LogMax
// entries per endpoint and goes with the endpoint when it is deleted.
// Resend queues a logged body again as a new task (task id
// "<endpointId>/resend-<random>"), on the same durable path: the same
// bytes and event id, its own attempts and log entries.
//
// # Destinations
//
// Decisions §23: an endpoint URL must be https and reach only public
// addresses (not loopback, private, link-local, unspecified, multicast
// or another special-purpose range; destination.go lists them). Save
// checks an address literal and every address a name resolves to (a name
// that does not resolve yet is taken); each delivery checks the scheme
// and literal again, and the default Client's dialer refuses a
// non-public address after resolution, on the address it would connect
// to, so a name rebound to an internal address is caught. Redirects are
// not followed and no proxy is used. A refused attempt is not sent: it is
// logged with Refused and counted as a failed attempt (the name may
// resolve elsewhere later). Config.AllowPrivate (TICKETD_WEBHOOK_ALLOW_
// PRIVATE) lifts these rules for development and tests, where http is
// then taken for localhost only.
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
//	hook/<eventId>/<16 hex log seq>-<4 hex i>       webhook event owed (HookEvent), not fanned out yet
//	whep/<endpointId>                               endpoint configuration
//	obx/webhooks/.../<endpointId>/<hook>            delivery task, an outbox queue entry (see package outbox)
//	whlog/<endpointId>/<16 hex unix ns>-<8 hex seq> one delivery attempt (Delivery and "body"; the
//	                                                part after the endpoint id is the delivery's id)
//	whpend/<hook>                                   cluster mode: deliveries of hook pending (decimal)
//
// hook is the queue key after "hook/". Fan-out reads "hook/" as the inbox
// of the outbox queue "hookfanout", which never stores entries of its own
// (every entry read is settled at once). The task value (the outbox entry's
// value) is {"v":1, endpoint, eventId, type, hook, body}. Tasks stored by
// earlier versions under "whq/<16 hex due unix ns>/<endpointId>/<hook>"
// (the same JSON with "attempts") are carried into the queue by New, with
// their due time and attempts.
//
// # Cluster mode
//
// After Share, endpoint changes are written through the shared put (on a
// majority of the nodes) instead of this node's store, and every node's
// copy of an entry reaches the in-memory view through EndpointChanged, so
// whichever node owns an event fans its webhooks out to endpoints made
// through any node. A deleted endpoint is an empty "whep/" value there.
// Tasks stay in the store of the node that delivers (the event's owner),
// so a queue entry fanned out there is not deleted but parked, with a
// count of its pending deliveries (whpend/<hook>); the delivery that
// settles the last one deletes both in its batch. Package cluster settles
// an entry for the cluster only once it has left the store: until then a
// new owner of the event (this node lost) imports it and fans it out again
// to every endpoint (at least once: a receiver tells a repeat by the
// webhook event's id). Release drops the tasks and counts of the events a
// node no longer owns, and marks those events so that a task leased before
// is dropped, not sent, when it comes due.
// Each delivery log entry is put on every node too (for SharedLogTTL)
// once its task is settled, and every node trims its copy to LogMax per
// endpoint as it applies one (DeliveryChanged) and drops it with the
// endpoint, so the deliveries are listed and sent again through any node.
// A resend is queued and delivered by the node it was asked of.
//
// # Concurrency
//
// Service methods are safe for concurrent use; endpoint changes commit
// under one mutex (console traffic is rare). One goroutine (the loop) fans
// out and hands off; up to Config.Concurrency worker goroutines POST, one
// per endpoint. Close cancels the POSTs in flight and waits for them.
package webhooks
