package bind

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/event"
)

// flatBody has every kind the fast path decodes, with rules on each.
type flatBody struct {
	S    string     `json:"s" v:"required,minLen=2,maxLen=8"`
	E    string     `json:"e" v:"enum=x|yy|zzz"`
	Mail string     `json:"mail" v:"format=email"`
	Pat  string     `json:"pat" v:"pattern=nospace"`
	I    int        `json:"i" v:"min=-5,max=500"`
	I8   int8       `json:"i8"`
	B    bool       `json:"b"`
	L    []string   `json:"l" v:"minItems=1,maxItems=3"`
	Ns   []int      `json:"ns"`
	Sub  flatSub    `json:"sub"`
	Subs []flatSub  `json:"subs" v:"maxItems=2"`
	Deep [][]string `json:"deep"`
}

type flatSub struct {
	K string `json:"k" v:"required"`
	V int    `json:"v" v:"min=1"`
}

// fastCorpus is bodies of every shape: valid ones the fast path takes,
// and near misses of each rule and of JSON itself.
var fastCorpus = []string{
	`{"s":"ab"}`, ` {"s":"abcdefgh"} `, "{\n\t\"s\" : \"ab\" ,\r\"i\":-5}", `{"s":"a"}`, `{"s":"abcdefghi"}`, `{}`, ``, ` `,
	`{"s":"ab","e":"yy"}`, `{"s":"ab","e":"y"}`, `{"s":"ab","e":"x","e":"x"}`, `{"s":"ab","s":"ab"}`,
	`{"s":"ab","mail":"a@b.example"}`, `{"s":"ab","mail":"nope"}`, `{"s":"ab","mail":" a@b.example"}`,
	`{"s":"ab","pat":"a b"}`, `{"s":"ab","pat":"ab"}`,
	`{"s":"ab","i":500}`, `{"s":"ab","i":501}`, `{"s":"ab","i":-6}`, `{"s":"ab","i":0}`, `{"s":"ab","i":-0}`,
	`{"s":"ab","i":01}`, `{"s":"ab","i":1.0}`, `{"s":"ab","i":1e2}`, `{"s":"ab","i":-}`, `{"s":"ab","i":"1"}`,
	`{"s":"ab","i8":127}`, `{"s":"ab","i8":128}`, `{"s":"ab","i8":-128}`, `{"s":"ab","i8":-129}`,
	`{"s":"ab","i":123456789012345678}`, `{"s":"ab","i":1234567890123456789}`,
	`{"s":"ab","b":true}`, `{"s":"ab","b":false}`, `{"s":"ab","b":tru}`, `{"s":"ab","b":null}`, `{"s":null}`,
	`{"s":"ab","l":["a"]}`, `{"s":"ab","l":[]}`, `{"s":"ab","l":["a","b","c"]}`, `{"s":"ab","l":["a","b","c","d"]}`,
	`{"s":"ab","l":["a",]}`, `{"s":"ab","l":[ "a" , "b" ]}`, `{"s":"ab","l":[null]}`, `{"s":"ab","ns":[1,2,3,4,5,6,7]}`,
	`{"s":"ab","sub":{"k":"x","v":1}}`, `{"s":"ab","sub":{"v":1}}`, `{"s":"ab","sub":{"k":"x","v":0}}`, `{"s":"ab","sub":{}}`,
	`{"s":"ab","subs":[{"k":"a"},{"k":"b","v":3}]}`, `{"s":"ab","subs":[{"k":"a"},{"k":"b"},{"k":"c"}]}`,
	`{"s":"ab","deep":[["a"],[],["b","c"]]}`, `{"s":"ab","other":1}`, `{"s":"ab"} x`, `{"s":"ab"`, `{"s":"ab",}`,
	`{"s":"a\u0062"}`, `{"s":"a\"b"}`, "{\"s\":\"a\x01b\"}", `{"s":"éé"}`, "{\"s\":\"a\x7fb\"}", `{"s" "ab"}`, `["s"]`, `null`,
	`{"\u0073":"ab"}`,
}

// TestFastBindMatchesGeneral: whatever the fast path takes, the general
// path takes too and decodes to the same value; everything else goes to
// the general path, so answers (and refusals) are the general path's.
func TestFastBindMatchesGeneral(t *testing.T) {
	took := 0
	for _, body := range fastCorpus {
		took += checkFastAgrees(t, []byte(body), reflect.TypeFor[flatBody]())
	}
	require.Greater(t, took, 15, "the fast path took too few of the corpus")

	// The core's commands of a drop, as the storefront and the door send them.
	order := `{"email":"b1@bench.example","name":"Buyer","items":[{"itemType":"registration_type","itemId":"tt_01m80je08a0hs5x214cz7we1b7","quantity":1}]}`
	for _, tc := range []struct {
		typ  reflect.Type
		body string
		fast bool
	}{
		{reflect.TypeFor[event.PlaceOrder](), order, true},
		{reflect.TypeFor[event.PlaceOrder](), strings.Replace(order, `"quantity":1`, `"quantity":101`, 1), false},
		{reflect.TypeFor[event.PlaceOrder](), strings.Replace(order, `registration_type`, `ticket`, 1), false},
		{reflect.TypeFor[event.PlaceOrder](), strings.Replace(order, `b1@bench.example`, `b1@`, 1), false},
		{reflect.TypeFor[event.PlaceOrder](), strings.Replace(order, `"name":"Buyer",`, `"redemptionCode":"",`, 1), false},
		{reflect.TypeFor[event.PlaceOrder](), strings.Replace(order, `"name":"Buyer",`, `"promotionCode":"SPRING",`, 1), true},
		{reflect.TypeFor[event.PlaceOrder](), strings.Replace(order, `"name":"Buyer",`, `"responses":{"a":1},`, 1), false},
		{reflect.TypeFor[event.PlaceOrder](), `{"email":"b1@bench.example","items":[]}`, false},
		{reflect.TypeFor[event.PlaceOrder](), `{"items":[{"itemType":"addon","itemId":"a","quantity":1}]}`, false},
		{reflect.TypeFor[event.JoinQueue](), `{}`, true},
		{reflect.TypeFor[event.JoinQueue](), ` { } `, true},
		{reflect.TypeFor[event.JoinQueue](), `{"client":"x"}`, false},
		{reflect.TypeFor[event.RecordCheckin](), `{"registrationId":"reg_1","subjectType":"event"}`, true},
		{reflect.TypeFor[event.ConfirmOrder](), `{"successUrl":"https://a.example/s"}`, true},
		{reflect.TypeFor[event.ConfirmOrder](), `{"successUrl":"/s"}`, false},
		{reflect.TypeFor[[]flatSub](), `[{"k":"a"},{"k":"b","v":2}]`, true},
		{reflect.TypeFor[[]flatSub](), `[]`, true},
		{reflect.TypeFor[richBody](), `{"s":"x","i":3,"u":1}`, false}, // uint: the general path
		{reflect.TypeFor[richBody](), `{"e":"a"}`, false},             // an allowed value that is no email
	} {
		got := checkFastAgrees(t, []byte(tc.body), tc.typ)
		require.Equal(t, tc.fast, got == 1, "%s %s", tc.typ, tc.body)
	}
}

// checkFastAgrees binds body into a fresh value of typ both ways and
// returns 1 when the fast path took it.
func checkFastAgrees(t *testing.T, body []byte, typ reflect.Type) int {
	t.Helper()
	var b Binder
	p := b.planFor(typ)
	fast := reflect.New(typ)
	gen := reflect.New(typ)
	gerr := b.bindGeneral(body, gen, p)
	if !fastBind(body, fast.Elem(), p) {
		// Through Bind, the general path's answer whatever the fast one left.
		again := reflect.New(typ)
		require.Equal(t, gerr, b.BindPlan(body, again.Interface(), nil), "%s", body)
		if gerr == nil {
			require.Equal(t, gen.Interface(), again.Interface(), "%s", body)
		}
		return 0
	}
	require.NoError(t, gerr, "the fast path took %s, the general path refuses it", body)
	require.Equal(t, gen.Interface(), fast.Interface(), "%s", body)
	require.NoError(t, b.BindPlan(body, reflect.New(typ).Interface(), nil))
	return 1
}

// FuzzFastBind: the fast path never takes a body the general path
// refuses, and decodes what it takes to the general path's value.
func FuzzFastBind(f *testing.F) {
	for _, s := range fastCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFastAgrees(t, body, reflect.TypeFor[flatBody]())
		checkFastAgrees(t, body, reflect.TypeFor[toyOrder]())
		checkFastAgrees(t, body, reflect.TypeFor[event.PlaceOrder]())
	})
}

func BenchmarkBindDropOrder(b *testing.B) {
	body := []byte(`{"email":"b1@bench.example","name":"Buyer","items":[{"itemType":"registration_type","itemId":"tt_01m80je08a0hs5x214cz7we1b7","quantity":1}]}`)
	var bd Binder
	pl := bd.Prepare(event.PlaceOrder{})
	b.ReportAllocs()
	for b.Loop() {
		var o event.PlaceOrder
		if err := bd.BindPlan(body, &o, pl); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBindDropOrderGeneral is BenchmarkBindDropOrder on the general
// path alone: what the fast path saves.
func BenchmarkBindDropOrderGeneral(b *testing.B) {
	body := []byte(`{"email":"b1@bench.example","name":"Buyer","items":[{"itemType":"registration_type","itemId":"tt_01m80je08a0hs5x214cz7we1b7","quantity":1}]}`)
	var bd Binder
	p := bd.planFor(reflect.TypeFor[event.PlaceOrder]())
	b.ReportAllocs()
	for b.Loop() {
		var o event.PlaceOrder
		if err := bd.bindGeneral(body, reflect.ValueOf(&o), p); err != nil {
			b.Fatal(err)
		}
	}
}
