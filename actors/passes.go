package actors

import (
	"sync/atomic"

	"ticketd/event"
)

// The passes of door batches resolved outside the actor (issue 33,
// event/doorpasses.go): an event actor that handled a batch of scans
// hands out its list of registrations, again whenever registrations were
// added, and the request's goroutine resolves the next batches' scans
// against an index built from it before asking (askLocal), in parallel
// with the actor. The actor checks each hint in a few loads. A slot lives
// while its actor does; single node only, like the sale view.

// passSlot is one event actor's list of registrations and the index the
// askers build from it.
type passSlot struct {
	list atomic.Pointer[event.PassList]
	idx  event.PassIndex
}

// publishPasses hands out the registrations once the event took a batch of
// scans, and then whenever their number changed. Events without door
// batches pay one comparison.
func (a *eventActor) publishPasses(cmd event.Command) {
	if a.passes == nil {
		if _, ok := cmd.(event.RecordScans); !ok || a.sys.cfg.Forward != nil {
			return
		}
		a.passes = &passSlot{}
		a.sys.passes.Store(a.id, a.passes)
	}
	if l := a.passes.list.Load(); l != nil && l.Len() == a.m.PassCount() {
		return
	}
	l := a.m.PassList()
	a.passes.list.Store(&l)
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
			c = sl.idx.Resolve(*l, c)
		}
	}
	r := *req
	r.cmd = c
	return &r
}
