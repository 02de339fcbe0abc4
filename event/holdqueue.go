package event

import (
	"slices"
	"time"
)

// holdQueue orders the holding orders by deadline, so that NextDeadline is
// O(1) and Expire visits only the holds that lapsed, however many orders
// hold places during an on-sale drop. It is derived state (rebuilt from the
// orders on snapshot load, never encoded).
//
// Entries are pushed whenever an order's hold deadline is set (placement,
// and the extension when a paid order starts its payment) and are not
// removed when the order stops holding: such stale entries are dropped when
// they reach the top (after every Apply) and skipped while collecting.
type holdQueue []holdEntry

type holdEntry struct {
	at  time.Time
	seq int // the order's Seq: ties break by placement order
	id  string
}

// The heap is written out rather than used through container/heap, whose
// Push and Pop take an any: boxing every entry cost one allocation per
// placed order.

func (q holdQueue) less(i, j int) bool {
	if c := q[i].at.Compare(q[j].at); c != 0 {
		return c < 0
	}
	return q[i].seq < q[j].seq
}

// push adds e and restores the heap order.
func (q *holdQueue) push(e holdEntry) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

// pop removes the top entry.
func (q *holdQueue) pop() {
	h := *q
	n := len(h) - 1
	h[0] = h[n]
	h[n] = holdEntry{} // drop the id for the collector
	h = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
}

// fresh reports whether e still describes a holding order's deadline.
func (s *State) holdFresh(e holdEntry) bool {
	o, ok := s.Orders[e.id]
	return ok && o.holding() && o.HoldUntil.Equal(e.at)
}

// queueHold records o's current deadline.
func (s *State) queueHold(o *OrderRec) {
	s.idx.holds.push(holdEntry{at: o.HoldUntil, seq: o.Seq, id: o.ID})
}

// trimHolds drops stale entries from the top, so the top is the earliest
// live deadline.
func (s *State) trimHolds() {
	for len(s.idx.holds) > 0 && !s.holdFresh(s.idx.holds[0]) {
		s.idx.holds.pop()
	}
}

// lapsedOrders returns the holding orders whose deadline is at or before
// now, in placement order. It does not modify the queue (Decide calls it):
// it walks only the heap nodes that are due, since a node later than now
// has no earlier descendant.
func (s *State) lapsedOrders(now time.Time) []*OrderRec {
	var out []*OrderRec
	seen := map[string]bool{}
	q := s.idx.holds
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(q) || q[i].at.After(now) {
			continue
		}
		if e := q[i]; s.holdFresh(e) && !seen[e.id] {
			seen[e.id] = true
			out = append(out, s.Orders[e.id])
		}
		stack = append(stack, 2*i+1, 2*i+2)
	}
	slices.SortFunc(out, func(a, b *OrderRec) int { return a.Seq - b.Seq })
	return out
}

// nextHold returns the earliest live hold deadline. Apply keeps the top
// live (trimHolds) and a snapshot load queues only live holds, so this is
// the top; the scan is a fallback that a broken invariant would need.
func (s *State) nextHold() (time.Time, bool) {
	q := s.idx.holds
	if len(q) == 0 {
		return time.Time{}, false
	}
	if s.holdFresh(q[0]) {
		return q[0].at, true
	}
	var best time.Time
	found := false
	for _, e := range q {
		if s.holdFresh(e) && (!found || e.at.Before(best)) {
			best, found = e.at, true
		}
	}
	return best, found
}
