package event

import (
	"encoding/base64"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// The door kit (decisions §18): batched scans from door devices, the
// passes a device keeps for offline verdicts with a change cursor, and
// door conflicts.
//
// # Pass versions: a change cursor that skips nothing
//
// Every change that alters what a pass shows (a registration created, its
// status changed, a check-in, a perk granted or bound to its type or code)
// stamps the registration with the next value of a per-event counter,
// DoorState.PassVer, inside Apply: the stamp is derived from the log's
// order, so a replay and a snapshot give the same stamps. A pass cursor is
// the event id and a stamp; the list after it holds every registration
// whose stamp is greater, in stamp order. A change after a page was read
// gets a greater stamp than any in that page, so it is never skipped; a
// registration changed while a client pages moves behind its cursor and
// comes again (latest state wins). The last page's cursor is the counter
// itself. The index (doorIndex) keeps (stamp, registration) pairs in stamp
// order, built lazily on the first door read and extended by Apply; pairs
// a later stamp superseded are skipped and compacted away.
//
// # Scans
//
// RecordScans decides a whole batch of one device against the state plus
// what the batch itself decided (a pass scanned twice in one batch is
// admitted once). The batch is one ScansRecorded change (doorbatch.go):
// its check-ins (the same records as RecordCheckin's, method "scan", with
// the device and scan id; each its own checkin.created feed entry and
// webhook) and the answers of its other scans, so a repeat of a scan id
// answers the first result unchanged, durably. Logs of older builds hold
// a CheckedIn per check-in and a ScansAnswered instead; they replay into
// the same state. Conflicts are CheckinConflict changes (webhook and feed
// entry checkin.conflict).

// Scan batch bounds.
const (
	ScanBatchMax = 500
	// scanIDMaxLen bounds a scan id, in characters.
	scanIDMaxLen = 100
	// offlinePastMax and offlineFutureMax bound the scannedAt an offline
	// scan's check-in keeps; outside them the check-in is at server time.
	offlinePastMax   = 7 * 24 * time.Hour
	offlineFutureMax = 5 * time.Minute
	// PassPageMax is the largest (and default) page of passes.
	PassPageMax = 1000
)

// Scan verdicts and the reasons of a refusal.
const (
	VerdictAdmitted         = "admitted"
	VerdictAlreadyCheckedIn = "already_checked_in"
	VerdictRefused          = "refused"

	RefusedNotConfirmed   = "REGISTRATION_NOT_CONFIRMED"
	RefusedNotFound       = "NOT_FOUND"
	RefusedDoorNotAllowed = "DOOR_NOT_ALLOWED"
	// ConflictAlreadyCheckedIn is the reason of a conflict whose pass was
	// used at that door by another device (or the API) first.
	ConflictAlreadyCheckedIn = "ALREADY_CHECKED_IN"
)

// DoorRef is one door: the event's (SubjectID empty), a session's or a
// venue's.
type DoorRef struct {
	SubjectType string `json:"subjectType" v:"required,enum=event|session|venue"`
	SubjectID   string `json:"subjectId,omitempty" v:"maxLen=100" doc:"The session or venue id; absent for the event door"`
}

// Scan is one scan of a batch.
type Scan struct {
	ScanID          string `json:"scanId" v:"required,minLen=1,maxLen=100" doc:"The device's own id of the scan: a repeat answers the first result"`
	CheckinCode     string `json:"checkinCode,omitempty" v:"maxLen=100" doc:"The pass's check-in code (its QR code); or registrationId"`
	RegistrationID  string `json:"registrationId,omitempty" v:"maxLen=100"`
	SubjectType     string `json:"subjectType" v:"required,enum=event|session|venue"`
	SubjectID       string `json:"subjectId,omitempty" v:"maxLen=100"`
	ScannedAt       Time   `json:"scannedAt" v:"required"`
	Offline         bool   `json:"offline" doc:"The scan was made without the network; its check-in keeps scannedAt when within the last 7 days and not more than 5 minutes ahead"`
	AdmittedOffline bool   `json:"admittedOffline,omitempty" doc:"The device let the person in on its local list: a refusal or another device's earlier check-in is then a door conflict"`
}

// RecordScans records a batch of scans of one device.
type RecordScans struct {
	// DeviceID and Doors are the device's (from its key, not the body).
	DeviceID string    `json:"-"`
	Doors    []DoorRef `json:"-"`
	Scans    []Scan    `json:"scans" v:"required,minItems=1,maxItems=500"`
	// Passes, when set, are the scans' passes as the request's goroutine
	// resolved them (PassIndex, doorpasses.go), nil where unknown: hints
	// Decide checks against its state before it uses them.
	Passes []*RegistrationRec `json:"-"`
	// CheckinIDs, when set, are ids for the batch's check-ins made outside
	// the actor by the machine's own kind of ids: the batch's k-th
	// check-in takes the k-th, and the machine makes the rest.
	CheckinIDs []string `json:"-"`
}

// FirstCheckin is the check-in a repeat at a door ran into.
type FirstCheckin struct {
	ID          string  `json:"id"`
	SubjectType string  `json:"subjectType" v:"enum=event|session|venue"`
	SubjectID   *string `json:"subjectId"`
	CheckedInAt Time    `json:"checkedInAt"`
	DeviceID    *string `json:"deviceId" doc:"The device that recorded it; null for one made with the Developer API or the console"`
}

// ScanResult is the verdict of one scan.
type ScanResult struct {
	ScanID         string        `json:"scanId"`
	Verdict        string        `json:"verdict" v:"enum=admitted|already_checked_in|refused"`
	Reason         *string       `json:"reason,omitempty" v:"enum=REGISTRATION_NOT_CONFIRMED|NOT_FOUND|DOOR_NOT_ALLOWED" doc:"Why a scan was refused"`
	RegistrationID *string       `json:"registrationId,omitempty"`
	Checkin        *Checkin      `json:"checkin,omitempty" doc:"admitted: the check-in recorded"`
	FirstCheckin   *FirstCheckin `json:"firstCheckin,omitempty" doc:"already_checked_in: the earlier check-in at that door"`
}

// ScanResults answers RecordScans, in the order of the scans.
type ScanResults struct {
	Results []ScanResult `json:"results"`
}

// ScanAnswer is the recorded answer of a scan that recorded no check-in.
type ScanAnswer struct {
	ScanID    string `json:"scanId"`
	Verdict   string `json:"verdict"`
	Reason    string `json:"reason,omitempty"`
	RegID     string `json:"reg,omitempty"`
	CheckinID string `json:"chk,omitempty"` // already_checked_in: the first check-in
}

// ScansAnswered records the answers of a batch's scans that recorded no
// check-in, so a repeat of one answers the same.
type ScansAnswered struct {
	At       time.Time    `json:"at"`
	DeviceID string       `json:"dev"`
	Answers  []ScanAnswer `json:"answers"`
}

// CheckinConflict records a door conflict: a scan the device admitted
// offline that the service refused or found used by another device.
type CheckinConflict struct {
	At        time.Time `json:"at"`
	ID        string    `json:"id"`
	DeviceID  string    `json:"dev"`
	ScanID    string    `json:"scan"`
	RegID     string    `json:"reg,omitempty"`
	Reason    string    `json:"reason"`
	ScannedAt time.Time `json:"scannedAt"`
	CheckinID string    `json:"chk,omitempty"` // the first check-in, when there is one
}

// DoorState is the door kit's part of the state.
type DoorState struct {
	// PassVer is the last pass stamp handed out (see the package's pass
	// versions).
	PassVer int64 `json:"passVer,omitempty"`
	// Answers are the recorded answers, per device, of scans that made no
	// check-in, in log order.
	Answers []DeviceAnswer `json:"answers,omitempty"`
	// Conflicts are the door conflicts in log order.
	Conflicts []CheckinConflict `json:"conflicts,omitempty"`
}

// DeviceAnswer is a ScanAnswer with its device.
type DeviceAnswer struct {
	DeviceID string `json:"dev"`
	ScanAnswer
}

// doorIndex is the lazily built lookup of the door kit (see
// State.doorIdx).
type doorIndex struct {
	log []passEntry // (stamp, registration) in stamp order
	// byReg holds each registration's check-ins, by its position in
	// RegOrder (a slice, not a map keyed by id: a scan reads it, and a
	// check-in writes it, without hashing into a table of every pass).
	byReg []regDoors
	scans scanTable // (device, scan id) -> its answer
}

// regCheckin is one check-in of a registration with its door, so that a
// scan compares doors without reading the check-in's record.
type regCheckin struct {
	subjectType, subjectID string
	c                      *CheckinRec
}

// regDoors are a registration's check-ins in log order: the first inline,
// so that a scan of a pass with one check-in or none reads one entry of
// the table, not a list elsewhere and then each check-in's record (in the
// event's actor, each a cache miss in tables of every pass).
type regDoors struct {
	first regCheckin
	more  []regCheckin
}

// eachCheckin calls f with each check-in of r, in log order.
func (d *doorIndex) eachCheckin(r *RegistrationRec, f func(c *CheckinRec)) {
	if r.Seq >= len(d.byReg) {
		return
	}
	e := &d.byReg[r.Seq]
	if e.first.c == nil {
		return
	}
	f(e.first.c)
	for _, x := range e.more {
		f(x.c)
	}
}

// addCheckin adds c, a check-in of r.
func (d *doorIndex) addCheckin(r *RegistrationRec, c *CheckinRec) {
	if n := r.Seq + 1; n > len(d.byReg) {
		old := len(d.byReg)
		d.byReg = slices.Grow(d.byReg, n-old)[:n]
		prefault(d.byReg[old:cap(d.byReg)])
	}
	e := &d.byReg[r.Seq]
	x := regCheckin{subjectType: c.SubjectType, subjectID: c.SubjectID, c: c}
	if e.first.c == nil {
		e.first = x
		return
	}
	e.more = append(e.more, x)
}

type passEntry struct {
	ver int64
	reg int32 // position in RegOrder
}

// scanRef is a recorded scan: its check-in, or its answer's position in
// DoorState.Answers.
type scanRef struct {
	checkin *CheckinRec
	answer  int32
}

// noteScan records the answer of a device's scan id (dev is
// scanDevHash(deviceID)); the record ref names already holds both.
func (d *doorIndex) noteScan(s *State, dev uint64, deviceID, scanID string, ref scanRef) {
	d.scans.put(s, dev, deviceID, scanID, ref)
}

// prefault writes each page of s (up to its capacity) once, leaving its
// values as they are. A table that a scan reads before a check-in writes
// it (a pass's check-ins, a scan's slot), or an element with pointers
// written while the collector marks (its write barrier reads the old
// pointers first), would otherwise map the kernel's shared zero page on
// the read of fresh memory and copy it on the first write: a second
// fault, with a flush of every core's TLB, inside the event's actor (in
// profiles of door-sync's batches, more time than the writes themselves).
// The write is an atomic add of zero to a word: a write to the page for
// the processor, without a write barrier (so without a read), and without
// changing anything (the tail of a grown slice may hold old values).
func prefault[T any](s []T) {
	s = s[:cap(s)]
	if len(s) == 0 || unsafe.Alignof(s[0]) < 4 || unsafe.Sizeof(s[0]) < 4 {
		return
	}
	step := max(4096/int(unsafe.Sizeof(s[0])), 1)
	for i := 0; i < len(s); i += step {
		atomic.AddUint32((*uint32)(unsafe.Pointer(&s[i])), 0)
	}
}

// doorIdx returns the door index, building it on first use.
func (s *State) doorIdx() *doorIndex {
	if s.idx.door != nil {
		return s.idx.door
	}
	d := &doorIndex{byReg: make([]regDoors, len(s.RegOrder))}
	prefault(d.byReg)
	d.log = make([]passEntry, 0, len(s.RegOrder))
	for i := range s.RegOrder {
		r := s.regAt(i)
		d.log = append(d.log, passEntry{ver: r.PassVer, reg: int32(i)})
	}
	sort.Slice(d.log, func(i, j int) bool { return d.log[i].ver < d.log[j].ver })
	for i := range s.CheckinOrder {
		c := s.checkinAt(i)
		d.addCheckin(s.mustReg(c.RegID), c)
		if c.ScanID != "" {
			d.noteScan(s, scanDevHash(c.DeviceID), c.DeviceID, c.ScanID, scanRef{checkin: c, answer: -1})
		}
	}
	for i, a := range s.Door.Answers {
		d.noteScan(s, scanDevHash(a.DeviceID), a.DeviceID, a.ScanID, scanRef{answer: int32(i)})
	}
	s.idx.door = d
	return d
}

// touchPass stamps r with the next pass version (see the package's pass
// versions). Apply calls it for every change a pass shows.
func (s *State) touchPass(r *RegistrationRec) {
	s.Door.PassVer++
	r.PassVer = s.Door.PassVer
	d := s.idx.door
	if d == nil {
		return
	}
	d.log = append(d.log, passEntry{ver: r.PassVer, reg: int32(r.Seq)})
	// Compact superseded entries once they are half the log: amortized
	// O(1) per stamp.
	if n := len(d.log); n > 1024 && n > 2*len(s.RegOrder) {
		live := d.log[:0]
		for _, e := range d.log {
			if s.regAt(int(e.reg)).PassVer == e.ver {
				live = append(live, e)
			}
		}
		d.log = live
	}
}

// touchPassesWhere stamps every registration keep selects.
func (s *State) touchPassesWhere(keep func(r *RegistrationRec) bool) {
	for i := range s.RegOrder {
		if r := s.regAt(i); keep(r) {
			s.touchPass(r)
		}
	}
}

// ChangeKind names the change in the log (its binary tag).
func (ScansAnswered) ChangeKind() string { return "door.scans.answered" }

func decodeScansAnswered(d *dec) ScansAnswered {
	c := ScansAnswered{At: d.time(), DeviceID: d.str()}
	n := d.uvarint()
	if n > maxCount || n > uint64(len(d.s)) {
		d.fail()
		return c
	}
	c.Answers = make([]ScanAnswer, n)
	for i := range c.Answers {
		c.Answers[i] = ScanAnswer{ScanID: d.str(), Verdict: d.str(), Reason: d.str(), RegID: d.str(), CheckinID: d.str()}
	}
	return c
}

func (c ScansAnswered) appendBody(e enc) enc {
	e = e.time(c.At).str(c.DeviceID).uvarintBytes(uint64(len(c.Answers)))
	for _, a := range c.Answers {
		e = e.str(a.ScanID).str(a.Verdict).str(a.Reason).str(a.RegID).str(a.CheckinID)
	}
	return e
}

func (c ScansAnswered) apply(s *State) {
	s.Door.Answers = growDoubling(s.Door.Answers, len(c.Answers))
	var dev uint64
	if len(c.Answers) > 0 && s.idx.door != nil {
		dev = scanDevHash(c.DeviceID)
	}
	for _, a := range c.Answers {
		s.Door.Answers = append(s.Door.Answers, DeviceAnswer{DeviceID: c.DeviceID, ScanAnswer: a})
		if d := s.idx.door; d != nil {
			d.noteScan(s, dev, c.DeviceID, a.ScanID, scanRef{answer: int32(len(s.Door.Answers) - 1)})
		}
	}
}

// ChangeKind names the change in the log (its binary tag).
func (CheckinConflict) ChangeKind() string { return "checkin.conflict" }

func decodeCheckinConflict(d *dec) CheckinConflict {
	return CheckinConflict{At: d.time(), ID: d.str(), DeviceID: d.str(), ScanID: d.str(), RegID: d.str(), Reason: d.str(),
		ScannedAt: d.time(), CheckinID: d.str()}
}

func (c CheckinConflict) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).str(c.DeviceID).str(c.ScanID).str(c.RegID).str(c.Reason).time(c.ScannedAt).str(c.CheckinID)
}

func (c CheckinConflict) apply(s *State) { s.Door.Conflicts = append(s.Door.Conflicts, c) }

// HookCheckinConflict is the webhook type of a door conflict.
const HookCheckinConflict = "checkin.conflict"

func (c CheckinConflict) effects(dst []Effect) []Effect {
	e := hook(HookCheckinConflict, c.ID, c.At)
	e.Conflict = c
	return append(dst, e)
}

// appendDoor appends the door section of a snapshot: the pass counter,
// the recorded answers and the conflicts. Snapshots of older builds end
// before it and decode an empty one.
func (s *State) appendDoor(e enc) enc {
	ds := &s.Door
	e = e.int(ds.PassVer).uvarintBytes(uint64(len(ds.Answers)))
	for _, a := range ds.Answers {
		e = e.str(a.DeviceID).str(a.ScanID).str(a.Verdict).str(a.Reason).str(a.RegID).str(a.CheckinID)
	}
	e = e.uvarintBytes(uint64(len(ds.Conflicts)))
	for _, c := range ds.Conflicts {
		e = c.appendBody(e)
	}
	return e
}

func (s *State) decodeDoor(d *dec) {
	if len(d.s) == 0 || d.err != nil {
		return
	}
	ds := &s.Door
	ds.PassVer = d.int()
	n := d.uvarint()
	if n > maxCount || n > uint64(len(d.s)) {
		d.fail()
		return
	}
	ds.Answers = make([]DeviceAnswer, n)
	for i := range ds.Answers {
		ds.Answers[i] = DeviceAnswer{DeviceID: d.str(), ScanAnswer: ScanAnswer{ScanID: d.str(), Verdict: d.str(), Reason: d.str(), RegID: d.str(), CheckinID: d.str()}}
	}
	n = d.uvarint()
	if n > maxCount || n > uint64(len(d.s)) {
		d.fail()
		return
	}
	ds.Conflicts = make([]CheckinConflict, n)
	for i := range ds.Conflicts {
		ds.Conflicts[i] = decodeCheckinConflict(d)
	}
	if len(ds.Answers) == 0 {
		ds.Answers = nil
	}
	if len(ds.Conflicts) == 0 {
		ds.Conflicts = nil
	}
}

func (RecordScans) result(*ScanResults) {}

func (c RecordScans) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.recordScans(now, c)
}

// blank reports whether s is empty once trimmed (strings.TrimSpace),
// without trimming an id that starts with a printable ASCII character:
// a batch checks 500 of them inside the event's actor.
func blank(s string) bool {
	if s != "" && s[0] > ' ' && s[0] < 0x7f {
		return false
	}
	return strings.TrimSpace(s) == ""
}

// checkScans refuses a malformed batch as a whole, naming every bad field.
func checkScans(c RecordScans) error {
	if len(c.Scans) == 0 || len(c.Scans) > ScanBatchMax {
		return FieldError("scans", "must hold 1 to "+strconv.Itoa(ScanBatchMax)+" scans")
	}
	var details []Detail
	bad := func(i int, field, reason string) {
		if len(details) < 50 {
			details = append(details, Detail{Field: "scans[" + strconv.Itoa(i) + "]." + field, Reason: reason})
		}
	}
	for i := range c.Scans {
		sc := &c.Scans[i]
		if blank(sc.ScanID) || len(sc.ScanID) > scanIDMaxLen {
			bad(i, "scanId", "must be 1 to 100 characters")
		}
		switch {
		case sc.CheckinCode != "" && sc.RegistrationID != "":
			bad(i, "checkinCode", "give checkinCode or registrationId, not both")
		case blank(sc.CheckinCode) && sc.RegistrationID == "":
			bad(i, "checkinCode", "checkinCode or registrationId is required")
		}
		switch sc.SubjectType {
		case "event":
		case "session", "venue":
			if blank(sc.SubjectID) {
				bad(i, "subjectId", "required for session and venue doors")
			}
		default:
			bad(i, "subjectType", "must be event, session or venue")
		}
		if sc.ScannedAt.IsZero() {
			bad(i, "scannedAt", "required")
		}
	}
	if len(details) > 0 {
		return &Error{Code: InvalidArgument, Message: details[0].Field + ": " + details[0].Reason, Details: details}
	}
	return nil
}

func (m *Machine) recordScans(now time.Time, c RecordScans) (any, []Change, error) {
	if c.DeviceID == "" {
		return nil, nil, FieldError("deviceId", "required")
	}
	if err := checkScans(c); err != nil {
		return nil, nil, err
	}
	s := m.s
	di := s.doorIdx()
	s.ensureTokens()
	b := newScanBatch(m, c, now)
	out := ScanResults{Results: make([]ScanResult, len(c.Scans))}
	prefault(out.Results)
	var conflicts []Change
	n := len(c.Scans)
	for i := range c.Scans {
		b.ids[i] = scanIDHash(c.Scans[i].ScanID)
	}
	recorded := di.scans.recorded(s, scanDevHash(c.DeviceID), c.DeviceID, c.Scans, b.ids[:n], b.recorded[:n])
	b.resolve(recorded)
	for i, sc := range c.Scans {
		if j := b.seenScan(i); j >= 0 {
			out.Results[i] = out.Results[j]
			continue
		}
		if j := recorded[i]; j >= 0 {
			out.Results[i] = m.recordedResult(sc.ScanID, di.scans.at(s, j))
			continue
		}
		res, admitted := b.verdict(i, sc)
		out.Results[i] = res
		if admitted {
			continue
		}
		a := ScanAnswer{ScanID: sc.ScanID, Verdict: res.Verdict}
		if res.Reason != nil {
			a.Reason = *res.Reason
		}
		if res.RegistrationID != nil {
			a.RegID = *res.RegistrationID
		}
		if res.FirstCheckin != nil {
			a.CheckinID = res.FirstCheckin.ID
		}
		b.rec.Answers = append(b.rec.Answers, a)
		if !sc.AdmittedOffline {
			continue
		}
		conflict := CheckinConflict{At: now, ID: m.newID("dcf_"), DeviceID: c.DeviceID, ScanID: sc.ScanID, RegID: a.RegID,
			Reason: a.Reason, ScannedAt: sc.ScannedAt.UTC(), CheckinID: a.CheckinID}
		switch {
		case res.Verdict == VerdictRefused:
		case res.FirstCheckin.DeviceID == nil || *res.FirstCheckin.DeviceID != c.DeviceID:
			conflict.Reason = ConflictAlreadyCheckedIn
		default:
			continue // this device's own earlier check-in
		}
		conflicts = append(conflicts, conflict)
	}
	clear(b.regs[:n])
	if len(b.rec.Checkins) == 0 && len(b.rec.Answers) == 0 {
		return out, conflicts, nil
	}
	b.rec.At, b.rec.DeviceID = now, c.DeviceID
	if len(b.rec.Checkins) > 0 {
		b.rec.Doors = slices.Clone(c.Doors)
	}
	return out, append([]Change{b.rec}, conflicts...), nil
}

// scanIDHash is the hash of a scan id: the batch's table of its own scan
// ids and (with the device's part, scanHash) the door index's table of
// recorded scans both take it, computed once.
func scanIDHash(scanID string) uint64 { return maphash.String(scanSeedID, scanID) }

// batchSlots is the size of a batch's open-addressed tables (its scan ids,
// its check-ins by pass and door): a power of two at least twice
// ScanBatchMax, so a probe of a miss reads about two slots.
const batchSlots = 1024

// batchSlot is the home slot of hash h in a batch's table.
func batchSlot(h uint64) int { return int(h >> 54) }

// seenScan is the position of scan i's id among the batch's scans before
// it, or -1; it records i as the first of its id otherwise. A table of
// slots on the batch, not a map of strings: most ids occur once, and a
// miss compares no string.
func (b *scanBatch) seenScan(i int) int {
	h := b.ids[i]
	for k := batchSlot(h); ; k = (k + 1) & (batchSlots - 1) {
		j := int(b.idSlots[k]) - 1
		if j < 0 {
			b.idSlots[k] = uint16(i + 1)
			return -1
		}
		if b.ids[j] == h && b.c.Scans[j].ScanID == b.c.Scans[i].ScanID {
			return j
		}
	}
}

// scanBatch is what deciding one batch keeps between its scans: the
// device's doors checked once, the scans' passes, the batch's own
// check-ins by pass and door, and the backing arrays of the results' views
// (one allocation each per batch instead of one per scan: a batch is 500
// scans in the event's actor).
type scanBatch struct {
	m        *Machine
	di       *doorIndex
	c        RecordScans
	doorOK   []int8 // per device door: 0 not checked yet, 1 exists, -1 not
	doorSubj []*string
	views    []Checkin
	firsts   []FirstCheckin
	strs     []string // see strp
	devID    *string
	reasons  *[3]string
	// now, and the bounds of an offline scan's scannedAt its check-in
	// keeps.
	now, offlineLo, offlineHi time.Time
	*scanTables
	touched int // see resolve
	// rec is the batch's record: its check-ins and its answers.
	rec ScansRecorded
}

// scanTables are a batch's tables of its scans. The machine keeps them
// from one batch to the next (Machine.scans: the event's actor decides one
// batch at a time), so a batch allocates none of their 20 kB and clears
// only its two tables of slots (4 kB); they hold no pointer once it is
// decided.
type scanTables struct {
	// ids are the hashes of the scans' ids (scanIDHash), recorded the
	// door index's slot of each scan's recorded answer, regs each scan's
	// pass (resolve): per scan of the batch.
	ids      [ScanBatchMax]uint64
	recorded [ScanBatchMax]int32
	regs     [ScanBatchMax]*RegistrationRec
	// idSlots is the table of the batch's scan ids (seenScan): a scan's
	// position + 1, 0 empty. admitted is the table of the batch's
	// check-ins by pass and door: a position in views + 1, 0 empty.
	idSlots  [batchSlots]uint16
	admitted [batchSlots]uint16
	// pos and firstCks are resolve's, per scan: its hint's position and
	// its pass's first check-in (cleared before resolve returns).
	pos      [ScanBatchMax]int32
	firstCks [ScanBatchMax]*CheckinRec
}

// doorCheckin is r's check-in at a door, or nil: read from r's few
// check-ins instead of a table of them all.
func (d *doorIndex) doorCheckin(r *RegistrationRec, subjectType, subjectID string) *CheckinRec {
	if r.Seq >= len(d.byReg) {
		return nil
	}
	e := &d.byReg[r.Seq]
	if e.first.c == nil {
		return nil
	}
	if e.first.subjectType == subjectType && e.first.subjectID == subjectID {
		return e.first.c
	}
	for _, x := range e.more {
		if x.subjectType == subjectType && x.subjectID == subjectID {
			return x.c
		}
	}
	return nil
}

func newScanBatch(m *Machine, c RecordScans, now time.Time) *scanBatch {
	b := &scanBatch{m: m, di: m.s.doorIdx(), c: c, doorOK: make([]int8, len(c.Doors)), doorSubj: make([]*string, len(c.Doors)),
		reasons: &[3]string{RefusedNotFound, RefusedDoorNotAllowed, RefusedNotConfirmed},
		now:     now, offlineLo: now.Add(-offlinePastMax), offlineHi: now.Add(offlineFutureMax)}
	if m.scans == nil {
		m.scans = new(scanTables)
	}
	b.scanTables = m.scans
	clear(b.idSlots[:])
	clear(b.admitted[:])
	dev := c.DeviceID
	b.devID = &dev
	for i, d := range c.Doors {
		b.doorSubj[i] = strp(d.SubjectID)
	}
	return b
}

// resolve finds the pass of every scan the batch decides (not recorded
// before) in loops of their own, before any is decided: a hint checked or
// a lookup by id or code, then the pass's check-ins in the door index and
// its first check-in's record. These are cache misses in tables of every
// pass; taken in loops that do nothing else, the processor overlaps
// several, where between each scan's verdicts each waited alone. It sizes the batch's check-ins, answers and their views
// from what it read, exactly for a batch at one door (append grows them
// when a batch needs more), where each was made for every scan.
func (b *scanBatch) resolve(recorded []int32) {
	s, d := b.m.s, b.di
	n := len(b.c.Scans)
	// In stages, each a loop over the batch of one kind of load that
	// misses the cache, so that the processor keeps several of a kind
	// in flight: a scan's own chain (its hint's record, the state's list
	// at its position, its id's bytes, its entry in the door index, its
	// first check-in's record) is one load after another, and a loop that
	// walked it scan by scan waited for about one miss at a time.
	//
	// 1. Each hint's position (its record's), when it is in the list.
	pos := b.pos[:n]
	list := s.mem.regList
	hints := b.c.Passes
	if len(list) != len(s.RegOrder) {
		hints = nil
	}
	for i := range pos {
		pos[i] = -1
		if i < len(hints) && recorded[i] < 0 {
			if h := hints[i]; h != nil && h.Seq < len(list) {
				pos[i] = int32(h.Seq)
			}
		}
	}
	// 2. The record at that position of the state is the hint itself.
	for i, p := range pos {
		if p >= 0 && list[p] != hints[i] {
			pos[i] = -1
		}
	}
	// 3. It names the scan's id or code (hintNames), else the
	// scan is looked up.
	decided := 0
	for i := range b.c.Scans {
		if recorded[i] >= 0 {
			b.regs[i] = nil
			continue
		}
		decided++
		sc := &b.c.Scans[i]
		var r *RegistrationRec
		if pos[i] >= 0 && hintNames(hints[i], sc) {
			r = hints[i]
		}
		switch {
		case r != nil:
		case sc.RegistrationID != "":
			r = s.regs()[sc.RegistrationID]
		default:
			if id, ok := s.idx.regByCheckin[normCheckinCode(sc.CheckinCode)]; ok {
				r = s.regs()[id]
			}
		}
		b.regs[i] = r
	}
	// 4. Each pass's first check-in in the door index.
	firsts := b.firstCks[:n]
	for i, r := range b.regs[:n] {
		firsts[i] = nil
		if r != nil && r.Seq < len(d.byReg) {
			firsts[i] = d.byReg[r.Seq].first.c
		}
	}
	// 5. That check-in's record (the verdict reads it), else whether the
	// pass is admitted.
	touched, admit, nFirst := 0, 0, 0
	for i, r := range b.regs[:n] {
		switch first := firsts[i]; {
		case r == nil:
		case first != nil:
			nFirst++
			touched += first.Seq
		case r.Status == RegConfirmed:
			admit++
		}
	}
	clear(firsts)
	b.touched = touched
	if admit > 0 {
		b.views = make([]Checkin, 0, admit)
		b.rec.Checkins = make([]ScanCheckin, 0, admit)
		prefault(b.views)
		prefault(b.rec.Checkins)
	}
	if nFirst > 0 {
		b.firsts = make([]FirstCheckin, 0, nFirst)
		prefault(b.firsts)
	}
	if decided > admit {
		b.rec.Answers = make([]ScanAnswer, 0, decided-admit)
		prefault(b.rec.Answers)
	}
}

// door is the position of the scan's door among the device's doors, or
// -1 when it is not one of them or no longer exists in the event.
func (b *scanBatch) door(subjectType, subjectID string) int {
	i := slices.Index(b.c.Doors, DoorRef{SubjectType: subjectType, SubjectID: subjectID})
	if i < 0 {
		return -1
	}
	if b.doorOK[i] == 0 {
		b.doorOK[i] = 1
		if b.m.checkDoor(subjectType, subjectID) != nil {
			b.doorOK[i] = -1
		}
	}
	if b.doorOK[i] < 0 {
		return -1
	}
	return i
}

// admittedAt is the position in views of the batch's check-in of the pass
// at position reg at door, or -1; with add, it records next as that
// check-in when there is none.
func (b *scanBatch) admittedAt(reg, door int, add bool, next int) int {
	h := (uint64(reg)<<8 | uint64(door)) * 0x9e3779b97f4a7c15
	for k := batchSlot(h); ; k = (k + 1) & (batchSlots - 1) {
		j := int(b.admitted[k]) - 1
		if j < 0 {
			if add {
				b.admitted[k] = uint16(next + 1)
			}
			return -1
		}
		if x := &b.rec.Checkins[j]; x.Reg == reg && x.Door == door {
			return j
		}
	}
}

// verdict decides the i-th scan, new to the device; an admission adds its
// check-in to the batch's record.
func (b *scanBatch) verdict(i int, sc Scan) (ScanResult, bool) {
	res := ScanResult{ScanID: sc.ScanID}
	refuse := func(reason int) (ScanResult, bool) {
		res.Verdict, res.Reason = VerdictRefused, &b.reasons[reason]
		return res, false
	}
	r := b.regs[i]
	if r == nil {
		return refuse(0)
	}
	res.RegistrationID = &r.ID
	subjectID := strings.TrimSpace(sc.SubjectID)
	if sc.SubjectType == "event" {
		subjectID = ""
	}
	door := b.door(sc.SubjectType, subjectID)
	if door < 0 {
		return refuse(1)
	}
	if first := b.di.doorCheckin(r, sc.SubjectType, subjectID); first != nil {
		res.Verdict, res.FirstCheckin = VerdictAlreadyCheckedIn, b.first(FirstCheckin{ID: first.ID, SubjectType: first.SubjectType,
			SubjectID: b.strp(first.SubjectID), CheckedInAt: At(first.At), DeviceID: b.strp(first.DeviceID)})
		return res, false
	}
	if j := b.admittedAt(r.Seq, door, false, 0); j >= 0 {
		v := &b.views[j]
		res.Verdict = VerdictAlreadyCheckedIn
		res.FirstCheckin = b.first(FirstCheckin{ID: v.ID, SubjectType: v.SubjectType, SubjectID: v.SubjectID, CheckedInAt: v.CheckedInAt,
			DeviceID: v.DeviceID})
		return res, false
	}
	if r.Status != RegConfirmed {
		return refuse(2)
	}
	at := b.now
	if t := sc.ScannedAt.UTC(); sc.Offline && !t.Before(b.offlineLo) && !t.After(b.offlineHi) {
		at = t
	}
	k := ScanCheckin{ID: b.checkinID(), RegID: r.ID, Reg: r.Seq, Door: door, ScanID: sc.ScanID, CheckedInAt: at}
	b.admittedAt(r.Seq, door, true, len(b.rec.Checkins))
	b.rec.Checkins = append(b.rec.Checkins, k)
	// The view checkinView gives of the record Apply will make.
	b.views = append(b.views, Checkin{ID: k.ID, RegistrationID: r.ID, SubjectType: sc.SubjectType, SubjectID: b.doorSubj[door],
		Method: scanMethod, RegistrationEmail: r.Email, RegistrationName: b.strp(r.Name), CheckedInAt: At(at), DeviceID: b.devID})
	res.Verdict, res.Checkin = VerdictAdmitted, &b.views[len(b.views)-1]
	return res, true
}

// checkinID is the id of the batch's next check-in.
func (b *scanBatch) checkinID() string {
	if k := len(b.rec.Checkins); k < len(b.c.CheckinIDs) {
		return b.c.CheckinIDs[k]
	}
	return b.m.newID("chk_")
}

// strp is strp backed by the batch's arrays of strings: a view's optional
// strings (a pass's name, a first check-in's device) in one allocation
// per batch, not one each. A full array is left as it is (the results
// point into it) for a new one.
func (b *scanBatch) strp(v string) *string {
	if v == "" {
		return nil
	}
	if len(b.strs) == cap(b.strs) {
		b.strs = make([]string, 0, len(b.c.Scans))
	}
	b.strs = append(b.strs, v)
	return &b.strs[len(b.strs)-1]
}

// first returns f in the batch's backing array of first check-ins. When
// append moves the array, the results given out keep pointing into the
// old one, whose elements never change: only the array's size is a guess
// (resolve's), never a result.
func (b *scanBatch) first(f FirstCheckin) *FirstCheckin {
	b.firsts = append(b.firsts, f)
	return &b.firsts[len(b.firsts)-1]
}

// normCheckinCode is a scanned code as the index keys it: trimmed, upper
// case (without allocating for a code already so).
func normCheckinCode(code string) string {
	code = strings.TrimSpace(code)
	for i := 0; i < len(code); i++ {
		if c := code[i]; 'a' <= c && c <= 'z' || c >= 0x80 {
			return strings.ToUpper(code)
		}
	}
	return code
}

// recordedResult answers a repeated scan id as it was first answered.
func (m *Machine) recordedResult(scanID string, ref scanRef) ScanResult {
	res := ScanResult{ScanID: scanID}
	if ref.checkin != nil {
		v := m.checkinView(ref.checkin)
		res.Verdict, res.Checkin, res.RegistrationID = VerdictAdmitted, &v, &ref.checkin.RegID
		return res
	}
	a := m.s.Door.Answers[ref.answer]
	res.Verdict = a.Verdict
	if a.Reason != "" {
		reason := a.Reason
		res.Reason = &reason
	}
	res.RegistrationID = strp(a.RegID)
	if a.CheckinID != "" {
		if c := m.s.checkinOfReg(a.RegID, a.CheckinID); c != nil {
			res.FirstCheckin = firstCheckinView(c)
		}
	}
	return res
}

func firstCheckinView(c *CheckinRec) *FirstCheckin {
	f := firstCheckinOf(c)
	return &f
}

func firstCheckinOf(c *CheckinRec) FirstCheckin {
	return FirstCheckin{ID: c.ID, SubjectType: c.SubjectType, SubjectID: strp(c.SubjectID), CheckedInAt: At(c.At), DeviceID: strp(c.DeviceID)}
}

// PassCheckin is one check-in of a pass.
type PassCheckin struct {
	SubjectType string  `json:"subjectType" v:"enum=event|session|venue"`
	SubjectID   *string `json:"subjectId"`
	CheckedInAt Time    `json:"checkedInAt"`
	DeviceID    *string `json:"deviceId"`
}

// DoorPass is what a door device keeps of a registration.
type DoorPass struct {
	RegistrationID     string        `json:"registrationId"`
	CheckinCode        string        `json:"checkinCode"`
	Name               *string       `json:"name"`
	Email              string        `json:"email"`
	RegistrationTypeID *string       `json:"registrationTypeId"`
	Status             string        `json:"status" v:"enum=pending|confirmed|waitlisted|rejected|cancelled"`
	PerkIDs            []string      `json:"perkIds"`
	Checkins           []PassCheckin `json:"checkins"`
	UpdatedAt          Time          `json:"updatedAt"`
}

// ListPasses pages through the event's passes by change (see the package's
// pass versions). Cursor empty: from the start.
type ListPasses struct {
	Cursor string `json:"-" query:"cursor" v:"maxLen=200"`
	Limit  int    `json:"-" query:"limit" v:"min=1,max=1000"`
}

// PassPage answers ListPasses. NextCursor is never empty.
type PassPage struct {
	Data       []DoorPass `json:"data"`
	HasMore    bool       `json:"hasMore"`
	NextCursor string     `json:"nextCursor" doc:"Never null: called later with it, the list holds the passes changed since"`
}

func (ListPasses) result(*PassPage) {}

func (c ListPasses) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.listPasses(c)
}

// passCursorPrefix starts every pass cursor (before base64url).
const passCursorPrefix = "passes.v1."

// PassCursor is the cursor after stamp ver of event eventID.
func PassCursor(eventID string, ver int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(passCursorPrefix + eventID + "." + strconv.FormatInt(ver, 10)))
}

// ParsePassCursor reads a passes cursor of event eventID; ok is false for
// garbage and for another event's cursor.
func ParsePassCursor(eventID, c string) (int64, bool) { return parsePassCursor(eventID, c) }

// ParsePassCursorBytes is ParsePassCursor of the cursor's bytes: a caught-up
// device's poll reads its cursor from the query without copying it.
func ParsePassCursorBytes(eventID string, c []byte) (int64, bool) { return parsePassCursor(eventID, c) }

// passCursorMax bounds a cursor the parse decodes (an API cursor is at
// most 200 characters); its decoded bytes fit a buffer on the stack.
const passCursorMax = 256

// parsePassCursor decodes c without allocating: base64url into a stack
// buffer, then "passes.v1.<eventId>.<stamp>" with the stamp in canonical
// decimal (no sign, no leading zero), as strconv.FormatInt writes it.
func parsePassCursor[T string | []byte](eventID string, c T) (int64, bool) {
	if len(c) > passCursorMax {
		return 0, false
	}
	var src [passCursorMax]byte
	var buf [passCursorMax]byte
	n, err := base64.RawURLEncoding.Decode(buf[:], append(src[:0], c...))
	if err != nil {
		return 0, false
	}
	b := buf[:n]
	if len(b) < len(passCursorPrefix)+len(eventID)+2 || string(b[:len(passCursorPrefix)]) != passCursorPrefix {
		return 0, false
	}
	b = b[len(passCursorPrefix):]
	if string(b[:len(eventID)]) != eventID || b[len(eventID)] != '.' {
		return 0, false
	}
	digits := b[len(eventID)+1:]
	if len(digits) == 0 || len(digits) > 19 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	var v uint64
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false
		}
		v = v*10 + uint64(d-'0')
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// parsePassCursor reads a cursor of this event, refusing one from the
// future too.
func (m *Machine) parsePassCursor(c string) (int64, bool) {
	v, ok := parsePassCursor(m.s.ID, c)
	return v, ok && v <= m.s.Door.PassVer
}

func (m *Machine) listPasses(c ListPasses) (any, []Change, error) {
	limit := c.Limit
	if limit <= 0 || limit > PassPageMax {
		limit = PassPageMax
	}
	var after int64
	if c.Cursor != "" {
		v, ok := m.parsePassCursor(c.Cursor)
		if !ok {
			return nil, nil, FieldError("cursor", "not a passes cursor of this event")
		}
		after = v
	}
	di := m.s.doorIdx()
	i := sort.Search(len(di.log), func(i int) bool { return di.log[i].ver > after })
	out := PassPage{Data: make([]DoorPass, 0, min(limit, len(di.log)-i))}
	last := after
	for ; i < len(di.log); i++ {
		e := di.log[i]
		r := m.s.regAt(int(e.reg))
		if r.PassVer != e.ver {
			continue // superseded by a later stamp
		}
		if len(out.Data) == limit {
			out.HasMore = true
			break
		}
		out.Data = append(out.Data, m.passView(r))
		last = e.ver
	}
	if !out.HasMore {
		last = m.s.Door.PassVer
	}
	out.NextCursor = PassCursor(m.s.ID, last)
	return out, nil, nil
}

func (m *Machine) passView(r *RegistrationRec) DoorPass {
	p := DoorPass{RegistrationID: r.ID, CheckinCode: r.CheckinCode, Name: strp(r.Name), Email: r.Email,
		RegistrationTypeID: strp(r.TypeID), Status: r.Status, PerkIDs: m.passPerks(r), Checkins: []PassCheckin{},
		UpdatedAt: At(r.UpdatedAt)}
	m.s.doorIdx().eachCheckin(r, func(c *CheckinRec) {
		p.Checkins = append(p.Checkins, PassCheckin{SubjectType: c.SubjectType, SubjectID: strp(c.SubjectID), CheckedInAt: At(c.At), DeviceID: strp(c.DeviceID)})
	})
	return p
}

// passPerks are a registration's perk ids in perk order.
func (m *Machine) passPerks(r *RegistrationRec) []string {
	tp, cp, g := m.s.TypePerks[r.TypeID], m.s.CodePerks[r.CodeID], m.s.Grants[r.ID]
	if len(tp) == 0 && len(cp) == 0 && len(g) == 0 {
		return []string{}
	}
	out := []string{}
	for _, id := range m.s.PerkOrder {
		if slices.Contains(tp, id) || slices.Contains(cp, id) || slices.Contains(g, id) {
			out = append(out, id)
		}
	}
	return out
}

// GetDoorEvent is what a door device shows of its event.
type GetDoorEvent struct {
	Doors []DoorRef `json:"-"`
}

// DoorInfo is one of a device's doors with its name.
type DoorInfo struct {
	SubjectType string  `json:"subjectType" v:"enum=event|session|venue"`
	SubjectID   *string `json:"subjectId"`
	Name        string  `json:"name" doc:"The event's, session's or venue's name"`
	VenueName   *string `json:"venueName" doc:"A session's venue"`
	// Expected counts the confirmed registrations, CheckedIn those
	// checked in at this door.
	Expected  int `json:"expected"`
	CheckedIn int `json:"checkedIn"`
}

// DoorTicketType names a ticket type.
type DoorTicketType struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// DoorEvent answers GetDoorEvent.
type DoorEvent struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	StartsAt    *Time            `json:"startsAt"`
	Timezone    string           `json:"timezone"`
	Doors       []DoorInfo       `json:"doors"`
	TicketTypes []DoorTicketType `json:"ticketTypes"`
	PassCursor  string           `json:"passCursor" doc:"The passes cursor of now: the stream from here misses nothing"`
}

func (GetDoorEvent) result(*DoorEvent) {}

func (c GetDoorEvent) decide(m *Machine, now time.Time) (any, []Change, error) {
	e := m.s.Event
	if e == nil {
		return nil, nil, Errorf(NotFound, "event not found")
	}
	out := DoorEvent{ID: m.s.ID, Name: e.Name, Timezone: e.Timezone, Doors: []DoorInfo{}, TicketTypes: []DoorTicketType{},
		PassCursor: PassCursor(m.s.ID, m.s.Door.PassVer)}
	if e.StartsAt != nil {
		t := At(*e.StartsAt)
		out.StartsAt = &t
	}
	for _, id := range m.s.TypeOrder {
		t := m.s.Types[id]
		out.TicketTypes = append(out.TicketTypes, DoorTicketType{ID: t.ID, Name: t.Name})
	}
	// Registrations without a ticket type have no counter: count them
	// all (a page load, not a scan, asks this).
	confirmed := 0
	for i := range m.s.RegOrder {
		if m.s.regAt(i).Status == RegConfirmed {
			confirmed++
		}
	}
	for _, d := range c.Doors {
		info := DoorInfo{SubjectType: d.SubjectType, SubjectID: strp(d.SubjectID), Name: e.Name, Expected: confirmed,
			CheckedIn: m.s.idx.dash.doors[d.SubjectType+":"+d.SubjectID]}
		switch d.SubjectType {
		case "session":
			if s := m.s.Sessions[d.SubjectID]; s != nil {
				info.Name = s.Title
				if v := m.s.Venues[s.VenueID]; v != nil {
					info.VenueName = &v.Name
				}
			}
		case "venue":
			if v := m.s.Venues[d.SubjectID]; v != nil {
				info.Name = v.Name
			}
		}
		out.Doors = append(out.Doors, info)
	}
	return out, nil, nil
}

// CheckDoors checks a device's doors against the event: each must exist.
// Empty Doors means every door of the event (its own, each venue's and
// each session's). It answers the doors, normalized.
type CheckDoors struct {
	Doors []DoorRef `json:"doors"`
}

// DoorList answers CheckDoors.
type DoorList struct {
	Doors []DoorRef `json:"doors"`
}

func (CheckDoors) result(*DoorList) {}

func (c CheckDoors) decide(m *Machine, now time.Time) (any, []Change, error) {
	out := DoorList{Doors: []DoorRef{}}
	if len(c.Doors) == 0 {
		out.Doors = append(out.Doors, DoorRef{SubjectType: "event"})
		for _, id := range m.s.VenueOrder {
			out.Doors = append(out.Doors, DoorRef{SubjectType: "venue", SubjectID: id})
		}
		for _, id := range m.s.SessionOrder {
			out.Doors = append(out.Doors, DoorRef{SubjectType: "session", SubjectID: id})
		}
		return out, nil, nil
	}
	if len(c.Doors) > 100 {
		return nil, nil, FieldError("doors", "at most 100 doors")
	}
	for i, d := range c.Doors {
		f := "doors[" + strconv.Itoa(i) + "]"
		id := strings.TrimSpace(d.SubjectID)
		switch d.SubjectType {
		case "event":
			id = ""
		case "session", "venue":
			if id == "" {
				return nil, nil, FieldError(f+".subjectId", "required for session and venue doors")
			}
			if m.checkDoor(d.SubjectType, id) != nil {
				return nil, nil, FieldError(f+".subjectId", "no such "+d.SubjectType+" in this event")
			}
		default:
			return nil, nil, FieldError(f+".subjectType", "must be event, session or venue")
		}
		r := DoorRef{SubjectType: d.SubjectType, SubjectID: id}
		if !slices.Contains(out.Doors, r) {
			out.Doors = append(out.Doors, r)
		}
	}
	return out, nil, nil
}

// ListDoorConflicts lists the event's door conflicts, newest first.
type ListDoorConflicts struct {
	Cursor string `json:"-" query:"cursor"`
	Limit  int    `json:"-" query:"limit"`
}

// DoorConflict is one door conflict.
type DoorConflict struct {
	ID             string        `json:"id" doc:"The conflict's id (dcf_...)"`
	ScanID         string        `json:"scanId" doc:"The device's id of the scan"`
	DeviceID       string        `json:"deviceId" doc:"The device that admitted the person offline"`
	RegistrationID *string       `json:"registrationId" doc:"The pass scanned; null when its code is not of this event"`
	Reason         string        `json:"reason" v:"enum=ALREADY_CHECKED_IN|REGISTRATION_NOT_CONFIRMED|NOT_FOUND|DOOR_NOT_ALLOWED" doc:"ALREADY_CHECKED_IN: used at that door first by another device or the API; else why the service refused the pass"`
	ScannedAt      Time          `json:"scannedAt" doc:"When the device scanned it (its clock)"`
	FirstCheckin   *FirstCheckin `json:"firstCheckin" doc:"The earlier check-in at that door, when there is one"`
	RecordedAt     Time          `json:"recordedAt" doc:"When the service received the scan"`
}

func (ListDoorConflicts) result(*List[DoorConflict]) {}

func (c ListDoorConflicts) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := m.s.Door.Conflicts
	limit := clampLimit(c.Limit)
	end := len(cs)
	if c.Cursor != "" {
		id, ok := decodeCursor(c.Cursor)
		i := slices.IndexFunc(cs, func(k CheckinConflict) bool { return k.ID == id })
		if !ok || i < 0 {
			return nil, nil, FieldError("cursor", "unknown cursor")
		}
		end = i
	}
	out := List[DoorConflict]{Data: []DoorConflict{}}
	for i := end - 1; i >= 0; i-- {
		if len(out.Data) == limit {
			out.HasMore = true
			next := encodeCursor(out.Data[len(out.Data)-1].ID)
			out.NextCursor = &next
			break
		}
		out.Data = append(out.Data, m.ConflictView(cs[i]))
	}
	return out, nil, nil
}

// ConflictView is a conflict as the API answers it.
func (m *Machine) ConflictView(k CheckinConflict) DoorConflict {
	v := DoorConflict{ID: k.ID, ScanID: k.ScanID, DeviceID: k.DeviceID, RegistrationID: strp(k.RegID), Reason: k.Reason,
		ScannedAt: At(k.ScannedAt), RecordedAt: At(k.At)}
	if c := m.s.checkinOfReg(k.RegID, k.CheckinID); c != nil {
		v.FirstCheckin = firstCheckinView(c)
	}
	return v
}

// checkinOfReg returns check-in id, one of registration regID's: read
// from the registration's few check-ins in the door index once it is
// built (a door's conflicts and repeated scans, the only callers, come
// after it is), so that they never build the table of every check-in by
// id (State.checkins: ~20 ms for 100,000 check-ins inside the event's
// actor, and a table insert per check-in of every later batch); from
// that table otherwise, or when the door index does not have it.
func (s *State) checkinOfReg(regID, id string) *CheckinRec {
	if d := s.idx.door; d != nil && regID != "" {
		if r := s.regs()[regID]; r != nil && r.Seq < len(d.byReg) {
			e := &d.byReg[r.Seq]
			if c := e.first.c; c != nil && c.ID == id {
				return c
			}
			for _, x := range e.more {
				if x.c.ID == id {
					return x.c
				}
			}
		}
	}
	return s.checkins()[id]
}

// recentCheckinsMax bounds how many of the newest check-ins
// State.checkinByID reads before it asks the table of them all.
const recentCheckinsMax = 8

// checkinByID returns check-in id: found among the newest few without the
// table of every check-in by id (the feed's object of a check-in is read
// just after it is made: a single scan's check-in would otherwise build
// that table, ~20 ms for 100,000 check-ins inside the event's actor, and
// make every later check-in an insert into it), else from that table.
func (s *State) checkinByID(id string) *CheckinRec {
	if l := s.mem.checkinList; len(l) == len(s.CheckinOrder) {
		for i := len(l) - 1; i >= 0 && i >= len(l)-recentCheckinsMax; i-- {
			if l[i].ID == id {
				return l[i]
			}
		}
	}
	return s.checkins()[id]
}
