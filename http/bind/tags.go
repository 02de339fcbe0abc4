package bind

import (
	"reflect"
	"strconv"
	"strings"
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
