// Package settle is what an event owes and what frees the log behind
// it: the owed work an owner imports and sends (Owed: mail, webhooks,
// refunds, checkout pages to close), the settled stream that carries it
// past a trim (settled.go), the event snapshots of cluster mode
// (Snapshots: an object store and an index bucket), and the trimmer
// (settle.go), which settles the events that hold a shard's trim back.
// It reads the event log's view (cluster/eventlog) and is driven by the
// router (cluster/routing); see package cluster for the whole.
//
// # Owed work
//
// An event's owner imports what the event owes once per event and gain
// of its shard, after the event's activation or, for one not activated,
// its first claim since (Router.Own): mail, webhooks, refunds and pages
// to close, all sent by the owner alone, their settled entries replicated
// in the TICKETD_SETTLED stream, at most 16 messages per event or twice
// the parts of its whole set (a rollup then replaces them with the
// event's settled keys whose put its log still holds and the entries it
// carries past a trim). Once the trimmer has settled an event through its
// last record and it owes nothing, its subject is purged: the stream
// keeps the events whose log or debts still need it, not one subject per
// event ever sold. A webhook is settled once every endpoint's delivery of
// it is, an entry a commit deleted once the owner saw it gone; on a loss
// of the shard the node drops those from its local store, with the
// webhook deliveries made of them.
//
// # Change feed
//
// The change feed's entries (actors/feed) reach the owner's local store
// alone, with their commits; Feeds (feed.go) makes every node that takes
// an event over answer the whole retained feed. At every claim, before
// the claim is answered (eventlog.Log.ImportClaimed, so before the actor
// serves a read), the new owner imports the entries its store lacks: those
// the feed stream TICKETD_FEED carries (skipped when its store holds the
// feed from seq 1 through them already) and those the log's messages
// before the claim put. Ahead of a planned move the taker's preload
// prefetches them (Feeds.Prefetch: the stream's and the log's messages so
// far, paced by the node's own load like the preload, package pace) and
// notes, as it goes, the stream's and the log's message it read through
// (with its view of the store, so the next import scans nothing); the
// claim stops a prefetch under way and reads only the messages after its
// point (the hot event's 42-92k tail entries, 3-5.3 s at the claim, issue
// 31; a prefetch cut short keeps what it reached), or the whole tail when
// no prefetch noted one or the store no longer holds what it prefetched (a
// trim in between needs nothing more: the owner carried the purged
// messages' entries to the stream first).
// Before the log is trimmed through an event's
// messages (its snapshot, or the trimmer settling it: the same hook as the
// owed work's carry), its owner publishes the entries its store has past
// the last one the event's subject (feed.<eventId>) carries, in parts of
// at most 1 MiB fenced on the subject's last message; a failure holds the
// trim back. The stream's max age (event.FeedRetention and a day) bounds
// it by the retention: a message is stored after its entries happened.
// Not the settled stream: entries are not owed (nothing sends or settles
// them), and a drop's feed (about 1 KiB an order) would pass its rollups.
// Message format: version byte 1, then per entry uvarint seq, uvarint
// length, the stored value; header Ticketd-Feed-Last, its last seq.
//
// # Snapshots
//
// Snapshots keeps event snapshots in the object store TICKETD_SNAPSHOTS,
// the seqs kept per event in the key-value bucket TICKETD_SNAPINDEX (two
// per event). A shard's log is trimmed behind the oldest position any of
// its events still needs: for each event the view knows, the first
// message holding a record after its older snapshot kept (learnt when this
// node saves or loads the event's snapshots); an event with no snapshot
// known needs all its records, and the messages past the view's seen are
// never purged. An event is snapshotted once SnapshotEvery changes follow
// its last snapshot (actors/snapshotter.go; for a big event, as many as
// its last snapshot covers, at most SnapshotTailMax: 100,000 by default
// in cluster mode, the tail a failover replays), so an event that changes
// less than that would hold the trim at its first message for good, and
// with it every later message of the shard (other events' records too).
//
// The trimmer (settle.go) frees them. Every Config.SettleEvery (10 s),
// the leader of each shard (its events' owner, whose view is current),
// once it has led the shard for six looks (so it has imported what the
// events owe), lists the events that hold the trim more than
// Config.SettleLag (TICKETD_CLUSTER_SETTLE_LAG, 10,000) messages behind
// the view's last message and are idle (no record of theirs in those
// messages) or small (at most Config.SettleSmall, 10,000, records: a
// cheap snapshot). It settles each, at most once per SettleLag messages:
// the event's state at its last record becomes its only snapshot, kept
// twice, <id>.<seq> and the copy <id>.<seq>.b (the index lists
// "seq,seq"), and the log is trimmed through it. What the event still
// owes (mail, webhooks, refunds, pages to close left in the owner's
// store: an endpoint down for days) is first carried by its subject of
// the settled stream (owed.go, settled.go), whose puts the trim takes:
// a next owner imports them from there. A carry that fails leaves the
// event unsettled. A busy event's own snapshots carry what it owes too
// before their trim, at any count (a drop's thousands of ticket mails
// kept while the relay is down): only the entries not carried yet, as
// deltas, so a snapshot pays for what was owed since the last one, and
// the subject is rolled up only once its messages call for it. A carry
// that fails there, or that would take the subject past one rollup (one
// atomic batch: 256 parts of 512 KiB, about 100,000 ticket mails), holds
// the trim back: the new snapshot is kept with the older one the log is
// trimmed through already (an event's second snapshot is not kept), so
// the log keeps what puts the entries, and the next snapshot tries
// again. Nothing owed is trimmed without a
// copy. An event whose newest snapshot is at its last record
// already has it copied; any other has one asked of the actors'
// snapshotter (actors.SnapshotRequester: it rebuilds the state from the
// store, the actor need not be active), whose save keeps it twice. A busy
// big event is left alone: it holds the log back by design, and its own
// snapshots move it.
//
// Why a copy rather than a second snapshot at a new seq (which a record
// appended for the purpose would allow): a settled event then needs
// nothing of its log until it changes again, instead of a record and a
// snapshot every SettleLag messages for good; and the copy is the
// fallback the older snapshot is for (an object unreadable; a decode
// error fails the load either way). What it costs: a settled event's log
// may hold no record of it, so a stale list of its snapshots (a replica
// behind) would show no gap. A load whose list came from a replica, of an
// event with no record in the log, reads the list from the leader instead
// (so the load of such an event, or of one never written, waits for the
// index's new leader when the node lost led it).
//
// A load reads the index entry, the snapshot's info and its chunks with
// direct gets, which any replica answers (the chunks in batches, the
// leader answering what a lagging replica lacks): so it does not wait for
// the election of the snapshot streams' leader when that was the node
// lost; only an entry or info its replica lacks is asked of the leader,
// in one try. A replica behind the last save answers the list before it,
// whose newest snapshot is correct but older (more to replay); one
// further behind fails the load on the gap between snapshot and log
// (never a state with records missing), and the next activation reads
// again. A save reads the entry from the leader (its update is fenced on
// the revision).
//
// # Concurrency
//
// Owed and Snapshots are safe for concurrent use. Owed.Run (started by
// the router) settles what the senders took out, once a second, on one
// goroutine until its stop channel closes; NoteIndex, which the log's
// OnIndex calls on its apply goroutine, only takes a lock; Take and
// Release block for the log's and the settled stream's reads. The trimmer runs on one goroutine of its own,
// started by the first RequestSnapshotsWith and ended with the node; a
// pass looks at the shards this node leads, one at a time. A snapshot's
// save and load block for their reads and writes, each bounded
// (snapTimeout); the settled stream's publishes are fenced, so the two
// writers one event's subject may have at once (its owner's passes and
// carries, a node settling as it loses the event) retry rather than race.
package settle
