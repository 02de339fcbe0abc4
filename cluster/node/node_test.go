package node

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// TestClusterForms starts 3 nodes on loopback: each becomes ready, and
// each lists all three as ready.
func TestClusterForms(t *testing.T) {
	nodes, _ := startCluster(t, 3)
	deadline := time.Now().Add(10 * time.Second)
	for _, nd := range nodes {
		for {
			ns := nd.Nodes()
			ok := len(ns) == 3
			for _, x := range ns {
				ok = ok && x.Ready
			}
			if ok {
				break
			}
			require.True(t, time.Now().Before(deadline), "node %s sees %v", nd.Name(), ns)
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The shard streams are replicated on all three.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := nodes[0].JetStream().Stream(ctx, StreamName(0))
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, info.Config.Replicas)
	require.NotEmpty(t, info.Cluster.Leader)
	require.Len(t, info.Cluster.Replicas, 2)
}

// TestConfigValidate: defaults and refusals.
func TestConfigValidate(t *testing.T) {
	c := Config{NodeName: "a", Addr: "127.0.0.1:6222", Peers: []string{"127.0.0.1:6222"}, DataDir: "d"}
	require.NoError(t, c.Validate())
	require.Equal(t, 1, c.Replicas, "replicas default to at most the peers")
	require.Equal(t, DefaultShards, c.Shards)
	require.Equal(t, settleLag, c.SettleLag)
	require.Equal(t, settleSmall, c.SettleSmall)
	require.Equal(t, settleEvery, c.SettleEvery)
	bad := Config{NodeName: "a.b", Addr: "nope", Peers: []string{"x"}, Replicas: 7}
	require.Error(t, bad.Validate())
	for _, lag := range []int{-1, 99, 10_000_001} {
		c.SettleLag = lag
		require.ErrorContains(t, c.Validate(), "settle lag", "%d", lag)
	}
	c.SettleLag, c.SettleSmall = 100, -1
	require.ErrorContains(t, c.Validate(), "settle small")
}

// TestLeadersSpread: the shard streams' leaders, hence the events'
// owners, end up one per node rather than wherever JetStream elected them.
func TestLeadersSpread(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := startCluster(t, 3)
	deadline := time.Now().Add(60 * time.Second)
	for {
		leads := map[string]int{}
		for _, nd := range nodes {
			for i := range nd.Config().Shards {
				if nd.srv.JetStreamIsStreamLeader(GlobalAccount, StreamName(i)) {
					leads[nd.Name()]++
				}
			}
		}
		if len(leads) == 3 && leads["n1"] == 1 && leads["n2"] == 1 && leads["n3"] == 1 {
			return
		}
		require.True(t, time.Now().Before(deadline), "leaders not spread: %v", leads)
		time.Sleep(250 * time.Millisecond)
	}
}

// TestSpreadMoves: the moves that spread the leaders are the fewest, only
// while a node leads two shards more than another, and none on a view
// with a shard led by nobody or by two.
func TestSpreadMoves(t *testing.T) {
	type view map[string][]int
	cases := []struct {
		name string
		v    view
		want []move
	}{
		{"all on one", view{"n1": {0, 1, 2, 3, 4, 5, 6, 7}, "n2": nil, "n3": nil},
			[]move{{7, "n1", "n2"}, {6, "n1", "n3"}, {5, "n1", "n2"}, {4, "n1", "n3"}, {3, "n1", "n2"}}},
		{"spread", view{"n1": {0, 3, 6}, "n2": {1, 4, 7}, "n3": {2, 5}}, nil},
		{"after a loss, even", view{"n2": {0, 1, 2, 5}, "n3": {3, 4, 6, 7}}, nil},
		{"after a loss, uneven", view{"n2": {0, 1, 2, 3, 4, 5}, "n3": {6, 7}}, []move{{5, "n2", "n3"}, {4, "n2", "n3"}}},
		{"a node back", view{"n1": nil, "n2": {0, 1, 2, 5}, "n3": {3, 4, 6, 7}}, []move{{5, "n2", "n1"}, {7, "n3", "n1"}}},
		{"a shard without leader", view{"n1": nil, "n2": {0, 1, 2, 5}, "n3": {3, 4, 6}}, nil},
		{"a shard led twice", view{"n1": {7}, "n2": {0, 1, 2, 5}, "n3": {3, 4, 6, 7}}, nil},
		{"one node", view{"n1": {0, 1, 2, 3, 4, 5, 6, 7}}, nil},
	}
	for _, c := range cases {
		n := &Node{cfg: Config{Shards: 8}, peers: map[string]peerState{}}
		for name, leads := range c.v {
			n.peers[name] = peerState{ready: true, seen: time.Now(), leads: leads}
		}
		// A node not ready, or not heard for peerStale, counts for nothing.
		n.peers["n9"] = peerState{ready: false, seen: time.Now(), leads: []int{0}}
		n.peers["n8"] = peerState{ready: true, seen: time.Now().Add(-PeerStale), leads: []int{1}}
		require.Equal(t, c.want, n.spread(), c.name)
	}
}

// TestShardCountFixed: a node set to another shard count than the cluster
// was made with does not join (it would look for events in the wrong
// shards): it stays not ready, creates no stream, and logs the count to
// set; set right, it joins.
func TestShardCountFixed(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, cfgs := startCluster(t, 3)
	require.NoError(t, nodes[2].Close())
	var logged lockedBuf
	wrong := cfgs[2]
	wrong.Shards = 5
	wrong.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	nd, err := Start(wrong)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(bg, 8*time.Second)
	require.Error(t, nd.WaitReady(ctx), "not ready")
	cancel()
	require.NoError(t, nd.Close())
	logged.mu.Lock()
	out := logged.Buf.String()
	logged.mu.Unlock()
	require.Contains(t, out, "this node has TICKETD_CLUSTER_SHARDS=5, the cluster's events are spread over 3 shard streams: set 3")
	ctx, cancel = context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	have, err := nodes[0].clusterShards(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, have)
	_, err = nodes[0].js.Stream(ctx, StreamName(3))
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "no stream made by the node set otherwise")

	nd, err = Start(cfgs[2])
	require.NoError(t, err)
	t.Cleanup(func() { _ = nd.Close() })
	rctx, rcancel := context.WithTimeout(bg, 60*time.Second)
	defer rcancel()
	require.NoError(t, nd.WaitReady(rctx))
}

// TestMoveOtherLeaders: a node about to stop moves the leaders of the
// streams it leads, but the shards', to the other nodes and waits for
// them: afterwards it leads none of them, and once it is closed each
// answers a read from a survivor at once (no election to wait out, no
// request lost at a leader shutting down).
func TestMoveOtherLeaders(t *testing.T) {
	nodes, _ := startCluster(t, 3)
	var leaving *Node
	var before []server.StreamDetail
	for _, nd := range nodes {
		led, err := nd.ledStreams()
		require.NoError(t, err)
		led = slices.DeleteFunc(led, func(s server.StreamDetail) bool { return nd.isShardStream(s.Name) })
		if len(led) > len(before) {
			leaving, before = nd, led
		}
	}
	require.NotNil(t, leaving, "no node leads a stream besides the shards'")
	shards := leaving.Led()
	var others []string
	var survivor *Node
	for _, nd := range nodes {
		if nd != leaving {
			others = append(others, nd.Name())
			survivor = nd
		}
	}
	moved, err := leaving.MoveOtherLeaders(bg, others)
	require.NoError(t, err)
	require.Equal(t, len(before), moved)
	after, err := leaving.ledStreams()
	require.NoError(t, err)
	for _, s := range after {
		require.True(t, leaving.isShardStream(s.Name), "%s still led by the leaving node", s.Name)
	}
	require.Equal(t, shards, leaving.Led(), "the shards are the router's to move")

	require.NoError(t, leaving.Close())
	for _, s := range before {
		// The meta group's leader moves with the shutdown (see
		// MoveOtherLeaders): until the survivors have one, a leader's
		// message get is refused (ErrNoMetaLeader), and asked again.
		start := time.Now()
		ctx, cancel := context.WithTimeout(bg, time.Second)
		var err error
		for {
			_, err = LeaderGet(ctx, survivor.Conn(), s.Name, MsgGetRequest{LastFor: "no.such.subject"})
			if !errors.Is(err, ErrNoMetaLeader) || ctx.Err() != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		require.ErrorIs(t, err, jetstream.ErrMsgNotFound, "%s answers a read at once after the stop", s.Name)
		t.Logf("%s: answered after the stop in %s", s.Name, time.Since(start).Round(time.Millisecond))
	}
}

// TestSilentForNotAfterOwnStall: a peer not heard for the period is
// silent while this node hears its own heartbeat; when it has not heard
// even itself for as long (its process was stalled), no peer is silent,
// since their heartbeats wait unread.
func TestSilentForNotAfterOwnStall(t *testing.T) {
	now := time.Now()
	n := &Node{cfg: Config{NodeName: "n1", Shards: 3}, peers: map[string]peerState{
		"n1": {ready: true, seen: now},
		"n2": {ready: true, seen: now.Add(-2 * PeerStale)},
		"n3": {ready: true, seen: now},
	}}
	require.True(t, n.SilentFor("n2", PeerStale))
	require.False(t, n.SilentFor("n3", PeerStale))
	require.False(t, n.SilentFor("n4", PeerStale), "never heard: not silent")
	n.peers["n1"] = peerState{ready: true, seen: now.Add(-2 * PeerStale)}
	require.False(t, n.SilentFor("n2", PeerStale), "this node heard nothing either: stalled, not n2")
	require.True(t, n.SilentFor("n1", PeerStale), "itself, as before")
	delete(n.peers, "n1")
	require.True(t, n.SilentFor("n2", PeerStale), "before its own first heartbeat: as before")
}

// TestWaitQuorumsWithout: a node about to stop finds every stream it
// follows able to commit without it while the other two are current; once
// a third node is gone, each stream the other survivor leads needs the
// asking node's vote, and the wait answers exactly those, after its bound.
func TestWaitQuorumsWithout(t *testing.T) {
	nodes, _ := startCluster(t, 3)
	for _, nd := range nodes {
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		short := nd.WaitQuorumsWithout(ctx, nil)
		cancel()
		require.Empty(t, short, "%s: every stream has a quorum without it", nd.Name())
	}

	require.NoError(t, nodes[2].Close())
	a, b := nodes[0], nodes[1]
	names := func(nd *Node) []string {
		led, err := nd.ledStreams()
		require.NoError(t, err)
		var out []string
		for _, s := range led {
			out = append(out, s.Name)
		}
		slices.Sort(out)
		return out
	}
	// Every stream led by a survivor (the gone node's groups elect anew).
	var total int
	d, err := a.srv.JszAccount(&server.JSzOptions{Account: GlobalAccount, Streams: true})
	require.NoError(t, err)
	total = len(d.Streams)
	deadline := time.Now().Add(60 * time.Second)
	for len(names(a))+len(names(b)) < total {
		require.True(t, time.Now().Before(deadline), "the streams elect leaders among the survivors")
		time.Sleep(100 * time.Millisecond)
	}
	if len(names(b)) == 0 {
		a, b = b, a // a asks about the streams b leads
	}
	want := names(b)
	require.NotEmpty(t, want)
	ctx, cancel := context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	start := time.Now()
	short := a.WaitQuorumsWithout(ctx, nil)
	slices.Sort(short)
	require.Equal(t, want, short, "%s needs its vote for the streams %s leads", a.Name(), b.Name())
	require.GreaterOrEqual(t, time.Since(start), 1900*time.Millisecond, "it waited for them")
}
