package event

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	json "github.com/goccy/go-json"
)

// One record per batch of scans (issue 33): a batch of 500 scans used to be
// up to 500 CheckedIn records and a ScansAnswered, each encoded, logged,
// applied and turned into a feed entry on its own inside the event's
// actor. ScansRecorded is the whole batch in one record, applied in one
// pass; its feed entries (one checkin.created per check-in, with its own
// seq, as before) are written as one span (AppendFeedSpan) that the feed's
// reader expands (ExpandFeedSpan). Logs written before it keep their
// CheckedIn and ScansAnswered records, which replay into the same state.

// ScansRecorded records what one batch of a device's scans decided: its
// check-ins (each the record a CheckedIn would make: method scan, the
// device and the scan id) and the answers of its scans that made none (as
// ScansAnswered), in batch order.
type ScansRecorded struct {
	At       time.Time `json:"at"`
	DeviceID string    `json:"dev"`
	// Doors are the doors the check-ins name by position (the device's).
	Doors    []DoorRef     `json:"doors,omitempty"`
	Checkins []ScanCheckin `json:"checkins,omitempty"`
	Answers  []ScanAnswer  `json:"answers,omitempty"`
}

// ScanCheckin is one check-in of a ScansRecorded.
type ScanCheckin struct {
	ID    string `json:"id"`
	RegID string `json:"reg"`
	// Reg is the registration's position in RegOrder: the apply reaches it
	// without a lookup by id (and checks it is RegID's).
	Reg         int       `json:"pos"`
	Door        int       `json:"door"` // position in ScansRecorded.Doors
	ScanID      string    `json:"scan"`
	CheckedInAt time.Time `json:"cat,omitzero"` // an offline scan's scannedAt; zero: At
}

// ChangeKind names the change in the log (its binary tag).
func (ScansRecorded) ChangeKind() string { return "door.scans.recorded" }

// scansRecordedDoorsMax bounds the doors of a decoded record (a device
// has at most 100).
const scansRecordedDoorsMax = 1000

func decodeScansRecorded(d *dec) ScansRecorded {
	c := ScansRecorded{At: d.time(), DeviceID: d.str()}
	n := d.uvarint()
	if n > scansRecordedDoorsMax || n > uint64(len(d.s)) {
		d.fail()
		return c
	}
	if n > 0 {
		c.Doors = make([]DoorRef, n)
		for i := range c.Doors {
			c.Doors[i] = DoorRef{SubjectType: d.str(), SubjectID: d.str()}
		}
	}
	if n = d.uvarint(); n > maxCount || n > uint64(len(d.s)) {
		d.fail()
		return c
	}
	if n > 0 {
		c.Checkins = make([]ScanCheckin, n)
		for i := range c.Checkins {
			k := ScanCheckin{ID: d.str(), RegID: d.str(), Reg: int(d.uvarint()), Door: int(d.uvarint()), ScanID: d.str(),
				CheckedInAt: d.time()}
			if k.Door >= len(c.Doors) || k.Reg > maxCount {
				d.fail()
				return c
			}
			c.Checkins[i] = k
		}
	}
	if n = d.uvarint(); n > maxCount || n > uint64(len(d.s)) {
		d.fail()
		return c
	}
	if n > 0 {
		c.Answers = make([]ScanAnswer, n)
		for i := range c.Answers {
			c.Answers[i] = ScanAnswer{ScanID: d.str(), Verdict: d.str(), Reason: d.str(), RegID: d.str(), CheckinID: d.str()}
		}
	}
	return c
}

func (c ScansRecorded) appendBody(e enc) enc {
	e = e.time(c.At).str(c.DeviceID).uvarintBytes(uint64(len(c.Doors)))
	for _, d := range c.Doors {
		e = e.str(d.SubjectType).str(d.SubjectID)
	}
	e = e.uvarintBytes(uint64(len(c.Checkins)))
	for _, k := range c.Checkins {
		e = e.str(k.ID).str(k.RegID).uvarintBytes(uint64(k.Reg)).uvarintBytes(uint64(k.Door)).str(k.ScanID).time(k.CheckedInAt)
	}
	e = e.uvarintBytes(uint64(len(c.Answers)))
	for _, a := range c.Answers {
		e = e.str(a.ScanID).str(a.Verdict).str(a.Reason).str(a.RegID).str(a.CheckinID)
	}
	return e
}

// scanMethod is the method of a door device's check-in.
const scanMethod = "scan"

// apply makes the batch's check-ins in one pass: the records in one
// allocation, the dashboard's door counters once per door, and no lookup
// of a registration by id.
func (c ScansRecorded) apply(s *State) {
	if n := len(c.Checkins); n > 0 {
		if len(s.CheckinOrder) == 0 && s.reserveFor() > n {
			n := s.reserveFor()
			if !s.idx.checkinsLazy {
				s.Checkins = make(map[string]*CheckinRec, n)
			}
			s.CheckinOrder, s.mem.checkinList = make([]string, 0, n), make([]*CheckinRec, 0, n)
		}
		s.CheckinOrder, s.mem.checkinList = growDoubling(s.CheckinOrder, n), growDoubling(s.mem.checkinList, n)
		if d := s.idx.door; d != nil {
			d.log = growDoubling(d.log, n)
		}
		recs := make([]CheckinRec, n)
		prefault(recs)
		var counts [8]int
		perDoor := counts[:0]
		if len(c.Doors) <= len(counts) {
			perDoor = counts[:len(c.Doors)]
		} else {
			perDoor = make([]int, len(c.Doors))
		}
		d := s.idx.door
		var dev uint64
		if d != nil {
			dev = scanDevHash(c.DeviceID)
		}
		for i, k := range c.Checkins {
			if k.Reg >= len(s.RegOrder) {
				panic(fmt.Sprintf("event: check-in %s names registration %s at %d", k.ID, k.RegID, k.Reg))
			}
			// The record's id, not RegOrder's entry: the record is read
			// next anyway (one table of every pass read, not two).
			reg := s.regAt(k.Reg)
			if reg.ID != k.RegID {
				panic(fmt.Sprintf("event: check-in %s names registration %s at %d", k.ID, k.RegID, k.Reg))
			}
			door := c.Doors[k.Door]
			at := c.At
			if !k.CheckedInAt.IsZero() {
				at = k.CheckedInAt
			}
			r := &recs[i]
			*r = CheckinRec{ID: k.ID, Seq: len(s.CheckinOrder), RegID: reg.ID, SubjectType: door.SubjectType, SubjectID: door.SubjectID,
				Method: scanMethod, At: at, DeviceID: c.DeviceID, ScanID: k.ScanID}
			if !s.idx.checkinsLazy {
				s.Checkins[k.ID] = r
			}
			s.CheckinOrder = append(s.CheckinOrder, k.ID)
			s.mem.checkinList = append(s.mem.checkinList, r)
			perDoor[k.Door]++
			if d != nil {
				if d.doorCheckin(reg, door.SubjectType, door.SubjectID) != nil {
					panic(fmt.Sprintf("event: second check-in %s at one door", k.ID))
				}
				d.addCheckin(reg, r)
				d.noteScan(s, dev, c.DeviceID, k.ScanID, scanRef{checkin: r, answer: -1})
			}
			s.touchPass(reg)
		}
		for i, n := range perDoor {
			if n > 0 {
				s.idx.dash.doors[c.Doors[i].SubjectType+":"+c.Doors[i].SubjectID] += n
			}
		}
	}
	ScansAnswered{At: c.At, DeviceID: c.DeviceID, Answers: c.Answers}.apply(s)
}

// checkedIn is check-in i of c as the CheckedIn change older logs hold.
func (c ScansRecorded) checkedIn(i int) CheckedIn {
	k, door := c.Checkins[i], c.Doors[c.Checkins[i].Door]
	return CheckedIn{At: c.At, ID: k.ID, RegID: k.RegID, SubjectType: door.SubjectType, SubjectID: door.SubjectID, Method: scanMethod,
		DeviceID: c.DeviceID, ScanID: k.ScanID, CheckedInAt: k.CheckedInAt}
}

// Expand is c as the changes a batch recorded before ScansRecorded: one
// CheckedIn per check-in, then one ScansAnswered when any scan made none.
// They apply into the same state, with the same feed entries and effects.
func (c ScansRecorded) Expand() []Change {
	out := make([]Change, 0, len(c.Checkins)+1)
	for i := range c.Checkins {
		out = append(out, c.checkedIn(i))
	}
	if len(c.Answers) > 0 {
		out = append(out, ScansAnswered{At: c.At, DeviceID: c.DeviceID, Answers: c.Answers})
	}
	return out
}

// effects are the webhooks of the batch's check-ins, each CheckedIn's,
// made in place: an Effect is some 450 bytes, and a check-in's built
// and then copied into dst cost twice the writes (35 ns a check-in).
func (c ScansRecorded) effects(dst []Effect) []Effect {
	dst = slices.Grow(dst, len(c.Checkins))
	for i := range c.Checkins {
		dst = dst[:len(dst)+1]
		dst[len(dst)-1] = Effect{Kind: EffectWebhook, Hook: HookCheckinCreated, ID: c.Checkins[i].ID, At: c.At, Checkin: c.checkedIn(i)}
	}
	return dst
}

// appendFeed appends the batch's feed entries: a checkin.created per
// check-in.
func (c ScansRecorded) appendFeed(dst []FeedEntry) []FeedEntry {
	for _, k := range c.Checkins {
		dst = append(dst, FeedEntry{FeedCheckinCreated, k.ID, c.At})
	}
	return dst
}

// A feed span is the data from which the objects of a change's feed
// entries render, when they are all of one type and time: the shell
// stores it as one record instead of one rendered object per entry
// (actors/feed), and the feed's reader renders them (ExpandFeedSpan).
// Format, version 1 (the feed record's version names it):
//
//	string  device id (strings: uvarint length, bytes)
//	string  method
//	uvarint doors, then each: string subjectType, string subjectId
//	uvarint check-ins, then each: string id, string registration id,
//	        uvarint door, string registration email, string registration
//	        name, varint checkedInAt (Unix nanoseconds)
//
// Every value a check-in's GET shows is in it, as it was at the change:
// a check-in never changes, but the span does not lean on that.

// HasFeedSpan reports whether ch's feed entries are written as one span
// (AppendFeedSpan): all of one type and time.
func HasFeedSpan(ch Change) bool {
	c, ok := ch.(ScansRecorded)
	return ok && len(c.Checkins) > 0
}

// FeedSpanLen bounds the length of the feed span AppendFeedSpan appends
// for ch, a change just applied (0 for a change without one): exact but
// for each check-in's time, counted at its longest (a few bytes each).
// The shell makes the span's value this size once, where a guess grew it
// by a copy of all of it.
func (m *Machine) FeedSpanLen(ch Change) int {
	c, ok := ch.(ScansRecorded)
	if !ok || len(c.Checkins) == 0 {
		return 0
	}
	n := strLen(c.DeviceID) + strLen(scanMethod) + uvarintLen(uint64(len(c.Doors)))
	for _, d := range c.Doors {
		n += strLen(d.SubjectType) + strLen(d.SubjectID)
	}
	n += uvarintLen(uint64(len(c.Checkins)))
	for _, k := range c.Checkins {
		r := m.s.regAt(k.Reg)
		n += strLen(k.ID) + strLen(k.RegID) + uvarintLen(uint64(k.Door)) + strLen(r.Email) + strLen(r.Name) + binary.MaxVarintLen64
	}
	return n
}

// strLen is the length of s as enc.str writes it.
func strLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

// uvarintLen is the length of v as a uvarint.
func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// AppendFeedSpan appends the feed span of ch, a change just applied, to
// dst: ok is false for a change whose entries are written one by one.
func (m *Machine) AppendFeedSpan(dst []byte, ch Change) (out []byte, ok bool) {
	c, ok := ch.(ScansRecorded)
	if !ok || len(c.Checkins) == 0 {
		return dst, false
	}
	e := enc(dst).str(c.DeviceID).str(scanMethod).uvarintBytes(uint64(len(c.Doors)))
	for _, d := range c.Doors {
		e = e.str(d.SubjectType).str(d.SubjectID)
	}
	e = e.uvarintBytes(uint64(len(c.Checkins)))
	for _, k := range c.Checkins {
		r := m.s.regAt(k.Reg)
		at := c.At
		if !k.CheckedInAt.IsZero() {
			at = k.CheckedInAt
		}
		e = e.str(k.ID).str(k.RegID).uvarintBytes(uint64(k.Door)).str(r.Email).str(r.Name)
		e = binary.AppendVarint(e, at.UnixNano())
	}
	return e, true
}

// errFeedSpan is a feed span that does not decode.
var errFeedSpan = errors.New("event: corrupt feed span")

// ExpandFeedSpan renders the objects of a feed span of entries of type
// typ (AppendFeedSpan), in entry order, each as its GET answered it (the
// bytes json.Marshal of the view gives), into one allocation.
func ExpandFeedSpan(typ string, span []byte) ([][]byte, error) {
	if typ != FeedCheckinCreated {
		return nil, fmt.Errorf("%w: type %q", errFeedSpan, typ)
	}
	d := dec{s: string(span)}
	dev, method := d.str(), d.str()
	n := d.uvarint()
	if n > scansRecordedDoorsMax || n > uint64(len(d.s)) {
		return nil, errFeedSpan
	}
	doors := make([]DoorRef, n)
	for i := range doors {
		doors[i] = DoorRef{SubjectType: d.str(), SubjectID: d.str()}
	}
	if n = d.uvarint(); n > maxCount || n > uint64(len(d.s)) {
		return nil, errFeedSpan
	}
	objs := make([][]byte, n)
	buf := make([]byte, 0, int(n)*300)
	for i := range objs {
		id, reg, door, email, name := d.str(), d.str(), d.uvarint(), d.str(), d.str()
		at := time.Unix(0, d.int()).UTC()
		if d.err != nil || door >= uint64(len(doors)) {
			return nil, errFeedSpan
		}
		start := len(buf)
		buf = appendCheckinJSON(buf, Checkin{ID: id, RegistrationID: reg, SubjectType: doors[door].SubjectType,
			SubjectID: strp(doors[door].SubjectID), Method: method, RegistrationEmail: email, RegistrationName: strp(name),
			CheckedInAt: At(at), DeviceID: strp(dev)})
		objs[i] = buf[start:len(buf):len(buf)]
	}
	if d.err != nil || len(d.s) != 0 {
		return nil, errFeedSpan
	}
	return objs, nil
}

// appendCheckinJSON appends v as json.Marshal writes it.
func appendCheckinJSON(b []byte, v Checkin) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, v.ID)
	b = append(b, `,"registrationId":`...)
	b = appendJSONString(b, v.RegistrationID)
	b = append(b, `,"subjectType":`...)
	b = appendJSONString(b, v.SubjectType)
	b = append(b, `,"subjectId":`...)
	b = appendJSONStringp(b, v.SubjectID)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, v.Method)
	b = append(b, `,"registrationEmail":`...)
	b = appendJSONString(b, v.RegistrationEmail)
	b = append(b, `,"registrationName":`...)
	b = appendJSONStringp(b, v.RegistrationName)
	b = append(b, `,"checkedInAt":`...)
	b = v.CheckedInAt.AppendJSON(b)
	b = append(b, `,"deviceId":`...)
	b = appendJSONStringp(b, v.DeviceID)
	return append(b, '}')
}

func appendJSONStringp(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
}

// appendJSONString appends s as a JSON string the way json.Marshal does:
// plain printable ASCII as it is, anything else (quotes, escapes, HTML
// characters, control and non-ASCII characters) by json.Marshal itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			if err != nil {
				panic(fmt.Sprintf("event: encode string: %v", err))
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// growDoubling returns s with room for n more elements, at least doubling its
// capacity when it must grow. append grows a large slice by about a
// quarter at a time, each time a copy of all of it; a batch of scans
// appends hundreds of elements to slices of every check-in and answer of
// the event, inside its actor.
func growDoubling[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	s = slices.Grow(s, max(n, len(s)))
	prefault(s[len(s):]) // see prefault: appends write it with pointers
	return s
}
