package routing

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/internal/pace"
)

// takeWatch decides alone when a leaving node stops waiting for a taker:
// never while its reports change, after stall without a change, after
// silent for a taker that never reports (an older build), after max in
// all whatever the reports.
func TestTakeWatch(t *testing.T) {
	lt := leaveTiming{stall: 10 * time.Second, silent: 60 * time.Second, max: 180 * time.Second}
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

	w := &takeWatch{lt: lt, start: t0}
	require.NoError(t, w.check(at(59)), "no report yet: waits for an older taker")
	require.ErrorIs(t, w.check(at(60)), errTakeSilent)

	w = &takeWatch{lt: lt, start: t0}
	for s := 1; s < 170; s += 5 { // progress every 5 s: waits past silent
		w.report(at(s), fmt.Sprintf("0 %d 0", s))
		require.NoError(t, w.check(at(s+4)), "at %d s", s+4)
	}
	require.ErrorIs(t, w.check(at(180)), errTakeTooLong, "max bounds it, progress or not")

	w = &takeWatch{lt: lt, start: t0}
	w.report(at(1), "0 10 0")
	w.report(at(5), "0 10 0") // the same counters: no progress
	require.NoError(t, w.check(at(10)))
	require.ErrorIs(t, w.check(at(11)), errTakeStalled, "10 s since the counters last moved")
	w.report(at(12), "1 10 0") // a new stage is progress
	require.NoError(t, w.check(at(21)))
}

// TestLeaveWaitsWhileTheTakerProgresses: a leaving owner waits for a taker
// whose preload (here its feed prefetch) outlasts the stall bound three
// times over as long as the taker reports progress, serves the event's
// writes all the while, then hands it over as a planned move (the taker's
// actor starts from the state it built). A taker that stops progressing is
// given up on after the stall bound, not the leave's whole bound.
func TestLeaveWaitsWhileTheTakerProgresses(t *testing.T) {
	stacks := startStacks(t, 3)
	for _, s := range stacks {
		s.node.NoBalance.Store(true) // the test moves the leaders itself
	}
	lt := leaveTiming{stall: time.Second, silent: 5 * time.Second, max: 60 * time.Second, report: 100 * time.Millisecond}
	for _, s := range stacks {
		s.router.leave = lt
	}
	evt := stacks[0].sys.NewEventID()
	shard := stacks[0].node.Shard(evt)
	b := settledLeader(t, stacks, shard)
	a := (b + 1) % 3
	viaA := stacks[a].sys
	tt := sellable(t, viaA, evt, 100_000)
	require.Equal(t, b, ownerIndex(t, stacks, evt))

	slow := 3 * lt.stall
	for i, s := range stacks {
		if i == b {
			continue
		}
		s.router.PrefetchFeed = func(ctx context.Context, id string, p *pace.Progress) error {
			for end := time.Now().Add(slow); time.Now().Before(end); {
				p.Entries(1)
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
			return nil
		}
	}
	type result struct {
		gap    time.Duration
		failed []error
		acked  []string
	}
	stop := make(chan struct{})
	done := make(chan result)
	go func() {
		g, f, ids := writeGaps(viaA, evt, tt, stop)
		done <- result{g, f, ids}
	}()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	stacks[b].router.Leave(bg)
	took := time.Since(start)
	c := ownerIndex(t, stacks, evt)
	time.Sleep(time.Second)
	close(stop)
	r := <-done
	t.Logf("leave took %s; %s owns the event; longest write gap %s, %d orders acknowledged, %d failed",
		took.Round(time.Millisecond), stacks[c].node.Name(), r.gap.Round(time.Millisecond), len(r.acked), len(r.failed))
	require.NotEqual(t, b, c, "handed over")
	require.Greater(t, took, slow, "it waited for the taker's prefetch, past the stall bound")
	_, taken := stacks[c].sys.PreloadStats()
	require.Equal(t, uint64(1), taken, "a planned move: the taker's actor started from the state it built")
	require.Empty(t, r.failed, "no write failed")
	require.Less(t, r.gap, slow, "the owner served the event's writes while it waited")

	// Now c leaves, and its taker's prefetch hangs without progress.
	release := make(chan struct{})
	defer close(release)
	for i, s := range stacks {
		if i == c {
			continue
		}
		s.router.PrefetchFeed = func(ctx context.Context, id string, p *pace.Progress) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-release:
				return nil
			}
		}
	}
	start = time.Now()
	stacks[c].router.Leave(bg)
	took = time.Since(start)
	t.Logf("leave with a stalled taker took %s", took.Round(time.Millisecond))
	require.GreaterOrEqual(t, took, lt.stall, "it waited the stall bound")
	require.Less(t, took, lt.max/4, "it gave up after the stall bound, not the leave's whole bound")
	require.True(t, stacks[c].router.leads(shard), "not handed over: it moves with the node's close")
}
