package cluster

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	"ticketd/internal/testaddr"
)

// parallelTests is how many of the package's parallel tests run at once
// unless -parallel is given. The tests marked t.Parallel each start their
// own nodes and spend most of their time waiting (elections, the leaders'
// spreading, heartbeats, timers), not computing: five of the three-node app
// tests took 147 s one after another and 36 s together, with the CPU mostly
// idle. Tests that measure a pause or a failover's gap stay sequential, and
// Go runs those alone, before the parallel ones.
const parallelTests = 6

func TestMain(m *testing.M) {
	if cfg := os.Getenv(childNodeEnv); cfg != "" {
		runChildNode(cfg) // never returns: see startChildNode
	}
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", fmt.Sprint(parallelTests))
	}
	os.Exit(m.Run())
}

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
	return led == nodes[0].cfg.Shards && hi-lo < 2
}

// waitSpread waits until the leaders are spread over nodes. Meanwhile a
// plan settles in a second, not balanceSettle: a cluster just formed has
// no election to wait out, and the tests start sooner.
func waitSpread(t *testing.T, nodes []*Node) {
	t.Helper()
	for _, nd := range nodes {
		nd.settle.Store(int64(time.Second))
	}
	defer func() {
		for _, nd := range nodes {
			nd.settle.Store(0)
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

// failLog is t's logger of the nodes and actors, shown if t fails.
func failLog(t *testing.T) *slog.Logger {
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

// sellable creates event evt through sys (unit bu_1, a month ahead) with
// one open ticket type of capacity places, publishes it, and answers the
// ticket type's id.
func sellable(t *testing.T, sys *actors.System, evt string, capacity int) string {
	t.Helper()
	starts := event.Time{Time: time.Now().Add(30 * 24 * time.Hour).UTC()}
	_, err := sys.CreateEvent(bg, "bu_1", evt, event.CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &starts})
	require.NoError(t, err)
	tt, err := actors.Ask(bg, sys, evt, event.CreateTicketType{Name: "GA", Capacity: &capacity})
	require.NoError(t, err)
	_, err = actors.Ask(bg, sys, evt, event.UpdateTicketType{ID: tt.ID, Status: event.Some("open")})
	require.NoError(t, err)
	_, err = actors.Ask(bg, sys, evt, event.UpdateEvent{Status: event.Some("published")})
	require.NoError(t, err)
	return tt.ID
}

// orderWhenUp reads order id of evt through sys, asking again while the
// event answers ErrUnavailable (a 503: its new owner activates it) until
// ctx ends; any other error fails t, with msgAndArgs.
func orderWhenUp(t *testing.T, ctx context.Context, sys *actors.System, evt, id string, msgAndArgs ...any) event.Order {
	t.Helper()
	for {
		o, err := actors.Ask(ctx, sys, evt, event.GetOrder{Ref: id})
		if errors.Is(err, actors.ErrUnavailable) && ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		require.NoError(t, err, msgAndArgs...)
		return o
	}
}
