// Package node runs this process's member of the ticketd cluster: an
// embedded nats-server with JetStream, its readiness, the heartbeat that
// tells the other nodes what it leads, the spreading of the shards'
// leaders over the nodes, and the JetStream primitives the other parts of
// the cluster build on (the streams they use, made before the node is
// ready; fenced and atomic publishes; bulk direct gets; replicated
// streams of one subject per key). The parts above it: cluster/eventlog
// (the event log), cluster/shared (directory, index, idempotency keys),
// cluster/settle (owed work, snapshots and the trimmer), cluster/routing
// (ownership and forwarding); see package cluster for the whole.
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
// Leaders: every node announces the shards it leads in its heartbeat, at
// once when they change; the heartbeat has a goroutine of its own that
// never waits on JetStream, since a node silent for PeerStale is taken as
// gone. The node spreads the leaders over the ready nodes (JetStream alone
// may elect one node for all, and a restarted node leads none): only while
// a node leads two shards more than another, with the fewest moves,
// computed alike on every node from the heartbeats and made once wanted
// unchanged for balanceSettle; a move is handed to the router
// (SetHandOver) when one serves. Raft elections start after
// Config.ElectionTimeout (raft_timing.go: nats-server has no setting for
// it; TestRaftInternals fails by name when its internals change).
//
// A graceful stop: MoveOtherLeaders moves the leaders of the streams the
// node leads, but the shards' (the router hands those over with their
// events), to current replicas on the other nodes and waits for their
// election, before the server's shutdown would move them to a peer picked
// at random with the requests in flight at the old leader unanswered
// (leave.go); and once the shards are handed over, WaitQuorumsWithout
// waits until every stream the node follows can commit without its vote
// (a replica not current on another node would otherwise stop the
// group's writes until the stopped node is back). A read or publish of a replicated stream that meets a
// silent leader is asked again after firstTry, then twice as long each
// time up to Config.RequestTimeout (kv.go).
//
// Existing data: a shard stream holding per-event subjects (the format of
// earlier versions, one subject per event) makes the node refuse to start
// (ErrOldFormat): cluster mode had not shipped, so the fix is empty data
// dirs.
//
// # Concurrency
//
// Start starts the server and two goroutines of the node's own: watch
// (the heartbeat, every heartbeatEvery and at once on a change; it never
// waits on JetStream) and maintain (readiness, the streams, the leaders'
// spreading; it is the one that waits on JetStream). Close stops both and
// waits for them, then shuts the server down. Every method of Node is
// safe for concurrent use; Ready and the placement methods (Shard,
// Leading, Nodes) never block, WaitReady blocks until ready or its
// context ends, and the JetStream helpers (direct gets, PublishAtomic,
// replicated streams) block for at most the timeouts they are given.
package node
