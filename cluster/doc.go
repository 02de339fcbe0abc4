// Package cluster runs ticketd as a member of a NATS JetStream cluster
// embedded in every node: the event log replicated over the nodes, so an
// acknowledged write survives the loss of any minority of them.
//
// # Node
//
// Start runs an embedded nats-server with JetStream (files in
// DataDir/jetstream), routes to every peer, the client port on loopback
// only, and an in-process client connection. JetStream's files are synced
// on every write (SyncAlways: its default syncs every 2 minutes, which can
// lose acknowledged messages when a majority loses power). A node is ready
// (Ready, and /readyz) once the JetStream meta group has a leader this
// node is current with and the event log's streams exist, and the
// package's other replicated streams (directory, index, idempotency keys)
// too: made at first use instead, a new cluster's first keyed requests
// waited for them, and nats-server answers none of the concurrent
// creations of one stream by several nodes (each try is cut after
// streamTry and made again). Nodes announce
// their name and readiness on ticketd.node.<name> every 500 ms (Nodes).
//
// # Event log
//
// Log implements persistence.Log on JetStream. Events are spread over
// Config.Shards streams (TICKETD_EV_<n>, Config.Replicas replicas each) by
// a hash of their id, and the unit of replication is the shard, not the
// event: every event of shard n writes on its one subject, ev.<n>.log, and
// one message carries the commits of all the shard's events a node has
// waiting (group commit across events, bounded by maxMessageBytes; a
// commit bigger than that is split at record boundaries). A commit carries
// its records and the index entries they owe (outbox, webhooks, pending
// refunds), so both are replicated together. JetStream's cost is per
// message (a Raft entry, a WAL write and an fsync on each node, an ack),
// so a drop of many events with one record per commit each pays it once
// per message instead of once per order.
//
// Single writer: a node has one writer per shard (shardlog.go), with one
// message in flight; what waits meanwhile forms the next message. Once a
// message is stored, the next one waits until as many commits are queued
// as it answered (claims aside) plus those waiting then, for at most its
// ack wait and 5 ms (maxLinger): an event has one commit in flight, so in
// a drop of many events the ones a message answered come back with their
// next commit a moment later, and a message sent at once would leave them
// a whole flight behind (messages half full in turn). Every
// message carries Nats-Expected-Last-Subject-Sequence, the stream sequence
// of the subject's last message the writer knows (its own last, or the
// last at the writer's start), and a Nats-Msg-Id of its own
// (<subject>.<writer>.<n>). Any other node's message on the subject makes
// the writer's next publish fail with JetStream error 10071: the writer
// is dead, and every commit of every event through it answers ErrFenced
// (the event actors answer 503 to everything waiting and stop); the next
// claim on the node starts a new writer. Error 10164 (a publish on the
// subject in process) and a missing ack (an election) are transient: the
// same message is sent again, and one stored whose ack was lost is
// answered as a duplicate with its sequence, never stored twice (the
// server checks the id before the expected sequence, within the stream's
// 2-minute duplicate window, which bounds the retries; a publish not
// settled by then kills the writer too). A stored message's index entries
// go to the local store while the next message flies, and its commits
// are answered once they are, in message order.
//
// Claims: an owner activating an event replays it, then claims it: a claim
// operation in a message of its shard writer. Its stream sequence is the
// event's epoch (two claims of one event never share a message, so each
// has its own). The claim is refused with ErrFenced, and the activation
// loads again, when the event has records after the replay's end: in the
// messages up to the writer's start (the view reads them first: a writer
// started after the replay read) or queued through this writer since (an
// older incarnation's). Another node's claim moves the subject, which
// fences this node's writer; on one node, the writer keeps per event the
// claim that may append, so an older incarnation (an evicted actor
// finishing its flight) is refused before anything of its commit is sent.
// Commits of one claim are queued in order and a failed message fails
// every later one; an event has one commit in flight (MaxInFlight 1: see
// its comment).
//
// Replay: a node keeps a view of each shard it reads: per event, the
// messages holding its records (first and last record seq and stream
// sequence: maxMarks of them) and its last record, complete through a
// stream sequence (seen), and extended by the node's own messages. A
// replay reads from the first message the view says holds a record it
// needs through the subject's last message (end, asked of the stream
// leader), in batched direct gets (directget.go: up to 1,024 messages or
// 8 MiB a request, streamed to an inbox; not an ordered consumer, which
// needs the meta leader too, which a node's loss can leave unelected).
// The shard streams allow direct gets for this, and any replica may
// answer one (the server picks it at random; one silent for
// directFirstWait, a paused node's, is asked again, and the routes of a
// node that answers no route ping close after routePingsOut seconds, so
// its replicas are no longer picked): one that has not applied the last
// messages answers fewer, so the read asks again from the next sequence
// and, when a batch brings nothing new below end, asks the leader for
// that message: the read is exactly the leader's, one message at a time,
// at a fraction of the requests (each costs milliseconds on a loaded
// node). Reads that
// must see the last message (a writer's base, a read's end, FirstSeq) ask
// the leader's message-get API; while JetStream refuses it (10008: no meta
// leader, as when a paused node led the meta group, or the stream's group
// has none) a replica answers instead: a lagging answer costs a
// refused claim or append and a tail read, never a wrong state. An event whose records before the view's
// seen lie in at most maxSparse messages (a small event whose first
// record holds the trim back) has those read alone, not every message
// from its first; replays of
// one shard that wait at the same time share one pass (activation loads a
// shard's events four at a time), and every pass adds what it reads past
// seen to the view. FirstSeq and LastSeq answer from the view brought up
// to the subject's last message. The events of a shard (for proactive
// activation) are those its log names (the view, brought up to date: the
// read the replays then start from) and the event index's entries that
// hash to it (an event whose records were all trimmed).
//
// Existing data: a shard stream holding per-event subjects (the format of
// earlier versions, one subject per event) makes the node refuse to start
// (errOldFormat): cluster mode had not shipped, so the fix is empty data
// dirs.
//
// # Ownership
//
// Router places an event on the leader of its shard stream: appends go
// to the stream leader anyway, and JetStream moves leadership to the
// survivors when a node is lost, so ownership needs no protocol of its
// own. Every node announces the shards it leads in its heartbeat, at once
// when they change, so the others know an owner without asking JetStream;
// the heartbeat has a goroutine of its own that never waits on JetStream,
// since a node silent for peerStale is taken as gone. Node spreads the
// leaders over the ready nodes (JetStream alone may elect one node for
// all, and a restarted node leads none): only while a node leads two
// shards more than another, with the fewest moves, computed alike on
// every node from the heartbeats and made once wanted unchanged for
// balanceSettle, so the survivors of a loss keep what they led. The
// taker first builds the states of the shard's events while the leader
// still serves them (preload.go: its first handover is refused with
// errPreloading, the next, a balanceEvery later while the plan stands
// and once they are built, catches them up), so
// its actors replay only the last records after the move instead of
// loading a big event's snapshot during the pause. A move is
// a handover (ticketd.handover.<node>): the leader stops owning the
// shard's events, lets their actors' commits end, then steps down in
// favour of the taker (JetStream's stepdown with a preferred leader),
// which campaigns at once; writes pause for the election and the taker's
// activation, and no commit in flight is cut or fenced.
// A graceful stop (app.Main.Close, SIGTERM) is the same planned move for
// every shard the node leads (leave.go, Router.Leave): the node says it
// is not ready (heartbeat and /readyz) so nothing is balanced back to
// it, asks the ready nodes leading fewest to take its shards
// (ticketd.take.<node>: each taker preloads and asks the handover, again
// while refused), and serves its events until each is handed over, for
// at most LeaveWait (60 s: a big event's preload); what is left moves
// with the server's shutdown, as after a loss. Every other node
// forwards the event's requests to the owner (the commands and results
// forwarded most, a drop's orders and a door's check-ins, in binary forms
// of their own (event/wire.go), the others in gob with the type
// definitions compiled once per type: see wire.go): over a TCP connection
// to the forwarding address the owner announces in its heartbeat
// (fwdconn.go), else over NATS (ticketd.ask.<node>); in batches: the
// requests queued for one owner while its sender waits to run go as one
// frame or message, the answers ready for one forwarding node as one (on
// the same connection, or ticketd.ans.<node>), each request with its own
// id, deadline (the owner serves it within the caller's; the forwarding
// node's peer sweeps the requests past theirs) and answer (asks.go). The
// owner hands each request to its actor as it reads the batch, and the
// actor's answer goes straight into the answer queue (no goroutine per
// request: actors.System.ServeAsync). A
// request the owner could not have
// handled (nobody listening, "moved", or refused by the fence: nothing of
// it was written) is sent again until its deadline, so a move shows as a
// pause, not an error. A leader refuses a
// handover while it activates the shard's events (the taker would load
// them again); the balancer asks again next round. A node evicts its
// actors of a shard whenever it gains or loses its leadership (on a gain,
// only those that have loaded: a load ends with a claim the fence checks,
// so one still loading holds nothing stale); on a gain
// it activates the shard's events at once (activate.go: load, claim,
// expire what lapsed; at most 10,000 per shard, the rest on their first
// request),
// and imports what they owe once per event and gain, after its activation
// or, for one not activated, its first claim since (owed.go: mail, webhooks, refunds, pages to
// close, all sent by the owner alone, settled entries replicated in the
// TICKETD_SETTLED stream, at most 16 messages per event or twice the
// parts of its whole set: a rollup then replaces them with the event's
// settled keys whose put its log still holds and the entries it carries
// past a trim, see settled.go; once the trimmer has settled an event
// through its last record and it owes nothing, its subject is purged:
// the stream keeps the events whose log or debts still need it, not one
// subject per event ever sold; a webhook is settled
// once every endpoint's delivery of it is, an entry a commit deleted once
// the owner saw it gone); on a loss it drops those from its local store, with the webhook
// deliveries made of them.
// Raft elections start after Config.ElectionTimeout (raft_timing.go). The
// fence, not the placement, keeps one writer.
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
// # Byte format
//
// A shard message's data is a version byte (2) then sections, each an
// event id ('e', uvarint-prefixed) followed by that event's operations, a
// kind byte and uvarint-prefixed fields:
//
//	'e' event:   id (the operations after it are its, up to the next 'e')
//	'a' append:  seq, record
//	'p' put:     key, value
//	'd' delete:  key
//	'c' claim:   node, the event's last record seq (uvarint)
//
// Version 3 is the same after the version byte, S2-compressed as one block
// (klauspost/compress/s2): messages of 1 KiB or more, once every node's
// heartbeat carries the field "z" (it reads version 3; Node.compress).
// Its headers are Nats-Msg-Id and Nats-Expected-Last-Subject-Sequence
// only. The directory's messages (below) keep version 1: the operations of
// one log, and the headers Ticketd-First and Ticketd-Last.
//
// # Shared state
//
// What is durable besides the event logs lives on a majority of the nodes
// too, so no acknowledged write lives on one node only:
//
//   - The directory (units, keys, console members and their links):
//     Directory, one subject (dir.log) of the stream TICKETD_DIR, in the
//     format version 1 (the operations of one log). It stays a log, not a key-value bucket,
//     because the directory is a state machine whose decisions need the
//     whole state (a unique member email, an invitation used once) and
//     whose read view must be consistent. Every node may write, with
//     optimistic concurrency (actors.SharedLog): its directory actor
//     decides against the state it has read and appends fenced on the
//     last message read (Nats-Expected-Last-Subject-Sequence); another
//     node's append since makes JetStream refuse it (10071), and the actor
//     reads and decides again. Writes are rare, so conflicts are, and no
//     node needs electing or asking. Every node reads the log: at once
//     when another node's plain NATS notice (ticketd.dir.changed) says it
//     appended, every second besides (a notice can be lost), and before
//     answering 401 to a key it does not know, so a key made on one node
//     authenticates on every node at once and a revocation takes effect
//     everywhere within about a second (at once where it was made). Reads
//     go to the stream's leader (AllowDirect off), which has stored every
//     entry of its Raft log before it answers as leader (nats-server's
//     aflr); a replica never says where the log ends. While the stream or the meta group elects
//     a leader, or without a majority, a read fails (10008 "temporarily
//     unavailable", or a timeout): a node that then cannot tell whether a
//     key is live answers 503 DIRECTORY_UNAVAILABLE after trying for 5 s,
//     never a 401 for a key made elsewhere. It accepts a key it knows
//     only from a view read within actors.DirectoryStaleAfter (5 s): a
//     node cut off from the log stops accepting a key revoked elsewhere
//     within that and one read's wait, answering 503 until it reads
//     again (TestDirectoryCannotTell). The log is bounded by checkpoints: the appending node stores the whole
//     directory (its snapshot encoding) on dir.ckpt once 1,000 records or
//     1 MiB followed the last one, fenced on the record it reflects being
//     the stream's last message, and purges the records before the
//     previous checkpoint (two checkpoints kept); a node starts from the
//     newest checkpoint and the records after it (see directory.go).
//   - The event index ("ev/" entries: which events exist and their unit,
//     and "evpub/": which are published) and the audit log: Index, the
//     stream TICKETD_INDEX with one subject per key (ix.<key>) that keeps
//     its last value. Each node follows it with an ordered consumer and
//     writes every entry into its local store (the last sequence applied
//     under "clusterpos/index", so a restart reads only the rest), where
//     the code that reads them reads them as on a single node. An event's
//     "ev/" entry is put once the event is created and before that is
//     answered, so an acknowledged event is always found; a node that has
//     not applied it yet reads it from the stream on a miss. Entries are never deleted through the
//     stream: audit entries carry the retention as a message TTL and each
//     node prunes its own copy by the same rule.
//   - Webhook endpoints ("whep/" entries), in the same stream: a change
//     is put on a majority before it is answered, and each node's copy
//     refreshes its webhooks.Service view as it is applied, so the owner
//     of an event delivers to an endpoint made through any node. A
//     deletion is put as an empty value. Concurrent changes of one
//     endpoint through two nodes (an operator's edit, the owner counting
//     failures) are not fenced: the last one put wins on every node.
//   - Idempotency keys: Idempotency, the stream TICKETD_IDEM (one subject
//     per key, its last message kept for the keys' 24 h: MaxAge). A claim
//     is stored fenced on the subject being empty, the answer replaces it
//     fenced on the claim before it goes out: a retry on any node gets the
//     first answer, or 409 while the first request runs. That answer is
//     the fast path; exactly once rests on the write itself: a forwarded
//     keyed request carries its record (http.KeyedWrite), which the
//     event's owner commits in the shard message of the write and looks
//     for before deciding the key again, so a retry after the request's
//     node, the owner or an answer was lost replays the write's answer
//     (see Idempotency).
//   - Console sign-in sessions ("csess/" by the SHA-256 of the cookie,
//     an empty value once signed out; "csessseen/": the last use, put at
//     most every minute and apart, so a late one cannot revive a session
//     signed out; "csessend/<person>": a sign-out everywhere), in the same
//     stream with the absolute timeout as TTL. Writes wait for the writer's
//     own copy (Index.PutApplied), so they take effect at once there; a
//     node that has not copied a new session yet reads it from the stream.
//   - Cluster-wide secrets ("secret/", the hosted pages' gate cookie key):
//     made once by Index.PutOnce, fenced on the subject being empty, so of
//     nodes racing at start all keep the first one put.
//   - Stripe's event ids acted on ("provider-event/", 30 days as TTL) and
//     webhook delivery logs ("whlog/", 7 days as TTL, each node trimming
//     its copy to the newest entries per endpoint), put by the node that
//     handled the event or sent the delivery: a redelivery to another
//     node is answered as a duplicate, a delivery listed and resent
//     through any node.
//
// Key tokens: an index key made only of letters, digits and -_/= is its
// own subject token, any other is "~" and its base64url. All of these
// streams are read from their leader (AllowDirect off): a replica may not
// have stored an acknowledged message yet. (The shard streams and the
// snapshot store allow direct gets for their bulk reads, which end at a
// sequence the leader gave; see Replay and Snapshots.)
//
// # Concurrency
//
// Node and Log methods are safe for concurrent use; the commits of one
// event are queued on its shard's writer in order, so they reach the
// stream in order.
package cluster
