package cluster

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// benchSeconds is how long each load of TestThroughputRatios runs.
const benchSeconds = 5

// newSellableEvent creates a published event with one open ticket type of
// a capacity no load reaches, through sys.
func newSellableEvent(t *testing.T, sys *actors.System) (string, string) {
	t.Helper()
	evt := sys.NewEventID()
	starts := event.Time{Time: time.Now().Add(30 * 24 * time.Hour).UTC()}
	_, err := sys.CreateEvent(bg, "bu_1", evt, event.CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &starts})
	require.NoError(t, err)
	capacity := 100_000_000
	tt, err := actors.Ask(bg, sys, evt, event.CreateTicketType{Name: "GA", Capacity: &capacity})
	require.NoError(t, err)
	_, err = actors.Ask(bg, sys, evt, event.UpdateTicketType{ID: tt.ID, Status: event.Some("open")})
	require.NoError(t, err)
	_, err = actors.Ask(bg, sys, evt, event.UpdateEvent{Status: event.Some("published")})
	require.NoError(t, err)
	return evt, tt.ID
}

// drive runs clients placing orders for benchSeconds; client i sends to
// systems[i%len] for target(i). It answers durable orders per second.
func drive(t *testing.T, systems []*actors.System, clients int, target func(i int) (string, string)) float64 {
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	stop := time.Now().Add(benchSeconds * time.Second)
	for i := range clients {
		sys := systems[i%len(systems)]
		evt, tt := target(i)
		wg.Go(func() {
			for n := 0; time.Now().Before(stop); n++ {
				ctx, cancel := context.WithTimeout(bg, 10*time.Second)
				_, err := placeOrder(ctx, sys, evt, tt, i*1_000_000+n)
				cancel()
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		// Counted, not fatal: a refusal (503) under load is an answer.
		t.Logf("%d orders refused, the first: %v", failed.Load(), firstErr.Load())
	}
	return float64(ok.Load()) / benchSeconds
}

// TestThroughputRatios measures durable orders per second of the single
// node on Pebble and of a 3-node cluster in the same run, as ratios: a
// hot event (64 clients, one event, spread over the nodes), and a drop
// of 64 events (one client each). It runs when TICKETD_CLUSTER_BENCH=1.
func TestThroughputRatios(t *testing.T) {
	if os.Getenv("TICKETD_CLUSTER_BENCH") == "" {
		t.Skip("set TICKETD_CLUSTER_BENCH=1")
	}
	const clients = 64
	store, err := persistence.Open(persistence.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	single, err := actors.Open(actors.Config{Event: event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour}},
		store, snapshots.New(store, 2))
	require.NoError(t, err)
	hotEvt, hotTT := newSellableEvent(t, single)
	singleHot := drive(t, []*actors.System{single}, clients, func(int) (string, string) { return hotEvt, hotTT })
	drop := make([][2]string, clients)
	for i := range drop {
		drop[i][0], drop[i][1] = newSellableEvent(t, single)
	}
	singleDrop := drive(t, []*actors.System{single}, clients, func(i int) (string, string) { return drop[i][0], drop[i][1] })
	require.NoError(t, single.Close())
	require.NoError(t, store.Close())

	stacks := startStacks(t, 3)
	// Measure once the leaders have spread: a move evicts actors.
	deadline := time.Now().Add(60 * time.Second)
	for stacks[0].node.Leading() == 0 || stacks[1].node.Leading() == 0 || stacks[2].node.Leading() == 0 {
		require.True(t, time.Now().Before(deadline), "leaders not spread")
		time.Sleep(200 * time.Millisecond)
	}
	systems := []*actors.System{stacks[0].sys, stacks[1].sys, stacks[2].sys}
	hotEvt, hotTT = newSellableEvent(t, stacks[0].sys)
	clusterHot := drive(t, systems, clients, func(int) (string, string) { return hotEvt, hotTT })
	for i := range drop {
		drop[i][0], drop[i][1] = newSellableEvent(t, stacks[i%3].sys)
	}
	clusterDrop := drive(t, systems, clients, func(i int) (string, string) { return drop[i][0], drop[i][1] })

	report := fmt.Sprintf("hot event: single %.0f/s, cluster %.0f/s, ratio %.2f; 64-event drop: single %.0f/s, cluster %.0f/s, ratio %.2f",
		singleHot, clusterHot, clusterHot/singleHot, singleDrop, clusterDrop, clusterDrop/singleDrop)
	t.Log(report)
}
