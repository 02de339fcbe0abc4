// Package event is the pure, deterministic state machine of one ticketed
// event: commands in, changes and results out. It does no I/O, reads no
// clock and starts no goroutine; the actor shell (package actors) owns a
// Machine, logs the changes and answers callers.
//
// # Flow
//
// The shell calls Decide(now, cmd). Decide validates against the state and
// returns a result view, the changes that would happen and a business error
// (*Error with a Code). It never mutates. The shell appends the changes to
// the write-ahead log, applies each with Apply, and answers the caller once
// the log is synced. Replay calls Apply with decoded changes only; every
// generated value (ids, check-in codes, pass tokens, order numbers, payment
// ids, hold deadlines) is inside the change, so replay never calls IDs or
// reads Config durations.
//
// # Concurrency
//
// A Machine is not safe for concurrent use: one actor owns it. Results are
// fresh values with no pointers into the state, so they may be encoded on
// another goroutine after the state moved on.
//
// # Rules decided here (where the spec leaves room)
//
//   - API registrations are accepted on open ticket types only (412
//     otherwise); sale windows apply to orders, not to API registrations.
//     A ticket type requiring approval makes API registrations pending
//     (holding no place); purchased admissions are confirmed at once.
//   - Pass tokens are "<eventId>.<32 Crockford chars>" and passUrl is
//     BaseURL + "/pass/" + token; EventIDFromPassToken routes them.
//   - Check-ins at the event door ignore subjectId (one door per event);
//     session and venue doors need subjectId. A repeat at a door answers the
//     first check-in with alreadyCheckedIn true even if the registration was
//     cancelled since; a first check-in needs status confirmed.
//   - Lists: ticket types, add-ons, bundles and codes in creation order;
//     registrations, check-ins and orders newest first. Cursors are
//     base64url of the last id of the page.
//   - Cancelling a rejected registration is allowed (it held nothing);
//     cancelling a cancelled one is 412. A freed place (cancel, capacity
//     raised, hold released) promotes the oldest waitlisted registrations
//     of that type at once, each with a TicketIssued change.
//
// # Byte formats
//
// See codec.go: a change is version byte 1, a kind length byte, the kind
// and the change's JSON; a snapshot is version byte 1 and the State's JSON.
package event
