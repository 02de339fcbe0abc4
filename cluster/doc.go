// Package cluster runs ticketd as a member of a NATS JetStream cluster
// embedded in every node: the event log replicated over the nodes, so an
// acknowledged write survives the loss of any minority of them. This
// directory holds only this overview and the tests of the whole (three
// real app.Main nodes in one process); the parts are packages by job,
// each with its manual and concurrency contract in its doc.go:
//
//	node/       the embedded nats-server, readiness, heartbeats, the
//	            spreading of the shards' leaders, the Raft timing, the
//	            streams every part uses and the JetStream primitives
//	            (fenced and atomic publishes, direct gets, replicated
//	            streams of one subject per key)
//	eventlog/   the replicated event log: shard streams, one writer per
//	            shard with claims that fence an older writer, the replay
//	            view, the shard messages' byte format
//	shared/     the directory, the event index (and audit log, webhook
//	            endpoints, sessions, secrets) and the Idempotency-Key
//	            store, replicated for every node
//	settle/     what an event owes (Owed) and what frees the log behind
//	            it: the settled stream, snapshots, and the trimmer
//	routing/    ownership and forwarding: the router (activation, owed
//	            work's import, handovers, graceful leave, preload), the
//	            batched asks, forwarding connections and their wire format
//	clustertest/ helpers the parts' tests share (clusters on loopback)
//	chaos/      real processes killed, paused and restarted under load
//
// Imports go one way: node <- eventlog <- settle <- routing, and node <-
// shared. None imports actors or http: routing asks the local actors
// through its Actors interface, and shared implements actors' and the
// pipeline's interfaces (actors.SharedLog, actors.SharedIndex,
// idempotency.RecordingStore) in terms of lower packages' types (ask,
// idempotency, persistence, event). app.Main wires them (app/main.go
// joinCluster, app/cluster_shared.go).
//
// In short: events are spread over Config.Shards streams by a hash of
// their id; an event is owned by the node leading its shard's stream
// (JetStream elects and moves leaders; the node spreads them); every
// other node forwards the event's requests to its owner; the owner's one
// writer per shard appends under a claim the stream fences, so an older
// owner can never write after a newer one's claim. What an event owes
// (mail, webhooks, refunds, pages to close) is sent by its owner and
// carried past a trim in the settled stream; the change feed's entries
// travel in the log too, are imported by a new owner at its claim and
// carried past a trim in the feed stream (settle/feed.go); snapshots and the trimmer
// keep the shard logs bounded. Measurements that shaped these choices
// are in bench/results/20261129-cluster-history.md and the results it
// names.
package cluster
