package bind

import (
	"reflect"
	"strconv"
	"strings"
	"unicode"
)

// Rules is the parsed form of a struct field's `v` tag (see route.go),
// shared by the request binder and the OpenAPI generator so that what is
// documented is exactly what is enforced.
type Rules struct {
	Required bool
	Nullable bool
	Min, Max *float64 // numeric bounds
	MinLen   *int     // string length bounds, in characters
	MaxLen   *int
	MaxItems *int
	MinItems *int
	Enum     []string
	Format   string // email, date-time, uri, date, timezone
	Pattern  string // the name of one of Patterns
}

// Pattern is a rule on a string's characters that a document can say as
// an ECMA-262 regular expression (OpenAPI's pattern): ECMA is that
// expression, Match the same rule in Go, Reason the detail of a value it
// refuses. A tag names one (pattern=NAME) because a regular expression's
// commas and braces do not fit in a v tag.
type Pattern struct {
	ECMA   string
	Match  func(string) bool
	Reason string
}

// Patterns are the named patterns of the v tags.
var Patterns = map[string]Pattern{
	// nospace: no whitespace at all. The characters are listed rather
	// than said with \s, which means Unicode's spaces in ECMA-262 but
	// only ASCII ones in Go's regexp (which validators written in Go use):
	// the list is Go's unicode.IsSpace and ECMA's \s together, so every
	// validator and the binder agree on every string.
	"nospace": {ECMA: `^[^\t\n\v\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000\uFEFF]*$`, Match: NoSpace, Reason: "must not contain spaces"},
}

// NoSpace reports whether s holds no whitespace (see Patterns["nospace"]).
func NoSpace(s string) bool {
	for _, r := range s {
		if unicode.IsSpace(r) || r == '\ufeff' {
			return false
		}
	}
	return true
}

// ParseRules parses a `v` tag. Unknown rules panic: tags are code, and a
// typo must fail the first test that touches the type.
func ParseRules(tag string) Rules {
	var r Rules
	if tag == "" {
		return r
	}
	for _, part := range strings.Split(tag, ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch name {
		case "required":
			r.Required = true
		case "nullable":
			r.Nullable = true
		case "min":
			f := mustFloat(val, tag)
			r.Min = &f
		case "max":
			f := mustFloat(val, tag)
			r.Max = &f
		case "minLen":
			n := mustInt(val, tag)
			r.MinLen = &n
		case "maxLen":
			n := mustInt(val, tag)
			r.MaxLen = &n
		case "minItems":
			n := mustInt(val, tag)
			r.MinItems = &n
		case "maxItems":
			n := mustInt(val, tag)
			r.MaxItems = &n
		case "enum":
			r.Enum = strings.Split(val, "|")
		case "format":
			r.Format = val
		case "pattern":
			if _, ok := Patterns[val]; !ok {
				panic("bind: unknown pattern " + strconv.Quote(val) + " in " + strconv.Quote(tag))
			}
			r.Pattern = val
		default:
			panic("bind: unknown v tag rule " + strconv.Quote(name) + " in " + strconv.Quote(tag))
		}
	}
	return r
}

// JSONName returns the wire name of a struct field and whether it is on the
// wire at all (json:"-" fields, e.g. path ids, are not).
func JSONName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, true
}

func mustFloat(s, tag string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic("bind: bad number in v tag " + strconv.Quote(tag))
	}
	return f
}

func mustInt(s, tag string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic("bind: bad integer in v tag " + strconv.Quote(tag))
	}
	return n
}

// MaxDateTimeLen is the longest RFC 3339 date-time accepted, in bytes:
// "2006-01-02T15:04:05.999999999-07:00" (nanoseconds and an offset). The
// OpenAPI documents say it as maxLength.
const MaxDateTimeLen = 35
