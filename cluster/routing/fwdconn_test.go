package routing

import (
	"testing"
	"time"

	"ticketd/cluster/node"

	"github.com/stretchr/testify/require"
)

// TestForwardOverConnection: forwarded requests go over the owner's
// forwarding connection; a connection that breaks while requests wait on
// it answers them at once (errOwnerGone: their outcome is unknown); and an
// owner that withdraws its forwarding address is reached over NATS.
func TestForwardOverConnection(t *testing.T) {
	stacks, gates := gatedStacks(t)
	o, f := 0, 1
	mine, mineTT, _, _ := eventsOn(t, stacks, o)
	fwd := stacks[f].router
	require.Eventually(t, func() bool {
		return stacks[f].node.ForwardAddrOf(stacks[o].node.Name()) != ""
	}, 5*time.Second, 10*time.Millisecond, "the owner's forwarding address heard")

	batches, overConn := fwd.fwd.batches.Load(), fwd.fwd.connBatches.Load()
	for i := range 5 {
		_, err := placeOrder(bg, stacks[f].sys, mine, mineTT, i)
		require.NoError(t, err)
	}
	require.Greater(t, fwd.fwd.batches.Load(), batches)
	require.Equal(t, fwd.fwd.batches.Load()-batches, fwd.fwd.connBatches.Load()-overConn, "every batch over the connection")

	// The owner's connections break while two requests wait on its actor.
	gates[o].close()
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := placeOrder(bg, stacks[f].sys, mine, mineTT, 10+i)
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { return waitingOn(fwd.peer(stacks[o].node.Name())) == 2 },
		5*time.Second, 10*time.Millisecond, "two requests waiting")
	broke := time.Now()
	stacks[o].router.pmu.Lock()
	for fc := range stacks[o].router.conns {
		fc.close()
	}
	stacks[o].router.pmu.Unlock()
	for range 2 {
		select {
		case err := <-errs:
			require.ErrorContains(t, err, errOwnerGone.Error())
		case <-time.After(5 * time.Second):
			t.Fatal("a request on a broken connection still waits")
		}
	}
	require.Less(t, time.Since(broke), node.PeerStale, "told by the connection, not by the owner's silence")
	gates[o].open()

	// The owner withdraws its address (and takes no more connections):
	// requests go over NATS.
	stacks[o].node.FwdAddr.Store("")
	require.NoError(t, stacks[o].router.fwdListener.Close())
	require.Eventually(t, func() bool {
		return stacks[f].node.ForwardAddrOf(stacks[o].node.Name()) == ""
	}, 5*time.Second, 10*time.Millisecond, "the address withdrawn")
	batches, overConn = fwd.fwd.batches.Load(), fwd.fwd.connBatches.Load()
	for i := range 5 {
		_, err := placeOrder(bg, stacks[f].sys, mine, mineTT, 20+i)
		require.NoError(t, err)
	}
	require.Greater(t, fwd.fwd.batches.Load(), batches)
	require.Equal(t, overConn, fwd.fwd.connBatches.Load(), "over NATS")
}
