package api

import (
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
	spans := make([]scanSpans, 0, min(event.ScanBatchMax, 1+len(body)/100))
	idBytes := 0
	for {
		p.ws()
		if len(spans) == event.ScanBatchMax {
			return cmd, false // the binder names the limit
		}
		sp, ok := p.scan()
		if !ok {
			return cmd, false
		}
		idBytes += sp.id.n
		spans = append(spans, sp)
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat(']') {
			break
		}
		return cmd, false
	}
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
	// A door's subjectId is kept by a check-in: a batch names few doors,
	// each is made once.
	ids := make([]byte, 0, idBytes)
	for i := range spans {
		ids = append(ids, spans[i].id.of(body)...)
	}
	idStr := string(ids)
	refs := ids[:0]
	for i := range spans {
		refs = append(append(refs, spans[i].code.of(body)...), spans[i].reg.of(body)...)
	}
	refStr := string(refs)
	roff := 0
	ref := func(s span) string {
		v := refStr[roff : roff+s.n]
		roff += s.n
		return v
	}
	cmd.Scans = make([]event.Scan, len(spans))
	var lastAt []byte
	var at event.Time
	var subj []string
	off := 0
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

// str reads a string of printable ASCII without escapes.
func (p *scanParser) str() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			p.i++
			return p.b[start : p.i-1], true
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return nil, false
		}
		p.i++
	}
	return nil, false
}

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

// scan reads one scan object whose members meet the Scan's rules.
func (p *scanParser) scan() (scanSpans, bool) {
	var sp scanSpans
	if !p.eat('{') {
		return sp, false
	}
	seen := 0
	for {
		p.ws()
		k, ok := p.str()
		if !ok {
			return sp, false
		}
		p.ws()
		if !p.eat(':') {
			return sp, false
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
			return sp, false
		}
		if !ok || seen&bit != 0 || s.n > scanStrMax {
			return sp, false
		}
		seen |= bit
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			break
		}
		return sp, false
	}
	const required = mScanID | mSubjectType | mScannedAt
	return sp, seen&required == required
}
