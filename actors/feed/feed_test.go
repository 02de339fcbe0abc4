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
	require.Equal(t, fromStore, fromRing)
	require.Len(t, fromRing.Entries, 3)
	require.Equal(t, event.FeedItem{Seq: 3, Type: event.FeedOrderCreated, At: start.Add(3 * time.Minute), Object: []byte(`{"id":"ord_3"}`)}, fromRing.Entries[0])
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
