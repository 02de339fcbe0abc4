// Package actors is the shell around the pure state machines: one
// protoactor-go actor per ticketed event (around actors/event), one actor
// for the directory of business units and API keys (around
// actors/directory), the registry that activates and passivates event
// actors, group commit, hold-expiry timers and snapshots. It holds no
// business rules.
//
// # Durability
//
// An actor handles a command by deciding it against its machine, applying
// the resulting changes to its in-memory state at once and appending their
// encoded records to its open log batch. The caller is answered only when
// that batch is synced. One batch per actor is in flight at a time; while it
// syncs, the actor keeps deciding the next commands into the next batch
// (group commit), and Pebble's commit pipeline merges the syncs of different
// actors. An answer that changes nothing (a read, a rejection, a duplicate
// scan) is still released only after every change it may have observed is
// durable: it waits for the batch in flight, but it costs no sync of its own.
//
// # Recovery
//
// On activation an event actor loads its newest snapshot, replays the log
// records after it and then sends itself an Expire, so holds that lapsed
// while the service was down lapse at once. Every SnapshotEvery changes it
// snapshots its state (encoded inside the actor, saved by a goroutine once
// the records it covers are durable) and trims the log up to the previous
// snapshot, so one older snapshot can still be replayed forward should the
// newest be unreadable.
//
// # Concurrency
//
// System methods are safe for concurrent use. Requests reach an event actor
// only through System.Ask, which counts them per event so that an idle actor
// retires (passivates) only when no request is on its way to it.
package actors
