package load

import (
	"bytes"
	"errors"
	"strconv"

	gojson "github.com/goccy/go-json"
)

// QueueAnswer is what the harness reads of a waiting room's answer (a
// join's or a poll's): views into the body, valid while the body is (a
// Load's Check: during the call); copy what is kept.
type QueueAnswer struct {
	QueueID, State, QueueToken []byte
	// Position is the position when HasPosition (null or absent: false).
	Position    int
	HasPosition bool
	// AdmittedUntil is the raw string (nil when null or absent).
	AdmittedUntil []byte
}

// errNotQueueAnswer is a body that is not a queue answer's JSON.
var errNotQueueAnswer = errors.New("bench: not a JSON object of a queue answer")

// ReadQueueAnswer reads a queue answer without a decoder's allocations:
// the generator shares the machine's two cores with the service, so what
// it spends per answer is part of every ratio to the ceiling. It parses
// the whole body as JSON (a member it does not use is skipped, but still
// checked to be JSON) and answers what a JSON decoder answers for the
// same fields (TestReadQueueAnswerMatchesDecoder); a string with an escape
// in a field it reads, rare in answers of ids and states, goes through
// goccy/go-json instead.
func ReadQueueAnswer(body []byte) (QueueAnswer, error) {
	var a QueueAnswer
	p := jsonScan{b: body}
	p.ws()
	if !p.eat('{') {
		return a, errNotQueueAnswer
	}
	p.ws()
	if p.eat('}') {
		return a, p.end()
	}
	for {
		p.ws()
		key, esc, ok := p.str()
		if !ok {
			return a, errNotQueueAnswer
		}
		p.ws()
		if !p.eat(':') {
			return a, errNotQueueAnswer
		}
		p.ws()
		var field *[]byte
		switch string(key) {
		case "queueId":
			field = &a.QueueID
		case "state":
			field = &a.State
		case "queueToken":
			field = &a.QueueToken
		case "admittedUntil":
			field = &a.AdmittedUntil
		case "position":
			if p.null() {
				a.Position, a.HasPosition = 0, false
			} else if a.Position, ok = p.int(); !ok {
				return a, errNotQueueAnswer
			} else {
				a.HasPosition = true
			}
		default:
			if esc || foldsToField(key) {
				// A decoder matches keys case-insensitively, and
				// unescaped: let one decide.
				return readQueueAnswerSlow(body)
			}
			if !p.value() {
				return a, errNotQueueAnswer
			}
		}
		if field != nil {
			if p.null() {
				*field = nil
			} else {
				v, vesc, ok := p.str()
				if !ok {
					return a, errNotQueueAnswer
				}
				if vesc {
					return readQueueAnswerSlow(body)
				}
				*field = v
			}
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return a, p.end()
		}
		return a, errNotQueueAnswer
	}
}

// foldsToField reports whether key equals a field's name but for case.
func foldsToField(key []byte) bool {
	for _, f := range [...]string{"queueId", "state", "queueToken", "admittedUntil", "position"} {
		if len(key) == len(f) && bytes.EqualFold(key, []byte(f)) {
			return true
		}
	}
	return false
}

// readQueueAnswerSlow is ReadQueueAnswer through a JSON decoder.
func readQueueAnswerSlow(body []byte) (QueueAnswer, error) {
	var w struct {
		QueueID       *string `json:"queueId"`
		State         *string `json:"state"`
		Position      *int    `json:"position"`
		QueueToken    *string `json:"queueToken"`
		AdmittedUntil *string `json:"admittedUntil"`
	}
	if err := gojson.Unmarshal(body, &w); err != nil {
		return QueueAnswer{}, err
	}
	var a QueueAnswer
	bs := func(s *string) []byte {
		if s == nil {
			return nil
		}
		return []byte(*s)
	}
	a.QueueID, a.State, a.QueueToken, a.AdmittedUntil = bs(w.QueueID), bs(w.State), bs(w.QueueToken), bs(w.AdmittedUntil)
	if w.Position != nil {
		a.Position, a.HasPosition = *w.Position, true
	}
	return a, nil
}

// jsonScan is a strict reader of JSON text, for ReadQueueAnswer.
type jsonScan struct {
	b []byte
	i int
}

func (p *jsonScan) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonScan) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end checks nothing but white space follows.
func (p *jsonScan) end() error {
	p.ws()
	if p.i != len(p.b) {
		return errNotQueueAnswer
	}
	return nil
}

func (p *jsonScan) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

func (p *jsonScan) null() bool { return p.lit("null") }

// str reads a string: its raw bytes between the quotes, and whether it
// holds an escape or a byte beyond ASCII (then the bytes may not be its
// value).
func (p *jsonScan) str() (raw []byte, esc, ok bool) {
	if !p.eat('"') {
		return nil, false, false
	}
	start := p.i
	// The common string, plain ASCII: find its end, check its bytes in a
	// tight loop; anything else is read byte by byte below.
	if j := bytes.IndexByte(p.b[p.i:], '"'); j >= 0 {
		plain := true
		for _, c := range p.b[p.i : p.i+j] {
			if c < 0x20 || c == '\\' || c >= 0x80 {
				plain = false
				break
			}
		}
		if plain {
			p.i += j + 1
			return p.b[start : p.i-1], false, true
		}
	}
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], esc, true
		case c == '\\':
			esc = true
			if p.i+1 >= len(p.b) {
				return nil, false, false
			}
			switch p.b[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.b) {
					return nil, false, false
				}
				for _, h := range p.b[p.i+2 : p.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return nil, false, false
					}
				}
				p.i += 6
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		case c >= 0x80:
			esc = true // a decoder checks and may replace invalid UTF-8
			p.i++
		default:
			p.i++
		}
	}
	return nil, false, false
}

// number reads a JSON number and returns its text.
func (p *jsonScan) number() ([]byte, bool) {
	start := p.i
	p.eat('-')
	switch {
	case p.eat('0'):
	case p.i < len(p.b) && p.b[p.i] >= '1' && p.b[p.i] <= '9':
		p.digits()
	default:
		return nil, false
	}
	if p.eat('.') {
		if p.digits() == 0 {
			return nil, false
		}
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if p.digits() == 0 {
			return nil, false
		}
	}
	return p.b[start:p.i], true
}

func (p *jsonScan) digits() int {
	n := 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

// int reads an integer number (what a decoder puts in an int).
func (p *jsonScan) int() (int, bool) {
	t, ok := p.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(t))
	return n, err == nil
}

// value skips any JSON value, checking it is one.
func (p *jsonScan) value() bool {
	return p.valueDepth(0)
}

// maxScanDepth bounds the nesting value skips.
const maxScanDepth = 64

func (p *jsonScan) valueDepth(depth int) bool {
	if depth > maxScanDepth || p.i >= len(p.b) {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '"':
		_, _, ok := p.str()
		return ok
	case c == '{':
		p.i++
		p.ws()
		if p.eat('}') {
			return true
		}
		for {
			p.ws()
			if _, _, ok := p.str(); !ok {
				return false
			}
			p.ws()
			if !p.eat(':') {
				return false
			}
			p.ws()
			if !p.valueDepth(depth + 1) {
				return false
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			return p.eat('}')
		}
	case c == '[':
		p.i++
		p.ws()
		if p.eat(']') {
			return true
		}
		for {
			p.ws()
			if !p.valueDepth(depth + 1) {
				return false
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			return p.eat(']')
		}
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	default:
		_, ok := p.number()
		return ok
	}
}
