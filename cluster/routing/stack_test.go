package routing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/ask"
	"ticketd/cluster/clustertest"
	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"
	"ticketd/cluster/settle"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/internal/pace"
	"ticketd/persistence"
)

// stack is one node's service below HTTP: its cluster node, local store,
// event log on JetStream, router and actor system.
type stack struct {
	node   *node.Node
	store  *persistence.Store
	log    *eventlog.Log
	router *Router
	sys    *actors.System
	closed bool
}

func (s *stack) close() {
	if s.closed {
		return
	}
	s.closed = true
	_ = s.sys.Close()
	s.router.Close()
	_ = s.node.Close()
	_ = s.store.Close()
}

// startStacks starts n stacks on a cluster whose leaders are spread (a
// move evicts actors: a test relies on them staying put).
func startStacks(t *testing.T, n int, tweak ...func(*actors.Config)) []*stack {
	t.Helper()
	return startStacksShards(t, n, 3, tweak...)
}

// startStacksShards is startStacks over shards streams.
func startStacksShards(t *testing.T, n, shards int, tweak ...func(*actors.Config)) []*stack {
	t.Helper()
	nodes, _ := clustertest.StartClusterShards(t, n, shards)
	return startStacksOn(t, nodes, tweak...)
}

// startStacksOn starts a stack on each of nodes, a cluster formed.
func startStacksOn(t *testing.T, nodes []*node.Node, tweak ...func(*actors.Config)) []*stack {
	t.Helper()
	out := make([]*stack, len(nodes))
	for i, nd := range nodes {
		st := clustertest.OpenLocal(t)
		s := &stack{node: nd, store: st, log: eventlog.NewLog(nd, st), router: NewRouter(nd, thttp.EncodeAnswer)}
		ac := actors.Config{
			Event:         event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour},
			Log:           s.log,
			Snapshots:     eventlog.NoSnapshots{},
			SnapshotEvery: 1 << 30,
			Forward:       s.router.Forward,
			Ready:         func() error { return nil },
			Logger:        clustertest.FailLog(t).With("node", nd.Name(), "part", "actors"),
		}
		for _, f := range tweak {
			f(&ac)
		}
		if _, none := ac.Snapshots.(eventlog.NoSnapshots); !none {
			ac.Snapshots = settle.NewSnapshots(s.log)
		}
		sys, err := actors.Open(ac, st, nil)
		require.NoError(t, err)
		s.sys = sys
		require.NoError(t, s.router.Serve(sys))
		out[i] = s
		t.Cleanup(s.close)
	}
	clustertest.WaitSpread(t, nodes)
	// Every router's ask subscription has reached every server: a first
	// request forwarded before its owner's subscription reached this
	// server was answered "owner gone" (a CI run under load, 2026-11-29),
	// which tests that send without retrying do not expect.
	require.Eventually(t, func() bool {
		for _, nd := range nodes {
			for _, other := range nodes {
				if other != nd && !nd.Server().GlobalAccount().SubscriptionInterest(askSubj+other.Name()) {
					return false
				}
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "every node's ask subscription seen by every server")
	return out
}

// ownerIndex is the stack that owns evt by every node's account.
func ownerIndex(t *testing.T, stacks []*stack, evt string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		name, err := stacks[firstOpen(stacks)].router.Owner(bg, evt)
		if err == nil && name != "" {
			for i, s := range stacks {
				if s.node.Name() == name && !s.closed {
					return i
				}
			}
		}
		require.True(t, time.Now().Before(deadline), "no owner for %s (last %q, %v)", evt, name, err)
		time.Sleep(200 * time.Millisecond)
	}
}

func firstOpen(stacks []*stack) int {
	for i, s := range stacks {
		if !s.closed {
			return i
		}
	}
	return -1
}

// resumeWithin bounds the time from an owner's loss until its event
// answers again, in the in-process tests.
const resumeWithin = 30 * time.Second

func placeOrder(ctx context.Context, sys *actors.System, evt, tt string, i int) (event.Order, error) {
	return actors.Ask(ctx, sys, evt, event.OnStorefront(event.PlaceOrder{Email: fmt.Sprintf("p%d@x.io", i),
		Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: tt, Quantity: 1}}, Storefront: true}))
}

// TestForwardAndFailover: an event created and sold through a node that
// does not own it is served by its owner; when the owner is lost, a
// survivor activates it from the replicated log (claim, epoch up) with
// every acknowledged order, and sells on.
func TestForwardAndFailover(t *testing.T) {
	stacks := startStacks(t, 3)
	evt := stacks[0].sys.NewEventID()
	b := ownerIndex(t, stacks, evt)
	a := (b + 1) % 3
	viaA := stacks[a].sys

	capacity := 5
	tt := sellable(t, viaA, evt, capacity)
	// A move of the leaders' spreading that lands as WaitSpread returns
	// can change the owner between the lookup above and the sale (seen in
	// CI: the shard handed over 60 ms before the event's claim): ask again
	// now that the event is active, and forward through another node.
	if nb := ownerIndex(t, stacks, evt); nb != b {
		t.Logf("the owner moved while the event was made: %s, not %s", stacks[nb].node.Name(), stacks[b].node.Name())
		b = nb
		if a == b {
			a = (b + 1) % 3
			viaA = stacks[a].sys
		}
	}

	// The owner holds the actor; the forwarding node none.
	require.Equal(t, 1, stacks[b].sys.ActiveEvents())
	require.Zero(t, stacks[a].sys.ActiveEvents())
	unit, ok := viaA.EventUnit(evt)
	require.True(t, ok)
	require.Equal(t, "bu_1", unit)

	var orders []string
	for i := range 3 {
		o, err := placeOrder(bg, viaA, evt, tt, i)
		require.NoError(t, err)
		orders = append(orders, o.ID)
	}
	// A business rejection crosses the wire as itself.
	_, err := actors.Ask(bg, viaA, evt, event.GetOrder{Ref: "ord_missing"})
	var ee *event.Error
	require.True(t, errors.As(err, &ee), "got %T %v", err, err)
	require.Equal(t, event.NotFound, ee.Code)
	epoch1 := stacks[b].log.Epoch(evt)
	require.NotZero(t, epoch1)

	// The owner is lost.
	lost := time.Now()
	stacks[b].close()
	c := ownerIndex(t, stacks, evt)
	require.NotEqual(t, b, c)
	t.Logf("owner %s lost; %s owns %s now", stacks[b].node.Name(), stacks[c].node.Name(), evt)

	// The event answers again well within the 15 s the chaos run asserts
	// after a kill: this node leaves gracefully (its server hands its Raft
	// leaderships over), so the survivor needs no election timeout. The
	// bound holds on a loaded machine (20 runs beside two CPU burners:
	// see the README); the nodes' logs are printed if it does not.
	ctx, cancel := context.WithTimeout(bg, resumeWithin)
	defer cancel()
	// Until the survivor has activated the event, a request may answer
	// ErrUnavailable (a 503: retry). Acknowledged orders must all be there
	// once it answers.
	for _, id := range orders {
		require.Equal(t, id, orderWhenUp(t, ctx, viaA, evt, id, "order %s", id).ID)
	}
	t.Logf("the event answered again %s after its owner's loss", time.Since(lost).Round(time.Millisecond))
	require.Greater(t, stacks[c].log.Epoch(evt), epoch1)
	// It sells on, and never past capacity.
	sold := len(orders)
	for i := 3; i < 8; i++ {
		_, err := placeOrder(ctx, viaA, evt, tt, i)
		if err == nil {
			sold++
		} else {
			t.Logf("order %d: %v", i, err)
		}
	}
	require.Equal(t, capacity, sold)
}

// writeGaps places orders of evt one after another through sys until stop
// is closed, and reports the longest time between two acknowledged orders
// and the orders that failed.
// gapBuyers numbers writeGaps' buyers.
var gapBuyers atomic.Int64

func writeGaps(sys *actors.System, evt, tt string, stop <-chan struct{}) (maxGap time.Duration, failed []error, acked []string) {
	last := time.Now()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return max(maxGap, time.Since(last)), failed, acked
		default:
		}
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		// A buyer of her own each (one open order per email, decisions
		// §22), across every call.
		o, err := placeOrder(ctx, sys, evt, tt, 1000+int(gapBuyers.Add(1)))
		cancel()
		if err != nil {
			failed = append(failed, err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		acked = append(acked, o.ID)
		maxGap = max(maxGap, time.Since(last))
		last = time.Now()
	}
}

// settledLeader is the stack whose node leads shard's stream, once the
// same node has led it, by JetStream's own account, for two balance
// rounds.
func settledLeader(t *testing.T, stacks []*stack, shard int) int {
	t.Helper()
	leader := func() int {
		found := -1
		for i, s := range stacks {
			if s.node.Server().JetStreamIsStreamLeader(node.GlobalAccount, node.StreamName(shard)) {
				if found >= 0 {
					return -1
				}
				found = i
			}
		}
		return found
	}
	deadline := time.Now().Add(30 * time.Second)
	last, since := -1, time.Now()
	for {
		l := leader()
		if l != last {
			last, since = l, time.Now()
		}
		if l >= 0 && time.Since(since) >= 2*node.BalanceEvery+node.HeartbeatEvery {
			return l
		}
		require.True(t, time.Now().Before(deadline), "shard %d has no settled leader", shard)
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPlannedMove: a shard's leadership moved to another node the way the
// leaders' spreading moves it (a handover: the leader drains the shard's
// actors, then steps down in favour of the taker) pauses its events'
// writes briefly, fails none, and loses nothing acknowledged. The same
// move made by a bare step-down (the leader's commits in flight cut, then
// fenced by the taker's claims) is measured beside it.
func TestPlannedMove(t *testing.T) {
	stacks := startStacks(t, 3)
	for _, s := range stacks {
		s.node.NoBalance.Store(true) // the test moves the leader itself
	}
	evt := stacks[0].sys.NewEventID()
	shard := stacks[0].node.Shard(evt)
	// A spreading move begun before noBalance was set may still be under
	// way, and the announced leaders lag a move: the leader is the one
	// JetStream names once nothing has moved for a while.
	b := settledLeader(t, stacks, shard)
	a := (b + 1) % 3
	to := (b + 2) % 3
	viaA := stacks[a].sys
	capacity := 100_000
	tt := sellable(t, viaA, evt, capacity)
	require.Equal(t, b, ownerIndex(t, stacks, evt))

	// move writes orders through a node that owns nothing of the event
	// while the shard moves from..to, and answers the longest pause.
	move := func(how string, from, to int, do func() error) (time.Duration, []error) {
		stop := make(chan struct{})
		type result struct {
			gap    time.Duration
			failed []error
			acked  []string
		}
		done := make(chan result)
		go func() {
			g, f, ids := writeGaps(viaA, evt, tt, stop)
			done <- result{g, f, ids}
		}()
		time.Sleep(time.Second)
		require.NoError(t, do())
		require.Eventually(t, func() bool { return ownerIndex(t, stacks, evt) == to }, 30*time.Second, 50*time.Millisecond)
		time.Sleep(2 * time.Second)
		close(stop)
		r := <-done
		t.Logf("%s %s -> %s: longest pause of writes %s, %d orders acknowledged, %d failed",
			how, stacks[from].node.Name(), stacks[to].node.Name(), r.gap.Round(time.Millisecond), len(r.acked), len(r.failed))
		for _, e := range r.failed {
			t.Logf("failed: %v", e)
		}
		// Every acknowledged order is there.
		for _, id := range r.acked {
			o, err := actors.Ask(bg, viaA, evt, event.GetOrder{Ref: id})
			require.NoError(t, err)
			require.Equal(t, id, o.ID)
		}
		return r.gap, r.failed
	}
	move("step-down", b, to, func() error { return stacks[to].node.StepDown(shard, stacks[to].node.Name()) })
	var prefetched sync.Map // the events whose feed the taker fetched ahead
	stacks[b].router.PrefetchFeed = func(_ context.Context, id string, _ *pace.Progress) error {
		prefetched.Store(id, true)
		return nil
	}
	gap, failed := move("handover", to, b, func() error {
		// The first asks build the event's state on the taker while the
		// giver serves it (see preload.go); the handover then catches it
		// up and asks.
		for {
			err := stacks[b].router.handOver(shard, stacks[to].node.Name(), stacks[b].node.Name())
			if !errors.Is(err, node.ErrPreloading) {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	require.Empty(t, failed, "a handover fails no write")
	require.Less(t, gap, 5*time.Second)
	built, taken := stacks[b].sys.PreloadStats()
	require.Equal(t, uint64(1), built, "the taker built the event's state ahead of the move")
	require.Equal(t, uint64(1), taken, "the taker's actor started from the state built ahead")
	_, ok := prefetched.Load(evt)
	require.True(t, ok, "the taker fetched the event's change feed with its state")
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
		if errors.Is(err, ask.ErrUnavailable) && ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		require.NoError(t, err, msgAndArgs...)
		return o
	}
}
