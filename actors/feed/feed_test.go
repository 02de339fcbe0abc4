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
