// Package routing places each event on one node and gets every request
// to it: Router owns the events of the shards its node leads (activating
// them, importing what they owe), forwards the others' requests to their
// owner in batches (over a TCP connection of its own or NATS), serves the
// requests forwarded to it on its actors, hands shards over for a planned
// move or a graceful stop (Leave), and preloads the events of a shard it
// is about to take. It asks the local actors through Actors (app passes
// the *actors.System) and imports neither actors nor http; see package
// cluster for the whole.
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
// it, moves the leaders of its other streams (change feed, idempotency
// keys, directory, index, settled, snapshots) to current replicas and
// waits for them (node.MoveOtherLeaders: a taker's claim reads the feed
// stream, and a read sent to a leader as it shut down waited a whole
// 3 s try), then asks the ready nodes leading fewest to take its shards
// (ticketd.take.<node>: each taker preloads and asks the handover, again
// while refused, and reports its progress every second), and serves its
// events until each is handed over, as long as each taker progresses
// (given up after LeaveStall without progress, LeaveMax in all); what is
// left moves with the server's shutdown, as after a loss. Last it waits
// until every stream it follows keeps a quorum without it
// (node.WaitQuorumsWithout). A preload is background work paced by the
// taker's own load (actors.System.Preload, package pace: full speed while
// none of its goroutines waits for a core). Every other node
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
// or, for one not activated, its first claim since (cluster/settle: mail, webhooks, refunds, pages to
// close, all sent by the owner alone, settled entries replicated in the
// TICKETD_SETTLED stream, at most 16 messages per event or twice the
// parts of its whole set: a rollup then replaces them with the event's
// settled keys whose put its log still holds and the entries it carries
// past a trim; once the trimmer has settled an event
// through its last record and it owes nothing, its subject is purged:
// the stream keeps the events whose log or debts still need it, not one
// subject per event ever sold; a webhook is settled
// once every endpoint's delivery of it is, an entry a commit deleted once
// the owner saw it gone); on a loss it drops those from its local store, with the webhook
// deliveries made of them. A retried keyed request (ask.Recorder.Look)
// is decided only once the Idempotency-Key records of its event's log
// from before this node's claim are in the local store (keys.go: the
// gain's import, or a read of its own, once per event and gain), so a
// retry that comes before the import replays its write's answer.
// Raft elections start after Config.ElectionTimeout (cluster/node). The
// fence, not the placement, keeps one writer.
//
// # Concurrency
//
// Router's methods are safe for concurrent use. Serve starts its
// goroutines: watchLeaders (evicts and activates on every change of the
// shards led; activations run on goroutines of their own, per shard),
// the owed work's loop (cluster/settle.Owed.Run), the forwarding
// listener and its connections' readers, per owner a request sender and
// a sweeper of the requests past their deadline, and per forwarding node
// an answer sender. Close stops them and waits. Forward blocks until the
// owner answers, the caller's deadline passes or no owner is reachable
// (a move shows as a pause: what could not have been handled is sent
// again); a forwarded request is handed to its actor without a goroutine
// per request (Actors.ServeAsyncRecorded), and its answer is queued for
// its sender. Leave blocks for at most LeaveBound.
package routing
