package feed

import (
	"slices"
	"sync"
	"time"

	"ticketd/event"
)

// RingLen is how many of its newest feed entries an event actor
// keeps in memory (Ring), about 3 MiB for orders.
const RingLen = 4096

// Ring holds an event's newest feed entries (their stored values,
// never changed once put) for its followers: a drop's followers read what
// was just written, and twenty of them reading it from Pebble, each
// decoding and copying every entry, doubled the service's CPU per order.
// The actor puts; the readers' goroutines read under the lock.
type Ring struct {
	mu     sync.RWMutex
	vals   [RingLen][]byte
	lo, hi uint64 // the ring holds seqs lo+1..hi
}

// NewRing returns an empty ring whose next entry is end+1.
func NewRing(end uint64) *Ring { return &Ring{lo: end, hi: end} }

// Put keeps the value of seq (the next seq; any other restarts the ring).
func (r *Ring) Put(seq uint64, v []byte) {
	c := append([]byte(nil), v...)
	r.mu.Lock()
	if seq != r.hi+1 {
		r.lo = seq - 1
	}
	r.hi = seq
	r.vals[seq%RingLen] = c
	if r.hi-r.lo > RingLen {
		r.lo = r.hi - RingLen
	}
	r.mu.Unlock()
}

// Page answers c through last from the ring when the ring holds every
// entry it needs (a read from a position, its next entry in the ring);
// false sends the read to the store.
func (r *Ring) Page(c event.ReadFeed, last uint64, horizon time.Time) (event.FeedPage, bool) {
	page := event.FeedPage{Last: last, Next: c.After}
	if !c.From || c.After >= last {
		return page, c.From
	}
	limit := c.Limit
	if limit <= 0 {
		limit = event.FeedLimitDefault
	}
	// The values are copied out (their headers: the bytes never change)
	// and the lock let go before they are read: the actor's put waits
	// for the readers.
	n := last - c.After
	if n > RingLen {
		return page, false // older than the ring holds
	}
	if len(c.Types) == 0 {
		n = min(n, uint64(limit))
	}
	vals := make([][]byte, n)
	r.mu.RLock()
	if c.After < r.lo || last > r.hi {
		r.mu.RUnlock()
		return page, false
	}
	for i := range vals {
		vals[i] = r.vals[(c.After+1+uint64(i))%RingLen]
	}
	r.mu.RUnlock()
	page.Entries = make([]event.FeedItem, 0, min(len(vals), limit))
	for i, v := range vals {
		seq := c.After + 1 + uint64(i)
		if len(v) < headerLen || v[0] != version {
			return event.FeedPage{Last: last, Next: c.After}, false
		}
		at := at(v).UTC()
		if i == 0 && at.Before(horizon) {
			return event.FeedPage{Last: last, Next: c.After, Expired: true}, true
		}
		page.Next = seq
		typ := event.FeedTypeOf(v[1])
		if len(c.Types) > 0 && !slices.Contains(c.Types, typ) {
			continue
		}
		page.Entries = append(page.Entries, event.FeedItem{Seq: seq, Type: typ, At: at, Object: v[headerLen:]})
		if len(page.Entries) == limit {
			page.HasMore = seq < last
			break
		}
	}
	return page, true
}
