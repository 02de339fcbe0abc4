package event

import "sync"

// Passes resolved outside the event's actor (issue 33). Looking up the
// pass a scan names (a registration id or a check-in code, in tables of
// every registration) was the largest single cost of a batch inside the
// actor, where every batch of an event waits for the one before: mostly
// memory latency in tables of 100,000 passes. The actor hands out its
// list of registrations (PassList), which only grows and whose records
// keep the same id, position and check-in code for life; the request's
// own goroutine resolves the scans against an index built from it
// (PassIndex), in parallel with the actor; the actor takes each answer
// as a hint (RecordScans.Passes) that it checks in a few loads: the record
// at that position of its own state is this very record, and it names the
// scan's id or code. A hint that fails (another incarnation's record, a
// registration the index has not seen) is ignored and the scan is looked
// up as before, so a verdict never depends on the index being current.
// The index costs the actor nothing per scan or check-in: it publishes the
// list again only when registrations were added. The batch's check-in ids
// are made outside too (RecordScans.CheckinIDs).

// PassList is a prefix of an event's registrations in their order, read
// outside the actor: only the fields a registration never changes after
// its creation (ID, Seq, CheckinCode) may be read from its records there.
type PassList struct{ regs []*RegistrationRec }

// Len is the number of registrations in l.
func (l PassList) Len() int { return len(l.regs) }

// PassList returns the registrations so far (empty when the state keeps
// no list of them in order).
func (m *Machine) PassList() PassList {
	s := m.s
	n := len(s.mem.regList)
	if n != len(s.RegOrder) {
		return PassList{}
	}
	return PassList{regs: s.mem.regList[:n:n]}
}

// PassCount is the number of registrations: the length of the next
// PassList.
func (m *Machine) PassCount() int { return len(m.s.RegOrder) }

// PassIndex finds the passes of a batch of scans by registration id and by
// check-in code, from the PassLists of one machine given to Resolve. It is
// safe for concurrent use and never blocks: while one caller takes in a
// longer list, the others resolve nothing and the actor looks their scans
// up itself.
type PassIndex struct {
	mu     sync.RWMutex
	n      int // registrations taken in
	byID   map[string]*RegistrationRec
	byCode map[string]*RegistrationRec // by the code as the state indexes it
}

// Resolve returns c with Passes set to the pass of each scan as the index
// knows it (nil where it does not), after taking in what l adds; c as it is
// when the index is busy. l must be a list of the machine whose earlier
// lists the index was given.
func (x *PassIndex) Resolve(l PassList, c RecordScans) RecordScans {
	if !x.mu.TryRLock() {
		return c
	}
	if x.n < len(l.regs) {
		x.mu.RUnlock()
		if !x.mu.TryLock() {
			return c
		}
		x.takeIn(l)
		x.mu.Unlock()
		if !x.mu.TryRLock() {
			return c
		}
	}
	defer x.mu.RUnlock()
	passes := make([]*RegistrationRec, len(c.Scans))
	for i := range c.Scans {
		sc := &c.Scans[i]
		if sc.RegistrationID != "" {
			passes[i] = x.byID[sc.RegistrationID]
		} else if sc.CheckinCode != "" {
			passes[i] = x.byCode[normCheckinCode(sc.CheckinCode)]
		}
	}
	c.Passes = passes
	return c
}

// takeIn adds the registrations of l the index lacks, in order (a later
// registration with a code wins, as in the state's index of codes).
// Under the write lock.
func (x *PassIndex) takeIn(l PassList) {
	if x.byID == nil {
		x.byID = make(map[string]*RegistrationRec, len(l.regs))
		x.byCode = make(map[string]*RegistrationRec, len(l.regs))
	}
	for _, r := range l.regs[x.n:] {
		x.byID[r.ID] = r
		x.byCode[r.CheckinCode] = r
	}
	x.n = len(l.regs)
}

// passHint is scan i's pass from c.Passes when it checks out: the record
// at its position in the state is this very one, and it has the scan's id
// or code; else nil (look it up).
func (b *scanBatch) passHint(i int, sc *Scan) *RegistrationRec {
	if i >= len(b.c.Passes) {
		return nil
	}
	h := b.c.Passes[i]
	s := b.m.s
	if h == nil || len(s.mem.regList) != len(s.RegOrder) || h.Seq >= len(s.mem.regList) || s.mem.regList[h.Seq] != h {
		return nil
	}
	if sc.RegistrationID != "" {
		if h.ID != sc.RegistrationID {
			return nil
		}
	} else if h.CheckinCode != normCheckinCode(sc.CheckinCode) {
		return nil
	}
	return h
}
