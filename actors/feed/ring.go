package feed

import (
	"slices"
	"sync"
	"time"

	"ticketd/event"
)

// Bounds of the ring of an event's newest feed entries (Ring). A
// follower whose position has left the ring reads its pages from the
// store, each entry decoded, copied and rendered for it alone, and so
// falls further behind: the ring reaches back about 0.8 s of a drop
// selling 20,000 orders/s (a follower's p99 lag was 0.16 s on an idle
// machine, above a second on a loaded one, beyond the 4,096 entries once
// kept).
const (
	// RingLen bounds its entries.
	RingLen = 16384
	// RingBytes bounds their stored values' bytes (an order's is about
	// 750; its rendering, kept once read, about as much again).
	RingBytes = 16 << 20
	// ringLenMin is the room of a new ring; it doubles as entries come,
	// up to RingLen, so an event with few changes keeps a small one.
	ringLenMin = 64
)

// ringEntry is one entry of the ring: its stored value and the memo of
// its renderings, both never changed once put (a later entry in the same
// place of the ring is a new ringEntry, so a reader that still holds the
// old one can neither read nor keep a rendering of the wrong entry).
type ringEntry struct {
	v []byte
	// typ and at are v's, read once at the put: a page of 1,000 entries
	// read by twenty followers then touches none of their values'
	// bytes (the renderings kept in memo are what they send); typ is ""
	// for a value the ring cannot read.
	typ  string
	at   time.Time
	memo event.FeedMemo
	// span, for an entry of a span record (v is the span's value), holds
	// the objects of its entries, rendered by the first reader of any of
	// them; idx is the entry's place in it.
	span *spanObjects
	idx  int
	size int // bytes of v counted for this entry (a span's last)
}

// spanObjects renders a span's objects once, for all its entries' readers.
type spanObjects struct {
	once sync.Once
	objs [][]byte
	err  error
}

// object is entry i of span value v of type typ, rendered.
func (s *spanObjects) object(typ string, v []byte, i int) ([]byte, error) {
	s.once.Do(func() { _, s.objs, s.err = expandSpan(typ, v) })
	if s.err != nil || i >= len(s.objs) {
		return nil, errSpan
	}
	return s.objs[i], nil
}

// Ring holds an event's newest feed entries for its followers: a drop's
// followers read what was just written, and twenty of them reading it
// from Pebble, each decoding and copying every entry, doubled the
// service's CPU per order. The actor puts; the readers' goroutines read
// under the lock.
type Ring struct {
	mu     sync.RWMutex
	ents   []*ringEntry // seq s at s % len(ents); len a power of two
	lo, hi uint64       // the ring holds seqs lo+1..hi
	bytes  int          // of the values of lo+1..hi

	// pages keeps the last whole pages read (ringPages), each with the
	// memo of its wire forms (event.FeedPageMemo): followers of a drop
	// read the same pages one after another, each a thousand entries,
	// and the second reader of one takes it, and its wire form, as made
	// for the first.
	pagesMu sync.Mutex
	pages   [ringPages]ringPage
	pagesAt int // the slot the next page kept takes
}

// ringPages is how many whole pages a ring keeps for their next readers:
// about as many as there are distinct positions among a drop's followers
// at one time.
const ringPages = 8

// ringPage is a whole page kept: the read's position and limit, and the
// page (its Last aside, the same for any durable end past it).
type ringPage struct {
	after uint64
	limit int
	page  event.FeedPage
}

// NewRing returns an empty ring whose next entry is end+1.
func NewRing(end uint64) *Ring {
	return &Ring{ents: make([]*ringEntry, ringLenMin), lo: end, hi: end}
}

// Put keeps the value v of seq (the next seq; any other restarts the
// ring). The ring keeps v itself: the caller must not change it after.
func (r *Ring) Put(seq uint64, v []byte) {
	e := &ringEntry{v: v, size: len(v)}
	e.typ, e.at = header(v)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.put(seq, e)
}

// PutSpan keeps the span value v of the n entries first..first+n-1 (the
// next seqs), as Put does. Their objects are rendered by their first
// reader (and, for a span that leaves the ring unread, never).
func (r *Ring) PutSpan(first uint64, n int, v []byte) {
	sp := &spanObjects{}
	es := make([]ringEntry, n)
	// One header for all its entries: read once, not once an entry.
	typ, at := header(v)
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range es {
		es[i] = ringEntry{v: v, typ: typ, at: at, span: sp, idx: i}
		if i == n-1 {
			// The value and, once read, its rendered objects (about
			// twice its bytes), counted once.
			es[i].size = 3 * len(v)
		}
		r.put(first+uint64(i), &es[i])
	}
}

// header is the type and time of stored value v, or "" for a value the
// ring cannot read.
func header(v []byte) (string, time.Time) {
	if len(v) >= headerLen && (v[0] == version || v[0] == versionSpan) {
		return event.FeedTypeOf(v[1]), at(v).UTC()
	}
	return "", time.Time{}
}

// put keeps e, its typ and at read (header), as seq, under the lock.
func (r *Ring) put(seq uint64, e *ringEntry) {
	if seq != r.hi+1 {
		clear(r.ents)
		r.lo, r.hi, r.bytes = seq-1, seq-1, 0
	}
	if r.hi-r.lo == uint64(len(r.ents)) {
		if len(r.ents) < RingLen {
			r.grow()
		} else {
			r.drop()
		}
	}
	r.hi = seq
	r.ents[seq%uint64(len(r.ents))] = e
	r.bytes += e.size
	for r.bytes > RingBytes && r.hi-r.lo > 1 {
		r.drop()
	}
}

// grow doubles the room of the ring, its entries kept.
func (r *Ring) grow() {
	ents := make([]*ringEntry, 2*len(r.ents))
	for s := r.lo + 1; s <= r.hi; s++ {
		ents[s%uint64(len(ents))] = r.ents[s%uint64(len(r.ents))]
	}
	r.ents = ents
}

// drop lets the oldest entry go.
func (r *Ring) drop() {
	i := (r.lo + 1) % uint64(len(r.ents))
	r.bytes -= r.ents[i].size
	r.ents[i] = nil
	r.lo++
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
	whole := len(c.Types) == 0 && n == uint64(limit)
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
	if whole {
		// Kept pages answer only while their entries are in the ring
		// (the ring's bounds are the memory the feed keeps).
		if p, ok := r.keptPage(c.After, limit, last, horizon); ok {
			r.mu.RUnlock()
			return p, true
		}
	}
	for i := range ents {
		ents[i] = r.ents[(c.After+1+uint64(i))%uint64(len(r.ents))]
	}
	r.mu.RUnlock()
	page.Entries = make([]event.FeedItem, 0, min(len(ents), limit))
	for i, e := range ents {
		seq, v := c.After+1+uint64(i), e.v
		if e.typ == "" {
			// A value the ring cannot read: the store's reader says why.
			return event.FeedPage{Last: last, Next: c.After}, false
		}
		if i == 0 && e.at.Before(horizon) {
			return event.FeedPage{Last: last, Next: c.After, Expired: true}, true
		}
		page.Next = seq
		if len(c.Types) > 0 && !slices.Contains(c.Types, e.typ) {
			continue
		}
		obj := v[headerLen:]
		if e.span != nil {
			var err error
			if obj, err = e.span.object(e.typ, v, e.idx); err != nil {
				return event.FeedPage{Last: last, Next: c.After}, false
			}
		}
		it := event.FeedItem{Seq: seq, Type: e.typ, At: e.at, Object: obj}
		page.Entries = append(page.Entries, it.WithMemo(&e.memo))
		if len(page.Entries) == limit {
			break
		}
	}
	page.HasMore = page.Next < last
	if whole && len(page.Entries) == limit {
		page = page.WithMemo(new(event.FeedPageMemo))
		r.keepPage(c.After, limit, page)
	}
	return page, true
}

// keptPage is the whole page of limit entries after position after, as
// kept by keepPage, for a read through last; false when none is kept (or
// its first entry is past the horizon, or it was kept as the feed's end
// and the feed has moved on since: its hasMore would differ).
func (r *Ring) keptPage(after uint64, limit int, last uint64, horizon time.Time) (event.FeedPage, bool) {
	r.pagesMu.Lock()
	defer r.pagesMu.Unlock()
	for _, k := range r.pages {
		if k.limit == limit && k.after == after && k.page.Entries != nil && k.page.HasMore == (k.page.Next < last) &&
			!k.page.Entries[0].At.Before(horizon) {
			p := k.page
			p.Last = last
			return p, true
		}
	}
	return event.FeedPage{}, false
}

// keepPage keeps page, the whole page of limit entries after position
// after, in place of the oldest kept. Its entries are durable (a read
// goes through the durable end only) and never change, so the page holds
// for every later read from that position.
func (r *Ring) keepPage(after uint64, limit int, page event.FeedPage) {
	r.pagesMu.Lock()
	defer r.pagesMu.Unlock()
	r.pages[r.pagesAt] = ringPage{after: after, limit: limit, page: page}
	r.pagesAt = (r.pagesAt + 1) % ringPages
}
