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
// node is current with and the event log's streams exist. Nodes announce
// their name and readiness on ticketd.node.<name> every 500 ms (Nodes).
//
// # Event log
//
// Log implements persistence.Log on JetStream. Events are spread over
// Config.Shards streams (TICKETD_EV_<n>, Config.Replicas replicas each) by
// a hash of their id; an event's records are the messages of its own
// subject, ev.<n>.<eventId>. One commit (a group-commit batch) is one
// message, split at record boundaries only above maxMessageBytes, that
// carries its records and the index entries they owe (outbox, webhooks,
// pending refunds), so both are replicated together.
//
// Single writer: every publish carries Nats-Expected-Last-Subject-Sequence,
// the stream sequence of the last message this writer knows on the
// subject. An owner activating an event replays the subject and then
// appends a claim message fenced on the subject's last message, which must
// end at the record the replay ended at (else records came after the
// replay, and the activation starts over); its stream sequence is the
// owner's epoch. A claim is a writer of its own (Claim returns the Log to
// append through), so two incarnations on one node (an evicted actor
// finishing its flight and its successor) are two writers too. Any earlier owner's next append then fails with
// JetStream error 10071 (wrong last sequence): Log answers ErrFenced, and
// the event actor answers 503 to everything waiting and stops. Error 10164
// (the subject has a publish in process) and a missing ack (an election)
// are transient: the publish is retried with the same Nats-Msg-Id
// (<eventId>.<epoch>.<n>), so a publish stored whose ack was lost is
// answered as a duplicate with its sequence, never stored twice (the
// server checks the id before the expected sequence, within the stream's
// 2-minute duplicate window, which bounds the retries). One commit per
// event is in flight at a time (MaxInFlight 1): the next one's expected
// sequence is this one's. The commits of a stream's events waiting at
// the same time go as one JetStream atomic batch, each message with its
// own fence and Msg-Id (see batch.go).
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
// balanceSettle, so the survivors of a loss keep what they led. A move is
// a handover (ticketd.handover.<node>): the leader stops owning the
// shard's events, lets their actors' commits end, then steps down in
// favour of the taker (JetStream's stepdown with a preferred leader),
// which campaigns at once; writes pause for the election and the taker's
// activation, and no commit in flight is cut or fenced. Every other node
// forwards the event's requests to the owner over NATS request/reply
// (ticketd.ask.<node>, gob of the registered commands and results with
// the type definitions compiled once per type: see wire.go); a request
// the owner could not have handled (nobody listening, "moved", or refused
// by the fence: nothing of it was written) is sent again until its
// deadline, so a move shows as a pause, not an error. A node evicts its
// actors of a shard whenever it gains or loses its leadership; on a gain
// it activates the shard's events at once (activate.go: load, claim,
// expire what lapsed),
// and imports what they owe (owed.go: mail, webhooks, refunds, pages to
// close, all sent by the owner alone, settled entries replicated in the
// TICKETD_SETTLED stream); on a loss it drops those from its local store.
// Raft elections start after Config.ElectionTimeout (raft_timing.go). The
// fence, not the placement, keeps one writer.
//
// # Snapshots
//
// Snapshots keeps event snapshots in the object store TICKETD_SNAPSHOTS,
// the seqs kept per event in the key-value bucket TICKETD_SNAPINDEX (two
// per event), and trims the event's subject through the older one kept:
// it purges the messages whose records all lie at or before it (Log keeps,
// per event, the last record seq and stream sequence of the messages it
// has seen: maxMarks of them).
//
// # Byte format
//
// A message's data is a version byte (1) then operations, each a kind
// byte and uvarint-prefixed fields:
//
//	'a' append:  seq, record
//	'p' put:     key, value
//	'd' delete:  key
//
// A claim message has no data and the header Ticketd-Claim (the claiming
// node). Every message has the headers Ticketd-First and Ticketd-Last:
// the seqs of its first record (for a claim, the next one) and of the
// event's last record at that message.
//
// # Shared state
//
// What is durable besides the event logs lives on a majority of the nodes
// too, so no acknowledged write lives on one node only:
//
//   - The directory (units, keys, console members and their links):
//     Directory, one subject (dir.log) of the stream TICKETD_DIR, in the
//     event log's message format. It stays a log, not a key-value bucket,
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
//     everywhere within about a second (at once where it was made). The
//     directory is read whole at start (it is small) and never trimmed.
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
//     first answer, or 409 while the first request runs.
//
// Key tokens: an index key made only of letters, digits and -_/= is its
// own subject token, any other is "~" and its base64url. All of these
// streams are read from their leader (AllowDirect off): a replica may not
// have stored an acknowledged message yet.
//
// # Concurrency
//
// Node and Log methods are safe for concurrent use; the commits of one
// event are chained, so they reach the stream in order.
package cluster
