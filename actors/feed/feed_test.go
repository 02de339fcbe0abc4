package feed

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/persistence"
)

// put writes entries 1..n of evt, entry i happening at start + i minutes,
// and keeps them in ring.
func put(t *testing.T, s *persistence.Store, ring *Ring, evt string, n int, start time.Time) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	for i := 1; i <= n; i++ {
		typ := event.FeedOrderCreated
		if i%2 == 0 {
			typ = event.FeedOrderUpdated
		}
		v := AppendValue(nil, event.FeedTypeCode(typ), start.Add(time.Duration(i)*time.Minute), fmt.Appendf(nil, `{"id":"ord_%d"}`, i))
		b.Put(Key(evt, uint64(i)), v)
		ring.Put(uint64(i), v)
	}
	require.NoError(t, s.Commit(b))
}

// TestPagesFromRingAndStoreAgree: the ring and the store answer the same
// page, with the byte format's type, time and object; a page older than
// the ring holds goes to the store, and Trim deletes what is past the
// horizon.
func TestPagesFromRingAndStoreAgree(t *testing.T) {
	s, err := persistence.Open(persistence.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	ring := NewRing(0)
	put(t, s, ring, "evt_a", 10, start)
	require.Equal(t, "feed/evt_a/000000000000000a", string(Key("evt_a", 10)))

	c := event.ReadFeed{After: 2, From: true, Limit: 3}
	fromRing, ok := ring.Page(c, 10, start)
	require.True(t, ok)
	fromStore, err := ReadPage(s, "evt_a", c, 10, start, errUnavailable)
	require.NoError(t, err)
	for _, it := range fromRing.Entries {
		require.NotNil(t, it.Memo(), "an entry read from the ring carries its memo")
	}
	for _, it := range fromStore.Entries {
		require.Nil(t, it.Memo(), "an entry read from the store has none")
	}
	require.Equal(t, fromStore, withoutMemos(fromRing))
	require.Len(t, fromRing.Entries, 3)
	require.Equal(t, event.FeedItem{Seq: 3, Type: event.FeedOrderCreated, At: start.Add(3 * time.Minute), Object: []byte(`{"id":"ord_3"}`)}, fromStore.Entries[0])
	require.True(t, fromRing.HasMore)
	require.Equal(t, uint64(5), fromRing.Next)

	typed := event.ReadFeed{From: true, Limit: 10, Types: []string{event.FeedOrderUpdated}}
	p, err := ReadPage(s, "evt_a", typed, 10, start, errUnavailable)
	require.NoError(t, err)
	require.Len(t, p.Entries, 5)

	// A ring restarted at 8 holds 9.. only: an older position is the store's.
	late := NewRing(8)
	_, ok = late.Page(c, 10, start)
	require.False(t, ok)

	n, err := Trim(s, []string{"evt_a"}, start.Add(4*time.Minute+time.Second))
	require.NoError(t, err)
	require.Equal(t, 4, n)
	p, err = ReadPage(s, "evt_a", event.ReadFeed{After: 1, From: true}, 10, start, errUnavailable)
	require.NoError(t, err)
	require.True(t, p.Expired, "the entry after the position was trimmed")
}

var errUnavailable = fmt.Errorf("unavailable")

// withoutMemos is p with its items' memos dropped (to compare a page read
// from the ring with one read from the store).
func withoutMemos(p event.FeedPage) event.FeedPage {
	p = p.WithMemo(nil)
	p.Entries = append([]event.FeedItem(nil), p.Entries...)
	for i := range p.Entries {
		p.Entries[i] = p.Entries[i].WithMemo(nil)
	}
	return p
}

// TestRingMemos: every read of an entry from the ring carries the same
// memo, so what one reader keeps there the next one finds; an entry put
// later in the same place of the ring (RingLen on) has a memo of its own,
// so the renderings of the entry it replaced never answer for it.
func TestRingMemos(t *testing.T) {
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	ring := NewRing(0)
	value := func(i int) []byte {
		return AppendValue(nil, event.FeedTypeCode(event.FeedOrderUpdated), start.Add(time.Duration(i)*time.Second), fmt.Appendf(nil, `{"id":"ord_1","n":%d}`, i))
	}
	for i := 1; i <= 3; i++ {
		ring.Put(uint64(i), value(i))
	}
	read := func(after uint64, last uint64) event.FeedItem {
		p, ok := ring.Page(event.ReadFeed{After: after, From: true, Limit: 1}, last, start)
		require.True(t, ok)
		require.Len(t, p.Entries, 1)
		return p.Entries[0]
	}
	first := read(1, 3)
	require.Equal(t, uint64(2), first.Seq)
	kept := first.Memo().Store("shape", []byte("rendering of 2"))
	require.Equal(t, "rendering of 2", string(kept))
	again := read(1, 3)
	require.Same(t, first.Memo(), again.Memo())
	b, ok := again.Memo().Load("shape")
	require.True(t, ok)
	require.Equal(t, "rendering of 2", string(b))
	// The first rendering kept is the one every reader gets.
	require.Equal(t, "rendering of 2", string(again.Memo().Store("shape", []byte("another"))))
	_, ok = again.Memo().Load("other shape")
	require.False(t, ok)
	require.Equal(t, "other", string(again.Memo().Store("other shape", []byte("other"))))

	// Wrap the ring: seq 2+RingLen takes the place of seq 2.
	for i := 4; i <= 2+RingLen; i++ {
		ring.Put(uint64(i), value(i))
	}
	late := read(1+RingLen, 2+RingLen)
	require.Equal(t, uint64(2+RingLen), late.Seq)
	require.NotSame(t, first.Memo(), late.Memo())
	_, ok = late.Memo().Load("shape")
	require.False(t, ok, "the replaced entry's rendering does not answer for the new one")
	require.Contains(t, string(late.Object), fmt.Sprintf(`"n":%d`, 2+RingLen))
	// The old reader's memo still holds the old entry's rendering only.
	b, _ = first.Memo().Load("shape")
	require.Equal(t, "rendering of 2", string(b))
	// Seq 2 is no longer in the ring: the store answers it.
	_, ok = ring.Page(event.ReadFeed{After: 1, From: true, Limit: 1}, 2+RingLen, start)
	require.False(t, ok)

	var none *event.FeedMemo
	_, ok = none.Load("shape")
	require.False(t, ok)
	require.Equal(t, "x", string(none.Store("shape", []byte("x"))))
}

// TestRingBounds: a ring starts small and grows with its entries, keeps
// at most RingLen of them and at most RingBytes of their values (the
// oldest go first; a read from a position it no longer holds goes to the
// store), and a put out of order restarts it.
func TestRingBounds(t *testing.T) {
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	value := func(i, size int) []byte {
		obj := fmt.Appendf(nil, `{"id":"reg_%d","pad":"`, i)
		for len(obj) < size-2 {
			obj = append(obj, 'x')
		}
		obj = append(obj, `"}`...)
		return AppendValue(nil, event.FeedTypeCode(event.FeedRegistrationCreated), start, obj)
	}
	holds := func(r *Ring, after, last uint64) bool {
		p, ok := r.Page(event.ReadFeed{After: after, From: true, Limit: 1}, last, start)
		if ok {
			require.Len(t, p.Entries, 1)
			require.Equal(t, after+1, p.Entries[0].Seq)
			require.Contains(t, string(p.Entries[0].Object), fmt.Sprintf(`"reg_%d"`, after+1))
		}
		return ok
	}

	small := NewRing(0)
	require.Len(t, small.ents, ringLenMin)
	for i := 1; i <= 100; i++ {
		small.Put(uint64(i), value(i, 100))
	}
	require.Len(t, small.ents, 2*ringLenMin, "grown for 100 entries")
	require.True(t, holds(small, 0, 100), "growing kept every entry")
	require.True(t, holds(small, 57, 100))

	byCount := NewRing(0)
	n := RingLen + 10
	for i := 1; i <= n; i++ {
		byCount.Put(uint64(i), value(i, 50))
	}
	require.Len(t, byCount.ents, RingLen)
	require.False(t, holds(byCount, 9, uint64(n)), "seq 10 is past RingLen")
	require.True(t, holds(byCount, 10, uint64(n)))
	require.True(t, holds(byCount, uint64(n-1), uint64(n)))

	byBytes := NewRing(0)
	const size = 64 << 10
	for i := 1; i <= 300; i++ {
		byBytes.Put(uint64(i), value(i, size))
	}
	kept := RingBytes / ValueLen(size)
	require.LessOrEqual(t, byBytes.bytes, RingBytes)
	require.Equal(t, uint64(kept), byBytes.hi-byBytes.lo)
	require.False(t, holds(byBytes, uint64(300-kept-1), 300))
	require.True(t, holds(byBytes, uint64(300-kept), 300))
	// One value above the budget is still kept (the newest always is).
	huge := NewRing(0)
	huge.Put(1, value(1, RingBytes+1))
	require.True(t, holds(huge, 0, 1))

	// A put that does not follow restarts the ring at it.
	byBytes.Put(1000, value(1000, 100))
	require.Equal(t, uint64(999), byBytes.lo)
	require.Equal(t, ValueLen(100), byBytes.bytes)
	require.False(t, holds(byBytes, 299, 1000))
	require.True(t, holds(byBytes, 999, 1000))
}

// seqIDs numbers ids and codes, for a machine in a test.
type seqIDs struct{ n int }

func (s *seqIDs) New(prefix string) string { s.n++; return fmt.Sprintf("%s%d", prefix, s.n) }
func (s *seqIDs) Code(n int) string {
	s.n++
	return fmt.Sprintf("%0*d", n, s.n)
}

// TestSpansFromRingAndStoreAgree: a batch of scans' feed entries are one
// span record (keyed by its last seq) between single entries; the ring
// and the store answer every page alike from every position, inside the
// span too, each object the one event.ExpandFeedSpan renders; the ring
// renders a span once for all its entries; Trim deletes the span as one
// record.
func TestSpansFromRingAndStoreAgree(t *testing.T) {
	s, err := persistence.Open(persistence.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	m := event.NewMachine("evt_s", event.Config{BaseURL: "http://test"}, &seqIDs{})
	do := func(c event.Command) ([]event.Change, any) {
		res, chs, err := m.Decide(start, c)
		require.NoError(t, err)
		for _, ch := range chs {
			m.Apply(ch)
		}
		return chs, res
	}
	do(event.CreateEvent{Name: "Conf", Timezone: "UTC"})
	var regs []string
	for i := range 3 {
		_, r := do(event.CreateRegistration{Email: fmt.Sprintf("p%d@x.io", i), Name: []string{"Ann", `<"Bo">`, "Zoë"}[i]})
		regs = append(regs, r.(event.RegistrationResult).ID)
	}
	batch := event.RecordScans{DeviceID: "dev_1", Doors: []event.DoorRef{{SubjectType: "event"}}}
	for i, id := range regs {
		batch.Scans = append(batch.Scans, event.Scan{ScanID: fmt.Sprint(i), RegistrationID: id, SubjectType: "event", ScannedAt: event.At(start)})
	}
	chs, _ := do(batch)
	require.Len(t, chs, 1)
	require.True(t, event.HasFeedSpan(chs[0]))
	span, ok := m.AppendFeedSpan(nil, chs[0])
	require.True(t, ok)
	objs, err := event.ExpandFeedSpan(event.FeedCheckinCreated, span)
	require.NoError(t, err)
	require.Len(t, objs, 3)
	require.Contains(t, string(objs[1]), `"registrationName":"\u003c\"Bo\"\u003e"`)

	// Seqs 1, 2 single; 3..5 the span (key 5); 6 single.
	ring := NewRing(0)
	b := s.NewBatch()
	single := func(seq uint64, typ string) {
		v := AppendValue(nil, event.FeedTypeCode(typ), start, fmt.Appendf(nil, `{"id":"x%d"}`, seq))
		b.Put(Key("evt_s", seq), v)
		ring.Put(seq, v)
	}
	single(1, event.FeedRegistrationCreated)
	single(2, event.FeedRegistrationCreated)
	v := AppendSpan(nil, event.FeedTypeCode(event.FeedCheckinCreated), start.Add(time.Minute), 3, span)
	b.Put(Key("evt_s", 5), v)
	ring.PutSpan(3, 3, v)
	single(6, event.FeedRegistrationUpdated)
	require.NoError(t, s.Commit(b))
	b.Close()

	for after := uint64(0); after < 6; after++ {
		for limit := 1; limit <= 4; limit++ {
			for _, types := range [][]string{nil, {event.FeedCheckinCreated}, {event.FeedRegistrationUpdated}} {
				c := event.ReadFeed{After: after, From: true, Limit: limit, Types: types}
				fromRing, ok := ring.Page(c, 6, start)
				require.True(t, ok)
				fromStore, err := ReadPage(s, "evt_s", c, 6, start, errUnavailable)
				require.NoError(t, err)
				require.Equal(t, fromStore, withoutMemos(fromRing), "after %d limit %d types %v", after, limit, types)
				for _, it := range fromStore.Entries {
					require.Greater(t, it.Seq, after)
					if it.Seq >= 3 && it.Seq <= 5 {
						require.Equal(t, event.FeedCheckinCreated, it.Type)
						require.Equal(t, start.Add(time.Minute), it.At)
						require.Equal(t, objs[it.Seq-3], it.Object)
					}
				}
			}
		}
	}
	// The span's entries share one rendering of the span.
	p, _ := ring.Page(event.ReadFeed{After: 2, From: true, Limit: 3}, 6, start)
	require.Len(t, p.Entries, 3)
	require.Equal(t, &p.Entries[0].Object[:1][0], &ring.ents[3%uint64(len(ring.ents))].span.objs[0][:1][0])
	require.NotSame(t, p.Entries[0].Memo(), p.Entries[1].Memo(), "each entry has its own memo")
	// From the oldest kept: the span's first entry when the trim took 1, 2.
	n, err := Trim(s, []string{"evt_s"}, start.Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, 2, n)
	oldest, err := ReadPage(s, "evt_s", event.ReadFeed{Limit: 2}, 6, start.Add(time.Second), errUnavailable)
	require.NoError(t, err)
	require.Equal(t, uint64(3), oldest.Entries[0].Seq)
	require.Equal(t, uint64(4), oldest.Next)
	n, err = Trim(s, []string{"evt_s"}, start.Add(2*time.Minute))
	require.NoError(t, err)
	require.Equal(t, 2, n, "the span is one record")
}

// TestRingKeepsWholePages: a whole page (its limit's entries, no types
// filter) read from the ring is kept with a memo of its wire forms, and
// the next read from the same position with the same limit gets that
// page (same entries, same memo) with its own Last; a partial page, a
// page read with types, and a page kept at the feed's end once the feed
// moved on (its hasMore would differ) are read anew; a kept page whose
// entries left the ring answers no more.
func TestRingKeepsWholePages(t *testing.T) {
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	ring := NewRing(0)
	value := func(i int) []byte {
		return AppendValue(nil, event.FeedTypeCode(event.FeedOrderCreated), start.Add(time.Duration(i)*time.Millisecond), fmt.Appendf(nil, `{"id":"ord_%d"}`, i))
	}
	for i := 1; i <= 100; i++ {
		ring.Put(uint64(i), value(i))
	}
	read := func(c event.ReadFeed, last uint64) event.FeedPage {
		p, ok := ring.Page(c, last, start)
		require.True(t, ok)
		return p
	}
	c := event.ReadFeed{After: 10, From: true, Limit: 20}
	a := read(c, 90)
	require.NotNil(t, a.Memo(), "a whole page has a memo")
	require.Len(t, a.Entries, 20)
	b := read(c, 100)
	require.Same(t, a.Memo(), b.Memo(), "the next reader gets the page kept")
	require.Same(t, &a.Entries[0], &b.Entries[0])
	require.Equal(t, uint64(100), b.Last)
	require.True(t, b.HasMore)
	require.Equal(t, uint64(30), b.Next)

	require.Nil(t, read(event.ReadFeed{After: 95, From: true, Limit: 20}, 100).Memo(), "a partial page is not kept")
	typed := event.ReadFeed{After: 10, From: true, Limit: 20, Types: []string{event.FeedOrderCreated}}
	require.Nil(t, read(typed, 100).Memo(), "a page read with types is not kept")

	// A whole page that ends the feed, then the feed moves on.
	end := event.ReadFeed{After: 80, From: true, Limit: 20}
	e1 := read(end, 100)
	require.False(t, e1.HasMore)
	for i := 101; i <= 110; i++ {
		ring.Put(uint64(i), value(i))
	}
	e2 := read(end, 110)
	require.True(t, e2.HasMore, "not the page kept at the end")
	require.NotSame(t, e1.Memo(), e2.Memo())
	require.Equal(t, e1.Entries, e2.Entries)

	// The ring moves past the kept page's entries: the store answers.
	for i := 111; i <= 110+RingLen; i++ {
		ring.Put(uint64(i), value(i))
	}
	_, ok := ring.Page(c, 110+RingLen, start)
	require.False(t, ok, "the page's entries left the ring")
}
