// Package shared keeps on a majority of the cluster's nodes what is
// durable besides the event logs: the directory (Directory, a log with
// optimistic concurrency), the event index, the audit log, webhook
// endpoints, console sessions and cluster-wide secrets (Index, one
// subject per key, copied into each node's local store), and the
// Idempotency-Key claims and answers (Idempotency). Each implements an
// interface of its user (actors.SharedLog, actors.SharedIndex,
// idempotency.RecordingStore) without importing it; app wires them.
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
//     deletion is put as an empty value. A keyed write of an endpoint
//     (create, rotate, enable, disable) puts the request's Idempotency-Key
//     record ("idem/", 24 h as TTL) with it in one atomic batch
//     (Index.PutAtomic; the stream allows atomic publish), and a retry of
//     a key claimed before reads it back from the leader before writing
//     again (webhooks.Service.ShareRecords). Concurrent changes of one
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
// Directory, Index and Idempotency are safe for concurrent use. Directory
// follows the log on a goroutine of its own (Follow: a read on every
// notice and every second) until Close; its reads and appends block for
// at most Config.RequestTimeout each, and Read calls its functions on
// the caller's goroutine. Index copies the stream into the local store on
// one goroutine (an ordered consumer) until Close; Put waits for a
// majority, PutApplied also for the node's own copy, and Published never
// blocks (its put runs on a goroutine). Idempotency's Begin and Finish
// block for a few JetStream requests each (a read of the key's subject, a
// fenced publish), each bounded by the request timeout.
package shared
