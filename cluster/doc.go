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
// appends a claim message fenced the same way; its stream sequence is the
// owner's epoch. Any earlier owner's next append then fails with
// JetStream error 10071 (wrong last sequence): Log answers ErrFenced, and
// the event actor answers 503 to everything waiting and stops. Error 10164
// (the subject has a publish in process) and a missing ack (an election)
// are transient: the publish is retried with the same Nats-Msg-Id
// (<eventId>.<epoch>.<n>), so a publish stored whose ack was lost is
// answered as a duplicate with its sequence, never stored twice (the
// server checks the id before the expected sequence, within the stream's
// 2-minute duplicate window, which bounds the retries). One commit per
// event is in flight at a time (MaxInFlight 1): the next one's expected
// sequence is this one's.
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
// node). Every message has the header Ticketd-Last: the seq of the last
// record of the event at that message.
//
// # Concurrency
//
// Node and Log methods are safe for concurrent use; the commits of one
// event are chained, so they reach the stream in order.
package cluster
