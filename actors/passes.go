package actors

import (
	"sync/atomic"

	"ticketd/event"
)

// The passes of door batches resolved outside the actor (issue 33,
// event/doorpasses.go): an event actor that handled a batch of scans or a
// download of passes hands out its list of registrations, again whenever
// registrations were added, and the request's goroutine resolves the next
// batches' scans against an index built from it before asking (askLocal),
// in parallel with the actor. The actor checks each hint in a few loads. A
// slot lives while its actor does; single node only, like the sale view.
//
// A door downloads its passes before it scans (decisions §18): the
// download gets the door ready, so its first batch pays for no one-time
// build. The actor builds the tables a batch reads (event.PrepareDoor) on
// each download (at once from the second: they stay built), and the index
// takes in a list that grew by more than askers take in (all of it, on a
// download) on a goroutine of its own (passSlot.takeIn), never an
// asker's. A forwarding node's actors prepare too, but hand out no list.

// passSlot is one event actor's list of registrations and the index the
// askers build from it.
type passSlot struct {
	list atomic.Pointer[event.PassList]
	idx  event.PassIndex
	// taking is set while a goroutine takes the list in (takeIn).
	taking atomic.Bool
}

// doorStats count what a door batch found (tests and the door's
// profile): batches decided before the event's door tables were built (the
// actor built them in the batch), and batches asked without hints while
// the event's list was handed out (its index was busy or behind).
type doorStats struct {
	cold, unresolved atomic.Int64
}

// noteScans counts a batch of scans about to be decided on tables not yet
// built.
func (a *eventActor) noteScans(cmd event.Command) {
	if _, ok := cmd.(event.RecordScans); ok && !a.m.DoorReady() {
		a.sys.door.cold.Add(1)
	}
}

// publishPasses hands out the registrations once the event took a batch of
// scans or a download of passes, and then whenever their number changed.
// A download gets the door ready first. Events without a door pay a type
// switch.
func (a *eventActor) publishPasses(cmd event.Command) {
	_, download := cmd.(event.ListPasses)
	if download {
		a.m.PrepareDoor()
	}
	if a.passes == nil {
		if _, ok := cmd.(event.RecordScans); !ok && !download || a.sys.cfg.Forward != nil {
			return
		}
		a.passes = &passSlot{}
		a.sys.passes.Store(a.id, a.passes)
	}
	if l := a.passes.list.Load(); l == nil || l.Len() != a.m.PassCount() {
		l := a.m.PassList()
		a.passes.list.Store(&l)
	}
	if lag := a.passes.list.Load().Len() - a.passes.idx.Len(); lag > event.PassTakeInMax || download && lag > 0 {
		a.passes.takeIn()
	}
}

// takeIn has the index take in the list on a goroutine of its own, unless
// one does already: until it has (~25 ms for 100,000 registrations), the
// askers resolve nothing and the actor looks their scans up itself. It
// goes on while the list grows meanwhile, and ends once the list is
// withdrawn.
func (sl *passSlot) takeIn() {
	if !sl.taking.CompareAndSwap(false, true) {
		return
	}
	go func() {
		for {
			for l := sl.list.Load(); l != nil && sl.idx.Len() < l.Len(); l = sl.list.Load() {
				sl.idx.TakeIn(*l)
			}
			sl.taking.Store(false)
			// A list handed out between the last look and the flag's
			// reset found the flag set: look once more.
			l := sl.list.Load()
			if l == nil || sl.idx.Len() >= l.Len() || !sl.taking.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// dropPasses withdraws the actor's list.
func (a *eventActor) dropPasses() {
	if a.passes != nil {
		a.passes.list.Store(nil)
		a.sys.passes.CompareAndDelete(a.id, a.passes)
		a.passes = nil
	}
}

// resolvePasses returns req with a batch of scans prepared on the asker's
// goroutine: the ids of its check-ins made (one per scan, at most that
// many check-ins), and its passes resolved against the event's published
// list when there is one.
func (s *System) resolvePasses(eventID string, req *request) *request {
	c, ok := req.cmd.(event.RecordScans)
	if !ok || c.Passes != nil || c.CheckinIDs != nil {
		return req
	}
	c.CheckinIDs = make([]string, len(c.Scans))
	newIDs(s.cfg.IDs, "chk_", c.CheckinIDs)
	if x, ok := s.passes.Load(eventID); ok {
		sl := x.(*passSlot)
		if l := sl.list.Load(); l != nil && l.Len() > 0 {
			if c = sl.idx.Resolve(*l, c); c.Passes == nil {
				s.door.unresolved.Add(1)
			}
		}
	}
	r := *req
	r.cmd = c
	return &r
}
