package routing

import (
	"testing"
	"time"

	"ticketd/cluster/clustertest"
	"ticketd/cluster/eventlog"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	"ticketd/persistence"
)

// TestActivatedOnLoss: when an event's owner is lost, the survivor that
// comes to lead its shard activates it at once (claim, epoch up) without a
// request for it, and the hold that lapsed meanwhile is expired.
func TestActivatedOnLoss(t *testing.T) {
	t.Parallel() // see parallelTests
	const hold = 2 * time.Second
	stacks := startStacks(t, 3, func(c *actors.Config) { c.Event.OrderHold = hold })
	evt := stacks[0].sys.NewEventID()
	viaA := stacks[(ownerIndex(t, stacks, evt)+1)%3].sys

	capacity := 5
	tt := sellable(t, viaA, evt, capacity)
	o, err := placeOrder(bg, viaA, evt, tt, 1)
	require.NoError(t, err)
	require.Equal(t, event.OrderStatusOpen, o.Status)
	// The owner is the node whose claim stands; on a starved machine an
	// election may have moved the shard since the event was made.
	var b int
	var epoch1 uint64
	require.Eventually(t, func() bool {
		b = ownerIndex(t, stacks, evt)
		epoch1 = stacks[b].log.Epoch(evt)
		return epoch1 != 0
	}, 30*time.Second, 100*time.Millisecond, "the owner holds a claim of %s", evt)
	viaA = stacks[(b+1)%3].sys
	for _, i := range []int{0, 1, 2} {
		if i != b {
			// (An owner the shard moved from stops its actor once fenced.)
			require.Eventually(t, func() bool { return stacks[i].sys.ActiveEvents() == 0 }, 10*time.Second, 50*time.Millisecond,
				"%s runs no actor for the event yet", stacks[i].node.Name())
		}
	}

	// The owner is lost while the order holds; nobody asks for the event.
	stacks[b].close()
	lost := time.Now()
	var c int
	deadline := time.Now().Add(60 * time.Second)
	for {
		c = -1
		for i, s := range stacks {
			if !s.closed && s.sys.ActiveEvents() == 1 && s.log.Epoch(evt) > epoch1 {
				c = i
			}
		}
		if c >= 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no survivor activated %s", evt)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%s activated %s %s after its owner's loss, unasked", stacks[c].node.Name(), evt, time.Since(lost).Round(time.Millisecond))
	require.Equal(t, c, ownerIndex(t, stacks, evt), "the activating node owns the event")

	// The hold lapsed (at the activation, or on time after it).
	require.NotNil(t, o.HoldExpiresAt)
	time.Sleep(time.Until(o.HoldExpiresAt.Add(100 * time.Millisecond)))
	got, err := actors.Ask(bg, stacks[c].sys, evt, event.GetOrder{Ref: o.ID})
	require.NoError(t, err)
	require.Equal(t, event.OrderStatusExpired, got.Status)
}

// TestConcurrentClaimsOneNode: two incarnations of an event on one node
// (an activation racing a leadership flap) claiming after the same message
// never both win: every successful claim has an epoch of its own, so a
// batch of one is never answered as the other's duplicate.
func TestConcurrentClaimsOneNode(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	l := eventlog.NewLog(nodes[0], nil)
	const id = "evt_twice"
	seen := map[uint64]bool{}
	for range 20 {
		last, err := l.LastSeq(id)
		require.NoError(t, err)
		epochs := make(chan uint64, 2)
		start := make(chan struct{})
		for range 2 {
			go func() {
				<-start
				if cl, err := l.Claim(id, last); err == nil {
					w := cl.(*eventlog.Claimed).Writer
					w.ShardWriter.Mu.Lock()
					epochs <- w.Epoch
					w.ShardWriter.Mu.Unlock()
				} else {
					require.ErrorIs(t, err, persistence.ErrFenced)
					epochs <- 0
				}
			}()
		}
		close(start)
		for range 2 {
			if e := <-epochs; e != 0 {
				require.False(t, seen[e], "two claims won epoch %d", e)
				seen[e] = true
			}
		}
	}
}
