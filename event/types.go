package event

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Opt is an optional PATCH field that tells absent, null and a value apart:
// absent leaves the record unchanged, null clears it (capacity: null means
// unlimited), a value sets it. encoding/json calls UnmarshalJSON only for
// present members, so the zero Opt means absent.
type Opt[T any] struct {
	// Set reports that the member was present in the request.
	Set bool
	// Null reports that the member was present and JSON null.
	Null bool
	// V is the value when Set and not Null.
	V T
}

// Some returns an Opt holding v.
func Some[T any](v T) Opt[T] { return Opt[T]{Set: true, V: v} }

// Null returns an Opt that is present and null.
func Null[T any]() Opt[T] { return Opt[T]{Set: true, Null: true} }

// UnmarshalJSON records presence; JSON null sets Null.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Null = true
		var zero T
		o.V = zero
		return nil
	}
	o.Null = false
	return json.Unmarshal(b, &o.V)
}

// MarshalJSON writes null for an absent or null Opt, else the value.
func (o Opt[T]) MarshalJSON() ([]byte, error) {
	if !o.Set || o.Null {
		return []byte("null"), nil
	}
	return json.Marshal(o.V)
}

// IsZero reports absence, so `omitzero` drops an absent Opt on output.
func (o Opt[T]) IsZero() bool { return !o.Set }

// OptionalElem returns a zero T; the OpenAPI generator documents an Opt[T]
// member as T.
func (Opt[T]) OptionalElem() any {
	var zero T
	return zero
}

// Money is an amount in minor units of the event's currency (cents). Its
// JSON form is a decimal number in major units with at most 2 decimals.
type Money int64

// moneyMax bounds amounts far below int64 overflow: 10^13 major units.
const moneyMax = Money(1_000_000_000_000_000)

// MarshalJSON writes 49.99 for 4999 and 50 for 5000.
func (m Money) MarshalJSON() ([]byte, error) { return m.AppendJSON(nil), nil }

// String formats m in major units.
func (m Money) String() string { return string(m.AppendJSON(nil)) }

// AppendJSON appends m in major units, as MarshalJSON writes it: the
// response encoders of the hot answers write it without a []byte per
// amount.
func (m Money) AppendJSON(b []byte) []byte {
	u := uint64(m)
	if m < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/100, 10)
	if c := u % 100; c != 0 {
		b = append(b, '.', byte('0'+c/10))
		if c%10 != 0 {
			b = append(b, byte('0'+c%10))
		}
	}
	return b
}

// UnmarshalJSON accepts a non-negative JSON number with at most 2 decimals.
func (m *Money) UnmarshalJSON(b []byte) error {
	v, err := ParseMoney(string(bytes.TrimSpace(b)))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ParseMoney parses an amount in major units, any JSON number ("49.99",
// "1e2", "4999e-2", "10.000") whose value has at most 2 decimals, into
// minor units, exactly (no floating point). Negative amounts, more than 2
// decimals of value and amounts above 10^13 are rejected.
func ParseMoney(s string) (Money, error) {
	if s == "" || s == "null" {
		return 0, errors.New("amount must be a number")
	}
	neg := strings.HasPrefix(s, "-")
	num := strings.TrimPrefix(s, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(num), "e")
	whole, frac, hasDot := strings.Cut(mant, ".")
	if whole == "" || !allDigits(whole) || (hasDot && (frac == "" || !allDigits(frac))) ||
		(len(whole) > 1 && whole[0] == '0') {
		if neg {
			return 0, errors.New("amount must not be negative")
		}
		return 0, errors.New("amount must be a decimal number like 49.99")
	}
	e := 0
	if hasExp {
		digits := strings.TrimPrefix(strings.TrimPrefix(exp, "+"), "-")
		if digits == "" || !allDigits(digits) || strings.Count(exp, "+")+strings.Count(exp, "-") > 1 {
			return 0, errors.New("amount must be a decimal number like 49.99")
		}
		// Exponents beyond a few digits only make zeros or overflow:
		// clamp them so the arithmetic below stays small.
		n := 0
		for i := 0; i < len(digits) && n < 1000; i++ {
			n = n*10 + int(digits[i]-'0')
		}
		if strings.HasPrefix(exp, "-") {
			n = -n
		}
		e = n
	}
	// The value is digits × 10^(e - len(frac)); in minor units, × 10^2.
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return 0, nil // zero, however written (-0, 0.000, 0e5)
	}
	if neg {
		return 0, errors.New("amount must not be negative")
	}
	shift := e - len(frac) + 2
	if shift < 0 {
		// Only zeros may be cut: more decimals of value are refused.
		cut := -shift
		if cut >= len(digits) || strings.TrimLeft(digits[len(digits)-cut:], "0") != "" {
			return 0, errors.New("amount has more than 2 decimals")
		}
		digits, shift = digits[:len(digits)-cut], 0
	}
	if len(digits)+shift > 16 { // moneyMax has 16 digits in minor units
		return 0, errors.New("amount is too large")
	}
	v, err := strconv.ParseInt(digits+strings.Repeat("0", shift), 10, 64)
	if err != nil || Money(v) > moneyMax {
		return 0, errors.New("amount is too large")
	}
	return Money(v), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// JSONSchema documents Money for the OpenAPI generator: a number with
// format double, so generated clients hold it in a 64-bit float, and no
// multipleOf, which validators check in floating point (79.99 / 0.01 is
// 7998.999...) and so refuse about one valid amount in seven. The two
// decimals are said in words; the server refuses more.
func (Money) JSONSchema() map[string]any {
	return map[string]any{"type": "number", "format": "double", "minimum": 0,
		"description": "An amount in the currency's major unit with at most two decimals (79.99); more decimals are refused."}
}

// Time is a timestamp on the wire: RFC 3339 with any offset in, RFC 3339 in
// UTC with whole seconds out ("2026-08-22T10:00:00Z").
type Time struct{ time.Time }

// At wraps t.
func At(t time.Time) Time { return Time{t} }

// MarshalJSON writes UTC with whole seconds.
func (t Time) MarshalJSON() ([]byte, error) { return t.AppendJSON(nil), nil }

// AppendJSON appends t as MarshalJSON writes it.
func (t Time) AppendJSON(b []byte) []byte {
	b = append(b, '"')
	b = t.UTC().Truncate(time.Second).AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

// UnmarshalJSON reads an RFC 3339 string with any offset.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("timestamp must be an RFC 3339 string")
	}
	v, err := ParseTime(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// ParseTime reads a timestamp as Time's UnmarshalJSON does, from the
// string's text (for decoders that read the JSON string themselves).
func ParseTime(s string) (Time, error) {
	v, err := time.Parse(time.RFC3339, s)
	if err != nil || len(s) > 35 { // 35: nanoseconds and an offset; the schema's maxLength
		return Time{}, errors.New("timestamp must be RFC 3339, e.g. 2026-08-22T10:00:00Z")
	}
	if v.Year() < 1970 || v.Year() > 9999 {
		return Time{}, errors.New("timestamp out of range")
	}
	return Time{v.UTC()}, nil
}

// JSONSchema documents Time for the OpenAPI generator.
func (Time) JSONSchema() map[string]any {
	return map[string]any{"type": "string", "format": "date-time", "maxLength": 35, "pattern": TimeYearPattern}
}

// TimeYearPattern is the range of years a Time takes (1970 to 9999, as
// written, before its offset is applied), as a schema's pattern: format
// date-time alone admits years 0000 to 1969, which UnmarshalJSON refuses.
const TimeYearPattern = `^(19[7-9][0-9]|[2-9][0-9]{3})-`

// tp returns a wire timestamp for an optional instant: nil stays nil so the
// view shows null.
func tp(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	return &Time{*t}
}

// List is the list envelope of every list operation.
type List[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"hasMore"`
	NextCursor *string `json:"nextCursor"`
	// FeedSeq is the change feed's position the list reflects (feed.go),
	// set by the registrations, orders and check-ins lists: the HTTP layer
	// answers it as the Feed-Cursor header, never in the body.
	FeedSeq uint64 `json:"-"`
}

// Cursor encodings are opaque to clients: base64url of the last record id.
func encodeCursor(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

func decodeCursor(c string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 {
		return "", false
	}
	return string(b), true
}

// Limits of list pages, shared with the HTTP layer's defaults.
const (
	DefaultLimit = 50
	MaxLimit     = 100
)

func clampLimit(n int) int {
	if n <= 0 {
		return DefaultLimit
	}
	if n > MaxLimit {
		return MaxLimit
	}
	return n
}
