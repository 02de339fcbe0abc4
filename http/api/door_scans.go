package api

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"sync"

	"ticketd/event"
)

// fastScans decodes the body of POST /door/v1/scans in its common shape
// without the binder's reflection (a batch is 500 scans, about 75 kB):
// one object with "scans", an array of 1 to 500 objects of the Scan
// fields, strings of printable ASCII without escapes, every rule of the
// Scan's tags met. ok is false for anything else, and the caller binds the
// body as usual, so a body the fast path declines gets exactly the
// binder's answer (its 400 and details), and one it takes decodes as the
// binder would decode it (TestFastScansMatchesBind).
//
// The command's strings are copies, never views of the body: an ask that
// times out leaves the command in the event's queue, and fasthttp reuses
// the body's buffer for the connection's next request, so a view would
// have the actor decide on another request's bytes.
func fastScans(body []byte) (event.RecordScans, bool) {
	p := scanParser{b: body}
	var cmd event.RecordScans
	p.ws()
	if !p.eat('{') {
		return cmd, false
	}
	p.ws()
	if k, ok := p.str(); !ok || string(k) != "scans" {
		return cmd, false
	}
	p.ws()
	if !p.eat(':') {
		return cmd, false
	}
	p.ws()
	if !p.eat('[') {
		return cmd, false
	}
	// The spans are scratch of the parse alone: pooled (56 kB a batch of
	// garbage otherwise).
	sp := scanSpansPool.Get().(*[]scanSpans)
	defer scanSpansPool.Put(sp)
	spans := (*sp)[:0]
	idBytes, refBytes := 0, 0
	for {
		p.ws()
		if len(spans) == event.ScanBatchMax {
			return cmd, false // the binder names the limit
		}
		spans = append(spans, scanSpans{})
		s := &spans[len(spans)-1]
		if !p.scan(s) {
			return cmd, false
		}
		idBytes += s.id.n
		refBytes += s.code.n + s.reg.n
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat(']') {
			break
		}
		return cmd, false
	}
	*sp = spans
	p.ws()
	if !p.eat('}') {
		return cmd, false
	}
	p.ws()
	if p.i != len(p.b) {
		return cmd, false
	}
	// The scan ids are kept by the event (a repeat answers the first
	// result): one string holds them all, so they cost one allocation
	// and keep nothing else of the body alive. The codes and
	// registration ids are only looked up: one more string for them all.
	// A strings.Builder grown once makes each without a second copy. A
	// door's subjectId is kept by a check-in: a batch names few doors,
	// each is made once.
	var ib, rb strings.Builder
	ib.Grow(idBytes)
	rb.Grow(refBytes)
	for i := range spans {
		s := &spans[i]
		ib.Write(s.id.of(body))
		rb.Write(s.code.of(body))
		rb.Write(s.reg.of(body))
	}
	idStr, refStr := ib.String(), rb.String()
	off, roff := 0, 0
	ref := func(s span) string {
		v := refStr[roff : roff+s.n]
		roff += s.n
		return v
	}
	cmd.Scans = (*scansPool.Get().(*[]event.Scan))[:len(spans)]
	var lastAt []byte
	var at event.Time
	var subj []string
	for i := range spans {
		sp := &spans[i]
		sc := &cmd.Scans[i]
		sc.ScanID = idStr[off : off+sp.id.n]
		off += sp.id.n
		sc.CheckinCode = ref(sp.code)
		sc.RegistrationID = ref(sp.reg)
		sc.SubjectType = sp.subjectType
		if s := sp.subj.of(body); len(s) > 0 {
			found := false
			for _, v := range subj {
				if v == string(s) {
					sc.SubjectID, found = v, true
					break
				}
			}
			if !found {
				sc.SubjectID = string(s)
				subj = append(subj, sc.SubjectID)
			}
		}
		raw := sp.at.of(body)
		if lastAt == nil || string(raw) != string(lastAt) {
			t, err := event.ParseTime(string(raw))
			if err != nil {
				return event.RecordScans{}, false
			}
			at, lastAt = t, raw
		}
		sc.ScannedAt = at
		sc.Offline, sc.AdmittedOffline = sp.offline, sp.admittedOffline
	}
	return cmd, true
}

// scansPool holds the scans of commands the actor is done with
// (releaseScans), cleared, room for a whole batch each: 56 kB a batch, of
// pointers (zeroed and scanned), otherwise garbage at its answer.
var scansPool = sync.Pool{New: func() any {
	s := make([]event.Scan, 0, event.ScanBatchMax)
	return &s
}}

// releaseScans gives back the scans of a command fastScans made once the
// event answered it: the actor is done with them (its answer holds their
// strings, never the slice). A command whose ask failed may still wait in
// the event's queue (a timeout): its scans are left to the collector.
func releaseScans(scans []event.Scan) {
	if cap(scans) != event.ScanBatchMax {
		return
	}
	clear(scans)
	scans = scans[:0]
	scansPool.Put(&scans)
}

// scanSpansPool holds the parse's spans, room for a whole batch each.
var scanSpansPool = sync.Pool{New: func() any {
	s := make([]scanSpans, 0, event.ScanBatchMax)
	return &s
}}

// span is a string's bytes in the body (n 0: empty or absent).
type span struct{ i, n int }

func (s span) of(b []byte) []byte { return b[s.i : s.i+s.n] }

// scanSpans is one scan as parsed, before its strings are made.
type scanSpans struct {
	id, code, reg, subj, at  span
	subjectType              string
	offline, admittedOffline bool
}

// Members of a scan, as bits of what a scan object held.
const (
	mScanID = 1 << iota
	mCode
	mReg
	mSubjectType
	mSubjectID
	mScannedAt
	mOffline
	mAdmittedOffline
)

// scanStrMax is the tags' maxLen of a scan's strings (scanId,
// checkinCode, registrationId, subjectId), in characters (bytes here: the
// fast path takes ASCII only).
const scanStrMax = 100

type scanParser struct {
	b []byte
	i int
}

func (p *scanParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *scanParser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes, eight bytes at
// a time up to the first that ends it or that the fast path declines.
func (p *scanParser) str() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	b, start := p.b, p.i
	i := start
	for ; i+8 <= len(b); i += 8 {
		if m := strStop(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			i += bits.TrailingZeros64(m) / 8
			break
		}
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c == '"' {
			p.i = i + 1
			return b[start:i], true
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return nil, false
		}
	}
	return nil, false
}

// Bytes of one value in each of a word's eight bytes.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// strStop sets the high bit of x's lowest byte (little-endian) that ends a
// string or that str declines: ", \, a control character, 0x7f or any
// byte >= 0x80; and maybe of bytes above it, never of one below (a test's
// borrow only leaves a byte that hit). 0 when all 8 bytes are plain.
func strStop(x uint64) uint64 {
	return x&msb | // >= 0x80
		(x-0x20*lsb)&^x&msb | // < 0x20
		hasZero(x^('"'*lsb)) |
		hasZero(x^('\\'*lsb)) |
		hasZero(x^(0x7f*lsb))
}

// hasZero sets the high bit of x's lowest zero byte (and maybe of bytes
// above it, never of one below); 0 when no byte is zero.
func hasZero(x uint64) uint64 { return (x - lsb) &^ x & msb }

func (p *scanParser) span() (span, bool) {
	start := p.i + 1
	s, ok := p.str()
	return span{start, len(s)}, ok
}

func (p *scanParser) boolean() (bool, bool) {
	rest := p.b[p.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		p.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

// scan reads one scan object whose members meet the Scan's rules into
// sp, zero.
func (p *scanParser) scan(sp *scanSpans) bool {
	if !p.eat('{') {
		return false
	}
	seen := 0
	for {
		p.ws()
		k, ok := p.str()
		if !ok {
			return false
		}
		p.ws()
		if !p.eat(':') {
			return false
		}
		p.ws()
		var bit int
		var s span
		switch string(k) {
		case "scanId":
			bit = mScanID
			s, ok = p.span()
			sp.id = s
			ok = ok && s.n >= 1
		case "checkinCode":
			bit = mCode
			s, ok = p.span()
			sp.code = s
		case "registrationId":
			bit = mReg
			s, ok = p.span()
			sp.reg = s
		case "subjectType":
			bit = mSubjectType
			s, ok = p.span()
			switch string(s.of(p.b)) {
			case "event":
				sp.subjectType = "event"
			case "venue":
				sp.subjectType = "venue"
			case "session":
				sp.subjectType = "session"
			default:
				ok = false
			}
		case "subjectId":
			bit = mSubjectID
			s, ok = p.span()
			sp.subj = s
		case "scannedAt":
			bit = mScannedAt
			s, ok = p.span()
			sp.at = s
		case "offline":
			bit = mOffline
			sp.offline, ok = p.boolean()
		case "admittedOffline":
			bit = mAdmittedOffline
			sp.admittedOffline, ok = p.boolean()
		default:
			return false
		}
		if !ok || seen&bit != 0 || s.n > scanStrMax {
			return false
		}
		seen |= bit
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			break
		}
		return false
	}
	const required = mScanID | mSubjectType | mScannedAt
	return seen&required == required
}
