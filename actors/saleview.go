package actors

import (
	"sync"
	"sync/atomic"
	"time"

	"ticketd/event"
)

// The sale view (event/saleview.go), which SoldOut and QueueStatus answer
// from without the actor (issue 34): after a request that made changes the
// actor publishes the machine's view once they are durable, before their
// answers go out, so a place that comes back (a lapsed hold, a
// cancellation) is in it before anyone hears of it, and nothing not
// durable is answered from it. A view lives while its actor does. Single
// node only: a cluster node may not own the event, so it always asks.

// saleSlot is one event's published view, and the polls it answered
// (noted by queue id in shards, taken by the actor's sweep: queue.go).
type saleSlot struct {
	v     atomic.Pointer[event.SaleView]
	polls [16]struct {
		mu sync.Mutex
		m  map[string]int64 // unix nanos
		// last is how many ids the shard's previous map held when the
		// actor took it: the next one starts that big, so a drop's
		// polls do not grow it again after every sweep.
		last int
	}
}

func (s *saleSlot) notePoll(id string, now time.Time) {
	sh := &s.polls[int(id[len(id)-1])%len(s.polls)]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[string]int64, sh.last)
	}
	if len(sh.m) < maxPollNotes/len(s.polls) {
		sh.m[id] = now.UnixNano()
	}
	sh.mu.Unlock()
}

// publishView publishes the machine's view, when it changed, once
// everything appended so far is durable. A slot of its own per actor: an
// incarnation still stopping withdraws only its own.
func (a *eventActor) publishView() {
	if a.sys.cfg.Forward != nil {
		return
	}
	if a.sale == nil {
		a.sale = &saleSlot{}
		a.sys.sales.Store(a.id, a.sale)
	}
	if v := a.m.SaleView(a.view); v != a.view {
		a.view = v
		slot := a.sale
		a.com.afterDurable(func() { slot.v.Store(v) })
	}
}

// dropView withdraws the actor's view: requests ask the actor from now on.
func (a *eventActor) dropView() {
	if a.sale != nil {
		a.sale.v.Store(nil)
		a.sys.sales.CompareAndDelete(a.id, a.sale)
		a.sale, a.view = nil, nil
	}
}

// takePolls moves the polls the view answered into the actor's notes.
func (a *eventActor) takePolls() {
	if a.sale == nil {
		return
	}
	for i := range a.sale.polls {
		sh := &a.sale.polls[i]
		sh.mu.Lock()
		m := sh.m
		sh.m, sh.last = nil, len(m)
		sh.mu.Unlock()
		for id, ns := range m {
			if a.polls == nil {
				a.polls = map[string]time.Time{}
			}
			at := time.Unix(0, ns)
			if seen, ok := a.polls[id]; (!ok && len(a.polls) < maxPollNotes) || at.After(seen) {
				a.polls[id] = at
			}
		}
	}
}

func (s *System) saleView(eventID string) (*saleSlot, *event.SaleView) {
	if x, ok := s.sales.Load(eventID); ok && s.cfg.Forward == nil {
		slot := x.(*saleSlot)
		return slot, slot.v.Load()
	}
	return nil, nil
}

// SoldOut answers a storefront order (event.PlaceOrder with Storefront
// set) from the event's published view: the machine's SOLD_OUT refusal
// when the view is certain of it, else nil (ask the actor).
func (s *System) SoldOut(eventID string, c event.PlaceOrder) error {
	if _, v := s.saleView(eventID); v != nil {
		return v.SoldOut(s.cfg.Now(), c)
	}
	return nil
}

// QueueStatus answers a poll of a waiting queue entry from the event's
// published view, noting the poll as the actor would; false: ask it.
func (s *System) QueueStatus(eventID, queueID string) (event.QueueStatus, bool) {
	slot, v := s.saleView(eventID)
	if v == nil || queueID == "" {
		return event.QueueStatus{}, false
	}
	now := s.cfg.Now()
	st, ok := v.QueueStatus(now, queueID)
	if ok {
		slot.notePoll(queueID, now)
	}
	return st, ok
}
