package event

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"
)

// The door view (issue 33): what an event's shell publishes after each
// durable commit so that the scans of a batch that change nothing are
// answered on the request's goroutine, and only the others enter the
// event's actor. A scan the view answers is a repeat: its pass already has
// a check-in at its door, durable at the view's state. Check-ins are never
// removed, and a repeat is answered already_checked_in before the pass's
// status is looked at, so that answer stays the machine's at every later
// state: the view's answer is the one the machine gives, field for field
// (ScanResult of verdict).
//
// The view does not answer (the scan goes to the machine):
//
//   - a scan id the device may have sent before (a Bloom filter of every
//     recorded (device, scan id): a repeat of one answers its first result,
//     which the machine keeps);
//   - a scan id the batch repeats (the batch's first one decides);
//   - a pass or check-in not durable at the view's state, a pass it cannot
//     find, a door not among the device's doors or no longer in the event;
//   - an admittedOffline scan whose first check-in is another device's or
//     the API's (a door conflict is a change).
//
// Those the view answers are not recorded (no ScanAnswer): a repeat of one
// is answered alike again, by the view or by the machine.
//
// Like the sale view's, the view's structures are add-only and shared by
// every view since they were built: the passes by id and by code (open
// addressing over immutable records), each pass's check-ins (lists of
// the immutable CheckinRecs, newest first) and the filter of recorded
// scans. The goroutine that applies changes (the actor) writes them with
// atomic stores when it builds a view; any goroutine reads a view. A view
// reads only what its state holds (positions below its counts of passes
// and check-ins); an entry written after it only makes it ask more often.
// When a table or the filter fills, the next view gets a bigger one built
// anew and views out keep theirs, whole for their states. Nothing of this
// is encoded; a state that never built a view carries none of it.

// DoorView answers a batch's repeats without the event's actor (see
// above). A nil view answers nothing.
type DoorView struct {
	regs, checkins int // the state's RegOrder and CheckinOrder lengths
	doors          []DoorRef
	ids, codes     *passTable
	cks            *passCheckins
	scans          *keyFilter
}

// doorPub is the writer's side of the door views (State.idx.doorPub).
type doorPub struct {
	ids, codes *passTable
	cks        *passCheckins
	scans      *keyFilter
	// regs, checkins and answers count what was added from RegOrder,
	// CheckinOrder and Door.Answers.
	regs, checkins, answers int
	doors                   []DoorRef // the event's doors at the last view
}

// DoorView returns the door view of the machine's current state, or prev
// when nothing it answers from changed. The first call builds the shared
// structures from the state (an event's first door batch pays for it).
func (m *Machine) DoorView(prev *DoorView) *DoorView {
	s := m.s
	p := s.idx.doorPub
	if p == nil {
		p = &doorPub{cks: &passCheckins{}}
		p.ids, p.codes = newPassTables(s)
		p.regs = len(s.RegOrder)
		s.idx.doorPub = p
	}
	// Passes created since.
	if n := len(s.RegOrder); n > p.regs {
		if (n+1)*2 > len(p.ids.slots) {
			p.ids, p.codes = newPassTables(s)
		} else {
			for i := p.regs; i < n; i++ {
				r := s.regAt(i)
				ref := &passRef{id: r.ID, code: r.CheckinCode, pos: int32(i)}
				p.ids.put(ref, ref.id)
				p.codes.put(ref, ref.code)
			}
		}
		p.regs = n
	}
	// Check-ins and recorded answers since; a filter that would fill is
	// built anew, bigger, from every recorded scan.
	newScans := len(s.Door.Answers) - p.answers
	for i := p.checkins; i < len(s.CheckinOrder); i++ {
		if s.checkinAt(i).ScanID != "" {
			newScans++
		}
	}
	rebuild := p.scans == nil || p.scans.n+newScans > p.scans.cap
	if rebuild {
		n := len(s.Door.Answers)
		for i := range s.CheckinOrder {
			if s.checkinAt(i).ScanID != "" {
				n++
			}
		}
		p.scans = newKeyFilter(2*n + 1024)
		for i := range s.CheckinOrder {
			if c := s.checkinAt(i); c.ScanID != "" {
				p.scans.add(c.ScanID, deviceSalt(c.DeviceID))
			}
		}
		for _, a := range s.Door.Answers {
			p.scans.add(a.ScanID, deviceSalt(a.DeviceID))
		}
	}
	for i := p.checkins; i < len(s.CheckinOrder); i++ {
		c := s.checkinAt(i)
		if !rebuild && c.ScanID != "" {
			p.scans.add(c.ScanID, deviceSalt(c.DeviceID))
		}
		p.cks.add(s.mustReg(c.RegID).Seq, c)
	}
	if !rebuild {
		for _, a := range s.Door.Answers[p.answers:] {
			p.scans.add(a.ScanID, deviceSalt(a.DeviceID))
		}
	}
	p.checkins, p.answers = len(s.CheckinOrder), len(s.Door.Answers)
	// The event's doors: rebuilt when its venues or sessions changed.
	if len(p.doors) != 1+len(s.VenueOrder)+len(s.SessionOrder) || !p.sameDoors(s) {
		doors := make([]DoorRef, 0, 1+len(s.VenueOrder)+len(s.SessionOrder))
		doors = append(doors, DoorRef{SubjectType: "event"})
		for _, id := range s.VenueOrder {
			doors = append(doors, DoorRef{SubjectType: "venue", SubjectID: id})
		}
		for _, id := range s.SessionOrder {
			doors = append(doors, DoorRef{SubjectType: "session", SubjectID: id})
		}
		p.doors = doors
	}
	if prev != nil && prev.regs == p.regs && prev.checkins == p.checkins && prev.ids == p.ids && prev.cks == p.cks &&
		prev.scans == p.scans && len(prev.doors) == len(p.doors) && &prev.doors[0] == &p.doors[0] {
		return prev
	}
	return &DoorView{regs: p.regs, checkins: p.checkins, doors: p.doors, ids: p.ids, codes: p.codes, cks: p.cks, scans: p.scans}
}

func (p *doorPub) sameDoors(s *State) bool {
	for i, id := range s.VenueOrder {
		if p.doors[1+i].SubjectID != id || p.doors[1+i].SubjectType != "venue" {
			return false
		}
	}
	for i, id := range s.SessionOrder {
		if d := p.doors[1+len(s.VenueOrder)+i]; d.SubjectID != id || d.SubjectType != "session" {
			return false
		}
	}
	return true
}

// deviceSalt keeps one device's scan ids apart from another's in the
// filter of recorded scans.
func deviceSalt(deviceID string) uint64 { return maphash.String(filterSeed, deviceID) }

// Known returns, for each scan of c, the result v is certain the machine
// gives it (a repeat of a durable check-in: see DoorView), or nil, and how
// many it found. The shell puts them in c.Known: the machine then records
// those answers without deciding them again. A nil view knows none.
func (v *DoorView) Known(c RecordScans) ([]*ScanResult, int) {
	if v == nil || c.DeviceID == "" || len(c.Scans) > ScanBatchMax {
		return nil, 0
	}
	salt := deviceSalt(c.DeviceID)
	var known []*ScanResult
	var results []ScanResult
	var firsts []FirstCheckin
	n := 0
	for i := range c.Scans {
		res, ok := v.repeat(c, &c.Scans[i], salt)
		if !ok {
			continue
		}
		if known == nil {
			// One backing array each for the batch's results and first
			// check-ins: never grown, so the pointers hold.
			known = make([]*ScanResult, len(c.Scans))
			results = make([]ScanResult, 0, len(c.Scans)-i)
			firsts = make([]FirstCheckin, 0, len(c.Scans)-i)
		}
		firsts = append(firsts, res.first)
		res.r.FirstCheckin = &firsts[len(firsts)-1]
		results = append(results, res.r)
		known[i] = &results[len(results)-1]
		n++
	}
	return known, n
}

// viewRepeat is a repeat's result and its first check-in.
type viewRepeat struct {
	r     ScanResult
	first FirstCheckin
}

// repeat answers sc when its pass has a durable check-in at its door that
// the view may answer for.
func (v *DoorView) repeat(c RecordScans, sc *Scan, salt uint64) (viewRepeat, bool) {
	if sc.ScanID == "" || v.scans.has(sc.ScanID, salt) {
		return viewRepeat{}, false
	}
	var ref *passRef
	switch {
	case sc.RegistrationID != "" && sc.CheckinCode == "":
		ref = v.ids.get(sc.RegistrationID, false)
	case sc.RegistrationID == "" && sc.CheckinCode != "":
		ref = v.codes.get(normCheckinCode(sc.CheckinCode), true)
	}
	if ref == nil || int(ref.pos) >= v.regs {
		return viewRepeat{}, false
	}
	subjectID := strings.TrimSpace(sc.SubjectID)
	if sc.SubjectType == "event" {
		subjectID = ""
	}
	door := DoorRef{SubjectType: sc.SubjectType, SubjectID: subjectID}
	if !slices.Contains(c.Doors, door) || !slices.Contains(v.doors, door) {
		return viewRepeat{}, false
	}
	first := v.cks.at(int(ref.pos), door, v.checkins)
	if first == nil || (sc.AdmittedOffline && first.DeviceID != c.DeviceID) {
		return viewRepeat{}, false
	}
	return viewRepeat{r: ScanResult{ScanID: sc.ScanID, Verdict: VerdictAlreadyCheckedIn, RegistrationID: &ref.id},
		first: firstCheckinOf(first)}, true
}

// ---- the shared structures

// passRef is a pass as the door view finds it.
type passRef struct {
	id, code string
	pos      int32 // in RegOrder
}

// passTable maps a registration id (or a check-in code) to its pass:
// open addressing over immutable records, at most half full. One
// goroutine inserts; any reads.
type passTable struct {
	slots []atomic.Pointer[passRef]
	mask  uint64
	n     int
}

// newPassTables makes the tables by id and by code of the state's passes.
func newPassTables(s *State) (ids, codes *passTable) {
	size := uint64(1 << 10)
	for size < uint64(len(s.RegOrder))*4 {
		size <<= 1
	}
	ids = &passTable{slots: make([]atomic.Pointer[passRef], size), mask: size - 1}
	codes = &passTable{slots: make([]atomic.Pointer[passRef], size), mask: size - 1}
	for i := range s.RegOrder {
		r := s.regAt(i)
		ref := &passRef{id: r.ID, code: r.CheckinCode, pos: int32(i)}
		ids.put(ref, ref.id)
		codes.put(ref, ref.code)
	}
	return ids, codes
}

func (t *passTable) put(r *passRef, key string) {
	for i := maphash.String(filterSeed, key) & t.mask; ; i = (i + 1) & t.mask {
		if t.slots[i].Load() == nil {
			t.slots[i].Store(r)
			t.n++
			return
		}
	}
}

func (t *passTable) get(key string, byCode bool) *passRef {
	for i := maphash.String(filterSeed, key) & t.mask; ; i = (i + 1) & t.mask {
		r := t.slots[i].Load()
		if r == nil {
			return nil
		}
		if (!byCode && r.id == key) || (byCode && r.code == key) {
			return r
		}
	}
}

// passCheckins holds each pass's check-ins by its position in RegOrder:
// pages of list heads, newest first, add-only. One goroutine adds; any
// reads.
type passCheckins struct {
	pages atomic.Pointer[[]*ckPage]
}

const ckPageLen = 1024

type ckPage [ckPageLen]atomic.Pointer[ckNode]

type ckNode struct {
	rec  *CheckinRec
	next *ckNode
}

func (p *passCheckins) add(pos int, rec *CheckinRec) {
	var pages []*ckPage
	if pp := p.pages.Load(); pp != nil {
		pages = *pp
	}
	if pos/ckPageLen >= len(pages) {
		np := make([]*ckPage, pos/ckPageLen+1, max(pos/ckPageLen+1, 2*len(pages)))
		copy(np, pages)
		for i := len(pages); i < len(np); i++ {
			np[i] = new(ckPage)
		}
		p.pages.Store(&np)
		pages = np
	}
	h := &pages[pos/ckPageLen][pos%ckPageLen]
	h.Store(&ckNode{rec: rec, next: h.Load()})
}

// at is the check-in of the pass at pos at door among the first checkins
// of the state, or nil.
func (p *passCheckins) at(pos int, door DoorRef, checkins int) *CheckinRec {
	pp := p.pages.Load()
	if pp == nil || pos/ckPageLen >= len(*pp) {
		return nil
	}
	for n := (*pp)[pos/ckPageLen][pos%ckPageLen].Load(); n != nil; n = n.next {
		if c := n.rec; c.Seq < checkins && c.SubjectType == door.SubjectType && c.SubjectID == door.SubjectID {
			return c
		}
	}
	return nil
}
