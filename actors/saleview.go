package actors

import (
	"sync/atomic"

	"ticketd/event"
)

// The sale view (event/saleview.go), which SoldOut and QueueStatus answer
// from without the actor (issue 34): after a request that made changes the
// actor publishes the machine's view once they are durable, before their
// answers go out, so a place that comes back (a lapsed hold, a
// cancellation) is in it before anyone hears of it, and nothing not
// durable is answered from it. A view lives while its actor does. Single
// node only: a cluster node may not own the event, so it always asks.

// saleSlot is one event's published view. The polls a view answers are
// noted on the entries' records in the view (event.SaleView.QueueStatus),
// where the actor's sweep reads them (queue.go).
type saleSlot struct {
	v atomic.Pointer[event.SaleView]
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
// published view, which notes the poll for the actor's sweep; false: ask
// the actor.
func (s *System) QueueStatus(eventID, queueID string) (event.QueueStatus, bool) {
	_, v := s.saleView(eventID)
	if v == nil || queueID == "" {
		return event.QueueStatus{}, false
	}
	return v.QueueStatus(s.cfg.Now(), queueID)
}
