package settle

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"ticketd/cluster/clustertest"
	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

// settledState is what the settled stream holds for evt: its messages,
// the stream's bytes, and the union of the keys its messages mark.
func settledState(t *testing.T, nd *node.Node, evt string) (int, uint64, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	s, err := nd.JetStream().Stream(ctx, node.SettledStream)
	require.NoError(t, err)
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(node.SettledSubj+evt))
	require.NoError(t, err)
	o := &Owed{Node: nd}
	seen := &settledMarks{keys: map[string]uint64{}}
	require.NoError(t, o.readSubject(ctx, node.SettledStream, node.SettledSubj+evt, 0, func(m *jetstream.RawStreamMsg) error {
		return seen.read(m.Data)
	}))
	keys := make([]string, 0, len(seen.keys))
	for k := range seen.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return int(info.State.Subjects[node.SettledSubj+evt]), info.State.Bytes, keys
}

func mailKey(evt string, i int) string { return fmt.Sprintf("mail/%s/%016x-0000", evt, i) }

// owner is one node's owning side of an event: its log, local store and
// owed entries.
type owner struct {
	log   *eventlog.Log
	store *persistence.Store
	o     *Owed
}

func newOwner(t *testing.T, nd *node.Node) *owner {
	st := clustertest.OpenLocal(t)
	l := eventlog.NewLog(nd, st)
	return &owner{log: l, store: st, o: &Owed{Node: nd, Log: l, Store: st, Events: map[string]map[string]struct{}{}}}
}

// activate claims evt (after its last record) and imports what it owes,
// as an activation does; it answers the writer and the entries imported.
func (w *owner) activate(t *testing.T, evt string) (persistence.Log, int) {
	t.Helper()
	last, err := w.log.LastSeq(evt)
	require.NoError(t, err)
	wr := clustertest.Claim(t, w.log, evt, last)
	n, err := w.o.Take(bg, evt)
	require.NoError(t, err)
	return wr, n
}

// deliver takes keys out of the local store, as the senders do once they
// delivered them, and runs a settling pass.
func (w *owner) deliver(t *testing.T, evt string, keys ...string) {
	t.Helper()
	b := w.store.NewBatch()
	for _, k := range keys {
		b.Delete([]byte(k))
	}
	require.NoError(t, w.store.Commit(b))
	b.Close()
	// A pass that fails (a stream electing its leader) is retried by the
	// next one, as the owner's loop does.
	var err error
	for range 20 {
		if err = w.o.settle(bg, evt); err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	require.NoError(t, err)
}

// TestSettledStaysBounded: an owner settling the entries of one event in
// many passes leaves at most settledMsgsMax messages on the event's
// settled subject (not one per pass), the subject still says every entry
// settled, and a new owner imports only the entries not delivered; a
// third owner, after the second settled those, imports none.
func TestSettledStaysBounded(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt, entries, undelivered = "evt_settled", 400, 20
	a, b, c := newOwner(t, nodes[0]), newOwner(t, nodes[1]), newOwner(t, nodes[2])

	// 100 commits of 4 records, each record owing one mail.
	w := clustertest.Claim(t, a.log, evt, 0)
	for i := range entries / 4 {
		var keys []string
		for j := range 4 {
			keys = append(keys, mailKey(evt, 4*i+j))
		}
		require.NoError(t, clustertest.CommitRecs(w, evt, uint64(4*i+1), uint64(4*i+4), keys...))
	}
	_, n := a.activate(t, evt)
	require.Equal(t, 0, n, "A holds its own entries already")

	// 190 passes, two mails delivered in each.
	for i := 0; i < entries-undelivered; i += 2 {
		a.deliver(t, evt, mailKey(evt, i), mailKey(evt, i+1))
	}
	msgs, bytes, keys := settledState(t, nodes[0], evt)
	t.Logf("after %d passes settling %d entries: %d messages, %d bytes in %s", (entries-undelivered)/2, entries-undelivered, msgs, bytes, node.SettledStream)
	require.LessOrEqual(t, msgs, settledMsgsMax)
	require.Len(t, keys, entries-undelivered, "every settled entry is on the subject")
	keyBytes := uint64((entries - undelivered) * (len(mailKey(evt, 0)) + 1))
	require.Less(t, bytes, 2*keyBytes+uint64(settledMsgsMax)*256, "the keys at most twice, and the messages' overhead")

	// B takes the event over: only the mails not delivered are imported.
	_, n = b.activate(t, evt)
	require.Equal(t, undelivered, n)
	var got []string
	require.NoError(t, b.store.Scan([]byte("mail/"+evt+"/"), func(k, _ []byte) error {
		got = append(got, string(k))
		return nil
	}))
	var want []string
	for i := entries - undelivered; i < entries; i++ {
		want = append(want, mailKey(evt, i))
	}
	require.Equal(t, want, got)

	// B delivers them one a pass (rolling the subject up on its way).
	for i := entries - undelivered; i < entries; i++ {
		b.deliver(t, evt, mailKey(evt, i))
	}
	msgs, _, keys = settledState(t, nodes[1], evt)
	require.LessOrEqual(t, msgs, settledMsgsMax)
	require.Len(t, keys, entries)
	_, n = c.activate(t, evt)
	require.Equal(t, 0, n, "everything was settled by A or B")

	// A rollup bigger than a message goes as parts of one atomic batch.
	c.o.partBytes = 2048
	m, err := c.o.marks(bg, evt)
	require.NoError(t, err)
	require.NoError(t, c.o.rollup(bg, evt, m, nil, nil))
	msgs, _, keys = settledState(t, nodes[2], evt)
	require.Greater(t, msgs, len(keys)*len(mailKey(evt, 0))/2048, "parts of at most 2 KiB")
	require.Len(t, keys, entries)
}

// TestSettledDropsTrimmedKeys: once the event's log is trimmed behind a
// snapshot, the marks of the entries its trimmed messages put are left
// out of the next rollup: the log no longer owes them.
func TestSettledDropsTrimmedKeys(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt = "evt_trimmed"
	a, b := newOwner(t, nodes[0]), newOwner(t, nodes[1])
	w := clustertest.Claim(t, a.log, evt, 0)
	for i := range 100 {
		require.NoError(t, clustertest.CommitRecs(w, evt, uint64(i+1), uint64(i+1), mailKey(evt, i)))
	}
	w, _ = a.activate(t, evt)
	for i := range 100 {
		a.deliver(t, evt, mailKey(evt, i))
	}
	// A rollup measures where the settled keys' puts lie (at or before
	// record 100).
	m, err := a.o.marks(bg, evt)
	require.NoError(t, err)
	require.NoError(t, a.o.rollup(bg, evt, m, nil, nil))
	_, before, keys := settledState(t, nodes[0], evt)
	require.Len(t, keys, 100)

	// Records 101..120 owe twenty more mails; the log is trimmed through
	// 110 (a snapshot there and an older one at 110 or after).
	for i := 100; i < 120; i++ {
		require.NoError(t, clustertest.CommitRecs(w, evt, uint64(i+1), uint64(i+1), mailKey(evt, i)))
	}
	_, _ = a.activate(t, evt)
	require.NoError(t, a.log.Trim(bg, evt, 110))
	first, err := a.log.FirstSeq(evt)
	require.NoError(t, err)
	require.Equal(t, uint64(111), first)

	// Settling the twenty, one a pass, rolls the subject up on its way.
	for i := 100; i < 120; i++ {
		a.deliver(t, evt, mailKey(evt, i))
	}
	msgs, after, keys := settledState(t, nodes[0], evt)
	t.Logf("trimmed: %d bytes before, %d after; %d messages", before, after, msgs)
	var want []string
	for i := 100; i < 120; i++ {
		want = append(want, mailKey(evt, i))
	}
	require.Equal(t, want, keys, "only the marks of puts the log still holds")
	require.Less(t, after, before)

	// A new owner imports nothing: the trimmed entries are not owed, the
	// others are settled.
	_, n := b.activate(t, evt)
	require.Equal(t, 0, n)
}

// TestCarryAcrossTrim: entries an event still owes when its log is
// trimmed behind them (a mail never delivered, a pending refund) are
// carried by its settled subject: a new owner imports them from there,
// with their values, though no message of the log puts them any more;
// one the log deleted (the refund settled) is not imported, whether the
// log still holds the delete or only the mark the owner's pass made of
// it; and once a carried entry is delivered, the next owner does not
// import it again.
func TestCarryAcrossTrim(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt = "evt_carry"
	// The carry is the owner's, the node leading the event's shard.
	lead := shardLeader(t, nodes, evt)
	a, b, c := newOwner(t, nodes[lead]), newOwner(t, nodes[(lead+1)%3]), newOwner(t, nodes[(lead+2)%3])
	a.log.OnIndex = a.o.NoteIndex // the owner follows its commits (Router.Own)
	refund := func(i int) string { return fmt.Sprintf("%s%s/rf_%d", "refund/", evt, i) }
	commit := func(w persistence.Log, seq uint64, put []string, del ...string) {
		t.Helper()
		bt := w.NewBatch()
		defer bt.Close()
		bt.Append(evt, seq, fmt.Appendf(nil, "r%d", seq))
		for _, k := range put {
			bt.Put([]byte(k), []byte("value of "+k))
		}
		for _, k := range del {
			bt.Delete([]byte(k))
		}
		wait, err := w.CommitAsync(bt)
		require.NoError(t, err)
		require.NoError(t, wait())
	}

	// Records 1..5 owe five mails; 2 and 3 a refund each.
	w := clustertest.Claim(t, a.log, evt, 0)
	for i := range 5 {
		put := []string{mailKey(evt, i)}
		if i == 1 || i == 2 {
			put = append(put, refund(i))
		}
		commit(w, uint64(i+1), put)
	}
	w, _ = a.activate(t, evt)
	a.deliver(t, evt, mailKey(evt, 0))
	require.NoError(t, a.o.carry(bg, evt))
	m, err := a.o.marks(bg, evt)
	require.NoError(t, err)
	require.Len(t, m.owing(), 6, "four mails and two refunds carried")

	// Record 6 settles refund 1 (the delete stays in the log), record 7
	// refund 2, whose delete the owner's pass marks and the trim then
	// takes; the log is trimmed through 5, then 7.
	commit(w, 6, nil, refund(1))
	require.NoError(t, a.log.Trim(bg, evt, 5))
	first, err := a.log.FirstSeq(evt)
	require.NoError(t, err)
	require.Equal(t, uint64(6), first)
	_, n := b.activate(t, evt)
	require.Equal(t, 5, n, "the four mails not delivered and refund 2, from the subject; refund 1 deleted by the log")
	v, ok, err := b.store.Get([]byte(mailKey(evt, 3)))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "value of "+mailKey(evt, 3), string(v))
	v, ok, err = b.store.Get([]byte(refund(2)))
	require.NoError(t, err)
	require.True(t, ok, "refund 2 still pending")
	require.Equal(t, "value of "+refund(2), string(v))

	// Back on A (the leader): refund 2 settled by record 7, marked by
	// A's pass (with mail 1, delivered), its delete trimmed.
	last, err := a.log.LastSeq(evt)
	require.NoError(t, err)
	// B's claim fenced A's writer: the first claim meets that, the next
	// one starts a new writer.
	for range 3 {
		if w, err = a.log.Claim(evt, last); err == nil {
			break
		}
	}
	require.NoError(t, err)
	_, err = a.o.Take(bg, evt)
	require.NoError(t, err)
	commit(w, 7, nil, refund(2))
	a.deliver(t, evt, mailKey(evt, 1))
	require.NoError(t, a.o.carry(bg, evt))
	commit(w, 8, nil) // the trim keeps the last message
	require.NoError(t, a.log.Trim(bg, evt, 7))
	first, err = a.log.FirstSeq(evt)
	require.NoError(t, err)
	require.Equal(t, uint64(8), first, "no delete of a refund left in the log")
	_, n = c.activate(t, evt)
	require.Equal(t, 3, n, "mails 2..4 only")
	var got []string
	require.NoError(t, c.store.Scan([]byte(""), func(k, _ []byte) error {
		if owedEvent(string(k)) == evt {
			got = append(got, string(k))
		}
		return nil
	}))
	require.Equal(t, []string{mailKey(evt, 2), mailKey(evt, 3), mailKey(evt, 4)}, got)
}

// TestSnapshotCarriesOwed: a busy event's own second snapshot trims its
// log through the older one; the mails its trimmed messages put and its
// owner has not delivered are carried first, so a new owner imports them
// with the one the log still puts.
func TestSnapshotCarriesOwed(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt = "evt_busy_carry"
	lead := shardLeader(t, nodes, evt)
	a, b := newOwner(t, nodes[lead]), newOwner(t, nodes[(lead+1)%3])
	w := clustertest.Claim(t, a.log, evt, 0)
	for i := range 5 {
		require.NoError(t, clustertest.CommitRecs(w, evt, uint64(i+1), uint64(i+1), mailKey(evt, i)))
	}
	require.NoError(t, clustertest.CommitRecs(w, evt, 6, 10, mailKey(evt, 5)))
	snaps := NewSnapshots(a.log)
	_, err := snaps.SaveAndTrim(evt, 5, []byte("state at 5"))
	require.NoError(t, err)
	through, err := snaps.SaveAndTrim(evt, 10, []byte("state at 10"))
	require.NoError(t, err)
	require.Equal(t, uint64(5), through)
	first, err := a.log.FirstSeq(evt)
	require.NoError(t, err)
	require.Equal(t, uint64(6), first, "the messages of records 1..5 purged")

	_, n := b.activate(t, evt)
	require.Equal(t, 6, n, "mails 0..4 carried, 5 from the log")
}

// shardLeader is the index of the node leading evt's shard stream.
func shardLeader(t *testing.T, nodes []*node.Node, evt string) int {
	t.Helper()
	for i, nd := range nodes {
		if nd.Server().JetStreamIsStreamLeader(node.GlobalAccount, node.StreamName(nd.Shard(evt))) {
			return i
		}
	}
	t.Fatalf("no leader of %s's shard", evt)
	return -1
}
