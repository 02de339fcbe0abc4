package actors

import (
	"sync"
	"sync/atomic"

	"ticketd/event"
)

// The door view (event/doorview.go), from which a batch's repeats are
// answered without the actor (issue 33): like the sale view, published
// after a request that made changes once they are durable, before their
// answers go out, so a check-in is in it before anyone hears of it and
// nothing not durable is answered from it. Only events a door asked about
// pay for it: the first DoorView of an event makes its slot, and its actor
// publishes from its next commit on. Single node only: a cluster node may
// not own the event, so it always asks.

// doorSlot is one event's published door view. mu orders an incarnation's
// publishing and withdrawing against the next one's: a view is stored only
// by the incarnation that owns the slot.
type doorSlot struct {
	v        atomic.Pointer[event.DoorView]
	answered atomic.Int64 // scans the view answered
	mu       sync.Mutex
	owner    *eventActor
}

// DoorView returns the event's published door view, or nil (ask the
// actor). The first call for an event asks its actor to publish one.
func (s *System) DoorView(eventID string) *event.DoorView {
	if s.cfg.Forward != nil {
		return nil
	}
	x, ok := s.doorViews.Load(eventID)
	if !ok {
		s.doorViews.LoadOrStore(eventID, &doorSlot{})
		return nil
	}
	return x.(*doorSlot).v.Load()
}

// NoteDoorViewAnswers counts n scans the event's door view answered.
func (s *System) NoteDoorViewAnswers(eventID string, n int) {
	if x, ok := s.doorViews.Load(eventID); ok {
		x.(*doorSlot).answered.Add(int64(n))
	}
}

// DoorViewAnswers is how many scans of the event its door views answered
// on this node.
func (s *System) DoorViewAnswers(eventID string) int64 {
	if x, ok := s.doorViews.Load(eventID); ok {
		return x.(*doorSlot).answered.Load()
	}
	return 0
}

// publishDoorView builds and publishes the machine's door view, when a
// door asked for one and it changed, once everything appended so far is
// durable.
func (a *eventActor) publishDoorView() {
	if a.sys.cfg.Forward != nil {
		return
	}
	if a.door == nil {
		x, ok := a.sys.doorViews.Load(a.id)
		if !ok {
			return
		}
		slot := x.(*doorSlot)
		slot.mu.Lock()
		slot.owner = a
		slot.v.Store(nil) // an earlier incarnation's: never stored again
		slot.mu.Unlock()
		a.door = slot
	}
	v := a.m.DoorView(a.doorView)
	if v == a.doorView {
		return
	}
	a.doorView = v
	slot := a.door
	a.com.afterDurable(func() {
		slot.mu.Lock()
		if slot.owner == a {
			slot.v.Store(v)
		}
		slot.mu.Unlock()
	})
}

// dropDoorView withdraws the actor's door view: requests ask the actor.
func (a *eventActor) dropDoorView() {
	if slot := a.door; slot != nil {
		slot.mu.Lock()
		if slot.owner == a {
			slot.owner = nil
			slot.v.Store(nil)
		}
		slot.mu.Unlock()
		a.door, a.doorView = nil, nil
	}
}
