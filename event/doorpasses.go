package event

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
)

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
//
// A door downloads its passes before it scans (decisions §18), so the
// download gets the door ready: the shell has the machine build the
// tables a batch reads (PrepareDoor) and the index take in the list on a
// goroutine of its own (TakeIn). The first batch of a big event then
// stalls neither the actor (two maps of every registration) nor an asker
// (the index), and finds its hints.

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

// PrepareDoor builds the tables a batch of scans reads that the state
// builds on first use: the door index, the check-in codes and the
// registrations by id (after a snapshot load). They are derived from the
// state and change nothing it encodes or compares, so the shell may call
// it at any time, and a replay never does.
func (m *Machine) PrepareDoor() {
	s := m.s
	s.doorIdx()
	s.ensureTokens()
	s.regs()
}

// DoorReady reports whether the tables PrepareDoor builds are built: a
// batch of scans finds them and builds nothing.
func (m *Machine) DoorReady() bool {
	s := m.s
	return s.idx.door != nil && s.idx.tokens && !s.idx.regsLazy
}

// PassTakeInMax is the most registrations Resolve takes in on an asker's
// goroutine: a longer list (a door's first download, an event just
// loaded) waits for TakeIn, done off the scans' path, and meanwhile the
// actor looks the scans up itself.
const PassTakeInMax = 4096

// PassIndex finds the passes of a batch of scans by registration id and by
// check-in code, from the PassLists of one machine given to Resolve and
// TakeIn. It is safe for concurrent use and Resolve never blocks: while
// the index takes in a list, Resolve resolves nothing and the actor looks
// the scans up itself.
type PassIndex struct {
	mu    sync.RWMutex
	n     int          // registrations taken in
	taken atomic.Int64 // n, read without the lock (Len)
	seed  maphash.Seed
	// byID and byCode find a registration by the hash of its id and of its
	// code (as the state indexes it). A table of hashes, not of strings: a
	// lookup compares 8 bytes in the slot it reads, where a map of strings
	// reads each candidate key's bytes elsewhere in memory (a cache miss
	// per scan in tables of 100,000 passes). Two keys of one hash keep the
	// later; the other's scans get the wrong hint, which the actor refuses
	// (hintNames), and look their pass up themselves.
	byID, byCode passTable
}

// Len is the number of registrations the index has taken in.
func (x *PassIndex) Len() int { return int(x.taken.Load()) }

// TakeIn adds what l adds to the index, waiting for the lock: for a
// goroutine of its own, never an asker's. l must be a list of the machine
// whose earlier lists the index was given.
func (x *PassIndex) TakeIn(l PassList) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.n < len(l.regs) {
		x.takeIn(l)
	}
}

// Resolve returns c with Passes set to the pass of each scan as the index
// knows it (nil where it does not), after taking in what l adds when that
// is at most PassTakeInMax registrations; c as it is when the index is
// busy or further behind. l must be a list of the machine whose earlier
// lists the index was given.
func (x *PassIndex) Resolve(l PassList, c RecordScans) RecordScans {
	if len(l.regs)-x.Len() > PassTakeInMax || !x.mu.TryRLock() {
		return c
	}
	if x.n < len(l.regs) {
		x.mu.RUnlock()
		if !x.mu.TryLock() {
			return c
		}
		if x.n < len(l.regs) && len(l.regs)-x.n <= PassTakeInMax {
			x.takeIn(l)
		}
		x.mu.Unlock()
		if !x.mu.TryRLock() {
			return c
		}
	}
	defer x.mu.RUnlock()
	if x.n == 0 {
		return c // nothing taken in (and no seed yet)
	}
	passes := make([]*RegistrationRec, len(c.Scans))
	if len(c.Scans) > ScanBatchMax {
		// Not a batch the API takes (its decision refuses it): looked up
		// one by one.
		for i := range c.Scans {
			passes[i] = x.lookup(&c.Scans[i])
		}
		c.Passes = passes
		return c
	}
	// The hashes first, then the probes in a loop of their own: each
	// probe is a cache miss in tables of every pass, and a loop of
	// nothing but probes lets the processor have several in flight,
	// where a hash computed between two kept it to about one.
	var hs [ScanBatchMax]uint64
	var by [ScanBatchMax]*passTable
	for i := range c.Scans {
		sc := &c.Scans[i]
		if sc.RegistrationID != "" {
			hs[i], by[i] = maphash.String(x.seed, sc.RegistrationID), &x.byID
		} else if sc.CheckinCode != "" {
			hs[i], by[i] = x.codeHash(sc.CheckinCode), &x.byCode
		}
	}
	for i := range c.Scans {
		if t := by[i]; t != nil {
			passes[i] = t.get(hs[i])
		}
	}
	c.Passes = passes
	return c
}

// lookup is the pass of sc as the index knows it, or nil.
func (x *PassIndex) lookup(sc *Scan) *RegistrationRec {
	if sc.RegistrationID != "" {
		return x.byID.get(maphash.String(x.seed, sc.RegistrationID))
	} else if sc.CheckinCode != "" {
		return x.byCode.get(x.codeHash(sc.CheckinCode))
	}
	return nil
}

// codeHash is the hash of a scanned code as the state indexes it
// (normCheckinCode), without allocating for a code typed in lower case.
func (x *PassIndex) codeHash(code string) uint64 {
	code = strings.TrimSpace(code)
	var buf [64]byte
	if len(code) > len(buf) {
		return maphash.String(x.seed, normCheckinCode(code))
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if c >= 0x80 {
			return maphash.String(x.seed, normCheckinCode(code))
		}
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
	}
	return maphash.Bytes(x.seed, buf[:len(code)])
}

// takeIn adds the registrations of l the index lacks, in order (a later
// registration with a code wins, as in the state's index of codes).
// Under the write lock.
func (x *PassIndex) takeIn(l PassList) {
	if x.n == 0 {
		x.seed = maphash.MakeSeed()
	}
	add := l.regs[x.n:]
	x.byID.reserve(len(add))
	x.byCode.reserve(len(add))
	for _, r := range add {
		x.byID.put(maphash.String(x.seed, r.ID), r)
		x.byCode.put(maphash.String(x.seed, r.CheckinCode), r)
	}
	x.n = len(l.regs)
	x.taken.Store(int64(x.n))
}

// passTable maps 64-bit hashes to registrations: open addressing with
// linear probing in a power of two of slots, at most 3/4 full.
type passTable struct {
	slots []hashSlot
	n     int // slots in use
}

// hashSlot is a slot of a passTable; r nil: free.
type hashSlot struct {
	h uint64
	r *RegistrationRec
}

// reserve makes room for n more entries without growing on the way.
func (t *passTable) reserve(n int) {
	need := t.n + n
	if 4*need <= 3*len(t.slots) {
		return
	}
	size := 1024
	for 4*need > 3*size {
		size *= 2
	}
	old := t.slots
	t.slots, t.n = make([]hashSlot, size), 0
	for _, sl := range old {
		if sl.r != nil {
			t.put(sl.h, sl.r)
		}
	}
}

// put maps h to r (replacing the registration h mapped to).
func (t *passTable) put(h uint64, r *RegistrationRec) {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.reserve(max(t.n, 1))
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.r == nil {
			*sl = hashSlot{h: h, r: r}
			t.n++
			return
		}
		if sl.h == h {
			sl.r = r
			return
		}
	}
}

// get is the registration h maps to, or nil.
func (t *passTable) get(h uint64) *RegistrationRec {
	if len(t.slots) == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.r == nil || sl.h == h {
			return sl.r
		}
	}
}

// A hint (c.Passes[i]) is scan i's pass when it checks out: the record at
// its position in the state is this very one (a list of another
// incarnation's records fails), and it has the scan's id or code; else the
// scan is looked up. resolve checks the first in stages over the batch;
// hintNames is the second.

// hintNames reports whether h, a record of the state, is the pass sc
// names by its registration id or check-in code.
func hintNames(h *RegistrationRec, sc *Scan) bool {
	if sc.RegistrationID != "" {
		return h.ID == sc.RegistrationID
	}
	return h.CheckinCode == normCheckinCode(sc.CheckinCode)
}
