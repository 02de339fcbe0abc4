package node

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Node is one member of the cluster: an embedded nats-server with
// JetStream, an in-process client connection to it, and the shard streams
// of the event log.
type Node struct {
	cfg Config
	srv *server.Server
	nc  *nats.Conn
	js  jetstream.JetStream

	ready      atomic.Bool  // see Ready
	Leaving    atomic.Bool  // Router.Leave began: not ready, never balanced to
	streams    atomic.Bool  // the shard streams exist
	shardsSaid atomic.Int64 // when a shard count mismatch was last logged (see check)
	FwdAddr    atomic.Value // string: the forwarding address it announces (fwdconn.go)

	mu    sync.Mutex
	peers map[string]peerState // node name -> last heartbeat
	// shared are the package's replicated streams made for this node
	// (directory, index, idempotency keys): it is ready once they exist.
	// Under mu.
	shared []*ReplicatedStream

	// handOver, when set (Router.Serve), hands a shard's leadership to
	// another node; without it balance asks the leader to step down. Under
	// mu.
	handOver func(shard int, from, to string) error
	// plan is the leaders' spreading last computed and since when it has
	// not changed (see balance); noBalance stops it (tests).
	plan      []move
	planSince time.Time
	NoBalance atomic.Bool
	settle    atomic.Int64 // nanoseconds a plan settles, 0: balanceSettle (tests shorten it)

	Stop chan struct{}
	wg   sync.WaitGroup
}

type peerState struct {
	ready bool
	seen  time.Time
	leads []int  // the shards it said it leads
	fwd   string // the forwarding address it announces (fwdconn.go)
	s2    bool   // it reads compressed shard messages (formatS2)
}

// Heartbeats: every node publishes its name, readiness and the shards it
// leads every heartbeatEvery, and at once when the shards it leads change
// (its data: "1" or "0", then a space and the shards, comma-separated); a
// node not heard for peerStale is listed as not ready, and the shards it
// said it leads are no longer believed.
const (
	HeartbeatEvery = 500 * time.Millisecond
	PeerStale      = 3 * HeartbeatEvery
	heartbeatSubj  = "ticketd.node."
	watchEvery     = 100 * time.Millisecond
	// serverStartWait bounds the wait for the server to accept
	// connections at start.
	serverStartWait = 2 * time.Minute
	routePing       = time.Second
	routePingsOut   = 3
)

// Start starts the node's server and joins the cluster. It returns once
// the server accepts connections, before the cluster has formed: Ready
// says when the node can serve writes.
func Start(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	setRaftTiming(cfg.ElectionTimeout)
	host, portStr, _ := net.SplitHostPort(cfg.Addr)
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("cluster: addr %q: %w", cfg.Addr, err)
	}
	routes := make([]string, 0, len(cfg.Peers))
	for _, p := range cfg.Peers {
		routes = append(routes, "nats-route://"+p)
	}
	opts := &server.Options{
		ServerName: cfg.NodeName,
		// The client port serves the in-process connection's peers only
		// (tools): loopback, on a free port.
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  filepath.Join(cfg.DataDir, "jetstream"),
		// JetStream syncs its files every 2 minutes by default: an
		// acknowledged batch could be lost with the power of a majority.
		// SyncAlways makes every Raft log write of every stream fsync
		// before it counts (the stream stores then sync on snapshots).
		SyncAlways: true,
		MaxPayload: MaxMessageBytes,
		Cluster: server.ClusterOpts{
			Name: cfg.Name,
			Host: host,
			Port: port,
			// A peer that answers no route ping for routePingsOut of them
			// has its routes closed (the default: 2 minutes per ping). A
			// paused node (SIGSTOP) keeps its sockets open: until its
			// routes close, the servers still pick it for the requests of
			// queue groups (a stream's direct gets) and send it every
			// Raft message; closed, it is treated as a node lost, as after
			// a kill, and rejoins when it answers again.
			PingInterval: routePing,
			MaxPingsOut:  routePingsOut,
			Advertise:    cfg.Advertise,
		},
		Routes: server.RoutesFromStr(strings.Join(routes, ",")),
		NoSigs: true,
	}
	// A cluster address in use fails the start at once: the server would
	// only say it is not accepting connections once serverStartWait ended.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: cluster address %s: %w", cfg.Addr, err)
	}
	_ = ln.Close()
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("cluster: new server: %w", err)
	}
	srv.SetLoggerV2(serverLog{cfg.Logger.With("component", "nats")}, false, false, false)
	srv.Start()
	// The server listens once JetStream has recovered its streams from
	// the data dir, which takes a while for a big one (or on a loaded
	// machine): waited for up to serverStartWait, said every 10 s.
	for waited := time.Duration(0); !srv.ReadyForConnections(10 * time.Second); {
		waited += 10 * time.Second
		if waited >= serverStartWait {
			why := fmt.Sprintf("not accepting connections after %s", waited)
			if srv.ClusterAddr() == nil {
				why += " (no listener on the cluster address " + cfg.Addr + ": in use?)"
			}
			srv.Shutdown()
			return nil, errors.New("cluster: server " + why)
		}
		cfg.Logger.Info("cluster: server starting: not accepting connections yet", "waited", waited)
	}
	nc, err := nats.Connect("", nats.InProcessServer(srv), nats.Name("ticketd-"+cfg.NodeName),
		nats.MaxReconnects(-1), connLog(cfg.Logger))
	if err != nil {
		srv.Shutdown()
		return nil, fmt.Errorf("cluster: connect: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		srv.Shutdown()
		return nil, fmt.Errorf("cluster: jetstream: %w", err)
	}
	n := &Node{cfg: cfg, srv: srv, nc: nc, js: js, peers: map[string]peerState{}, Stop: make(chan struct{})}
	if _, err := nc.Subscribe(heartbeatSubj+"*", n.heard); err != nil {
		n.Close()
		return nil, fmt.Errorf("cluster: subscribe: %w", err)
	}
	n.wg.Add(2)
	go n.watch()
	go n.maintain()
	return n, nil
}

// Name is the node's name.
func (n *Node) Name() string { return n.cfg.NodeName }

// Conn is the node's in-process client connection.
func (n *Node) Conn() *nats.Conn { return n.nc }

// JetStream is the node's JetStream client.
func (n *Node) JetStream() jetstream.JetStream { return n.js }

// Config is the node's validated configuration.
func (n *Node) Config() Config { return n.cfg }

// Detached is a Node that is not started, for the tests of the parts
// that place events: its Config and Shard answer, nothing else does.
func Detached(cfg Config) *Node { return &Node{cfg: cfg} }

// Server is the node's embedded nats-server.
func (n *Node) Server() *server.Server { return n.srv }

// SetPlanSettle sets how long a plan of the leaders' spreading must stand
// before it is made (0: balanceSettle). Tests shorten it: a cluster just
// formed has no election to wait out.
func (n *Node) SetPlanSettle(d time.Duration) { n.settle.Store(int64(d)) }

// Ready reports whether the node can serve writes: the JetStream meta
// group has a leader this node is current with, and the event log's
// streams exist.
func (n *Node) Ready() bool { return n.ready.Load() && !n.Leaving.Load() }

// WaitReady waits until Ready or ctx ends.
func (n *Node) WaitReady(ctx context.Context) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for !n.Ready() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: node %s not ready: %w", n.cfg.NodeName, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// NodeInfo is one node as this node sees it.
type NodeInfo struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
}

// Nodes lists this node and the nodes heard from since it started, by
// name, each ready when it said so within the last peerStale.
func (n *Node) Nodes() []NodeInfo {
	now := time.Now()
	n.mu.Lock()
	out := make([]NodeInfo, 0, len(n.peers)+1)
	for name, p := range n.peers {
		out = append(out, NodeInfo{Name: name, Ready: p.ready && now.Sub(p.seen) < PeerStale})
	}
	if _, ok := n.peers[n.cfg.NodeName]; !ok {
		// Before its own first heartbeat came back.
		out = append(out, NodeInfo{Name: n.cfg.NodeName, Ready: n.Ready()})
	}
	n.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (n *Node) heard(m *nats.Msg) {
	name := strings.TrimPrefix(m.Subject, heartbeatSubj)
	ready, list, _ := strings.Cut(string(m.Data), " ")
	var leads []int
	fwd, s2 := "", false
	for _, f := range strings.Split(list, ",") {
		if a, ok := strings.CutPrefix(f, "@"); ok {
			fwd = a
		} else if f == readsS2 {
			s2 = true
		} else if i, err := strconv.Atoi(f); err == nil && i >= 0 && i < n.cfg.Shards && len(leads) < n.cfg.Shards {
			leads = append(leads, i)
		}
	}
	n.mu.Lock()
	n.peers[name] = peerState{ready: ready == "1", seen: time.Now(), leads: leads, fwd: fwd, s2: s2}
	n.mu.Unlock()
}

// readsS2 is the heartbeat's field saying that its node reads compressed
// shard messages (formatS2); a node of an earlier build skips it like a
// field that is not a shard, and sends none.
const readsS2 = "z"

// Compress says whether this node's writers may compress shard messages:
// the last heartbeat of each of the cluster's nodes (as many as its peers)
// says it reads them. A node of an earlier build in the cluster keeps
// every message readable to it. A node rolled back to such a build after
// compressed messages were written cannot read them (not supported).
func (n *Node) Compress() bool {
	if n.cfg.NoS2 {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	reads := 0
	for _, p := range n.peers {
		if !p.s2 {
			return false
		}
		reads++
	}
	return reads >= len(n.cfg.Peers)
}

// ForwardAddrOf is the forwarding address name announced last ("" when
// none, or not heard within peerStale).
func (n *Node) ForwardAddrOf(name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.peers[name]
	if time.Since(p.seen) >= PeerStale {
		return ""
	}
	return p.fwd
}

// SilentFor says whether name, heard before, has not been heard for d,
// while this node did hear its own heartbeat (which comes back to it like
// the others') within d. A node that heard nothing for d, not even
// itself, was stalled (its process starved of CPU, its GC): its peers'
// heartbeats wait unread in its connection, so their silence says nothing
// of them, and taking them as gone would fail every request forwarded to
// them (seen under a load of 20 on 2 cores: two clusters in one test
// binary each answered 503 "owner gone" at the same instant).
func (n *Node) SilentFor(name string, d time.Duration) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, ok := n.peers[name]
	if !ok || time.Since(p.seen) < d {
		return false
	}
	if self, ok := n.peers[n.cfg.NodeName]; ok && name != n.cfg.NodeName && time.Since(self.seen) >= d {
		return false
	}
	return true
}

// AnnouncedLeader is the node that said last it leads shard, when exactly
// one node heard within peerStale says so ("" otherwise: none, or two
// during a change, when JetStream itself must be asked).
func (n *Node) AnnouncedLeader(shard int) string {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	leader := ""
	for name, p := range n.peers {
		if now.Sub(p.seen) >= PeerStale || !slices.Contains(p.leads, shard) {
			continue
		}
		if leader != "" {
			return ""
		}
		leader = name
	}
	return leader
}

// Led lists the shards this node leads.
func (n *Node) Led() []int {
	var out []int
	for i := range n.cfg.Shards {
		if n.srv.JetStreamIsStreamLeader(GlobalAccount, StreamName(i)) {
			out = append(out, i)
		}
	}
	return out
}

// watch publishes the heartbeat: at once when the shards this node leads
// or its readiness change, and every heartbeatEvery. It never waits on
// JetStream (maintain does), so a busy meta group or a slow leader move
// cannot silence it: the others take a node silent for peerStale as gone,
// and end the requests they forwarded to it.
func (n *Node) watch() {
	defer n.wg.Done()
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	last := time.Time{}
	var leads []int
	said := false
	for {
		now, ready := n.Led(), n.Ready()
		if time.Since(last) >= HeartbeatEvery || !slices.Equal(now, leads) || ready != said {
			last, leads, said = time.Now(), now, ready
			v := []byte("0 ")
			if ready {
				v = []byte("1 ")
			}
			for i, s := range now {
				if i > 0 {
					v = append(v, ',')
				}
				v = strconv.AppendInt(v, int64(s), 10)
			}
			if a, _ := n.FwdAddr.Load().(string); a != "" {
				// After a comma, as "@addr": a node of an earlier build
				// skips it like a field that is not a shard.
				if len(now) > 0 {
					v = append(v, ',')
				}
				v = append(append(v, '@'), a...)
			}
			if !n.cfg.NoS2 {
				if len(v) > 2 {
					v = append(v, ',')
				}
				v = append(v, readsS2...)
			}
			_ = n.nc.Publish(heartbeatSubj+n.cfg.NodeName, v)
		}
		select {
		case <-n.Stop:
			return
		case <-t.C:
		}
	}
}

// maintain keeps Ready current, creates the streams once the cluster can,
// and spreads the shards' leaders (balance).
func (n *Node) maintain() {
	defer n.wg.Done()
	t := time.NewTicker(HeartbeatEvery / 2)
	defer t.Stop()
	balanced := time.Now()
	for {
		ready := n.check()
		if ready != n.ready.Load() {
			n.ready.Store(ready)
			n.cfg.Logger.Info("cluster node readiness", "node", n.cfg.NodeName, "ready", ready)
		}
		if ready && time.Since(balanced) >= BalanceEvery && !n.NoBalance.Load() && !n.Leaving.Load() {
			balanced = time.Now()
			n.balance()
		}
		select {
		case <-n.Stop:
			return
		case <-t.C:
		}
	}
}

func (n *Node) check() bool {
	if !n.srv.JetStreamEnabled() || !n.srv.JetStreamIsCurrent() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// The account's info is answered through the meta leader: it proves
	// one is elected and reachable.
	if _, err := n.js.AccountInfo(ctx); err != nil {
		return false
	}
	if !n.streams.Load() {
		if err := n.ensureStreams(ctx); err != nil {
			if errors.Is(err, errShards) {
				// Not ready for good: said once a minute.
				if last := n.shardsSaid.Load(); time.Since(time.Unix(0, last)) > time.Minute {
					n.shardsSaid.Store(time.Now().UnixNano())
					n.cfg.Logger.Error("cluster: node not joining", "err", err)
				}
				return false
			}
			n.cfg.Logger.Debug("cluster: streams not ready", "err", err)
			return false
		}
		n.streams.Store(true)
	}
	return n.sharedStreams()
}

// register adds r to the streams the node makes before it is ready.
func (n *Node) register(r *ReplicatedStream) {
	n.mu.Lock()
	n.shared = append(n.shared, r)
	n.mu.Unlock()
}

// sharedStreams makes the replicated streams registered (once each) and
// reports whether they all exist. The first requests of a new cluster
// would otherwise wait for their creation (the first keyed orders of a
// new cluster waited 10 s, then answered 503: see streamTry).
func (n *Node) sharedStreams() bool {
	n.mu.Lock()
	shared := slices.Clone(n.shared)
	n.mu.Unlock()
	for _, r := range shared {
		if r.ok.Load() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*streamTry)
		_, err := r.Stream(ctx)
		cancel()
		if err != nil {
			n.cfg.Logger.Debug("cluster: replicated stream not made yet", "stream", r.cfg.Name, "err", err)
			return false
		}
	}
	return true
}

// Leading returns the number of shard streams this node leads, hence the
// share of events it owns.
func (n *Node) Leading() int { return len(n.Led()) }

// balanceEvery is how often a node looks at the spread of the leaders;
// balanceSettle is how long a spreading must have been wanted, unchanged,
// before a node acts on it: leaders elected after a loss, a node that just
// came back, settle first, and a move is never made on a passing view.
const (
	BalanceEvery  = time.Second
	balanceSettle = 5 * time.Second
)

// move is one shard's leadership to move, from the node leading it to
// another.
type move struct {
	shard    int
	from, to string
}

// balance spreads the shard streams' leaders, hence the events' owners,
// over the ready nodes: JetStream alone may elect one node for all of
// them, and a node back from a restart leads none. A move pauses the
// writes of the shard's events, so only a real imbalance is moved, with
// the fewest moves: while some node leads at least two shards more than
// another, one of the former's moves to the latter. spread computes the
// moves from the leaders the heartbeats announce, so every node computes
// the same; a node takes the shards they give it once the same moves have
// been wanted for balanceSettle. A view in which a shard has no leader,
// or two, moves nothing: after a node's loss, the survivors keep the
// shards they led, and only the lost node's are spread.
func (n *Node) balance() {
	plan := n.spread()
	if !slices.Equal(plan, n.plan) {
		n.plan, n.planSince = plan, time.Now()
		return
	}
	settle := time.Duration(n.settle.Load())
	if settle == 0 {
		settle = balanceSettle
	}
	if len(plan) == 0 || time.Since(n.planSince) < settle {
		return
	}
	moved, preloading, refused := false, false, false
	for _, m := range plan {
		if m.to != n.cfg.NodeName {
			continue
		}
		if !n.srv.JetStreamIsStreamCurrent(GlobalAccount, StreamName(m.shard)) {
			// Its replica is catching up (a node just back): it would lose
			// the vote the move starts, and the shard would wait an election
			// timeout for a leader. The same plan is tried next round.
			n.cfg.Logger.Debug("cluster: leader move waits for the replica to catch up", "stream", StreamName(m.shard))
			return
		}
		n.mu.Lock()
		handOver := n.handOver
		n.mu.Unlock()
		var err error
		if handOver != nil {
			err = handOver(m.shard, m.from, m.to)
		} else {
			err = n.StepDown(m.shard, m.to)
		}
		if errors.Is(err, ErrPreloading) {
			n.cfg.Logger.Debug("cluster: leader move waits for its events' preload", "stream", StreamName(m.shard))
			preloading = true
			continue
		}
		if err != nil {
			n.cfg.Logger.Info("cluster: leader move refused", "stream", StreamName(m.shard), "from", m.from, "err", err)
			refused = true
			continue
		}
		moved = true
		n.cfg.Logger.Info("cluster: leader moved to spread the leaders", "stream", StreamName(m.shard), "from", m.from, "to", m.to)
	}
	if preloading && !moved && !refused {
		// The plan stays settled: the move is asked again next round, as
		// soon as the preload is done (at once for a shard with few
		// events), not a balanceSettle later.
		return
	}
	// The next moves are computed from the heartbeats after these.
	n.plan, n.planSince = nil, time.Now()
}

// spread computes the moves that spread the leaders over the ready nodes
// as the heartbeats tell them (nil when they are spread, or when the view
// is not whole: a shard without a leader or with two).
func (n *Node) spread() []move {
	now := time.Now()
	leads := map[string][]int{}
	owner := make([]string, n.cfg.Shards)
	n.mu.Lock()
	for name, p := range n.peers {
		if !p.ready || now.Sub(p.seen) >= PeerStale {
			continue
		}
		leads[name] = nil
		for _, s := range p.leads {
			if owner[s] != "" {
				n.mu.Unlock()
				return nil
			}
			owner[s] = name
			leads[name] = append(leads[name], s)
		}
	}
	n.mu.Unlock()
	if len(leads) < 2 || slices.Contains(owner, "") {
		return nil
	}
	names := make([]string, 0, len(leads))
	for name := range leads {
		names = append(names, name)
	}
	sort.Strings(names)
	var plan []move
	for range n.cfg.Shards {
		lo, hi := names[0], names[0]
		for _, name := range names[1:] {
			if len(leads[name]) < len(leads[lo]) {
				lo = name
			}
			if len(leads[name]) > len(leads[hi]) {
				hi = name
			}
		}
		if len(leads[hi])-len(leads[lo]) < 2 {
			break
		}
		s := slices.Max(leads[hi])
		leads[hi] = slices.DeleteFunc(leads[hi], func(x int) bool { return x == s })
		leads[lo] = append(leads[lo], s)
		plan = append(plan, move{shard: s, from: hi, to: lo})
	}
	return plan
}

// SetHandOver sets how balance moves a shard (nil: stepDown).
func (n *Node) SetHandOver(fn func(shard int, from, to string) error) {
	n.mu.Lock()
	n.handOver = fn
	n.mu.Unlock()
}

// StepDown asks shard's leader to hand its leadership to the node named
// to: the leader sends it a transfer and steps down, and it campaigns at
// once (a node that is not current for the stream loses the vote, and
// the move is tried again later).
func (n *Node) StepDown(shard int, to string) error {
	return n.stepDownStream(StreamName(shard), to)
}

// MaxMessageBytes bounds one message of the event log (and the server's
// max payload); a bigger commit is split (see Log).
const MaxMessageBytes = 4 << 20

// Shard and streamName place an event: its records are in the log of its
// shard, the subject shardSubject of the stream streamName.
func (n *Node) Shard(eventID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(eventID))
	return int(h.Sum32() % uint32(n.cfg.Shards))
}

func StreamName(shard int) string { return streamPrefix + strconv.Itoa(shard) }

// streamPrefix names the shard streams, followed by the shard's number.
const streamPrefix = "TICKETD_EV_"

// errShards refuses a node whose Config.Shards is not the cluster's: it
// would look for events in the wrong shards, and own them alongside their
// real owners.
var errShards = errors.New("cluster: shard count differs from the cluster's")

// shardsKey is the shard streams' metadata key that records the shard
// count the cluster was made with; a stream without it was made by a
// build whose count was always legacyShards.
const (
	shardsKey    = "ticketd_shards"
	legacyShards = 8
)

// clusterShards is the shard count the cluster was made with, by its
// shard streams' metadata (0: none made yet). Nodes making the streams at
// once with the same count agree; a stream beyond this node's count, or
// one recording another count, says the cluster's.
func (n *Node) clusterShards(ctx context.Context) (int, error) {
	names := n.js.StreamNames(ctx)
	var found []string
	for name := range names.Name() {
		if rest, ok := strings.CutPrefix(name, streamPrefix); ok {
			if _, err := strconv.Atoi(rest); err == nil {
				found = append(found, name)
			}
		}
	}
	if err := names.Err(); err != nil {
		return 0, fmt.Errorf("cluster: list the streams: %w", err)
	}
	count := 0
	for _, name := range found {
		st, err := n.js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("cluster: stream %s: %w", name, err)
		}
		c := legacyShards
		if v, ok := st.CachedInfo().Config.Metadata[shardsKey]; ok {
			if c, err = strconv.Atoi(v); err != nil || c < 1 {
				return 0, fmt.Errorf("cluster: stream %s: shard count %q", name, v)
			}
		}
		if count != 0 && c != count {
			return 0, fmt.Errorf("cluster: the shard streams record %d and %d shards", count, c)
		}
		count = c
	}
	return count, nil
}

// checkShards refuses (errShards) a cluster made with another shard count
// than this node's Config.Shards.
func (n *Node) checkShards(ctx context.Context) error {
	have, err := n.clusterShards(ctx)
	if err != nil || have == 0 || have == n.cfg.Shards {
		return err
	}
	return fmt.Errorf("%w: this node has TICKETD_CLUSTER_SHARDS=%d, the cluster's events are spread over %d shard streams: set %d",
		errShards, n.cfg.Shards, have, have)
}

// ensureStreams creates the shard streams (or checks them). A cluster
// made with another shard count is refused before anything is created,
// and checked again after (two nodes set otherwise making the streams at
// once).
func (n *Node) ensureStreams(ctx context.Context) error {
	if err := n.checkShards(ctx); err != nil {
		return err
	}
	for i := range n.cfg.Shards {
		_, err := n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:     StreamName(i),
			Subjects: []string{"ev." + strconv.Itoa(i) + ".>"},
			Storage:  jetstream.FileStorage,
			Replicas: n.cfg.Replicas,
			// Retried publishes whose ack was lost are settled by their
			// Nats-Msg-Id within this window; a retry loop never outlasts it.
			Duplicates: 2 * time.Minute,
			MaxMsgSize: MaxMessageBytes,
			// Replays read in batches with direct gets (directget.go), which
			// need it; every read that must see the last message (the
			// writer's fence, a read's end) asks the leader.
			AllowDirect: true,
			Metadata:    map[string]string{shardsKey: strconv.Itoa(n.cfg.Shards)},
		})
		if err != nil {
			return fmt.Errorf("cluster: stream %s: %w", StreamName(i), err)
		}
		if err := checkShardFormat(ctx, n.js, i); err != nil {
			return err
		}
	}
	if err := n.checkShards(ctx); err != nil {
		return err
	}
	if _, err := n.js.CreateOrUpdateStream(ctx, settledStreamConfig(n.cfg.Replicas)); err != nil {
		return fmt.Errorf("cluster: stream %s: %w", SettledStream, err)
	}
	if _, err := n.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: SnapBucket,
		Storage: jetstream.FileStorage, Replicas: n.cfg.Replicas}); err != nil {
		return fmt.Errorf("cluster: snapshot store: %w", err)
	}
	if _, err := n.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: SnapIndex,
		Storage: jetstream.FileStorage, Replicas: n.cfg.Replicas, History: 1}); err != nil {
		return fmt.Errorf("cluster: snapshot index: %w", err)
	}
	return nil
}

// Close leaves the cluster: the connection, then the server.
func (n *Node) Close() error {
	select {
	case <-n.Stop:
		return nil
	default:
	}
	close(n.Stop)
	n.wg.Wait()
	n.nc.Close()
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
	return nil
}

// connLog logs what a client connection loses: a disconnection (its
// subscriptions and requests in flight with it) and an asynchronous error
// (a slow consumer drops messages), each a lost request or answer.
func connLog(l *slog.Logger) nats.Option {
	return func(o *nats.Options) error {
		o.DisconnectedErrCB = func(_ *nats.Conn, err error) {
			if err != nil {
				l.Warn("cluster: nats connection lost", "err", err)
			}
		}
		o.ReconnectedCB = func(*nats.Conn) { l.Warn("cluster: nats connection back") }
		o.AsyncErrorCB = func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			l.Warn("cluster: nats connection error", "subject", subj, "err", err)
		}
		return nil
	}
}

// serverLog hands nats-server's log to slog.
type serverLog struct{ l *slog.Logger }

func (s serverLog) Noticef(f string, v ...any) { s.l.Debug(fmt.Sprintf(f, v...)) }
func (s serverLog) Warnf(f string, v ...any)   { s.l.Warn(fmt.Sprintf(f, v...)) }
func (s serverLog) Fatalf(f string, v ...any)  { s.l.Error(fmt.Sprintf(f, v...)) }
func (s serverLog) Errorf(f string, v ...any)  { s.l.Error(fmt.Sprintf(f, v...)) }
func (s serverLog) Debugf(f string, v ...any)  {}
func (s serverLog) Tracef(f string, v ...any)  {}

// ErrPreloading refuses a handover while its shard's events are built.
var ErrPreloading = errors.New("cluster: the shard's events are being preloaded first")

// GlobalAccount is the NATS account ticketd uses: the default one.
const GlobalAccount = "$G"

// LeaveTargets names the ready nodes other than this one that should take
// k shards, the ones leading fewest first (ties by name): target i%len
// takes the i-th.
func (n *Node) LeaveTargets(k int) []string {
	now := time.Now()
	type cand struct {
		name  string
		leads int
	}
	var cs []cand
	n.mu.Lock()
	for name, p := range n.peers {
		if name == n.cfg.NodeName || !p.ready || now.Sub(p.seen) >= PeerStale {
			continue
		}
		cs = append(cs, cand{name, len(p.leads)})
	}
	n.mu.Unlock()
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].leads != cs[j].leads {
			return cs[i].leads < cs[j].leads
		}
		return cs[i].name < cs[j].name
	})
	// Spread k shards: each goes to the candidate leading fewest so far.
	var out []string
	for range k {
		if len(cs) == 0 {
			break
		}
		out = append(out, cs[0].name)
		cs[0].leads++
		slices.SortStableFunc(cs, func(a, b cand) int { return a.leads - b.leads })
	}
	return out
}
