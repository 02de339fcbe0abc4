package routing

import (
	"context"
	"fmt"
	"testing"
	"time"

	"ticketd/cluster/clustertest"
	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"
	"ticketd/cluster/settle"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
)

// TestSnapshotsReplicated: the owner's snapshots go to the replicated
// store, the log is trimmed behind the older one kept, and a survivor of
// the owner's loss loads the event from snapshot and tail with every
// acknowledged order.
func TestSnapshotsReplicated(t *testing.T) {
	t.Parallel() // see parallelTests
	stacks := startStacks(t, 3, func(c *actors.Config) {
		c.SnapshotEvery = 10
		c.Snapshots = nil // the replicated store (see startStacks)
	})
	evt := stacks[0].sys.NewEventID()
	b := ownerIndex(t, stacks, evt)
	a := (b + 1) % 3
	viaA := stacks[a].sys
	starts := event.Time{Time: time.Now().Add(30 * 24 * time.Hour).UTC()}
	_, err := viaA.CreateEvent(bg, "bu_1", evt, event.CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &starts})
	require.NoError(t, err)
	tt, err := actors.Ask(bg, viaA, evt, event.CreateTicketType{Name: "GA"})
	require.NoError(t, err)
	_, err = actors.Ask(bg, viaA, evt, event.UpdateTicketType{ID: tt.ID, Status: event.Some("open")})
	require.NoError(t, err)
	_, err = actors.Ask(bg, viaA, evt, event.UpdateEvent{Status: event.Some("published")})
	require.NoError(t, err)
	var orders []string
	for i := range 60 {
		o, err := placeOrder(bg, viaA, evt, tt.ID, i)
		require.NoError(t, err)
		orders = append(orders, o.ID)
	}
	owner := stacks[b]
	// A snapshot is asked for when enough records follow the last one; one
	// asked while another is pending waits for more records, so on a
	// loaded machine the orders go on until three are taken.
	deadline := time.Now().Add(60 * time.Second)
	for i := 60; owner.sys.Metrics().Snapshots.Load() < 3 || owner.sys.Metrics().SnapshotsPending.Load() > 0; i++ {
		require.True(t, time.Now().Before(deadline), "snapshots taken: %d", owner.sys.Metrics().Snapshots.Load())
		if owner.sys.Metrics().Snapshots.Load() < 3 && owner.sys.Metrics().SnapshotsPending.Load() == 0 {
			o, err := placeOrder(bg, viaA, evt, tt.ID, i)
			require.NoError(t, err)
			orders = append(orders, o.ID)
			continue
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(bg, 60*time.Second)
	defer cancel()
	kept, _, err := settle.NewSnapshots(owner.log).Seqs(ctx, evt, true)
	require.NoError(t, err)
	require.Len(t, kept, settle.SnapsKept)
	first, err := stacks[a].log.FirstSeq(evt)
	require.NoError(t, err)
	require.Greater(t, first, uint64(1), "the log is trimmed")
	require.LessOrEqual(t, first, kept[0]+1, "but not past the older snapshot kept")
	t.Logf("snapshots at %v, log from record %d", kept, first)

	owner.close()
	c := ownerIndex(t, stacks, evt)
	require.NotEqual(t, b, c)
	for _, id := range orders {
		require.Equal(t, id, orderWhenUp(t, ctx, viaA, evt, id, "order %s", id).ID)
	}
	_, err = placeOrder(ctx, viaA, evt, tt.ID, 99999)
	require.NoError(t, err)
}

// TestSnapshotReadChunkByChunk: a snapshot of several object-store chunks
// saved through one node is read back whole, byte for byte, through
// another (read with batched direct gets, not the store's ordered
// consumer), also one of more chunks than a batch's bytes hold, and the
// same through a third as a paced read.
func TestSnapshotReadChunkByChunk(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	for i, size := range []int{700 << 10, node.DirectBatchBytes + 3<<20} { // over 5 chunks of 128 KiB; two batches
		state := make([]byte, size)
		for i := range state {
			state[i] = byte(i*7 + i/1000)
		}
		id := fmt.Sprintf("evt_chunks%d", i)
		_, err := settle.NewSnapshots(eventlog.NewLog(nodes[0], nil)).SaveAndTrim(id, 42, state)
		require.NoError(t, err)
		seq, got, ok, err := settle.NewSnapshots(eventlog.NewLog(nodes[1], nil)).LoadNewestWith(id, 0)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, uint64(42), seq)
		require.Equal(t, state, got)
		// Read as background work (a preload): the same bytes, paced
		// after every chunk but the last.
		paces := 0
		seq, got, ok, err = settle.NewSnapshots(eventlog.NewLog(nodes[2], nil)).LoadNewestPaced(id, func() { paces++ })
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, uint64(42), seq)
		require.Equal(t, state, got)
		require.Equal(t, (size+snapChunk-1)/snapChunk-1, paces)
	}
}

// snapChunk is the object store's chunk size (nats.go's default).
const snapChunk = 128 << 10
