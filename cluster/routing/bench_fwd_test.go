package routing

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
)

// TestForwardRate measures the forwarding hop alone: 64 clients read one
// order (no commit, so no log in the way) of an event through the two
// nodes that do not own it, then through its owner, for benchSeconds
// each. It runs when TICKETD_CLUSTER_BENCH=1 and
// TICKETD_CLUSTER_BENCH_ONLY is "fwd".
func TestForwardRate(t *testing.T) {
	if os.Getenv("TICKETD_CLUSTER_BENCH") == "" || os.Getenv("TICKETD_CLUSTER_BENCH_ONLY") != "fwd" {
		t.Skip("set TICKETD_CLUSTER_BENCH=1 TICKETD_CLUSTER_BENCH_ONLY=fwd")
	}
	stacks := startStacks(t, 3)
	evt := stacks[0].sys.NewEventID()
	o := ownerIndex(t, stacks, evt)
	tt := sellable(t, stacks[o].sys, evt, 1000)
	ord, err := placeOrder(bg, stacks[o].sys, evt, tt, 0)
	require.NoError(t, err)
	for _, load := range []struct {
		what    string
		systems []*actors.System
	}{
		{"forwarded", []*actors.System{stacks[(o+1)%3].sys, stacks[(o+2)%3].sys}},
		{"on the owner", []*actors.System{stacks[o].sys}},
	} {
		var n, failed atomic.Int64
		var wg sync.WaitGroup
		cpu, began := processCPU(), time.Now()
		stop := began.Add(benchSeconds * time.Second)
		for i := range 64 {
			sys := load.systems[i%len(load.systems)]
			wg.Go(func() {
				for time.Now().Before(stop) {
					if _, err := actors.Ask(bg, sys, evt, event.GetOrder{Ref: ord.ID}); err != nil {
						failed.Add(1)
						continue
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
		wall, used := time.Since(began), processCPU()-cpu
		t.Logf("%s: %.0f reads/s, %d failed; the process used %.2f cores, %.0f µs of CPU per read", load.what,
			float64(n.Load())/wall.Seconds(), failed.Load(), used.Seconds()/wall.Seconds(), float64(used.Microseconds())/float64(max(n.Load(), 1)))
	}
}
