package bind

import (
	"reflect"
	"unsafe"
)

// The fast path of Bind (issue 34: binding was a third of a sold-out
// refusal's handler). A drop's bodies are small, flat and plain: an order
// is an object of ASCII strings and one array of objects with a small
// integer. fastBind decodes such a body in one pass straight into the
// target, with the same rule checks as the general path (checkString,
// the item and number bounds), and gives up, leaving dst untouched as far
// as anyone can tell (the general path starts again from zero values), at
// the first thing it does not handle or that is not valid:
//
//   - a value other than an object, array, plain string, integer
//     written without fraction or exponent, true or false (null,
//     floats, Unmarshaler and time types, maps, pointers, interfaces);
//   - a string with an escape, a control byte or any byte outside
//     printable ASCII (the general path checks UTF-8 and decodes escapes);
//   - a member name it does not know, a member given twice, a required
//     member missing, a rule broken, nesting past maxJSONDepth, malformed
//     JSON, an empty body.
//
// So it takes only bodies that the general path accepts, and for those it
// stores the same values (TestFastBindMatchesGeneral, FuzzFastBind); every
// refusal, with its field details, is the general path's.

// fastBind decodes body into v (the addressable target) by plan p and
// reports whether it did; false means "use the general path".
func fastBind(body []byte, v reflect.Value, p *plan) bool {
	if p.kind != pStruct && p.kind != pSlice {
		return false
	}
	f := fastDecoder{in: body}
	f.ws()
	if f.pos >= len(f.in) {
		return false // empty: the general path's rules
	}
	if !f.value(v, p, nil, 0) {
		return false
	}
	f.ws()
	return f.pos == len(f.in)
}

type fastDecoder struct {
	in  []byte
	pos int
}

// next reads what follows a member or an element: a comma (more come),
// close (the object or array ends) or anything else (not plain: false).
func (f *fastDecoder) next(close byte) (more, ok bool) {
	f.ws()
	if f.pos >= len(f.in) {
		return false, false
	}
	switch f.in[f.pos] {
	case ',':
		f.pos++
		return true, true
	case close:
		f.pos++
		return false, true
	}
	return false, false
}

func (f *fastDecoder) ws() {
	for f.pos < len(f.in) {
		switch f.in[f.pos] {
		case ' ', '\t', '\n', '\r':
			f.pos++
		default:
			return
		}
	}
}

// value decodes the value at pos into v by plan p; r is the rules of the
// field it is (nil for an array element or the body).
func (f *fastDecoder) value(v reflect.Value, p *plan, r *Rules, depth int) bool {
	if depth > maxJSONDepth || f.pos >= len(f.in) {
		return false
	}
	switch p.kind {
	case pString:
		b, ok := f.plainString()
		if !ok {
			return false
		}
		str := unsafeString(b) // valid while the body is; stored as a copy
		if r != nil {
			if len(r.Enum) > 0 {
				// The rule's own string, as the general path stores it.
				e, ok := enumOf(r.Enum, b)
				if !ok {
					return false
				}
				str = e
			}
			var ps problems
			if checkString(str, r, &ps); len(ps.details) > 0 {
				return false
			}
			if len(r.Enum) > 0 {
				v.SetString(str)
				return true
			}
		}
		v.SetString(string(b))
		return true
	case pInt:
		i, ok := f.integer()
		if !ok {
			return false
		}
		if p.bits < 64 && (i < -(1<<(p.bits-1)) || i >= 1<<(p.bits-1)) {
			return false
		}
		if r != nil {
			x := float64(i)
			if r.Min != nil && x < *r.Min || r.Max != nil && x > *r.Max {
				return false
			}
		}
		v.SetInt(i)
		return true
	case pBool:
		switch {
		case f.lit("true"):
			v.SetBool(true)
		case f.lit("false"):
			v.SetBool(false)
		default:
			return false
		}
		return true
	case pStruct:
		return f.object(v, p, depth)
	case pSlice:
		return f.array(v, p, r, depth)
	}
	return false
}

func (f *fastDecoder) lit(s string) bool {
	if len(f.in)-f.pos >= len(s) && string(f.in[f.pos:f.pos+len(s)]) == s {
		f.pos += len(s)
		return true
	}
	return false
}

// plainString reads a string literal of printable ASCII without escapes
// and returns its bytes (a slice of the body).
func (f *fastDecoder) plainString() ([]byte, bool) {
	if f.in[f.pos] != '"' {
		return nil, false
	}
	start := f.pos + 1
	for i := start; i < len(f.in); i++ {
		switch c := f.in[i]; {
		case c == '"':
			f.pos = i + 1
			return f.in[start:i], true
		case c == '\\' || c < 0x20 || c > 0x7e:
			return nil, false
		}
	}
	return nil, false
}

// integer reads -?(0|[1-9][0-9]*) of at most 18 digits, not followed by a
// fraction or an exponent.
func (f *fastDecoder) integer() (int64, bool) {
	neg := false
	if f.in[f.pos] == '-' {
		neg = true
		f.pos++
	}
	start := f.pos
	var n int64
	for f.pos < len(f.in) && f.in[f.pos] >= '0' && f.in[f.pos] <= '9' {
		n = n*10 + int64(f.in[f.pos]-'0')
		f.pos++
	}
	d := f.pos - start
	if d == 0 || d > 18 || (d > 1 && f.in[start] == '0') {
		return 0, false
	}
	if f.pos < len(f.in) {
		if c := f.in[f.pos]; c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	return n, true
}

func (f *fastDecoder) object(v reflect.Value, p *plan, depth int) bool {
	if f.in[f.pos] != '{' {
		return false
	}
	f.pos++
	var seenBuf [32]bool
	if len(p.fields) > len(seenBuf) {
		return false
	}
	seen := seenBuf[:len(p.fields)]
	f.ws()
	if f.pos < len(f.in) && f.in[f.pos] == '}' {
		f.pos++
	} else {
		for {
			f.ws()
			if f.pos >= len(f.in) {
				return false
			}
			name, ok := f.plainString()
			if !ok {
				return false
			}
			fi, ok := p.field(name)
			if !ok || seen[fi] {
				return false // unknown, or given twice
			}
			seen[fi] = true
			f.ws()
			if f.pos >= len(f.in) || f.in[f.pos] != ':' {
				return false
			}
			f.pos++
			f.ws()
			fp := &p.fields[fi]
			if !f.value(fieldOf(v, fp.index), fp.plan, &fp.rules, depth+1) {
				return false
			}
			more, ok := f.next('}')
			if !ok {
				return false
			}
			if more {
				continue
			}
			break
		}
	}
	for i := range p.fields {
		if !seen[i] && p.fields[i].rules.Required {
			return false
		}
	}
	return true
}

// fieldOf is v.FieldByIndex for the usual one-step index without its
// bounds bookkeeping.
func fieldOf(v reflect.Value, index []int) reflect.Value {
	if len(index) == 1 {
		return v.Field(index[0])
	}
	return v.FieldByIndex(index)
}

// fastArrayCap is the capacity an array starts with: a drop's order has
// one item.
const fastArrayCap = 1

// array decodes into the slice v in place (Grow and SetLen on the field
// itself: no boxed slice header per array or per element).
func (f *fastDecoder) array(v reflect.Value, p *plan, r *Rules, depth int) bool {
	if f.in[f.pos] != '[' {
		return false
	}
	f.pos++
	maxItems := -1
	if r != nil && r.MaxItems != nil {
		maxItems = *r.MaxItems
	}
	v.SetZero()
	v.Grow(fastArrayCap)
	n := 0
	f.ws()
	if f.pos < len(f.in) && f.in[f.pos] == ']' {
		f.pos++
	} else {
		for ; ; n++ {
			if n == maxItems {
				return false
			}
			if n == v.Cap() {
				v.Grow(n)
			}
			v.SetLen(n + 1)
			f.ws()
			if !f.value(v.Index(n), p.elem, nil, depth+1) {
				return false
			}
			more, ok := f.next(']')
			if !ok {
				return false
			}
			if more {
				continue
			}
			n++
			break
		}
	}
	if r != nil && r.MinItems != nil && n < *r.MinItems {
		return false
	}
	v.SetLen(n)
	return true
}

func enumOf(enum []string, s []byte) (string, bool) {
	for _, e := range enum {
		if e == string(s) {
			return e, true
		}
	}
	return "", false
}

// unsafeString views b as a string without a copy, for the rule checks.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
