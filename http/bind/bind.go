package bind

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // validTimezone answers the same on every host
	"unicode/utf16"
	"unicode/utf8"

	"ticketd/event"
)

// maxDetails bounds the field problems reported for one request.
const maxDetails = 50

// Binder decodes request bodies and query strings strictly into Go values,
// reporting every field problem at once. Per-type plans are built once and
// cached, so the hot path does no tag parsing.
type Binder struct {
	parsers sync.Pool // *jsonParser, whose stack and arena are reused
	plans   sync.Map  // reflect.Type -> *plan of a JSON body
	qplans  sync.Map  // reflect.Type -> *plan of a query struct
	mu      sync.Mutex
}

type planKind uint8

const (
	pString planKind = iota + 1
	pInt
	pUint
	pFloat
	pBool
	pStruct
	pSlice
	pPtr
	pUnmarshaler // the type's own UnmarshalJSON decides
	pTime
	pAny   // interface{} and map[string]any: built straight from the tree
	pOther // other maps, interfaces, arrays: decoded by encoding/json
)

// plan says how to decode one Go type.
type plan struct {
	kind   planKind
	typ    reflect.Type
	bits   int
	elem   *plan
	fields []fieldPlan
	byName map[string]int
}

type fieldPlan struct {
	name  string // wire name (json tag, or query tag on query structs)
	index []int
	rules Rules
	plan  *plan
	def   int64 // query: value of an absent integer parameter (limit: 50)
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	timeType        = reflect.TypeFor[time.Time]()
)

func (b *Binder) planFor(t reflect.Type) *plan { return b.cached(&b.plans, t, "json") }

func (b *Binder) cached(m *sync.Map, t reflect.Type, tagKey string) *plan {
	if p, ok := m.Load(t); ok {
		return p.(*plan)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := m.Load(t); ok {
		return p.(*plan)
	}
	p := buildPlan(t, map[reflect.Type]*plan{}, tagKey)
	m.Store(t, p)
	return p
}

// buildPlan builds the plan of t; seen breaks cycles of recursive types.
// tagKey is "json" for bodies and "query" for query structs.
func buildPlan(t reflect.Type, seen map[reflect.Type]*plan, tagKey string) *plan {
	if p, ok := seen[t]; ok {
		return p
	}
	p := &plan{typ: t}
	seen[t] = p
	switch {
	case t == timeType:
		p.kind = pTime
		return p
	case reflect.PointerTo(t).Implements(unmarshalerType) && t.Kind() != reflect.Pointer:
		p.kind = pUnmarshaler
		return p
	}
	switch t.Kind() {
	case reflect.String:
		p.kind = pString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.kind, p.bits = pInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		p.kind, p.bits = pUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		p.kind, p.bits = pFloat, t.Bits()
	case reflect.Bool:
		p.kind = pBool
	case reflect.Slice:
		p.kind = pSlice
		p.elem = buildPlan(t.Elem(), seen, tagKey)
	case reflect.Pointer:
		p.kind = pPtr
		p.elem = buildPlan(t.Elem(), seen, tagKey)
	case reflect.Interface:
		p.kind = pOther
		if t.NumMethod() == 0 {
			p.kind = pAny
		}
	case reflect.Map:
		p.kind = pOther
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Interface && t.Elem().NumMethod() == 0 {
			p.kind = pAny
		}
	case reflect.Struct:
		p.kind = pStruct
		p.byName = map[string]int{}
		addFields(p, t, nil, seen, tagKey)
	default:
		p.kind = pOther
	}
	return p
}

// addFields adds t's wire fields to p, flattening untagged embedded structs
// as encoding/json does.
func addFields(p *plan, t reflect.Type, index []int, seen map[reflect.Type]*plan, tagKey string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		idx := append(slices.Clip(index), i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get(tagKey) == "" {
			addFields(p, f.Type, idx, seen, tagKey)
			continue
		}
		var name string
		if tagKey == "query" {
			tag := f.Tag.Get("query")
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			name = tag
		} else {
			n, ok := JSONName(f)
			if !ok {
				continue
			}
			name = n
		}
		if _, dup := p.byName[name]; dup {
			panic("bind: duplicate wire name " + strconv.Quote(name) + " in " + t.String())
		}
		p.byName[name] = len(p.fields)
		fp := fieldPlan{
			name:  name,
			index: idx,
			rules: ParseRules(f.Tag.Get("v")),
			plan:  buildPlan(f.Type, seen, tagKey),
		}
		if tagKey == "query" {
			listRules(&fp)
		}
		p.fields = append(p.fields, fp)
	}
}

// problems collects field problems, bounded by maxDetails.
type problems struct {
	details []event.Detail
	more    int
	path    []pathElem
}

// add records a problem of the value at the current path.
func (ps *problems) add(reason string) {
	if len(ps.details) >= maxDetails {
		ps.more++
		return
	}
	ps.addField(ps.pathString(), reason)
}

// addAt records a problem of member name of the current value.
func (ps *problems) addAt(name, reason string) {
	ps.push(name)
	ps.add(reason)
	ps.pop()
}

func (ps *problems) addField(field, reason string) {
	if len(ps.details) >= maxDetails {
		ps.more++
		return
	}
	ps.details = append(ps.details, event.Detail{Field: field, Reason: reason})
}

func (ps *problems) err() error {
	if len(ps.details) == 0 {
		return nil
	}
	slices.SortStableFunc(ps.details, func(a, b event.Detail) int { return strings.Compare(a.Field, b.Field) })
	d := ps.details[0]
	msg := d.Reason
	if d.Field != "" {
		msg = d.Field + ": " + d.Reason
	}
	if n := len(ps.details) - 1 + ps.more; n > 0 {
		msg += " (and " + strconv.Itoa(n) + " more)"
	}
	return &event.Error{Code: event.InvalidArgument, Message: msg, Details: ps.details}
}

func malformed(reason string) error {
	return &event.Error{
		Code:    event.InvalidArgument,
		Message: "malformed JSON: " + reason,
		Details: []event.Detail{{Field: "", Reason: "malformed JSON: " + reason}},
	}
}

// Bind decodes body into dst (a non-nil pointer). An empty body counts as
// {} for struct targets, so POST actions without required fields accept it.
func (b *Binder) Bind(body []byte, dst any) error { return b.BindPlan(body, dst, nil) }

// Plan is the prepared plan of a body type (Prepare), which BindPlan uses
// without looking it up.
type Plan struct{ p *plan }

// BindPlan is Bind with the plan Prepare returned for dst's type; a plan
// of another type (or nil) is ignored and dst's own is looked up.
func (b *Binder) BindPlan(body []byte, dst any, pl *Plan) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic("bind: Bind needs a non-nil pointer, got " + reflect.TypeOf(dst).String())
	}
	var p *plan
	if t := v.Elem().Type(); pl != nil && pl.p.typ == t {
		p = pl.p
	} else {
		p = b.planFor(t)
	}
	if fastBind(body, v.Elem(), p) {
		return nil // a plain valid body (fast.go)
	}
	return b.bindGeneral(body, v, p)
}

// bindGeneral is BindPlan without its fast path: parse the body into a
// tree, then walk it against the plan, collecting every problem.
func (b *Binder) bindGeneral(body []byte, v reflect.Value, p *plan) error {
	var root jnode
	var ps problems
	if len(bytes.TrimSpace(body)) == 0 {
		switch p.kind {
		case pStruct:
			root = jnode{kind: jObj, raw: []byte("{}")}
		case pSlice:
			return malformed("the body must be a JSON array")
		default:
			return malformed("empty body")
		}
	} else {
		jp, _ := b.parsers.Get().(*jsonParser)
		if jp == nil {
			jp = new(jsonParser)
		}
		// The path stack is the parser's too, so walking a body allocates
		// no path.
		ps.path = jp.path[:0]
		defer func() {
			jp.path = ps.path[:0]
			b.putParser(jp)
		}()
		var msg string
		if root, msg = jp.parse(body); msg != "" {
			return malformed(msg)
		}
	}
	if root.kind == jNull && !nullOK(p) {
		return malformed("the body must not be null")
	}
	decodeValue(&root, v.Elem(), p, &ps)
	return ps.err()
}

// putParser returns a parser to the pool once its nodes are dead; a parser
// grown by a huge body is dropped so the pool stays small.
func (b *Binder) putParser(p *jsonParser) {
	if cap(p.arena) > 4096 || cap(p.stack) > 4096 || cap(p.path) > maxJSONDepth+8 {
		return
	}
	clear(p.arena)
	p.arena = p.arena[:0]
	clear(p.stack[:cap(p.stack)]) // slots past len still point into the body
	p.stack = p.stack[:0]
	p.in = nil
	b.parsers.Put(p)
}

// nullOK reports whether JSON null has a meaning for values of plan p.
func nullOK(p *plan) bool {
	return p.kind == pPtr || p.kind == pUnmarshaler || p.kind == pOther || p.kind == pAny
}

// nodeToAny converts a tree to the values encoding/json would produce for
// an interface{} (numbers as float64, and out of range is a problem).
func nodeToAny(n *jnode, ps *problems) any {
	switch n.kind {
	case jBool:
		return n.raw[0] == 't'
	case jNum:
		f, err := strconv.ParseFloat(string(n.raw), 64)
		if err != nil {
			ps.add("must be a number in range")
		}
		return f
	case jStr:
		return n.text()
	case jArr:
		out := make([]any, len(n.kids))
		for i := range n.kids {
			ps.pushIdx(i)
			out[i] = nodeToAny(&n.kids[i], ps)
			ps.pop()
		}
		return out
	case jObj:
		out := make(map[string]any, len(n.kids))
		for i := range n.kids {
			k := string(n.kids[i].key)
			ps.push(k)
			out[k] = nodeToAny(&n.kids[i], ps)
			ps.pop()
		}
		return out
	}
	return nil
}

// pathElem is one step of the position of a value in the body. The
// problems type keeps them as a stack and renders a path
// ("items[0].quantity") only when a problem is found, so a valid body
// builds no path strings.
type pathElem struct {
	name  string
	idx   int
	isIdx bool
}

func (ps *problems) push(name string) { ps.path = append(ps.path, pathElem{name: name}) }
func (ps *problems) pushIdx(i int)    { ps.path = append(ps.path, pathElem{idx: i, isIdx: true}) }
func (ps *problems) pop()             { ps.path = ps.path[:len(ps.path)-1] }

func (ps *problems) pathString() string {
	var buf [64]byte
	b := buf[:0]
	for _, e := range ps.path {
		if e.isIdx {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(e.idx), 10)
			b = append(b, ']')
			continue
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		b = append(b, e.name...)
	}
	return string(b)
}

// decodeValue stores n into v (settable) by plan p, adding problems under
// path. It never panics on input: every mismatch becomes a problem.
func decodeValue(n *jnode, v reflect.Value, p *plan, ps *problems) {
	if n.kind == jNull {
		switch p.kind {
		case pUnmarshaler:
			callUnmarshal(n, v, ps)
		default:
			v.SetZero()
		}
		return
	}
	switch p.kind {
	case pString:
		if n.kind != jStr {
			ps.add("must be a string")
			return
		}
		v.SetString(n.text())
	case pBool:
		if n.kind != jBool {
			ps.add("must be a boolean")
			return
		}
		v.SetBool(n.raw[0] == 't')
	case pInt:
		i, ok := jsonInt(n, p.bits)
		if !ok {
			ps.add("must be an integer")
			return
		}
		v.SetInt(i)
	case pUint:
		i, ok := jsonInt(n, 64)
		if !ok || i < 0 || (p.bits < 64 && i >= 1<<p.bits) {
			ps.add("must be a non-negative integer")
			return
		}
		v.SetUint(uint64(i))
	case pFloat:
		if n.kind != jNum {
			ps.add("must be a number")
			return
		}
		f, err := strconv.ParseFloat(string(n.raw), p.bits)
		if err != nil {
			ps.add("must be a number in range")
			return
		}
		v.SetFloat(f)
	case pTime:
		if n.kind != jStr {
			ps.add("must be an RFC 3339 date-time string")
			return
		}
		t, err := time.Parse(time.RFC3339Nano, n.text())
		if err != nil || len(n.text()) > MaxDateTimeLen {
			ps.add("must be an RFC 3339 date-time")
			return
		}
		v.Set(reflect.ValueOf(t))
	case pUnmarshaler:
		callUnmarshal(n, v, ps)
	case pPtr:
		e := reflect.New(p.elem.typ)
		decodeValue(n, e.Elem(), p.elem, ps)
		v.Set(e)
	case pSlice:
		if n.kind != jArr {
			ps.add("must be an array")
			return
		}
		s := reflect.MakeSlice(p.typ, len(n.kids), len(n.kids))
		for i := range n.kids {
			ps.pushIdx(i)
			if n.kids[i].kind == jNull && !nullOK(p.elem) {
				ps.add("must not be null")
			} else {
				decodeValue(&n.kids[i], s.Index(i), p.elem, ps)
			}
			ps.pop()
		}
		v.Set(s)
	case pStruct:
		decodeStruct(n, v, p, ps)
	case pAny:
		a := nodeToAny(n, ps)
		if p.typ.Kind() == reflect.Map {
			m, ok := a.(map[string]any)
			if !ok {
				ps.add("must be an object")
				return
			}
			v.Set(reflect.ValueOf(m).Convert(p.typ))
			return
		}
		if a == nil {
			v.SetZero()
			return
		}
		v.Set(reflect.ValueOf(a))
	default:
		if err := json.Unmarshal(n.raw, v.Addr().Interface()); err != nil {
			ps.add("has the wrong type")
		}
	}
}

func decodeStruct(n *jnode, v reflect.Value, p *plan, ps *problems) {
	if n.kind != jObj {
		ps.add("must be an object")
		return
	}
	var seenBuf [32]bool
	seen := seenBuf[:0]
	if len(p.fields) <= len(seenBuf) {
		seen = seenBuf[:len(p.fields)]
	} else {
		seen = make([]bool, len(p.fields))
	}
	for i := range n.kids {
		kid := &n.kids[i]
		fi, ok := p.field(kid.key)
		if !ok {
			ps.addAt(string(kid.key), "unknown field")
			continue
		}
		seen[fi] = true
		f := &p.fields[fi]
		ps.push(f.name)
		decodeField(kid, v, f, ps)
		ps.pop()
	}
	for i := range p.fields {
		if !seen[i] && p.fields[i].rules.Required {
			ps.addAt(p.fields[i].name, "is required")
		}
	}
}

// field finds the field of wire name name: a scan for the small structs
// of request bodies (no hashing), the map for larger ones.
func (p *plan) field(name []byte) (int, bool) {
	if len(p.fields) <= 12 {
		for i := range p.fields {
			if p.fields[i].name == string(name) {
				return i, true
			}
		}
		return 0, false
	}
	i, ok := p.byName[string(name)]
	return i, ok
}

// decodeField decodes one member into its field of struct v and checks the
// field's rules; the member's name is on the path already.
func decodeField(kid *jnode, v reflect.Value, f *fieldPlan, ps *problems) {
	if kid.kind == jNull && !f.rules.Nullable {
		if f.rules.Required {
			ps.add("is required")
		} else {
			ps.add("must not be null")
		}
		return
	}
	if !checkCollection(kid, &f.rules, ps) {
		return
	}
	if kid.kind == jStr && kid.str == "" {
		// An allowed value of an enum is the rule's own string: no copy.
		for _, e := range f.rules.Enum {
			if string(kid.sb) == e {
				kid.str = e
				break
			}
		}
	}
	before := len(ps.details) + ps.more
	decodeValue(kid, v.FieldByIndex(f.index), f.plan, ps)
	if len(ps.details)+ps.more == before {
		checkScalar(kid, &f.rules, ps)
	}
}

func callUnmarshal(n *jnode, v reflect.Value, ps *problems) {
	u := v.Addr().Interface().(json.Unmarshaler)
	if err := u.UnmarshalJSON(n.raw); err != nil {
		ps.add(unmarshalReason(err))
	}
}

// unmarshalReason turns a type's UnmarshalJSON error into a detail reason;
// the core's errors are already phrased for clients, encoding/json's carry
// a "json: " prefix that says nothing to them.
func unmarshalReason(err error) string {
	var ee *event.Error
	if e, ok := err.(*event.Error); ok {
		ee = e
		if len(ee.Details) > 0 {
			return ee.Details[0].Reason
		}
		return ee.Message
	}
	s := strings.TrimPrefix(err.Error(), "json: ")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// jsonInt parses an integer; 1.0 and 1e2 count as integers, 1.5 does not.
func jsonInt(n *jnode, bits int) (int64, bool) {
	if n.kind != jNum {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(n.raw), 10, bits); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(string(n.raw), 64)
	limit := math.Ldexp(1, bits-1) // 2^(bits-1)
	if err != nil || f != math.Trunc(f) || f < -limit || f >= limit {
		return 0, false
	}
	return int64(f), true
}

// checkCollection applies item-count rules before the items are decoded,
// so an oversized array is reported once instead of item by item.
func checkCollection(n *jnode, r *Rules, ps *problems) bool {
	if n.kind != jArr {
		return true
	}
	if r.MaxItems != nil && len(n.kids) > *r.MaxItems {
		ps.add("must have at most " + strconv.Itoa(*r.MaxItems) + " items")
		return false
	}
	if r.MinItems != nil && len(n.kids) < *r.MinItems {
		ps.add("must have at least " + strconv.Itoa(*r.MinItems) + " items")
		return false
	}
	return true
}

// checkScalar applies the value rules of a decoded field; it looks at the
// JSON value, so it also covers Unmarshaler types such as money amounts.
func checkScalar(n *jnode, r *Rules, ps *problems) {
	switch n.kind {
	case jNum:
		if r.Min == nil && r.Max == nil {
			return
		}
		f, err := strconv.ParseFloat(string(n.raw), 64)
		if err != nil {
			return
		}
		if r.Min != nil && f < *r.Min {
			ps.add("must be at least " + fmtNum(*r.Min))
		} else if r.Max != nil && f > *r.Max {
			ps.add("must be at most " + fmtNum(*r.Max))
		}
	case jStr:
		checkString(n.text(), r, ps)
	}
}

func checkString(s string, r *Rules, ps *problems) {
	if r.MinLen != nil || r.MaxLen != nil {
		l := utf8.RuneCountInString(s)
		if r.MinLen != nil && l < *r.MinLen {
			if *r.MinLen == 1 {
				ps.add("must not be empty")
			} else {
				ps.add("must be at least " + strconv.Itoa(*r.MinLen) + " characters")
			}
			return
		}
		if r.MaxLen != nil && l > *r.MaxLen {
			ps.add("must be at most " + strconv.Itoa(*r.MaxLen) + " characters")
			return
		}
	}
	if len(r.Enum) > 0 && !slices.Contains(r.Enum, s) {
		ps.add("must be one of: " + strings.Join(r.Enum, ", "))
		return
	}
	if r.Format != "" && !validFormat(r.Format, s) {
		ps.add(formatReason(r.Format))
		return
	}
	if r.Pattern != "" && !Patterns[r.Pattern].Match(s) {
		ps.add(Patterns[r.Pattern].Reason)
	}
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func validFormat(format, s string) bool {
	switch format {
	case "email":
		// Refused with surrounding spaces, as the document's format says:
		// a validating client and the server must agree on what passes.
		return validEmail(s)
	case "date-time":
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil && len(s) <= MaxDateTimeLen
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	case "uri":
		u, err := url.Parse(s)
		return err == nil && u.Scheme != "" && u.Host != ""
	case "timezone":
		return validTimezone(strings.TrimSpace(s))
	}
	return true
}

func formatReason(format string) string {
	switch format {
	case "email":
		return "must be an email address"
	case "date-time":
		return "must be an RFC 3339 date-time"
	case "date":
		return "must be a date (YYYY-MM-DD)"
	case "uri":
		return "must be an absolute URI"
	case "timezone":
		return "must be an IANA time zone name (e.g. Europe/Berlin)"
	}
	return "must be a valid " + format
}

func validEmail(s string) bool { return event.ValidEmail(s) }

// validTimezone reports whether s names a zone of the IANA database. The
// check lives here, at the edge, and not in package event: loading a zone
// reads the system's zoneinfo files, and the core does no I/O. Every way
// an event's timezone is set (create, update) comes through this binder,
// and the core keeps what it was given, so a log written before the check
// still replays. The database embedded by time/tzdata (imported above)
// answers when the host has none, so the verdict does not depend on the
// host. LoadLocation reads "" as UTC and "Local" as the host's zone;
// neither is a zone name.
func validTimezone(s string) bool {
	if s == "" || s == "Local" {
		return false
	}
	_, err := time.LoadLocation(s)
	return err == nil
}

// checkQueryPlan refuses query structs the query binder cannot fill, so a
// bad table fails at start rather than on a request.
func checkQueryPlan(p *plan) error {
	if p.kind != pStruct {
		return fmt.Errorf("query type %s is not a struct", p.typ)
	}
	for _, f := range p.fields {
		fp := f.plan
		if fp.kind == pPtr {
			fp = fp.elem
		}
		switch fp.kind {
		case pString, pInt, pBool, pTime:
		default:
			return fmt.Errorf("query parameter %q has unsupported type %s", f.name, fp.typ)
		}
	}
	return nil
}

// listRules gives the pagination parameters of every list operation their
// rules even when the query struct's tags leave them out.
func listRules(f *fieldPlan) {
	f.rules = QueryParamRules(f.name, f.rules)
	if f.name == "limit" {
		f.def = DefaultPageSize
	}
}

// QueryParamRules returns the rules the binder enforces on query parameter
// name given its tag rules: limit is 1 to 100 (default 50) and cursor at
// most 512 characters unless the tag says otherwise. The OpenAPI generator
// should document the same.
func QueryParamRules(name string, r Rules) Rules {
	switch name {
	case "limit":
		if r.Min == nil {
			lo := 1.0
			r.Min = &lo
		}
		if r.Max == nil {
			hi := float64(MaxPageSize)
			r.Max = &hi
		}
	case "cursor":
		if r.MaxLen == nil {
			n := maxCursorLen
			r.MaxLen = &n
		}
	}
	return r
}

// queryDefaulter lets a query struct fill defaults of absent parameters
// (ListQuery sets limit 50) after binding.
type queryDefaulter interface{ QueryDefaults() }

// BindQuery decodes query parameters into dst, a pointer to a struct whose
// fields carry `query:"name"` tags: strings, integers, booleans, and
// pointers to those (nil when absent). Unknown parameters are ignored:
// caches and proxies add their own.
func (b *Binder) BindQuery(get func(name string) ([]byte, bool), dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		panic("bind: BindQuery needs a pointer to a struct, got " + reflect.TypeOf(dst).String())
	}
	p := b.cached(&b.qplans, v.Elem().Type(), "query")
	var ps problems
	for i := range p.fields {
		f := &p.fields[i]
		raw, ok := get(f.name)
		if !ok {
			if f.rules.Required {
				ps.addField(f.name, "is required")
			}
			if f.def != 0 {
				if fv := v.Elem().FieldByIndex(f.index); fv.Kind() == reflect.Int && fv.Int() == 0 {
					fv.SetInt(f.def)
				}
			}
			continue
		}
		fv := v.Elem().FieldByIndex(f.index)
		fp := f.plan
		if fp.kind == pPtr {
			e := reflect.New(fp.elem.typ)
			fv.Set(e)
			fv, fp = e.Elem(), fp.elem
		}
		s := string(raw)
		switch fp.kind {
		case pString:
			fv.SetString(s)
			ps.push(f.name)
			checkString(s, &f.rules, &ps)
			ps.pop()
		case pInt:
			n, err := strconv.ParseInt(s, 10, fp.bits)
			if err != nil {
				ps.addField(f.name, "must be an integer")
				continue
			}
			fv.SetInt(n)
			if f.rules.Min != nil && float64(n) < *f.rules.Min {
				ps.addField(f.name, "must be at least "+fmtNum(*f.rules.Min))
			} else if f.rules.Max != nil && float64(n) > *f.rules.Max {
				ps.addField(f.name, "must be at most "+fmtNum(*f.rules.Max))
			}
		case pBool:
			bv, err := strconv.ParseBool(s)
			if err != nil {
				ps.addField(f.name, "must be true or false")
				continue
			}
			fv.SetBool(bv)
		case pTime:
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				ps.addField(f.name, "must be an RFC 3339 date-time")
				continue
			}
			fv.Set(reflect.ValueOf(t))
		default:
			panic("bind: unsupported query field type " + fp.typ.String() + " for " + strconv.Quote(f.name))
		}
	}
	if d, ok := dst.(queryDefaulter); ok {
		d.QueryDefaults()
	}
	return ps.err()
}

// jkind is the kind of a parsed JSON value.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNum
	jStr
	jArr
	jObj
)

// jnode is one value of a parsed request body. raw is the value's exact
// bytes (handed to json.Unmarshaler fields); kids are array elements or
// object members, a member's name in its key.
type jnode struct {
	kind jkind
	// sb is the value of a string, unescaped: a slice of the body when it
	// has no escapes. str is that value as a Go string, made by text on
	// first use, so member names and unused values cost no allocation.
	sb   []byte
	str  string
	key  []byte // the member name (unescaped), for members of an object
	raw  []byte
	kids []jnode
}

// text returns the value of a string node.
func (n *jnode) text() string {
	if n.str == "" && len(n.sb) > 0 {
		n.str = string(n.sb)
	}
	return n.str
}

// maxJSONDepth bounds nesting so a hostile body cannot exhaust the stack.
const maxJSONDepth = 64

// jsonParser is a strict RFC 8259 parser: it refuses duplicate member
// names, invalid UTF-8 and trailing data, which encoding/json accepts.
// Children are gathered on a shared stack and copied into an arena when
// their parent closes, so a body costs a few allocations, not one per node.
type jsonParser struct {
	in    []byte
	pos   int
	err   string
	stack []jnode
	arena []jnode
	path  []pathElem // the binder's problems.path, kept with the parser
}

// parseJSON parses one JSON document; msg is a human reason when it fails.
func parseJSON(in []byte) (n jnode, msg string) {
	var p jsonParser
	return p.parse(in)
}

// parse parses in, reusing p's stack and arena from an earlier parse: the
// nodes of that parse must no longer be in use.
func (p *jsonParser) parse(in []byte) (n jnode, msg string) {
	p.in, p.pos, p.err = in, 0, ""
	p.ws()
	n = p.value(0)
	if p.err == "" {
		p.ws()
		if p.pos < len(p.in) {
			p.fail("unexpected data after the JSON value")
		}
	}
	return n, p.err
}

// children moves the nodes pushed since base off the stack into the arena.
func (p *jsonParser) children(base int) []jnode {
	n := len(p.stack) - base
	if n == 0 {
		return nil
	}
	if cap(p.arena)-len(p.arena) < n {
		p.arena = make([]jnode, 0, max(16, n, 2*cap(p.arena)))
	}
	out := p.arena[len(p.arena) : len(p.arena)+n : len(p.arena)+n]
	p.arena = p.arena[:len(p.arena)+n]
	copy(out, p.stack[base:])
	// The moved slots are overwritten by the next siblings; putParser
	// clears the whole stack once, rather than each object here.
	p.stack = p.stack[:base]
	return out
}

func (p *jsonParser) fail(msg string) {
	if p.err == "" {
		p.err = msg + " at offset " + strconv.Itoa(p.pos)
	}
}

func (p *jsonParser) ws() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) jnode {
	if depth > maxJSONDepth {
		p.fail("nesting too deep")
		return jnode{}
	}
	if p.pos >= len(p.in) {
		p.fail("unexpected end of input")
		return jnode{}
	}
	start := p.pos
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s := p.string()
		return jnode{kind: jStr, sb: s, raw: p.in[start:p.pos]}
	case c == 't':
		p.literal("true")
		return jnode{kind: jBool, raw: p.in[start:p.pos]}
	case c == 'f':
		p.literal("false")
		return jnode{kind: jBool, raw: p.in[start:p.pos]}
	case c == 'n':
		p.literal("null")
		return jnode{kind: jNull, raw: p.in[start:p.pos]}
	case c == '-' || (c >= '0' && c <= '9'):
		p.number()
		return jnode{kind: jNum, raw: p.in[start:p.pos]}
	default:
		p.fail("invalid character " + strconv.QuoteRune(rune(c)))
		return jnode{}
	}
}

func (p *jsonParser) literal(lit string) {
	if len(p.in)-p.pos < len(lit) || string(p.in[p.pos:p.pos+len(lit)]) != lit {
		p.fail("invalid literal")
		return
	}
	p.pos += len(lit)
}

func (p *jsonParser) digits() int {
	n := 0
	for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}

func (p *jsonParser) number() {
	if p.in[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.in) && p.in[p.pos] == '0' {
		p.pos++
	} else if p.digits() == 0 {
		p.fail("invalid number")
		return
	}
	if p.pos < len(p.in) && p.in[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			p.fail("invalid number")
			return
		}
	}
	if p.pos < len(p.in) && (p.in[p.pos] == 'e' || p.in[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.in) && (p.in[p.pos] == '+' || p.in[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			p.fail("invalid number")
		}
	}
}

// string parses a string literal at p.pos and returns its value: a slice
// of the input when it has no escapes, else a new buffer.
func (p *jsonParser) string() []byte {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		if c == '"' {
			s := p.in[start:p.pos:p.pos]
			p.pos++
			if !utf8.Valid(s) {
				p.fail("invalid UTF-8 in string")
				return nil
			}
			return s
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			p.fail("control character in string")
			return nil
		}
		p.pos++
	}
	buf := append([]byte(nil), p.in[start:p.pos]...)
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			if !utf8.Valid(buf) {
				p.fail("invalid UTF-8 in string")
				return nil
			}
			return buf
		case c < 0x20:
			p.fail("control character in string")
			return nil
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		p.pos++
		if p.pos >= len(p.in) {
			break
		}
		e := p.in[p.pos]
		p.pos++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				p.fail("invalid \\u escape")
				return nil
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if p.pos+1 < len(p.in) && p.in[p.pos] == '\\' && p.in[p.pos+1] == 'u' {
					p.pos += 2
					if r2, ok = p.hex4(); !ok {
						p.fail("invalid \\u escape")
						return nil
					}
				}
				r = utf16.DecodeRune(r, r2)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			p.fail("invalid escape in string")
			return nil
		}
	}
	p.fail("unexpected end of input in string")
	return nil
}

func (p *jsonParser) hex4() (rune, bool) {
	if len(p.in)-p.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.in[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

func (p *jsonParser) array(depth int) jnode {
	start := p.pos
	p.pos++
	n := jnode{kind: jArr}
	base := len(p.stack)
	p.ws()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		n.raw = p.in[start:p.pos]
		return n
	}
	for p.err == "" {
		p.ws()
		kid := p.value(depth + 1)
		p.stack = append(p.stack, kid)
		p.ws()
		if p.err != "" {
			break
		}
		if p.pos >= len(p.in) {
			p.fail("unexpected end of input in array")
			break
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] == ']' {
			p.pos++
			break
		}
		p.fail("expected ',' or ']' in array")
	}
	n.kids = p.children(base)
	n.raw = p.in[start:p.pos]
	return n
}

func (p *jsonParser) object(depth int) jnode {
	start := p.pos
	p.pos++
	n := jnode{kind: jObj}
	base := len(p.stack)
	var seenSet map[string]struct{} // only for large objects: keeps the duplicate check linear
	p.ws()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		n.raw = p.in[start:p.pos]
		return n
	}
	for p.err == "" {
		p.ws()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			p.fail("expected a member name in object")
			break
		}
		k := p.string()
		if p.err != "" {
			break
		}
		if p.duplicate(p.stack[base:], &seenSet, k) {
			p.fail("duplicate member " + strconv.Quote(string(k)))
			break
		}
		p.ws()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			p.fail("expected ':' after member name")
			break
		}
		p.pos++
		p.ws()
		kid := p.value(depth + 1)
		kid.key = k
		p.stack = append(p.stack, kid)
		p.ws()
		if p.err != "" {
			break
		}
		if p.pos >= len(p.in) {
			p.fail("unexpected end of input in object")
			break
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] == '}' {
			p.pos++
			break
		}
		p.fail("expected ',' or '}' in object")
	}
	n.kids = p.children(base)
	n.raw = p.in[start:p.pos]
	return n
}

// duplicate reports whether k is already a member name among members,
// switching from a scan to a set once an object is large.
func (p *jsonParser) duplicate(members []jnode, set *map[string]struct{}, k []byte) bool {
	if len(members) < 16 {
		for i := range members {
			if string(members[i].key) == string(k) {
				return true
			}
		}
		return false
	}
	if *set == nil {
		*set = make(map[string]struct{}, 2*len(members))
		for i := range members {
			(*set)[string(members[i].key)] = struct{}{}
		}
	}
	if _, ok := (*set)[string(k)]; ok {
		return true
	}
	(*set)[string(k)] = struct{}{}
	return false
}

// reflectType returns the type of a Route's Body or Query value.
func reflectType(v any) reflect.Type { return reflect.TypeOf(v) }

// Prepare builds and caches the plan of body's type (a route's Body value),
// so a malformed tag fails at start rather than on a first request.
func (b *Binder) Prepare(body any) *Plan { return &Plan{b.planFor(reflectType(body))} }

// PrepareQuery builds and caches the plan of a query struct (a route's
// Query value) and checks that the binder supports each of its fields.
func (b *Binder) PrepareQuery(query any) error {
	return checkQueryPlan(b.cached(&b.qplans, reflectType(query), "query"))
}
