package node

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/internal/testaddr"
)

// freeAddrs reserves n loopback ports for cluster routes.
func freeAddrs(t *testing.T, n int) []string { return testaddr.Free(t, n) }

// startCluster starts n nodes on loopback and waits until all are ready.
func startCluster(t *testing.T, n int) ([]*Node, []Config) {
	t.Helper()
	return startClusterShards(t, n, 3)
}

// startClusterShards is startCluster with the events spread over shards
// streams.
func startClusterShards(t *testing.T, n, shards int) ([]*Node, []Config) {
	t.Helper()
	return startClusterWith(t, n, func(_ int, c *Config) { c.Shards = shards })
}

// startClusterWith is startCluster with node i's Config changed by tweak.
func startClusterWith(t *testing.T, n int, tweak func(i int, c *Config)) ([]*Node, []Config) {
	t.Helper()
	addrs := freeAddrs(t, n)
	nodes := make([]*Node, n)
	cfgs := make([]Config, n)
	for i := range n {
		cfgs[i] = Config{NodeName: fmt.Sprintf("n%d", i+1), Addr: addrs[i], Peers: addrs,
			DataDir: t.TempDir(), Shards: 3, Logger: failLog(t).With("node", fmt.Sprintf("n%d", i+1))}
		tweak(i, &cfgs[i])
		nd, err := Start(cfgs[i])
		require.NoError(t, err)
		nodes[i] = nd
		t.Cleanup(func() { _ = nd.Close() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, nd := range nodes {
		require.NoError(t, nd.WaitReady(ctx))
	}
	return nodes, cfgs
}

// spread reports whether the shards' leaders are spread over nodes as
// Node.balance spreads them: every shard led by one of them, and no node
// leading two more than another.
func spread(nodes []*Node) bool {
	lo, hi, led := -1, 0, 0
	for _, nd := range nodes {
		n := nd.Leading()
		led += n
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	return led == nodes[0].Config().Shards && hi-lo < 2
}

// waitSpread waits until the leaders are spread over nodes. Meanwhile a
// plan settles in a second, not balanceSettle: a cluster just formed has
// no election to wait out, and the tests start sooner.
func waitSpread(t *testing.T, nodes []*Node) {
	t.Helper()
	for _, nd := range nodes {
		nd.SetPlanSettle(time.Second)
	}
	defer func() {
		for _, nd := range nodes {
			nd.SetPlanSettle(0)
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !spread(nodes) {
		require.True(t, time.Now().Before(deadline), "leaders not spread")
		time.Sleep(100 * time.Millisecond)
	}
}

// failLogs holds, per test, what its nodes logged: printed only when the
// test fails, so a failover that took too long leaves its story.
var failLogs sync.Map // *testing.T -> *lockedBuf

type lockedBuf struct {
	mu  sync.Mutex
	Buf bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Buf.Len() > 4<<20 {
		return len(p), nil // bounded: the start of the story is kept
	}
	return b.Buf.Write(p)
}

// failLog is t's logger of the nodes and actors, shown if t fails.
func failLog(t *testing.T) *slog.Logger {
	v, loaded := failLogs.LoadOrStore(t, &lockedBuf{})
	b := v.(*lockedBuf)
	if !loaded {
		t.Cleanup(func() {
			failLogs.Delete(t)
			if t.Failed() {
				b.mu.Lock()
				t.Logf("what the nodes logged:\n%s", b.Buf.String())
				b.mu.Unlock()
			}
		})
	}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

var bg = context.Background()
