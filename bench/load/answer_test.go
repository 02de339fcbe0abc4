package load

import (
	"math/rand/v2"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"
)

// decoded is what a JSON decoder makes of a queue answer's fields.
func decoded(body []byte) (QueueAnswer, error) { return readQueueAnswerSlow(body) }

func sameAnswer(a, b QueueAnswer) bool {
	return string(a.QueueID) == string(b.QueueID) && (a.QueueID == nil) == (b.QueueID == nil) &&
		string(a.State) == string(b.State) && (a.State == nil) == (b.State == nil) &&
		string(a.QueueToken) == string(b.QueueToken) && (a.QueueToken == nil) == (b.QueueToken == nil) &&
		string(a.AdmittedUntil) == string(b.AdmittedUntil) && (a.AdmittedUntil == nil) == (b.AdmittedUntil == nil) &&
		a.Position == b.Position && a.HasPosition == b.HasPosition
}

// TestReadQueueAnswerMatchesDecoder: the generator's reader answers what
// goccy/go-json decodes, and refuses what it refuses, on the service's
// answers and on mutations of them.
func TestReadQueueAnswerMatchesDecoder(t *testing.T) {
	bodies := []string{
		`{"queueId":"q_01ABCDEFGHJKMNPQRSTVWXYZ01","state":"waiting","position":null,"estimatedWaitSeconds":null,"retryAfterSeconds":30,"onSaleAt":"2026-11-29T19:00:00Z"}`,
		`{"queueId":"q_01ABCDEFGHJKMNPQRSTVWXYZ01","state":"waiting","position":1234,"estimatedWaitSeconds":124,"retryAfterSeconds":30,"onSaleAt":"2026-11-29T19:00:00Z"}`,
		`{"queueId":"q_X","state":"admitted","position":null,"estimatedWaitSeconds":null,"retryAfterSeconds":0,"queueToken":"qt_Y","admittedUntil":"2026-11-29T19:10:00Z","onSaleAt":"2026-11-29T19:00:00Z"}`,
		`{"queueId":"q_X","state":"sold_out","position":null,"estimatedWaitSeconds":null,"retryAfterSeconds":30,"onSaleAt":"2026-11-29T19:00:00Z"}`,
		` { "state" : "waiting" , "position" : -3 , "x" : [1, 2.5e3, {"a": [true, false, null]}, "s\"\\"] } `,
		`{}`, `{"state":"a\u0062c"}`, `{"State":"waiting"}`, `{"st\u0061te":"waiting"}`, `{"state":"é"}`,
		`{"queueId":null,"state":null}`, `{"state":"waiting","state":"sold_out"}`,
		`{"position":1.5}`, `{"position":1e2}`, `{"position":"1"}`, `{"position":01}`, `{"state":5}`,
		`[]`, `null`, `{"state":"waiting"`, `{"state":"waiting"}x`, `{"state":"wa` + "\n" + `iting"}`,
		`{"a":tru}`, `{"a":-}`, `{"a":[1,]}`, `{,}`, `{"a" 1}`, `{"a":1,}`, `{"a":"\x"}`, `{"a":"\u12"}`,
	}
	check := func(body string) {
		t.Helper()
		got, gerr := ReadQueueAnswer([]byte(body))
		want, werr := decoded([]byte(body))
		// Never laxer than the decoder; stricter only about what is not
		// an object (a decoder takes null as nothing to set).
		object := strings.HasPrefix(strings.TrimSpace(body), "{")
		if (gerr == nil && werr != nil) || (gerr != nil && werr == nil && object) {
			t.Fatalf("%q: reader error %v, decoder error %v", body, gerr, werr)
		}
		if gerr == nil && !sameAnswer(got, want) {
			t.Fatalf("%q: reader %+v, decoder %+v", body, got, want)
		}
	}
	for _, b := range bodies {
		check(b)
	}
	// Mutations of a real answer: every byte dropped, and random bytes.
	r := rand.New(rand.NewPCG(1, 2))
	base := bodies[2]
	for i := range len(base) {
		check(base[:i] + base[i+1:])
		for range 4 {
			c := []byte(`{}[]",:0123456789-+.eEtrufalsn \\x`)[r.IntN(34)]
			check(base[:i] + string(c) + base[i+1:])
		}
	}
	// The decoder agrees that all the above are (in)valid JSON as read.
	if !gojson.Valid([]byte(bodies[0])) || strings.Contains(bodies[0], "\\") {
		t.Fatal("the first body is the service's plain answer")
	}
}

func TestReadQueueAnswerAllocatesNothing(t *testing.T) {
	body := []byte(`{"queueId":"q_01ABCDEFGHJKMNPQRSTVWXYZ01","state":"waiting","position":1234,"estimatedWaitSeconds":124,"retryAfterSeconds":30,"onSaleAt":"2026-11-29T19:00:00Z"}`)
	if n := testing.AllocsPerRun(100, func() {
		if a, err := ReadQueueAnswer(body); err != nil || a.Position != 1234 {
			t.Fatal(a, err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per answer", n)
	}
}
