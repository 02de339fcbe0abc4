package bind

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
)

// bindErr binds body into a fresh toyOrder and returns the details.
func bindDetails(t *testing.T, b *Binder, body string) []event.Detail {
	t.Helper()
	var o toyOrder
	err := b.Bind([]byte(body), &o)
	if err == nil {
		return nil
	}
	ee, ok := err.(*event.Error)
	require.True(t, ok, "%T", err)
	require.Equal(t, event.InvalidArgument, ee.Code)
	require.NotEmpty(t, ee.Details)
	return ee.Details
}

func TestBindAcceptsAValidBody(t *testing.T) {
	var b Binder
	var o toyOrder
	body := `{"email":"ann@example.com","name":"Ann \u00e9\ud83d\ude00","items":[{"itemType":"addon","itemId":"ao_1","quantity":100}],
		"capacity":null,"amount":49.99,"locale":"zh-CN","startsAt":"2026-08-22T10:00:00Z","returnUrl":"https://x.example/r",
		"day":"2026-08-22","free":true,"ratio":0.5,"responses":{"a":[1,{"b":null}]}}`
	require.NoError(t, b.Bind([]byte(body), &o))
	require.Equal(t, "ann@example.com", o.Email)
	require.Equal(t, "Ann é😀", o.Name)
	require.Equal(t, []toyItem{{ItemType: "addon", ItemID: "ao_1", Quantity: 100}}, o.Items)
	require.Nil(t, o.Capacity)
	require.NotNil(t, o.Amount)
	require.Equal(t, toyMoney(4999), *o.Amount)
	require.Equal(t, time.Date(2026, 8, 22, 10, 0, 0, 0, time.UTC), *o.StartsAt)
	require.True(t, o.Free)
	require.Equal(t, 0.5, o.Ratio)
	require.Equal(t, map[string]any{"a": []any{float64(1), map[string]any{"b": nil}}}, o.Responses)

	require.NoError(t, b.Bind([]byte(`{"email":"a@b.co","items":[{"itemType":"bundle","itemId":"x","quantity":2.0}],"capacity":5}`), &o))
	require.Equal(t, 2, o.Items[0].Quantity, "2.0 is an integer")
	require.Equal(t, 5, *o.Capacity)
}

func TestBindReportsEveryProblemSortedByField(t *testing.T) {
	var b Binder
	got := bindDetails(t, &b, `{"email":"not-an-email","name":"`+strings.Repeat("é", 201)+`",
		"items":[{"itemType":"ticket","itemId":"","quantity":0,"colour":"red"},{"itemType":"addon","itemId":"a","quantity":"2"},
		         {"itemType":"addon","itemId":"a","quantity":1.5}],
		"capacity":-1,"amount":1.234,"locale":"fr","startsAt":"yesterday","returnUrl":"/relative","day":"22/08/2026",
		"free":"yes","ratio":2,"extra":1}`)
	require.Equal(t, []event.Detail{
		{Field: "amount", Reason: "at most 2 decimals"},
		{Field: "capacity", Reason: "must be at least 0"},
		{Field: "day", Reason: "must be a date (YYYY-MM-DD)"},
		{Field: "email", Reason: "must be an email address"},
		{Field: "extra", Reason: "unknown field"},
		{Field: "free", Reason: "must be a boolean"},
		{Field: "items[0].colour", Reason: "unknown field"},
		{Field: "items[0].itemId", Reason: "must not be empty"},
		{Field: "items[0].itemType", Reason: "must be one of: registration_type, addon, bundle"},
		{Field: "items[0].quantity", Reason: "must be at least 1"},
		{Field: "items[1].quantity", Reason: "must be an integer"},
		{Field: "items[2].quantity", Reason: "must be an integer"},
		{Field: "locale", Reason: "must be one of: en, zh-CN"},
		{Field: "name", Reason: "must be at most 200 characters"},
		{Field: "ratio", Reason: "must be at most 1"},
		{Field: "returnUrl", Reason: "must be an absolute URI"},
		{Field: "startsAt", Reason: "must be an RFC 3339 date-time"},
	}, got)
}

func TestBindRequiredNullAndCounts(t *testing.T) {
	var b Binder
	require.Equal(t, []event.Detail{
		{Field: "email", Reason: "is required"},
		{Field: "items", Reason: "is required"},
	}, bindDetails(t, &b, `{}`))
	require.Equal(t, []event.Detail{
		{Field: "email", Reason: "is required"},
		{Field: "items", Reason: "is required"},
	}, bindDetails(t, &b, ``), "an empty body is {}")
	require.Equal(t, []event.Detail{
		{Field: "email", Reason: "is required"},
		{Field: "items", Reason: "must have at least 1 items"},
		{Field: "name", Reason: "must not be null"},
	}, bindDetails(t, &b, `{"email":null,"items":[],"name":null}`))
	require.Equal(t, []event.Detail{
		{Field: "items", Reason: "must have at most 3 items"},
	}, bindDetails(t, &b, `{"email":"a@b.co","items":[{},{},{},{}]}`), "an oversized array is one problem")
	require.Equal(t, []event.Detail{
		{Field: "items[0]", Reason: "must not be null"},
		{Field: "items[1]", Reason: "must be an object"},
		{Field: "items[2].itemId", Reason: "is required"},
		{Field: "items[2].itemType", Reason: "is required"},
		{Field: "items[2].quantity", Reason: "is required"},
	}, bindDetails(t, &b, `{"email":"a@b.co","items":[null,7,{}]}`))
	require.Equal(t, []event.Detail{{Field: "items", Reason: "must be an array"}},
		bindDetails(t, &b, `{"email":"a@b.co","items":{"itemType":"addon"}}`))
}

func TestBindMalformed(t *testing.T) {
	var b Binder
	for _, body := range []string{
		`{`, `{"email":}`, `{"email":"a"}x`, `{"email":"a","email":"b"}`, `[1,]`, `{"a":01}`,
		`{"a":"` + "\x01" + `"}`, "{\"a\":\"\xff\"}", `{"a":"\x"}`, `nul`, `{"a":1.}`, `{"a":-}`,
		`{'a':1}`, strings.Repeat("[", 100) + strings.Repeat("]", 100), `null`, `"str"`, `12`,
	} {
		got := bindDetails(t, &b, body)
		require.Len(t, got, 1, body)
		require.Equal(t, "", got[0].Field, body)
		if !strings.HasPrefix(got[0].Reason, "malformed JSON: ") && !strings.HasPrefix(got[0].Reason, "must be") {
			t.Fatalf("%s: reason %q", body, got[0].Reason)
		}
	}
}

func TestBindQueryListRulesWithoutTags(t *testing.T) {
	type coreList struct {
		Status string `query:"status"`
		Limit  int    `json:"-" query:"limit"`
		Cursor string `json:"-" query:"cursor"`
	}
	var b Binder
	get := func(vals map[string]string) func(string) ([]byte, bool) {
		return func(n string) ([]byte, bool) {
			v, ok := vals[n]
			return []byte(v), ok
		}
	}
	var q coreList
	require.NoError(t, b.BindQuery(get(nil), &q))
	require.Equal(t, 50, q.Limit)
	q = coreList{}
	require.NoError(t, b.BindQuery(get(map[string]string{"limit": "100"}), &q))
	require.Equal(t, 100, q.Limit)
	for _, v := range []string{"0", "101", "-1"} {
		q = coreList{}
		err := b.BindQuery(get(map[string]string{"limit": v}), &q)
		require.Error(t, err, v)
		require.Equal(t, "limit", err.(*event.Error).Details[0].Field)
	}
	err := b.BindQuery(get(map[string]string{"cursor": strings.Repeat("c", 600)}), &q)
	require.Equal(t, "cursor", err.(*event.Error).Details[0].Field)
}

func TestValidEmail(t *testing.T) {
	for _, ok := range []string{"ann@example.com", "a.b+c@sub.example.co", "o'neil@example.ie", "zoë@exämple.de", "x@b.co"} {
		require.True(t, validEmail(ok), ok)
	}
	for _, bad := range []string{"", "ann", "@example.com", "ann@", "ann@localhost", "a..b@example.com", ".a@example.com",
		"a.@example.com", "a b@example.com", "Ann <ann@example.com>", "ann@-x.com", "ann@x..com", "ann@x.com.", "a@b@c.com",
		"\"q\"@example.com", strings.Repeat("a", 65) + "@example.com"} {
		require.False(t, validEmail(bad), bad)
	}
}

// TestBindEmailRefusesSurroundingSpace: format email refuses what a
// validating client refuses, so the server is never laxer than its
// document.
func TestBindEmailRefusesSurroundingSpace(t *testing.T) {
	var b Binder
	var o toyOrder
	require.NoError(t, b.Bind([]byte(`{"email":"ann@example.com","items":[{"itemType":"addon","itemId":"a","quantity":1}]}`), &o))
	for _, e := range []string{"  ann@example.com ", "ann@example.com ", "  "} {
		require.Equal(t, []event.Detail{{Field: "email", Reason: "must be an email address"}},
			bindDetails(t, &b, `{"email":"`+e+`","items":[{"itemType":"addon","itemId":"a","quantity":1}]}`), "%q", e)
	}
}

func TestBindFreeFormNumbersInRange(t *testing.T) {
	var b Binder
	require.Equal(t, []event.Detail{{Field: "responses.a[1]", Reason: "must be a number in range"}},
		bindDetails(t, &b, `{"email":"a@b.co","items":[{"itemType":"addon","itemId":"a","quantity":1}],"responses":{"a":[1,1e999]}}`))
	require.Equal(t, []event.Detail{{Field: "responses", Reason: "must be an object"}},
		bindDetails(t, &b, `{"email":"a@b.co","items":[{"itemType":"addon","itemId":"a","quantity":1}],"responses":[1]}`))
}

func TestBindArrayBody(t *testing.T) {
	var b Binder
	var items []toyItem
	require.NoError(t, b.Bind([]byte(`[{"itemType":"addon","itemId":"a","quantity":1}]`), &items))
	require.Len(t, items, 1)
	err := b.Bind([]byte(`[{"itemType":"addon","itemId":"a","quantity":0},{"itemId":"b","quantity":1,"x":1}]`), &items)
	require.Equal(t, []event.Detail{
		{Field: "[0].quantity", Reason: "must be at least 1"},
		{Field: "[1].itemType", Reason: "is required"},
		{Field: "[1].x", Reason: "unknown field"},
	}, err.(*event.Error).Details)
	require.Error(t, b.Bind(nil, &items), "an array body cannot be empty")
	require.Error(t, b.Bind([]byte(`{}`), &items))
}

func TestBindBoundsDetails(t *testing.T) {
	var b Binder
	var many []toyItem
	err := b.Bind([]byte("["+strings.TrimSuffix(strings.Repeat(`{"q":1},`, 200), ",")+"]"), &many)
	ee := err.(*event.Error)
	require.Len(t, ee.Details, maxDetails)
	require.Contains(t, ee.Message, "more)")
}

func TestBindQuery(t *testing.T) {
	var b Binder
	get := func(vals map[string]string) func(string) ([]byte, bool) {
		return func(n string) ([]byte, bool) {
			v, ok := vals[n]
			return []byte(v), ok
		}
	}
	var q toyQuery
	require.NoError(t, b.BindQuery(get(nil), &q))
	require.Equal(t, DefaultPageSize, q.Limit)
	require.Nil(t, q.Big)

	q = toyQuery{}
	require.NoError(t, b.BindQuery(get(map[string]string{"limit": "100", "cursor": "abc", "status": "open", "big": "true"}), &q))
	require.Equal(t, 100, q.Limit)
	require.Equal(t, "abc", q.Cursor)
	require.True(t, *q.Big)

	for _, c := range []struct{ k, v, reason string }{
		{"limit", "0", "must be at least 1"},
		{"limit", "101", "must be at most 100"},
		{"limit", "ten", "must be an integer"},
		{"status", "gone", "must be one of: open, closed"},
		{"big", "maybe", "must be true or false"},
		{"cursor", strings.Repeat("c", 513), "must be at most 512 characters"},
	} {
		q = toyQuery{}
		err := b.BindQuery(get(map[string]string{c.k: c.v}), &q)
		require.Error(t, err, c.k+"="+c.v)
		require.Equal(t, []event.Detail{{Field: c.k, Reason: c.reason}}, err.(*event.Error).Details)
	}
}

// richBody exercises every plan kind for the fuzzer.
type richBody struct {
	S   string            `json:"s" v:"minLen=1,maxLen=5"`
	I   int8              `json:"i" v:"min=-3,max=3"`
	U   uint16            `json:"u"`
	F   float32           `json:"f"`
	B   bool              `json:"b"`
	P   *int              `json:"p" v:"nullable"`
	M   *toyMoney         `json:"m"`
	T   time.Time         `json:"t"`
	E   string            `json:"e" v:"enum=a|b,format=email"`
	A   []toyItem         `json:"a" v:"maxItems=4"`
	N   *richBody         `json:"n"`
	Map map[string]int    `json:"map"`
	Any any               `json:"any"`
	Arr [2]int            `json:"arr"`
	Raw map[string]string `json:"raw" v:"nullable"`
}

func FuzzBind(f *testing.F) {
	for _, s := range []string{
		goodOrder, `{"s":"x","i":3,"u":65535,"f":1e3,"b":false,"p":null,"m":1.2,"t":"2026-01-01T00:00:00Z"}`,
		`{"n":{"n":{"a":[{"quantity":1}]}}}`, `{"map":{"a":1},"any":[1,"x"],"arr":[1,2]}`, `[`, ``, `{"i":1e400}`,
		`{"s":"\ud800"}`, `{"u":-1,"i":128}`,
	} {
		f.Add([]byte(s))
	}
	var b Binder
	f.Fuzz(func(t *testing.T, body []byte) {
		var r richBody
		err := b.Bind(body, &r)
		if err != nil {
			ee, ok := err.(*event.Error)
			if !ok || ee.Code != event.InvalidArgument || len(ee.Details) == 0 || len(ee.Details) > maxDetails {
				t.Fatalf("bad error %#v", err)
			}
		}
		var o toyOrder
		_ = b.Bind(body, &o)
	})
}

func BenchmarkBindPlaceOrderLike(b *testing.B) {
	body := []byte(`{"email":"ann@example.com","name":"Ann Lee","items":[{"itemType":"registration_type","itemId":"tt_01HZX5","quantity":1},
		{"itemType":"addon","itemId":"ao_01HZX6","quantity":2}],"redemptionCode":"","locale":"en","responses":{"company":"Acme"}}`)
	body = []byte(strings.Replace(string(body), `"redemptionCode":"",`, "", 1))
	var bd Binder
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var o toyOrder
		if err := bd.Bind(body, &o); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNoSpacePatternAgrees: the nospace pattern's ECMA expression, read
// as a Go validator reads it (\uXXXX as \x{XXXX}), and NoSpace agree on
// every character of the Basic Multilingual Plane.
func TestNoSpacePatternAgrees(t *testing.T) {
	p := Patterns["nospace"]
	re := regexp.MustCompile(regexp.MustCompile(`\\u([0-9A-F]{4})`).ReplaceAllString(p.ECMA, `\x{$1}`))
	for r := rune(0); r <= 0xFFFF; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		s := "a" + string(r) + "b"
		if re.MatchString(s) != NoSpace(s) {
			t.Fatalf("U+%04X: pattern %v, NoSpace %v", r, re.MatchString(s), NoSpace(s))
		}
	}
}

// TestBindPlan: binding with a route's prepared plan decodes and refuses
// exactly as Bind does, and a plan of another type is not used.
func TestBindPlan(t *testing.T) {
	type item struct {
		ID       string `json:"id" v:"required"`
		Quantity int    `json:"quantity" v:"min=1,max=10"`
	}
	type body struct {
		Email string `json:"email" v:"required,format=email"`
		Items []item `json:"items" v:"required,maxItems=3"`
	}
	type other struct {
		Name string `json:"name" v:"required"`
	}
	var b Binder
	pl := b.Prepare(body{})
	po := b.Prepare(other{})
	for _, in := range []string{
		`{"email":"a@b.example","items":[{"id":"x","quantity":2}]}`,
		`{"email":"nope","items":[{"quantity":20},{"id":"y","quantity":1}]}`,
		`{"email":"a@b.example","items":[]`,
		`{"email":"a@b.example","extra":1}`,
		``,
	} {
		var want, got, fell body
		werr := b.Bind([]byte(in), &want)
		gerr := b.BindPlan([]byte(in), &got, pl)
		ferr := b.BindPlan([]byte(in), &fell, po) // another type's plan: ignored
		require.Equal(t, want, got, in)
		require.Equal(t, want, fell, in)
		require.Equal(t, werr, gerr, in)
		require.Equal(t, werr, ferr, in)
	}
}
