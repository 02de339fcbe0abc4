package actors

import (
	"sync"
	"sync/atomic"
	"time"

	"ticketd/event"
)

// The sale view (event/saleview.go) of each event, published by its actor
// so that a sold-out refusal and a queue poll of a waiting entry are
// answered without entering the actor (issue 34). After each request
// that made changes the actor asks the machine for its view (the previous
// one when nothing it answers changed) and publishes it once the changes
// are durable, before their answers go out (committer.afterDurable): a
// place that comes back, a lapsed hold or a cancellation, is in the view
// before anyone hears of it, and nothing not yet durable is ever answered
// from it.
//
// Only a single node publishes: in cluster mode another node may own the
// event and commit changes this node never sees, so there every request
// asks (as PassVerCaughtUp does). A view lives while its actor does: it is
// dropped when the actor stops, passivated, retired or crashed.

// saleSlot is one event's published view and the polls answered from it.
type saleSlot struct {
	v     atomic.Pointer[event.SaleView]
	polls pollNotes
}

// pollNoteShards spreads the polls answered from a view over locks.
const pollNoteShards = 16

// pollNotes are the polls answered without the actor, by queue id: the
// actor's sweep takes them (an entry not polled expires; queue.go).
type pollNotes struct {
	shards [pollNoteShards]struct {
		mu sync.Mutex
		m  map[string]time.Time
	}
}

func (p *pollNotes) note(id string, now time.Time) {
	sh := &p.shards[int(id[len(id)-1])%pollNoteShards]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = map[string]time.Time{}
	}
	if len(sh.m) < maxPollNotes/pollNoteShards {
		sh.m[id] = now
	}
	sh.mu.Unlock()
}

// drain hands every note to fn and forgets them.
func (p *pollNotes) drain(fn func(id string, at time.Time)) {
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		m := sh.m
		sh.m = nil
		sh.mu.Unlock()
		for id, at := range m {
			fn(id, at)
		}
	}
}

// publishView asks the machine for its view and, when it changed,
// publishes it once everything appended so far is durable.
func (a *eventActor) publishView() {
	if a.sys.cfg.Forward != nil {
		return
	}
	if a.sale == nil {
		// A slot of its own: an incarnation before it that is still
		// stopping withdraws only its own.
		a.sale = &saleSlot{}
		a.sys.sales.Store(a.id, a.sale)
	}
	v := a.m.SaleView(a.view)
	if v == a.view {
		return
	}
	a.view = v
	slot := a.sale
	a.com.afterDurable(func() { slot.v.Store(v) })
}

// dropView withdraws the actor's view: requests ask the actor (a new one,
// which publishes its own) from now on.
func (a *eventActor) dropView() {
	if a.sale == nil {
		return
	}
	a.sale.v.Store(nil)
	a.sys.sales.CompareAndDelete(a.id, a.sale)
	a.takePolls()
	a.sale, a.view = nil, nil
}

// takePolls moves the polls answered from the view into the actor's
// notes.
func (a *eventActor) takePolls() {
	if a.sale == nil {
		return
	}
	a.sale.polls.drain(func(id string, at time.Time) {
		if a.polls == nil {
			a.polls = map[string]time.Time{}
		}
		if seen, ok := a.polls[id]; (!ok && len(a.polls) < maxPollNotes) || at.After(seen) {
			a.polls[id] = at
		}
	})
}

func (s *System) saleView(eventID string) (*saleSlot, *event.SaleView) {
	if s.cfg.Forward != nil {
		return nil, nil
	}
	x, ok := s.sales.Load(eventID)
	if !ok {
		return nil, nil
	}
	slot := x.(*saleSlot)
	return slot, slot.v.Load()
}

// SoldOut answers a storefront order (event.PlaceOrder with Storefront
// set) from the event's published view: the machine's SOLD_OUT refusal
// when the view is certain of it, else nil (ask the actor).
func (s *System) SoldOut(eventID string, c event.PlaceOrder) error {
	_, v := s.saleView(eventID)
	if v == nil {
		return nil
	}
	err := v.SoldOut(s.cfg.Now(), c)
	if err != nil {
		s.saleAnswers[0].Add(1)
	}
	return err
}

// QueueStatus answers a poll of a waiting queue entry from the event's
// published view, noting the poll as the actor would; false: ask the
// actor.
func (s *System) QueueStatus(eventID, queueID string) (event.QueueStatus, bool) {
	slot, v := s.saleView(eventID)
	if v == nil || queueID == "" {
		return event.QueueStatus{}, false
	}
	now := s.cfg.Now()
	st, ok := v.QueueStatus(now, queueID)
	if ok {
		slot.polls.note(queueID, now)
		s.saleAnswers[1].Add(1)
	}
	return st, ok
}

// SaleViewAnswers counts the sold-out refusals and the queue polls
// answered from the published views since the start.
func (s *System) SaleViewAnswers() (refusals, polls int64) {
	return s.saleAnswers[0].Load(), s.saleAnswers[1].Load()
}
