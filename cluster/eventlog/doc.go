// Package eventlog is the event log of cluster mode: Log implements
// persistence.Log on JetStream, the events spread over shard streams, one
// writer per shard on each node, claims that fence an older writer, and a
// view of each shard that replays read from. It is below the owed work
// and the trimmer (cluster/settle) and the router (cluster/routing),
// which read its view; see package cluster for the whole.
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
// leader), in batched direct gets (cluster/node/directget.go: up to 1,024 messages or
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
// # Concurrency
//
// Log's methods are safe for concurrent use. Each shard has at most one
// writer on a node (shardWriter), with one message in flight: its flush
// and fly goroutines, started by the first commit queued and ended when
// the queue is empty, publish, retry and settle messages; a commit's
// wait (CommitAsync) blocks until its message is stored or has failed.
// The commits of one event are queued on its shard's writer in order, so
// they reach the stream in order. The index entries of a stored message
// are applied to the local store on a goroutine of their own, in message
// order, and OnIndex (set once, before the log is used) is called there:
// it must not block. OnClaim and ImportClaimed (the feed's import, which
// blocks for its reads: a claim is answered after it) are called on the
// claiming goroutine. Replays
// of one shard that wait at the same time share one pass (runPasses); a
// replay blocks for its reads, each bounded by Config.RequestTimeout.
package eventlog
