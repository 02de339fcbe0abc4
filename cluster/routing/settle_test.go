package routing

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"ticketd/cluster/clustertest"
	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"
	"ticketd/cluster/settle"
	"ticketd/persistence"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	"ticketd/outbox"
)

// TestIdleEventReleasesTrim: small events that stop changing (one never
// snapshotted, one snapshotted once) share a shard with a busy event. The
// trimmer settles them (their state at their last record kept twice), so
// the shard stream's first message moves past theirs instead of staying
// at the first one for good; after their owner's loss a survivor loads
// them from the snapshot alone (no record of theirs left in the log) with
// every acknowledged order, and they sell on; so does the busy event.
func TestIdleEventReleasesTrim(t *testing.T) {
	t.Parallel() // see parallelTests
	const every = 20
	stacks := startStacks(t, 3, func(c *actors.Config) {
		c.SnapshotEvery = every
		c.SnapshotTailMax = every // the busy event's snapshots every 20 records too
		c.Snapshots = nil         // the replicated store (see startStacks)
	})
	const lag = 40
	for _, s := range stacks {
		s.log.SettleLag.Store(lag)
		s.log.SettleEvery.Store(int64(200 * time.Millisecond))
	}
	busy := stacks[0].sys.NewEventID()
	shard := stacks[0].node.Shard(busy)
	sameShard := func() string {
		for {
			if id := stacks[0].sys.NewEventID(); stacks[0].node.Shard(id) == shard {
				return id
			}
		}
	}
	idle, once := sameShard(), sameShard()
	b := ownerIndex(t, stacks, busy)
	a := (b + 1) % 3
	viaA := stacks[a].sys
	owner := stacks[b]
	ctx, cancel := context.WithTimeout(bg, 3*time.Minute)
	defer cancel()
	info := func(s *stack) (first, last, msgs, bytes uint64) {
		st, err := s.node.JetStream().Stream(ctx, node.StreamName(shard))
		require.NoError(t, err)
		in, err := st.Info(ctx)
		require.NoError(t, err)
		return in.State.FirstSeq, in.State.LastSeq, in.State.Msgs, in.State.Bytes
	}
	_, startLast, _, _ := info(owner)

	// The idle event: a few orders, never snapshotted.
	orders := map[string][]event.Order{}
	ttIdle := sellable(t, viaA, idle, 1000)
	for i := range 3 {
		o, err := placeOrder(ctx, viaA, idle, ttIdle, i)
		require.NoError(t, err)
		orders[idle] = append(orders[idle], o)
	}
	// The other one: orders until it has one snapshot, then none.
	snaps := settle.NewSnapshots(owner.log)
	ttOnce := sellable(t, viaA, once, 1000)
	for i := 0; ; i++ {
		list, _, err := snaps.Seqs(ctx, once, true)
		require.NoError(t, err)
		if len(list) > 0 {
			require.Len(t, list, 1)
			break
		}
		require.Less(t, i, 10*every, "no snapshot of %s", once)
		o, err := placeOrder(ctx, viaA, once, ttOnce, i)
		require.NoError(t, err)
		orders[once] = append(orders[once], o)
	}
	_, idleLast, _, _ := info(owner)
	t.Logf("shard %d: the small events' messages are %d..%d", shard, startLast+1, idleLast)

	// The busy event sells until the stream's first message is past the
	// small events' last, which never happens without the trimmer: they
	// would need their first records for good.
	ttBusy := sellable(t, viaA, busy, 100_000)
	var first, last, msgs, size uint64
	for i := 0; ; i++ {
		o, err := placeOrder(ctx, viaA, busy, ttBusy, i)
		require.NoError(t, err)
		orders[busy] = append(orders[busy], o)
		if i%10 != 0 {
			continue
		}
		first, last, msgs, size = info(owner)
		if i%100 == 0 {
			t.Logf("order %d: stream %d..%d", i, first, last)
		}
		if first > idleLast {
			break
		}
		require.Less(t, i, 3000, "the stream's first message %d is still at or before the small events' last %d (last %d)", first, idleLast, last)
	}
	t.Logf("after %d busy orders: the shard stream holds %d messages (%d bytes), %d..%d", len(orders[busy]), msgs, size, first, last)
	for _, id := range []string{idle, once} {
		list, _, err := snaps.Seqs(ctx, id, true)
		require.NoError(t, err)
		require.Len(t, list, settle.SnapsKept, "%s", id)
		require.Equal(t, list[0], list[1], "%s is settled: its snapshot kept twice", id)
		fs, err := stacks[a].log.FirstSeq(id)
		require.NoError(t, err)
		require.Zero(t, fs, "no record of %s is left in the log", id)
		t.Logf("%s settled at %d", id, list[0])
	}

	// The owner is lost: a survivor loads the small events from their
	// snapshots alone, and every acknowledged order is there.
	owner.close()
	c := ownerIndex(t, stacks, busy)
	require.NotEqual(t, b, c)
	for id, os := range orders {
		for _, want := range os {
			got := orderWhenUp(t, ctx, viaA, id, want.ID, "order %s of %s", want.ID, id)
			require.Equal(t, jsonOf(t, want), jsonOf(t, got))
		}
	}
	for id, tt := range map[string]string{idle: ttIdle, once: ttOnce, busy: ttBusy} {
		_, err := placeOrder(ctx, viaA, id, tt, 99_999)
		require.NoError(t, err, "%s sells on", id)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestSettleCopiesNewest: an event whose one snapshot is at its last
// record, holding its shard's trim back, is settled without the actors:
// its snapshot is copied (the index lists it twice), the stream's first
// message moves past the event's, another node loads it from the
// snapshot alone, and from the copy when the first is gone.
func TestSettleCopiesNewest(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	a := "evt_settle_a"
	shard := nodes[0].Shard(a)
	// The trimmer runs on the shard's leader (the events' owner): a
	// settle elsewhere is refused (errNotOwner).
	lead := -1
	for i, nd := range nodes {
		if nd.Server().JetStreamIsStreamLeader(node.GlobalAccount, node.StreamName(shard)) {
			lead = i
		}
	}
	require.GreaterOrEqual(t, lead, 0)
	l := eventlog.NewLog(nodes[lead], clustertest.OpenLocal(t))
	l.SettleLag.Store(3)
	snaps := settle.NewSnapshots(l)
	b := ""
	for i := 0; b == ""; i++ {
		if id := fmt.Sprintf("evt_settle_b%d", i); nodes[0].Shard(id) == shard {
			b = id
		}
	}
	require.NoError(t, clustertest.CommitRecs(clustertest.Claim(t, l, a, 0), a, 1, 5))
	state := []byte("the state of a at 5")
	_, err := snaps.SaveAndTrim(a, 5, state)
	require.NoError(t, err)
	wb := clustertest.Claim(t, l, b, 0)
	for s := uint64(1); s <= 10; s++ {
		require.NoError(t, clustertest.CommitRecs(wb, b, s, s))
	}
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	st, err := nodes[0].JetStream().Stream(ctx, node.StreamName(shard))
	require.NoError(t, err)
	firstSeq := func() uint64 {
		in, err := st.Info(ctx)
		require.NoError(t, err)
		return in.State.FirstSeq
	}
	require.Equal(t, uint64(1), firstSeq(), "a holds the trim: one snapshot only")

	snaps.SettleShard(shard) // b holds too, but no snapshotter to ask: only a is settled
	list, _, err := snaps.Seqs(ctx, a, true)
	require.NoError(t, err)
	require.Equal(t, []uint64{5, 5}, list)
	require.Equal(t, uint64(4), firstSeq(), "trimmed to b's first records")

	other := settle.NewSnapshots(eventlog.NewLog(nodes[(lead+1)%3], nil))
	first, err := other.Log.FirstSeq(a)
	require.NoError(t, err)
	require.Zero(t, first, "no record of a left")
	seq, got, ok, err := other.LoadNewestWith(a, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, uint64(5), seq)
	require.Equal(t, state, got)

	obs, _, err := snaps.Stores(ctx)
	require.NoError(t, err)
	require.NoError(t, obs.Delete(ctx, settle.SnapName(a, 5)))
	seq, got, ok, err = other.LoadNewestWith(a, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, uint64(5), seq)
	require.Equal(t, state, got, "from the copy")
}

// TestOwedValues: what a carry takes from the owner's store: a fresh
// entry's value, and the producer's value its queue keeps once tried.
func TestOwedValues(t *testing.T) {
	st := clustertest.OpenLocal(t)
	b := st.NewBatch()
	b.Put([]byte(persistence.PrefixMailInbox+"evt_a/m1"), []byte("mail 1"))
	b.Put([]byte(persistence.PrefixHookInbox+"evt_a/h1"), []byte("hook 1"))
	b.Put([]byte(persistence.PrefixHookInbox+"evt_b/h1"), []byte("another event's"))
	require.NoError(t, st.Commit(b))
	b.Close()
	q, err := outbox.NewQueue(st, "hookfanout", persistence.PrefixHookInbox)
	require.NoError(t, err)
	e, err := q.Get("evt_a/h1")
	require.NoError(t, err)
	b = st.NewBatch()
	now := time.Now()
	_, err = q.Retry(b, e, now.Add(time.Hour), now, "endpoint down")
	require.NoError(t, err)
	require.NoError(t, st.Commit(b))
	b.Close()
	_, fresh, err := st.Get([]byte(persistence.PrefixHookInbox + "evt_a/h1"))
	require.NoError(t, err)
	require.False(t, fresh, "tried: out of the inbox")

	mail, hook := persistence.PrefixMailInbox+"evt_a/m1", persistence.PrefixHookInbox+"evt_a/h1"
	got, err := settle.OwedValues(st, "evt_a", nil, 0)
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{mail: []byte("mail 1"), hook: []byte("hook 1")}, got)
	// The budget bounds the carry lines read, not the entries skipped.
	both := settle.CarryLineLen(mail, []byte("mail 1")) + settle.CarryLineLen(hook, []byte("hook 1")) + 2
	got, err = settle.OwedValues(st, "evt_a", nil, both)
	require.NoError(t, err)
	require.Len(t, got, 2)
	_, err = settle.OwedValues(st, "evt_a", nil, both-1) // the mail, then the tried hook
	require.ErrorIs(t, err, settle.ErrCarryTooBig)
	got, err = settle.OwedValues(st, "evt_a", func(k string) bool { return k == hook }, both-1)
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{mail: []byte("mail 1")}, got, "the hook carried already: skipped")
	got, err = settle.OwedValues(st, "evt_a", func(k string) bool { return k == mail }, 0)
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{hook: []byte("hook 1")}, got, "the tried hook read from its queue")
	got, err = settle.OwedValues(st, "evt_", nil, 0)
	require.NoError(t, err)
	require.Empty(t, got)
}
