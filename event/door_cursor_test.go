package event

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
)

// refParsePassCursor is the cursor parse as first written (allocating):
// the reference the allocation-free parse must answer alike.
func refParsePassCursor(eventID, c string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(b), passCursorPrefix+eventID+".")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || v < 0 || strconv.FormatInt(v, 10) != rest {
		return 0, false
	}
	return v, true
}

func TestParsePassCursorMatchesTheReference(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	cases := []string{
		PassCursor("evt_1", 0), PassCursor("evt_1", 42), PassCursor("evt_2", 42), PassCursor("evt_1", 1<<62),
		enc("passes.v1.evt_1.9223372036854775807"), enc("passes.v1.evt_1.9223372036854775808"),
		enc("passes.v1.evt_1.18446744073709551615"), enc("passes.v1.evt_1.99999999999999999999"),
		enc("passes.v1.evt_1.007"), enc("passes.v1.evt_1.-7"), enc("passes.v1.evt_1.+7"), enc("passes.v1.evt_1."),
		enc("passes.v1.evt_1"), enc("passes.v1.evt_12.7"), enc("passes.v1.evt_.7"), enc("passes.v2.evt_1.7"),
		enc("passes.v1.evt_1.7 "), enc("passes.v1.evt_1.7\x00"), "", "!!!", PassCursor("evt_1", 7) + "=",
		PassCursor("evt_1", 7)[:5] + "\n" + PassCursor("evt_1", 7)[5:], strings.Repeat("A", 300),
	}
	for _, c := range cases {
		wv, wok := refParsePassCursor("evt_1", c)
		gv, gok := ParsePassCursor("evt_1", c)
		bv, bok := ParsePassCursorBytes("evt_1", []byte(c))
		if wv != gv || wok != gok || wv != bv || wok != bok {
			t.Errorf("%q: got %d %v (bytes %d %v), want %d %v", c, gv, gok, bv, bok, wv, wok)
		}
	}
	if n := testing.AllocsPerRun(100, func() { ParsePassCursorBytes("evt_1", []byte(cases[1])) }); n != 0 {
		t.Errorf("%v allocations a parse, want 0", n)
	}
}

func FuzzParsePassCursor(f *testing.F) {
	f.Add(PassCursor("evt_1", 42))
	f.Add("cGFzc2VzLnYxLmV2dF8xLjA")
	f.Fuzz(func(t *testing.T, c string) {
		wv, wok := refParsePassCursor("evt_1", c)
		if len(c) > passCursorMax {
			wv, wok = 0, false
		}
		gv, gok := ParsePassCursor("evt_1", c)
		if wv != gv || wok != gok {
			t.Errorf("%q: got %d %v, want %d %v", c, gv, gok, wv, wok)
		}
	})
}
