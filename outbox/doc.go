// Package outbox holds what every sender of the service shares: durable
// queues with per-entry retry state, and the one sender loop (Start, Close,
// Wake, the loop, backoff). Package mail sends its entries over SMTP,
// package webhooks over HTTP; each keeps only what is its own.
//
// # Entries and their states
//
// A producer writes a fresh entry under its queue's inbox prefix ("mail/",
// "hook/") in the same batch as the change that owes it, so an entry
// exists exactly when its change is durable. The producers are the owners
// of the formats (mail.Owed, webhooks.Owed), called by the event actor
// with the change as an Owed (the core's effects, the machine after the
// change, its log seq); the inbox format is theirs: this package never
// looks inside a value.
//
// A sender reads fresh entries in rounds (Queue.Fresh, through a
// persistence.Cursor) and retrying entries that are due (Queue.Due), and
// settles each one by itself, in a batch it commits:
//
//   - delivered: Done deletes it;
//   - failed temporarily (a 4xx answer, a lost connection): Retry counts
//     the attempt and schedules the next one (Backoff: exponential,
//     jittered, capped), moving the entry out of the inbox;
//   - failed permanently (a 5xx answer, an entry that cannot be rendered):
//     Park counts the attempt and keeps the entry with its last error; it
//     is tried again only after Requeue (an operator's request);
//   - its destination is busy or backing off: Defer moves it to a later
//     time without counting an attempt.
//
// One entry's failure therefore never holds up another: there is no head
// of the queue that must go first.
//
// # Key schema (persistence index entries)
//
//	<inbox><id>                               fresh entry: the producer's bytes
//	obx/<queue>/s/<id>                        entry that was tried (envelope)
//	obx/<queue>/d/<16 hex due unix ns>/<id>   due index of retrying entries (empty value)
//
// id is the entry's key after the inbox prefix (or the id given to Add),
// so an entry keeps its id from inbox to parking. A retrying entry has both
// an s and a d key, written and deleted in one batch; a parked one only
// its s key. Due keys sort by time, so the entries due now are one range
// scan and the next wake-up one seek.
//
// # Byte format
//
// The envelope (value of an s key) is JSON with a format version:
//
//	{"v":1, "attempts":n, "nextAt":RFC 3339 (retrying only), "parked":true (parked only),
//	 "lastError":"...", "lastAt":RFC 3339, "value":base64 of the producer's bytes}
//
// An envelope of another version is not decoded: the entry stays stored,
// is not tried, and List shows it as parked with the reason.
//
// # The loop
//
// Loop runs a sender's RoundFunc on one goroutine: at Start (what an
// earlier run left), when woken (Wake never blocks, so actors call it),
// when the earliest scheduled entry comes due (Round.Next), on an optional
// poll tick, and at once again while a round reports More. A round that
// fails as a whole (the relay cannot be reached) backs off the whole
// sender: LoopConfig.BackoffMin doubling to BackoffMax, jittered, and wakes
// do not cut that backoff short, so a down relay is never dialled in a
// loop. Entries are not charged for such a failure.
//
// # Concurrency
//
// A Queue's Fresh is read by its sender's goroutine only. Due, NextDue,
// Get, List and the batch helpers (Done, Retry, Defer, Park, Add) are safe
// from any goroutine, provided two goroutines never settle the same entry
// at once (webhooks deliver on several goroutines, each its own
// endpoint's entries). Requeue is safe from any goroutine: it touches
// parked entries only, which no sender touches. Loop's methods are safe
// from any goroutine; Close cancels the context its rounds receive and
// waits for the round in flight.
package outbox
