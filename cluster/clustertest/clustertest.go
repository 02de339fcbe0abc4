// Package clustertest holds what the tests of the cluster's parts share:
// clusters of real nodes on loopback (StartCluster), a logger whose lines
// a failed test prints (FailLog), the event log's small helpers, and the
// TestMain that makes the cluster packages' test processes take turns
// (Main). Only tests import it.
//
// # Concurrency
//
// Its functions are called from tests, parallel ones included; Main
// blocks until no other cluster package's tests run on the machine.
package clustertest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"ticketd/cluster/node"

	"github.com/stretchr/testify/require"

	"ticketd/internal/testaddr"
	"ticketd/internal/testlock"
	"ticketd/persistence"
)

// FreeAddrs reserves n loopback ports for cluster routes.
func FreeAddrs(t *testing.T, n int) []string { return testaddr.Free(t, n) }

// StartCluster starts n nodes on loopback and waits until all are ready.
func StartCluster(t *testing.T, n int) ([]*node.Node, []node.Config) {
	t.Helper()
	return StartClusterShards(t, n, 3)
}

// StartClusterShards is startCluster with the events spread over shards
// streams.
func StartClusterShards(t *testing.T, n, shards int) ([]*node.Node, []node.Config) {
	t.Helper()
	return StartClusterWith(t, n, func(_ int, c *node.Config) { c.Shards = shards })
}

// StartClusterWith is startCluster with node i's Config changed by tweak.
func StartClusterWith(t *testing.T, n int, tweak func(i int, c *node.Config)) ([]*node.Node, []node.Config) {
	t.Helper()
	addrs := FreeAddrs(t, n)
	nodes := make([]*node.Node, n)
	cfgs := make([]node.Config, n)
	for i := range n {
		cfgs[i] = node.Config{NodeName: fmt.Sprintf("n%d", i+1), Addr: addrs[i], Peers: addrs,
			DataDir: t.TempDir(), Shards: 3, Logger: FailLog(t).With("node", fmt.Sprintf("n%d", i+1))}
		tweak(i, &cfgs[i])
		nd, err := node.Start(cfgs[i])
		require.NoError(t, err)
		nodes[i] = nd
		t.Cleanup(func() { _ = nd.Close() })
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), FormTimeout)
	defer cancel()
	for _, nd := range nodes {
		require.NoError(t, nd.WaitReady(ctx), "%d nodes started %s ago", n, time.Since(start).Round(time.Millisecond))
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Logf("a cluster of %d nodes took %s to be ready (a loaded machine)", n, d.Round(time.Millisecond))
	}
	return nodes, cfgs
}

// FormTimeout bounds how long StartCluster waits for its nodes to be
// ready. A cluster forms in a few seconds alone, but a package's parallel
// tests start up to ParallelTests clusters at once beside another test
// process on two cores: at load 20 and more, cluster/settle's tests failed
// with "node not ready" after the 60 s this wait once had. The wait is
// for the precondition, not a measure: the package's -timeout 9m stays the
// bound of a cluster that never forms.
const FormTimeout = 3 * time.Minute

// Spread reports whether the shards' leaders are spread over nodes as
// Node.balance spreads them: every shard led by one of them, and no node
// leading two more than another.
func Spread(nodes []*node.Node) bool {
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

// WaitSpread waits until the leaders are spread over nodes. Meanwhile a
// plan settles in a second, not balanceSettle: a cluster just formed has
// no election to wait out, and the tests start sooner.
func WaitSpread(t *testing.T, nodes []*node.Node) {
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
	for !Spread(nodes) {
		require.True(t, time.Now().Before(deadline), "leaders not spread")
		time.Sleep(100 * time.Millisecond)
	}
}

// failLogs holds, per test, what its nodes logged: printed only when the
// test fails, so a failover that took too long leaves its story.
var failLogs sync.Map // *testing.T -> *lockedBuf

type lockedBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 4<<20 {
		return len(p), nil // bounded: the start of the story is kept
	}
	return b.buf.Write(p)
}

// FailLog is t's logger of the nodes and actors, shown if t fails.
func FailLog(t *testing.T) *slog.Logger {
	v, loaded := failLogs.LoadOrStore(t, &lockedBuf{})
	b := v.(*lockedBuf)
	if !loaded {
		t.Cleanup(func() {
			failLogs.Delete(t)
			if t.Failed() {
				b.mu.Lock()
				t.Logf("what the nodes logged:\n%s", b.buf.String())
				b.mu.Unlock()
			}
		})
	}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type LogRec struct {
	Seq uint64
	Rec string
}

func ReplayLog(t *testing.T, l interface {
	Replay(id string, after uint64, fn func(seq uint64, record []byte) error) error
}, id string) []LogRec {
	t.Helper()
	var out []LogRec
	require.NoError(t, l.Replay(id, 0, func(seq uint64, rec []byte) error {
		out = append(out, LogRec{seq, string(rec)})
		return nil
	}))
	return out
}

func CommitRecs(l persistence.Log, id string, from, to uint64, index ...string) error {
	b := l.NewBatch()
	defer b.Close()
	for s := from; s <= to; s++ {
		b.Append(id, s, fmt.Appendf(nil, "r%d", s))
	}
	for _, k := range index {
		b.Put([]byte(k), []byte("v"))
	}
	wait, err := l.CommitAsync(b)
	if err != nil {
		return err
	}
	return wait()
}

func Claim(t *testing.T, l interface {
	Claim(id string, last uint64) (persistence.Log, error)
}, id string, last uint64) persistence.Log {
	t.Helper()
	w, err := l.Claim(id, last)
	require.NoError(t, err)
	return w
}

func OpenLocal(t *testing.T) *persistence.Store {
	t.Helper()
	s, err := persistence.Open(persistence.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// ParallelTests is how many of a cluster package's parallel tests run at
// once unless -parallel is given. The tests marked t.Parallel each start
// their own nodes and spend most of their time waiting (elections, the
// leaders' spreading, heartbeats, timers), not computing: together they
// take a fraction of the time they take one after another, with the CPU
// mostly idle (bench/results/20261129-cluster-history.md). Tests that measure a pause or a failover's gap
// stay sequential, and Go runs those alone, before the parallel ones.
const ParallelTests = 6

// Main runs a cluster package's tests (its TestMain) with -parallel
// ParallelTests unless the flag is given, once no other cluster package's
// tests run on the machine (see package internal/testlock).
func Main(m *testing.M) {
	release := Turn()
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", fmt.Sprint(ParallelTests))
	}
	code := m.Run()
	release()
	os.Exit(code)
}

// Turn waits until no other cluster package's tests run on the machine
// and returns the release of the turn (see package internal/testlock).
func Turn() (release func()) {
	release, err := testlock.Exclusive("cluster")
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // run anyway: only slower or flakier
		return func() {}
	}
	return release
}
