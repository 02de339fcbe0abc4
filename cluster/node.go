package cluster

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

	ready   atomic.Bool // see Ready
	streams atomic.Bool // the shard streams exist

	mu    sync.Mutex
	peers map[string]peerState // node name -> last heartbeat

	stop chan struct{}
	wg   sync.WaitGroup
}

type peerState struct {
	ready bool
	seen  time.Time
	leads []int // the shards it said it leads
}

// Heartbeats: every node publishes its name, readiness and the shards it
// leads every heartbeatEvery, and at once when the shards it leads change
// (its data: "1" or "0", then a space and the shards, comma-separated); a
// node not heard for peerStale is listed as not ready, and the shards it
// said it leads are no longer believed.
const (
	heartbeatEvery = 500 * time.Millisecond
	peerStale      = 3 * heartbeatEvery
	heartbeatSubj  = "ticketd.node."
	watchEvery     = 100 * time.Millisecond
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
		MaxPayload: maxMessageBytes,
		Cluster: server.ClusterOpts{
			Name: cfg.Name,
			Host: host,
			Port: port,
		},
		Routes: server.RoutesFromStr(strings.Join(routes, ",")),
		NoSigs: true,
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("cluster: new server: %w", err)
	}
	srv.SetLoggerV2(serverLog{cfg.Logger.With("component", "nats")}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("cluster: server not accepting connections after 10s")
	}
	nc, err := nats.Connect("", nats.InProcessServer(srv), nats.Name("ticketd-"+cfg.NodeName),
		nats.MaxReconnects(-1))
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
	n := &Node{cfg: cfg, srv: srv, nc: nc, js: js, peers: map[string]peerState{}, stop: make(chan struct{})}
	if _, err := nc.Subscribe(heartbeatSubj+"*", n.heard); err != nil {
		n.Close()
		return nil, fmt.Errorf("cluster: subscribe: %w", err)
	}
	n.wg.Add(1)
	go n.watch()
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

// Ready reports whether the node can serve writes: the JetStream meta
// group has a leader this node is current with, and the event log's
// streams exist.
func (n *Node) Ready() bool { return n.ready.Load() }

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
		out = append(out, NodeInfo{Name: name, Ready: p.ready && now.Sub(p.seen) < peerStale})
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
	for _, f := range strings.Split(list, ",") {
		if i, err := strconv.Atoi(f); err == nil && i >= 0 && i < n.cfg.Shards && len(leads) < n.cfg.Shards {
			leads = append(leads, i)
		}
	}
	n.mu.Lock()
	n.peers[name] = peerState{ready: ready == "1", seen: time.Now(), leads: leads}
	n.mu.Unlock()
}

// silentFor says whether name, heard before, has not been heard for d.
func (n *Node) silentFor(name string, d time.Duration) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, ok := n.peers[name]
	return ok && time.Since(p.seen) >= d
}

// announcedLeader is the node that said last it leads shard, when exactly
// one node heard within peerStale says so ("" otherwise: none, or two
// during a change, when JetStream itself must be asked).
func (n *Node) announcedLeader(shard int) string {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	leader := ""
	for name, p := range n.peers {
		if now.Sub(p.seen) >= peerStale || !slices.Contains(p.leads, shard) {
			continue
		}
		if leader != "" {
			return ""
		}
		leader = name
	}
	return leader
}

// led lists the shards this node leads.
func (n *Node) led() []int {
	var out []int
	for i := range n.cfg.Shards {
		if n.srv.JetStreamIsStreamLeader(globalAccount, streamName(i)) {
			out = append(out, i)
		}
	}
	return out
}

// watch keeps Ready current, creates the streams once the cluster can, and
// publishes the heartbeat.
func (n *Node) watch() {
	defer n.wg.Done()
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	last := time.Time{}
	var leads []int
	checked := time.Time{}
	ready, said := false, false
	// The first balance waits a round, for every node's heartbeat.
	balanced := time.Now()
	for {
		if time.Since(checked) >= heartbeatEvery/2 {
			checked = time.Now()
			ready = n.check()
		}
		if ready != n.ready.Load() {
			n.ready.Store(ready)
			n.cfg.Logger.Info("cluster node readiness", "node", n.cfg.NodeName, "ready", ready)
		}
		if ready && time.Since(balanced) >= balanceEvery {
			balanced = time.Now()
			n.balance()
		}
		now := n.led()
		if time.Since(last) >= heartbeatEvery || !slices.Equal(now, leads) || ready != said {
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
			_ = n.nc.Publish(heartbeatSubj+n.cfg.NodeName, v)
		}
		select {
		case <-n.stop:
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
			n.cfg.Logger.Debug("cluster: streams not ready", "err", err)
			return false
		}
		n.streams.Store(true)
	}
	return true
}

// Leading returns the number of shard streams this node leads, hence the
// share of events it owns.
func (n *Node) Leading() int { return len(n.led()) }

// balanceEvery is how often a node takes the leadership of the shards it
// prefers.
const balanceEvery = 5 * time.Second

// balance spreads the shard streams' leaders, hence the events' owners,
// over the ready nodes: JetStream alone may elect one node for all of
// them. Shard i prefers the (i mod n)-th ready node by name; a node that
// prefers a shard it does not lead asks its leader to step down in its
// favour. The nodes agree once their heartbeats agree; a node that is not
// current for the stream is refused by the server, and tries again later.
func (n *Node) balance() {
	var names []string
	for _, p := range n.Nodes() {
		if p.Ready {
			names = append(names, p.Name)
		}
	}
	if len(names) < 2 {
		return
	}
	for i := range n.cfg.Shards {
		if names[i%len(names)] != n.cfg.NodeName || n.srv.JetStreamIsStreamLeader(globalAccount, streamName(i)) {
			continue
		}
		body := fmt.Appendf(nil, `{"placement":{"preferred":%q}}`, n.cfg.NodeName)
		m, err := n.nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+streamName(i), body, 2*time.Second)
		if err != nil {
			n.cfg.Logger.Debug("cluster: leader move refused", "stream", streamName(i), "err", err)
			continue
		}
		n.cfg.Logger.Debug("cluster: leader move", "stream", streamName(i), "to", n.cfg.NodeName, "answer", string(m.Data))
	}
}

// maxMessageBytes bounds one message of the event log (and the server's
// max payload); a bigger commit is split (see Log).
const maxMessageBytes = 4 << 20

// shard and streamName place an event: its records are in the log of its
// shard, the subject shardSubject of the stream streamName.
func (n *Node) shard(eventID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(eventID))
	return int(h.Sum32() % uint32(n.cfg.Shards))
}

func streamName(shard int) string { return "TICKETD_EV_" + strconv.Itoa(shard) }

// ensureStreams creates the shard streams (or checks them).
func (n *Node) ensureStreams(ctx context.Context) error {
	for i := range n.cfg.Shards {
		_, err := n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:     streamName(i),
			Subjects: []string{"ev." + strconv.Itoa(i) + ".>"},
			Storage:  jetstream.FileStorage,
			Replicas: n.cfg.Replicas,
			// Retried publishes whose ack was lost are settled by their
			// Nats-Msg-Id within this window; a retry loop never outlasts it.
			Duplicates: 2 * time.Minute,
			MaxMsgSize: maxMessageBytes,
		})
		if err != nil {
			return fmt.Errorf("cluster: stream %s: %w", streamName(i), err)
		}
		if err := checkShardFormat(ctx, n.js, i); err != nil {
			return err
		}
	}
	if _, err := n.js.CreateOrUpdateStream(ctx, settledStreamConfig(n.cfg.Replicas)); err != nil {
		return fmt.Errorf("cluster: stream %s: %w", settledStream, err)
	}
	if _, err := n.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: snapBucket,
		Storage: jetstream.FileStorage, Replicas: n.cfg.Replicas}); err != nil {
		return fmt.Errorf("cluster: snapshot store: %w", err)
	}
	if _, err := n.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: snapIndex,
		Storage: jetstream.FileStorage, Replicas: n.cfg.Replicas, History: 1}); err != nil {
		return fmt.Errorf("cluster: snapshot index: %w", err)
	}
	return nil
}

// Close leaves the cluster: the connection, then the server.
func (n *Node) Close() error {
	select {
	case <-n.stop:
		return nil
	default:
	}
	close(n.stop)
	n.wg.Wait()
	n.nc.Close()
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
	return nil
}

// serverLog hands nats-server's log to slog.
type serverLog struct{ l *slog.Logger }

func (s serverLog) Noticef(f string, v ...any) { s.l.Debug(fmt.Sprintf(f, v...)) }
func (s serverLog) Warnf(f string, v ...any)   { s.l.Warn(fmt.Sprintf(f, v...)) }
func (s serverLog) Fatalf(f string, v ...any)  { s.l.Error(fmt.Sprintf(f, v...)) }
func (s serverLog) Errorf(f string, v ...any)  { s.l.Error(fmt.Sprintf(f, v...)) }
func (s serverLog) Debugf(f string, v ...any)  {}
func (s serverLog) Tracef(f string, v ...any)  {}
