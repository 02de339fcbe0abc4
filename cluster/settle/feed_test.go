package settle

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"ticketd/cluster/clustertest"
	"ticketd/internal/pace"
	"ticketd/persistence"
)

// feedBase is when the test's feed entries happened (within the
// retention: an import leaves out older ones).
var feedBase = time.Now().Add(-time.Hour)

// feedValue is a feed entry's stored value (actors/feed, version 1) of
// about 800 bytes: an order's object.
func feedValue(evt string, seq uint64) []byte {
	v := []byte{1, 1}
	v = binary.BigEndian.AppendUint64(v, uint64(feedBase.UnixNano())+seq)
	obj := fmt.Sprintf(`{"id":"ord_%s_%d","pad":"`, evt, seq)
	return append(v, obj+strings.Repeat("y", 800-len(obj))+`"}`...)
}

// commitFeed appends records from..to of evt through w, each putting
// the feed entries of its seq range [f0, f1) split evenly.
func commitFeed(t *testing.T, w persistence.Log, evt string, rec, f0, f1 uint64) {
	t.Helper()
	b := w.NewBatch()
	defer b.Close()
	b.Append(evt, rec, fmt.Appendf(nil, "r%d", rec))
	for s := f0; s < f1; s++ {
		b.Put(feedKey(evt, s), feedValue(evt, s))
	}
	wait, err := w.CommitAsync(b)
	require.NoError(t, err)
	require.NoError(t, wait())
}

// requireFeed asserts store holds evt's feed entries 1..n, each as
// written, and nothing else.
func requireFeed(t *testing.T, store *persistence.Store, evt string, n uint64) {
	t.Helper()
	prefix := feedEventPrefix(evt)
	next := uint64(1)
	require.NoError(t, store.Scan(prefix, func(k, v []byte) error {
		require.Equal(t, next, feedSeqOf(k, len(prefix)))
		require.Equal(t, string(feedValue(evt, next)), string(v), "seq %d", next)
		next++
		return nil
	}))
	require.Equal(t, n+1, next, "entries 1..%d", n)
}

// TestFeedCarriedPastTrim: an owner's snapshots trim the log through the
// messages that put 2,500 feed entries (about 2 MB: parts of 1 MiB); the
// entries go to the event's subject of the feed stream first, only the
// new ones at the next snapshot, and a node that claims the event after
// imports every entry, byte for byte, though no message of the log puts
// most of them any more; its own carry then publishes only the entry
// the log alone put, and a claim again keeps the feed whole.
func TestFeedCarriedPastTrim(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt = "evt_feed_carried"
	lead := shardLeader(t, nodes, evt)
	a, b := newOwner(t, nodes[lead]), newOwner(t, nodes[(lead+1)%3])
	snaps := NewSnapshots(a.log)
	a.log.ImportClaimed = snaps.Feeds.Import
	w := clustertest.Claim(t, a.log, evt, 0)
	for r := range uint64(5) { // records 1..5: 500 entries each
		commitFeed(t, w, evt, r+1, 500*r+1, 500*(r+1)+1)
	}
	for r := uint64(6); r <= 10; r++ {
		commitFeed(t, w, evt, r, 2500+r-5, 2500+r-4) // 2501..2505
	}
	_, err := snaps.SaveAndTrim(evt, 5, []byte("state at 5"))
	require.NoError(t, err)
	through, err := snaps.SaveAndTrim(evt, 10, []byte("state at 10"))
	require.NoError(t, err)
	require.Equal(t, uint64(5), through)
	first, err := a.log.FirstSeq(evt)
	require.NoError(t, err)
	require.Equal(t, uint64(6), first, "the messages of records 1..5 purged")
	s, err := nodes[lead].JetStream().Stream(bg, FeedStream)
	require.NoError(t, err)
	msgs := func() uint64 {
		in, err := s.Info(bg)
		require.NoError(t, err)
		return in.State.Msgs
	}
	carried := msgs()
	require.GreaterOrEqual(t, carried, uint64(2), "2 MB of entries in parts of at most 1 MiB")

	// More entries; the next snapshot carries those alone.
	for r := uint64(11); r <= 15; r++ {
		commitFeed(t, w, evt, r, 2500+r-5, 2500+r-4) // 2506..2510
	}
	_, err = snaps.SaveAndTrim(evt, 15, []byte("state at 15"))
	require.NoError(t, err)
	require.Equal(t, carried+1, msgs(), "one message of the 5 new entries")
	last, err := s.GetLastMsgForSubject(bg, feedSubj+evt)
	require.NoError(t, err)
	require.Equal(t, "2510", last.Header.Get(hdrFeedLast))
	commitFeed(t, w, evt, 16, 2511, 2512) // put by the log alone

	bsnaps := NewSnapshots(b.log)
	b.log.ImportClaimed = bsnaps.Feeds.Import
	b.activate(t, evt)
	requireFeed(t, b.store, evt, 2511)

	// The new owner's own carry publishes only what is new.
	require.NoError(t, bsnaps.Feeds.Carry(bg, evt))
	require.Equal(t, carried+2, msgs())
	last, err = s.GetLastMsgForSubject(bg, feedSubj+evt)
	require.NoError(t, err)
	require.Equal(t, "2511", last.Header.Get(hdrFeedLast))
	b.activate(t, evt)
	requireFeed(t, b.store, evt, 2511)
}

// TestFeedPrefetchedAheadOfAMove: a node that preloads an event ahead of
// a planned move fetches the feed entries the feed stream carries and
// those the log's messages put so far (Prefetch), noting the message it
// read through; the handover's catch-up prefetch reads only the messages
// since, and so does the claim after the move: with the event's subject
// of the feed stream purged before the claim, the new owner holds every
// entry, the prefetched ones and the log's rest, byte for byte, each
// once, though the claim read 3 of them.
func TestFeedPrefetchedAheadOfAMove(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt = "evt_feed_prefetched"
	lead := shardLeader(t, nodes, evt)
	a, c := newOwner(t, nodes[lead]), newOwner(t, nodes[(lead+2)%3])
	snaps := NewSnapshots(a.log)
	a.log.ImportClaimed = snaps.Feeds.Import
	w := clustertest.Claim(t, a.log, evt, 0)
	for r := range uint64(4) { // records 1..4: 500 entries each
		commitFeed(t, w, evt, r+1, 500*r+1, 500*(r+1)+1)
	}
	commitFeed(t, w, evt, 5, 2001, 2002)
	_, err := snaps.SaveAndTrim(evt, 4, []byte("state at 4"))
	require.NoError(t, err)
	through, err := snaps.SaveAndTrim(evt, 5, []byte("state at 5"))
	require.NoError(t, err)
	require.Equal(t, uint64(4), through)
	commitFeed(t, w, evt, 6, 2002, 2004) // in the log's tail alone

	csnaps := NewSnapshots(c.log)
	c.log.ImportClaimed = csnaps.Feeds.Import
	require.NoError(t, csnaps.Feeds.Prefetch(bg, evt, nil))
	requireFeed(t, c.store, evt, 2003) // carried through 2001 by the trim, the rest from the log
	first := csnaps.Feeds.last
	require.Zero(t, first.after, "the first prefetch reads the whole tail")
	require.Equal(t, uint64(3), first.logSeen, "the tail's entries 2001..2003")
	require.Equal(t, 2003, first.imported)
	require.Equal(t, first.through, csnaps.Feeds.reached[evt].through)
	require.Equal(t, uint64(2003), csnaps.Feeds.reached[evt].held)

	// The owner goes on; the handover's catch-up reads only what is new.
	commitFeed(t, w, evt, 7, 2004, 2006)
	require.NoError(t, csnaps.Feeds.Prefetch(bg, evt, nil))
	requireFeed(t, c.store, evt, 2005)
	second := csnaps.Feeds.last
	require.Equal(t, first.through, second.after)
	require.Greater(t, second.through, first.through)
	require.Equal(t, uint64(2), second.logSeen, "entries 2004..2005 alone")
	require.Equal(t, 2, second.imported)

	commitFeed(t, w, evt, 8, 2006, 2009)
	s, err := nodes[lead].JetStream().Stream(bg, FeedStream)
	require.NoError(t, err)
	require.NoError(t, s.Purge(bg, jetstream.WithPurgeSubject(feedSubj+evt)))
	c.activate(t, evt)
	requireFeed(t, c.store, evt, 2008)
	claim := csnaps.Feeds.last
	require.Equal(t, second.through, claim.after, "the claim reads the log after the prefetch's point")
	require.Equal(t, uint64(3), claim.logSeen, "entries 2006..2008 alone")
	require.Equal(t, 3, claim.imported)
	require.NotContains(t, csnaps.Feeds.reached, evt, "the claim consumed the point")

}

// TestFeedPrefetchPointLost: a store that lost prefetched entries after
// the prefetch noted its point (its last entry deleted here) is read
// whole again at the claim, and holds every entry once.
func TestFeedPrefetchPointLost(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt = "evt_feed_point_lost"
	lead := shardLeader(t, nodes, evt)
	a, c := newOwner(t, nodes[lead]), newOwner(t, nodes[(lead+1)%3])
	w := clustertest.Claim(t, a.log, evt, 0)
	for r := range uint64(3) { // records 1..3: 500 entries each
		commitFeed(t, w, evt, r+1, 500*r+1, 500*(r+1)+1)
	}
	csnaps := NewSnapshots(c.log)
	c.log.ImportClaimed = csnaps.Feeds.Import
	require.NoError(t, csnaps.Feeds.Prefetch(bg, evt, nil))
	requireFeed(t, c.store, evt, 1500)
	require.NotZero(t, csnaps.Feeds.reached[evt].through)
	b := c.store.NewBatch()
	b.Delete(feedKey(evt, 1500))
	require.NoError(t, c.store.Commit(b))
	b.Close()
	commitFeed(t, w, evt, 4, 1501, 2001)
	c.activate(t, evt)
	requireFeed(t, c.store, evt, 2000)
	require.Zero(t, csnaps.Feeds.last.after, "the point no longer holds: the whole tail")
	require.Equal(t, uint64(2000), csnaps.Feeds.last.logSeen)
	require.Equal(t, 501, csnaps.Feeds.last.imported)
}

// TestFeedPrefetchThenTrim: the log is trimmed between a prefetch and the
// claim, past the message the prefetch read through (the messages that
// put entries 2001..2004 purged unread by the taker); the claim reads the
// log after its point (from the first message kept) and the feed stream,
// which the owner's carry made hold the purged entries: the new owner
// holds every entry once, byte for byte.
func TestFeedPrefetchThenTrim(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt = "evt_feed_prefetch_trim"
	lead := shardLeader(t, nodes, evt)
	a, c := newOwner(t, nodes[lead]), newOwner(t, nodes[(lead+1)%3])
	snaps := NewSnapshots(a.log)
	a.log.ImportClaimed = snaps.Feeds.Import
	w := clustertest.Claim(t, a.log, evt, 0)
	for r := range uint64(4) { // records 1..4: 500 entries each
		commitFeed(t, w, evt, r+1, 500*r+1, 500*(r+1)+1)
	}
	csnaps := NewSnapshots(c.log)
	c.log.ImportClaimed = csnaps.Feeds.Import
	require.NoError(t, csnaps.Feeds.Prefetch(bg, evt, nil))
	requireFeed(t, c.store, evt, 2000) // the log's alone: nothing carried yet
	pre := csnaps.Feeds.last
	require.Equal(t, uint64(2000), pre.logSeen)

	commitFeed(t, w, evt, 5, 2001, 2003)
	commitFeed(t, w, evt, 6, 2003, 2005)
	_, err := snaps.SaveAndTrim(evt, 5, []byte("state at 5"))
	require.NoError(t, err)
	through, err := snaps.SaveAndTrim(evt, 6, []byte("state at 6"))
	require.NoError(t, err)
	require.Equal(t, uint64(5), through)
	first, err := a.log.FirstSeq(evt)
	require.NoError(t, err)
	require.Equal(t, uint64(6), first, "the messages of records 1..5 purged")
	commitFeed(t, w, evt, 7, 2005, 2006)

	c.activate(t, evt)
	requireFeed(t, c.store, evt, 2005)
	claim := csnaps.Feeds.last
	require.Equal(t, pre.through, claim.after, "the point holds over the trim")
	require.Equal(t, uint64(3), claim.logSeen, "entries 2003..2005 of the messages kept")
	require.Equal(t, 5, claim.imported, "2001..2002 from the stream, 2003..2005 from either")
}

// TestFeedPrefetchCutShort: a prefetch stopped part way through the feed
// stream (as when the leaving owner gave up on it, or the move came
// first) keeps the point it reached, committed; the claim then reads the
// stream's messages after it and the log, not the whole feed again, and
// the new owner holds every entry once, byte for byte.
func TestFeedPrefetchCutShort(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt = "evt_feed_cut_short"
	lead := shardLeader(t, nodes, evt)
	a, c := newOwner(t, nodes[lead]), newOwner(t, nodes[(lead+1)%3])
	snaps := NewSnapshots(a.log)
	a.log.ImportClaimed = snaps.Feeds.Import
	w := clustertest.Claim(t, a.log, evt, 0)
	for r := range uint64(8) { // records 1..8: 1,000 entries each
		commitFeed(t, w, evt, r+1, 1000*r+1, 1000*(r+1)+1)
	}
	commitFeed(t, w, evt, 9, 8001, 8002)
	_, err := snaps.SaveAndTrim(evt, 8, []byte("state at 8"))
	require.NoError(t, err)
	_, err = snaps.SaveAndTrim(evt, 9, []byte("state at 9")) // carries 1..8001
	require.NoError(t, err)
	commitFeed(t, w, evt, 10, 8002, 8102) // in the log's tail alone

	csnaps := NewSnapshots(c.log)
	c.log.ImportClaimed = csnaps.Feeds.Import
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	csnaps.Feeds.noted = func(p feedPoint) {
		if p.stream > 0 {
			cancel() // stopped after its first commit of the stream's entries
		}
	}
	var progress pace.Progress
	err = csnaps.Feeds.Prefetch(ctx, evt, &progress)
	require.ErrorIs(t, err, context.Canceled)
	csnaps.Feeds.noted = nil
	point := csnaps.Feeds.reached[evt]
	_, entries := progress.Done()
	t.Logf("cut short at stream message %d, log message %d, %d entries held, after %d entries read", point.stream, point.through, point.held, entries)
	require.Positive(t, point.stream, "the stream's point kept")
	require.GreaterOrEqual(t, point.held, uint64(feedImportBatch), "its entries committed")
	require.Less(t, point.held, uint64(8001), "not the whole stream")
	require.Positive(t, entries, "progress counted")

	c.activate(t, evt)
	requireFeed(t, c.store, evt, 8101)
	claim := csnaps.Feeds.last
	s, err := nodes[lead].JetStream().Stream(bg, FeedStream)
	require.NoError(t, err)
	last, err := s.GetLastMsgForSubject(bg, feedSubj+evt)
	require.NoError(t, err)
	first, err := s.GetMsg(bg, point.stream)
	require.NoError(t, err)
	require.Equal(t, feedSubj+evt, first.Subject)
	t.Logf("the claim read %d stream messages (the subject's last is %d), imported %d", claim.streams, last.Sequence, claim.imported)
	require.LessOrEqual(t, claim.streams, last.Sequence-point.stream, "only the stream's messages after the point")
	require.Equal(t, 8101-int(point.held), claim.imported, "only the entries the prefetch had not committed")
}
