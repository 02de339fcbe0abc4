package feed

import (
	"slices"
	"sync"
	"time"

	"ticketd/event"
)

// RingLen is how many of its newest feed entries an event actor
// keeps in memory (Ring), about 3 MiB for orders (twice that once their
// renderings are kept too, see event.FeedMemo).
const RingLen = 4096

// ringEntry is one entry of the ring: its stored value and the memo of
// its renderings, both never changed once put (a later entry in the same
// place of the ring is a new ringEntry, so a reader that still holds the
// old one can neither read nor keep a rendering of the wrong entry).
type ringEntry struct {
	v    []byte
	memo event.FeedMemo
}

// Ring holds an event's newest feed entries for its followers: a drop's
// followers read what was just written, and twenty of them reading it
// from Pebble, each decoding and copying every entry, doubled the
// service's CPU per order. The actor puts; the readers' goroutines read
// under the lock.
type Ring struct {
	mu     sync.RWMutex
	ents   [RingLen]*ringEntry
	lo, hi uint64 // the ring holds seqs lo+1..hi
}

// NewRing returns an empty ring whose next entry is end+1.
func NewRing(end uint64) *Ring { return &Ring{lo: end, hi: end} }

// Put keeps the value v of seq (the next seq; any other restarts the
// ring). The ring keeps v itself: the caller must not change it after.
func (r *Ring) Put(seq uint64, v []byte) {
	e := &ringEntry{v: v}
	r.mu.Lock()
	if seq != r.hi+1 {
		r.lo = seq - 1
	}
	r.hi = seq
	r.ents[seq%RingLen] = e
	if r.hi-r.lo > RingLen {
		r.lo = r.hi - RingLen
	}
	r.mu.Unlock()
}

// Page answers c through last from the ring when the ring holds every
// entry it needs (a read from a position whose next entry is in the ring
// and, with a types filter, everything through last); false sends the
// read to the store. Its items carry their memos (event.FeedItem.Memo).
func (r *Ring) Page(c event.ReadFeed, last uint64, horizon time.Time) (event.FeedPage, bool) {
	page := event.FeedPage{Last: last, Next: c.After}
	if !c.From || c.After >= last {
		return page, c.From
	}
	limit := c.Limit
	if limit <= 0 {
		limit = event.FeedLimitDefault
	}
	// Without a types filter a page needs its limit's entries only.
	n := last - c.After
	if len(c.Types) == 0 {
		n = min(n, uint64(limit))
	}
	if n > RingLen {
		return page, false // older than the ring holds
	}
	// The entries are copied out (pointers: they never change) and the
	// lock let go before they are read: the actor's put waits for the
	// readers.
	var buf [event.FeedLimitMax]*ringEntry
	var ents []*ringEntry
	if n <= uint64(len(buf)) {
		ents = buf[:n]
	} else {
		ents = make([]*ringEntry, n)
	}
	r.mu.RLock()
	if c.After < r.lo || c.After+n > r.hi {
		r.mu.RUnlock()
		return page, false
	}
	for i := range ents {
		ents[i] = r.ents[(c.After+1+uint64(i))%RingLen]
	}
	r.mu.RUnlock()
	page.Entries = make([]event.FeedItem, 0, min(len(ents), limit))
	for i, e := range ents {
		seq, v := c.After+1+uint64(i), e.v
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
		it := event.FeedItem{Seq: seq, Type: typ, At: at, Object: v[headerLen:]}
		page.Entries = append(page.Entries, it.WithMemo(&e.memo))
		if len(page.Entries) == limit {
			break
		}
	}
	page.HasMore = page.Next < last
	return page, true
}
