package node

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// childNodeEnv holds the Config (JSON) of a node the test binary runs in
// a process of its own (startChildNode): one a test can pause with
// SIGSTOP, which keeps its sockets open, unlike a node closed or killed.
const childNodeEnv = "TICKETD_TEST_CHILD_NODE"

// runChildNode starts the node of cfg and serves until killed.
func runChildNode(cfg string) {
	var c Config
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child node:", err)
		os.Exit(2)
	}
	c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if _, err := Start(c); err != nil {
		fmt.Fprintln(os.Stderr, "child node:", err)
		os.Exit(1)
	}
	select {}
}

// startChildNode runs the node of cfg in a process of its own; the test
// kills it when it ends.
func startChildNode(t *testing.T, cfg Config) *os.Process {
	t.Helper()
	b, err := json.Marshal(Config{NodeName: cfg.NodeName, Addr: cfg.Addr, Peers: cfg.Peers, DataDir: cfg.DataDir, Shards: cfg.Shards})
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childNodeEnv+"="+string(b))
	var logged lockedBuf
	cmd.Stderr = &logged
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("what the child node %s logged:\n%s", cfg.NodeName, logged.Buf.String())
		}
	})
	return cmd.Process
}

// routed reports whether nd has a route to the node named peer.
func routed(nd *Node, peer string) bool {
	rz, err := nd.srv.Routez(nil)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(rz.Routes, func(r *server.RouteInfo) bool { return r.RemoteName == peer })
}

// A paused node (SIGSTOP: its sockets stay open, nothing answers) must not
// hold the survivors' reads: the server picks any replica for a direct
// get, the paused one too until its routes close, and a read that waited
// for its answer waited for the read's whole try (the SIGSTOP chaos run's
// new owner read its snapshot and replay 8-15 times slower than after a
// kill -9). Now a direct get unanswered for directFirstWait is asked again,
// and the routes of a node that answers no route ping are closed: it
// rejoins once it answers again.
func TestReadsWhileAPeerIsPaused(t *testing.T) {
	addrs := freeAddrs(t, 3)
	cfgs := make([]Config, 3)
	for i := range cfgs {
		cfgs[i] = Config{NodeName: fmt.Sprintf("n%d", i+1), Addr: addrs[i], Peers: addrs,
			DataDir: t.TempDir(), Shards: 3, Logger: failLog(t).With("node", fmt.Sprintf("n%d", i+1))}
	}
	child := startChildNode(t, cfgs[2])
	var nodes []*Node
	for _, cfg := range cfgs[:2] {
		nd, err := Start(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = nd.Close() })
		nodes = append(nodes, nd)
	}
	ctx, cancel := context.WithTimeout(bg, 90*time.Second)
	defer cancel()
	for _, nd := range nodes {
		require.NoError(t, nd.WaitReady(ctx))
	}
	n1 := nodes[0]
	require.Eventually(t, func() bool { return routed(n1, "n3") }, 30*time.Second, 100*time.Millisecond)

	// A stream with a replica on every node, led by a survivor.
	const stream, subject, msgs = "PAUSED", "paused.x", 50
	st, err := n1.js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"paused.>"},
		Replicas: 3, AllowDirect: true, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	for i := range msgs {
		_, err := n1.js.Publish(ctx, subject, fmt.Appendf(nil, "m%d", i))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		info, err := st.Info(ctx)
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "n3" {
			if err == nil && info.Cluster != nil {
				_, _ = n1.nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, []byte(`{"placement":{"preferred":"n1"}}`), 2*time.Second)
			}
			return false
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Lag > 0 {
				return false
			}
		}
		return len(info.Cluster.Replicas) == 2
	}, 60*time.Second, 200*time.Millisecond, "every replica current, a survivor leading")

	require.NoError(t, child.Signal(syscall.SIGSTOP))
	paused := time.Now()

	// Reads one message a request, as many as it takes to meet the paused
	// replica many times over: each within a few first waits (0.5, 1, 2 s:
	// the paused node's routes close meanwhile), where a read that met it
	// waited its whole context before (here the test's 90 s).
	for from := uint64(1); from <= msgs; from++ {
		start := time.Now()
		got, err := DirectGet(ctx, n1.nc, stream, subject, from, 1, 0)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, from, got[0].Sequence)
		require.Less(t, time.Since(start), 10*time.Second, "a direct get waited on the paused node")
	}
	last, err := DirectLast(ctx, n1.nc, stream, subject)
	require.NoError(t, err)
	require.Equal(t, uint64(msgs), last.Sequence)

	// The paused node's routes close: its replicas are no longer picked.
	require.Eventually(t, func() bool { return !routed(n1, "n3") && !routed(nodes[1], "n3") },
		20*time.Second, 100*time.Millisecond, "routes to the paused node still open")
	t.Logf("routes to the paused node closed %s after the pause", time.Since(paused).Round(100*time.Millisecond))

	// Resumed, it rejoins by itself.
	require.NoError(t, child.Signal(syscall.SIGCONT))
	require.Eventually(t, func() bool { return routed(n1, "n3") && routed(nodes[1], "n3") },
		60*time.Second, 100*time.Millisecond, "the resumed node did not rejoin")
}
