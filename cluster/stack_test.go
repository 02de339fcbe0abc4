package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	"ticketd/persistence"
)

// stack is one node's service below HTTP: its cluster node, local store,
// event log on JetStream, router and actor system.
type stack struct {
	node   *Node
	store  *persistence.Store
	log    *Log
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

func startStacks(t *testing.T, n int, tweak ...func(*actors.Config)) []*stack {
	t.Helper()
	nodes, _ := startCluster(t, n)
	out := make([]*stack, n)
	for i, nd := range nodes {
		st := openLocal(t)
		s := &stack{node: nd, store: st, log: NewLog(nd, st), router: NewRouter(nd)}
		ac := actors.Config{
			Event:         event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour},
			Log:           s.log,
			Snapshots:     NoSnapshots{},
			SnapshotEvery: 1 << 30,
			Forward:       s.router.Forward,
			Ready:         func() error { return nil },
			Logger:        failLog(t).With("node", nd.Name(), "part", "actors"),
		}
		for _, f := range tweak {
			f(&ac)
		}
		if _, none := ac.Snapshots.(NoSnapshots); !none {
			ac.Snapshots = NewSnapshots(s.log)
		}
		sys, err := actors.Open(ac, st, nil)
		require.NoError(t, err)
		s.sys = sys
		require.NoError(t, s.router.Serve(sys))
		out[i] = s
		t.Cleanup(s.close)
	}
	return out
}

var bg = context.Background()

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
	starts := event.Time{Time: time.Now().Add(30 * 24 * time.Hour).UTC()}
	_, err := viaA.CreateEvent(bg, "bu_1", evt, event.CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &starts})
	require.NoError(t, err)
	tt, err := actors.Ask(bg, viaA, evt, event.CreateTicketType{Name: "GA", Capacity: &capacity})
	require.NoError(t, err)
	_, err = actors.Ask(bg, viaA, evt, event.UpdateTicketType{ID: tt.ID, Status: event.Some("open")})
	require.NoError(t, err)
	_, err = actors.Ask(bg, viaA, evt, event.UpdateEvent{Status: event.Some("published")})
	require.NoError(t, err)

	// The owner holds the actor; the forwarding node none.
	require.Equal(t, 1, stacks[b].sys.ActiveEvents())
	require.Zero(t, stacks[a].sys.ActiveEvents())
	unit, ok := viaA.EventUnit(evt)
	require.True(t, ok)
	require.Equal(t, "bu_1", unit)

	var orders []string
	for i := range 3 {
		o, err := placeOrder(bg, viaA, evt, tt.ID, i)
		require.NoError(t, err)
		orders = append(orders, o.ID)
	}
	// A business rejection crosses the wire as itself.
	_, err = actors.Ask(bg, viaA, evt, event.GetOrder{Ref: "ord_missing"})
	var ee *event.Error
	require.True(t, errors.As(err, &ee), "got %T %v", err, err)
	require.Equal(t, event.NotFound, ee.Code)
	epoch1 := stacks[b].log.Epoch(evt)
	require.NotZero(t, epoch1)

	// The owner is lost.
	stacks[b].close()
	c := ownerIndex(t, stacks, evt)
	require.NotEqual(t, b, c)
	t.Logf("owner %s lost; %s owns %s now", stacks[b].node.Name(), stacks[c].node.Name(), evt)

	// The bound is generous: this test asserts that nothing acknowledged is
	// lost and nothing oversold across the loss; how fast writes resume is
	// the chaos run's target (15 s, asserted there on real processes). A
	// CI run under full load once saw this event unavailable for 60 s: the
	// time is logged, and the nodes' logs are printed if the test fails.
	ctx, cancel := context.WithTimeout(bg, 120*time.Second)
	defer cancel()
	// Until the survivor has activated the event, a request answers
	// ErrUnavailable (a 503: retry) and the next one activates it afresh;
	// on a loaded machine the first activation may time out in the
	// election. Acknowledged orders must all be there once it answers.
	lost := time.Now()
	for _, id := range orders {
		for {
			o, err := actors.Ask(ctx, viaA, evt, event.GetOrder{Ref: id})
			if errors.Is(err, actors.ErrUnavailable) && ctx.Err() == nil {
				time.Sleep(250 * time.Millisecond)
				continue
			}
			require.NoError(t, err, "order %s", id)
			require.Equal(t, id, o.ID)
			break
		}
	}
	t.Logf("the event answered again %s after its owner's loss", time.Since(lost).Round(time.Millisecond))
	require.Greater(t, stacks[c].log.Epoch(evt), epoch1)
	// It sells on, and never past capacity.
	sold := len(orders)
	for i := 3; i < 8; i++ {
		_, err := placeOrder(ctx, viaA, evt, tt.ID, i)
		if err == nil {
			sold++
		} else {
			t.Logf("order %d: %v", i, err)
		}
	}
	require.Equal(t, capacity, sold)
}
