// Package actors is the shell around the pure state machines: one
// protoactor-go actor per ticketed event (around event), one actor
// for the directory of business units and API keys (around
// directory), the registry that activates and passivates event
// actors, group commit, hold-expiry timers and snapshots. It holds no
// business rules.
//
// # Durability
//
// An actor handles a command by deciding it against its machine, applying
// the resulting changes to its in-memory state at once and appending their
// encoded records to its open log batch. The caller is answered only when
// that batch is synced. Up to the log's MaxInFlight batches per actor (4 on
// Pebble) are in flight at once, synced in order; while they sync, the actor keeps deciding the next
// commands into the next batch (group commit), and Pebble's commit pipeline
// merges the syncs of different actors. An answer that changes nothing (a
// read, a rejection, a duplicate scan) is still released only after every
// change it may have observed is durable: it waits for the batches in flight,
// but it costs no sync of its own.
//
// # Idempotency-Key records
//
// A request may carry a Recorder (WithRecorder): the record of its
// Idempotency-Key, made from its result, which the actor puts in the batch
// of the request's changes, so the key is durable exactly when the write
// is (decisions §20). The event actor looks for the record before deciding
// such a request (in its batches not yet durable, then in the store) and
// answers Replayed with it when found: the write was made before and its
// answer was lost. The directory actor records too (Pebble mode) but does
// not look: its writes are keyed only on one node, whose HTTP layer reads
// the record first. Only a request that changed something records; the
// change feed and other writers of the batch add their own entries beside
// it (committer.put).
//
// # Effects
//
// What a change owes the world is said by the core (event.AppendEffects);
// the actor hands the change's effects to each OwedWork of Config.Owed
// (carryOut), which writes its own entries into the batch of the change:
// mail.Owed the mail inbox (tickets with their receipt, promotions,
// refunds, cancellations: each entry complete, read from the machine just
// after the change, so the mailer never asks an actor), webhooks.Owed the
// webhook inbox (only the types the unit's endpoints subscribe to), and
// payments.Owed the pending-refund and checkout-close indexes. The formats
// are their owners'; this package knows none of them. So an entry is
// exactly as durable as the change that owes it, and its key (the
// change's log seq and index) is written once: replay applies changes and
// carries nothing out. Config.OnOwed wakes the senders once it is durable.
// The directory's console links are mailed the same way (Config.Links).
//
// # The change feed
//
// The core says which feed entries a change produces (event.AppendFeed)
// and numbers them (event.State.FeedSeq, part of the state, so a seq is a
// function of the log and the same after any replay). The actor writes
// each entry, with the record as its GET answers just after the change,
// into the change's batch (writeFeed; key and byte format: package
// actors/feed), so the feed can never disagree with the state,
// and a webhook about the change carries the entry's seq. The entries are
// index entries, not log records: the log's trim behind snapshots leaves
// them, and TrimFeeds deletes them after event.FeedRetention.
//
// A ReadFeed is the shell's, not the core's: the actor answers it with
// the durable end of the feed (feedEnd, moved once a batch holding
// entries is durable), at once when that is past the reader's position or
// it does not wait, else when a commit moves it there or its wait ends (a
// timer message): no polling. The page itself is read on a goroutine of
// its own, from the ring of the event's newest entries (actors/feed.Ring)
// or else from the store, so twenty followers of a drop cost the actor
// one slice append and one wake-up each per commit; the entries of the
// ring carry the memo of their renderings (event.FeedMemo), so the
// front door renders each change once and copies it to every follower. A waiting actor does
// not passivate; one that stops answers its waiters with what there is.
// The lists of registrations, orders and check-ins carry the state's
// FeedSeq with them (event.List.FeedSeq), read in the same Decide.
//
// # Recovery
//
// On activation an event actor loads its newest snapshot, replays the log
// records after it and then sends itself an Expire, so holds that lapsed
// while the service was down lapse at once. GOGC is raised for the length
// of a load (Config.LoadGCPercent, a reference-counted section of the
// System, since the knob is process-wide): a loading state is all live, so
// collections meanwhile only slow it down.
//
// # Snapshots
//
// Snapshots are taken off the actor, so that a door-scanner burst or an
// on-sale drop never waits behind the encode of a big state. The actor
// only counts: once the changes since its last snapshot reach
// max(SnapshotEvery, covered), where covered is that snapshot's seq, it
// asks the System's snapshotter for a snapshot at its current seq S, and
// only once S is durable. The rule keeps the background work O(1) per
// change amortised (a snapshot costs about the size of the state, and the
// interval doubles with it) while recovery replays at most about half of
// an event's records. Config.SnapshotTailMax, when set (cluster mode,
// where a failover replays over the network while the event's writes
// wait), caps the interval at that many changes whatever the event's
// size: recovery's tail stays bounded, at the price of snapshots as
// often as that (each costs about the state's size).
//
// The snapshotter has one worker goroutine (at most one snapshot is built
// at a time, so it never takes both cores) and a bounded queue of events
// (a full queue refuses, and the actor asks again on its next change). For
// each request it builds the state at S the way recovery does, in a fresh
// machine: the newest snapshot, then the log records after it up to S.
// Since the machine is deterministic, that is the state the actor had at
// S: snapshot(S) = apply(snapshot(prev), log(prev..S]). It encodes it and
// saves it with snapshots.SaveAndTrim, which trims the log only through the
// OLDER snapshot kept, in the same batch as the new header: a crash at any
// point of a background snapshot loses nothing, and an unreadable newest
// snapshot still has an older one and the records after it.
//
// The worker reads only the store, never the actor: an idle actor may
// passivate while its snapshot is built, and a new incarnation loads from
// whatever consistent set of snapshots and records it sees. System.Close
// waits for the snapshot being built (after every actor has stopped); the
// ones queued behind it are dropped, since snapshots only bound recovery
// and a shutdown should not wait for a queue of big states.
// Building a snapshot holds a second copy of the event's state in memory
// for its duration.
//
// # Storage faults
//
// A failed sync fails the store for good (see package persistence). The
// actor whose batch failed answers every waiting caller ErrUnavailable,
// wrapping persistence.ErrFailed, and stops: its state is ahead of the
// log. Every other caller waiting for an answer is released at once
// (Ask also waits on Store.Failed), and later asks are refused without
// activating an actor, since nothing can become durable and what the
// memtable holds may never have reached the disk. The process is expected
// to exit and restart from the log. Close is bounded by
// Config.CloseTimeout: an actor stuck inside a wedged store is left to the
// process exit.
//
// # Shared directory and index (cluster mode)
//
// With Config.Directory set, the directory actor reads and appends a log
// every node shares (SharedLog): it decides each write on the state read
// from the log, appends only if no other node appended meanwhile, and
// otherwise reads and decides again; it reads on a notice from another
// node and before a key lookup misses (SyncDirectory). A read that fails
// says nothing of the log: SyncDirectory answers it as an error, and the
// caller must answer "cannot tell", not "unknown". DirectoryStale reports
// a view whose last successful read started more than DirectoryStaleAfter
// ago (by Config.Now): a revocation elsewhere may be missing from it, so
// a key it holds is checked after a read. With Config.Index
// set, an event's creation and its published status also go to an index
// every node follows (SharedIndex, IndexChanged), and a lookup that misses
// reads it.
//
// # Concurrency
//
// System methods are safe for concurrent use. Requests reach an event actor
// only through System.Ask, which counts them per event so that an idle actor
// retires (passivates) only when no request is on its way to it.
// System.SoldOut and System.QueueStatus answer without the actor, from the
// sale view it publishes once its changes are durable and before their
// answers go out (saleview.go; single node only). A poll the view answers
// is stamped on the entry's record in the view (an atomic word), which the
// actor's sweep of unpolled entries reads (queue.go). A batch of door
// scans is prepared on the asker's goroutine before it is sent (passes.go,
// askLocal): its check-in ids made (in one call, randomIDs.NewBatch), and
// its passes resolved against the list of registrations the event's actor
// hands out once it took a batch or a download of passes (again only when
// registrations were added); the actor checks each pass in a few loads
// and looks up itself what does not check out, so only "is this pass in
// at this door yet" and the records stay serial. A download gets the door
// ready: the actor builds the tables a batch reads then, and the index
// takes the list in on a goroutine of its own, so the first batch pays
// for no one-time build.
package actors
