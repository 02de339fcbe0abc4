package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/http/bind"
)

// randScanBody writes a batch body, mostly well formed, sometimes with
// what the fast path must decline or the binder refuses: unknown or
// repeated members, wrong types, escapes, non-ASCII, empty or long
// strings, bad times, a wrong shape.
func randScanBody(r *rand.Rand) string {
	ws := func() string { return []string{"", "", " ", "\n\t", "\r "}[r.IntN(5)] }
	strs := []string{"a", "r0-1", "reg_01abc", "CHK-7Q2", "ven_9", " x ", "", strings.Repeat("z", 100), strings.Repeat("z", 101),
		`q\"uote`, `\u0041`, "é", "dk_", "\x7f"}
	str := func() string {
		if r.IntN(8) > 0 {
			return `"` + strs[r.IntN(5)] + `"`
		}
		return `"` + strs[r.IntN(len(strs))] + `"`
	}
	val := func(k string) string {
		switch r.IntN(150) {
		case 0:
			return "null"
		case 1:
			return "12"
		case 2:
			return "true"
		}
		switch k {
		case "subjectType":
			if r.IntN(20) == 0 {
				return `"` + []string{"door", "EVENT", ""}[r.IntN(3)] + `"`
			}
			return `"` + []string{"event", "venue", "session"}[r.IntN(3)] + `"`
		case "scannedAt":
			if r.IntN(20) == 0 {
				return `"` + []string{"1969-12-31T23:59:59Z", "2026-11-29 08:00:00", "yesterday", ""}[r.IntN(4)] + `"`
			}
			return `"` + []string{"2026-11-29T08:00:00Z", "2026-11-29T08:00:00.123456789+02:00", "2026-11-29T09:00:00-05:00"}[r.IntN(3)] + `"`
		case "offline", "admittedOffline":
			return []string{"true", "false", "true", "false", `"true"`}[r.IntN(5)]
		}
		return str()
	}
	keys := []string{"scanId", "checkinCode", "registrationId", "subjectType", "subjectId", "scannedAt", "offline", "admittedOffline"}
	scan := func() string {
		var members []string
		for _, k := range keys {
			if r.IntN(3) == 0 && k != "scanId" && k != "subjectType" && k != "scannedAt" || r.IntN(200) == 0 {
				continue
			}
			members = append(members, ws()+`"`+k+`"`+ws()+":"+ws()+val(k))
		}
		if r.IntN(100) == 0 {
			members = append(members, `"extra":1`)
		}
		if r.IntN(100) == 0 && len(members) > 0 {
			members = append(members, members[0])
		}
		r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		return "{" + strings.Join(members, ",") + ws() + "}"
	}
	n := 1 + r.IntN(4)
	if r.IntN(50) == 0 {
		n = []int{0, 500, 501}[r.IntN(3)]
	}
	list := make([]string, n)
	for i := range list {
		list[i] = scan()
	}
	body := ws() + `{` + ws() + `"scans"` + ws() + `:` + ws() + `[` + strings.Join(list, ","+ws()) + ws() + `]` + ws() + `}` + ws()
	switch r.IntN(100) {
	case 0:
		body = `{"scans":[]}`
	case 1:
		body += "x"
	case 2:
		body = `{"scans":null}`
	case 3:
		body = `[` + body + `]`
	}
	return body
}

// TestFastScansMatchesBind: over random bodies, whatever the fast decoder
// takes the binder takes too, to the same command; what the binder
// refuses the fast decoder declines (so its 400 is the binder's).
func TestFastScansMatchesBind(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 33))
	var b bind.Binder
	taken := 0
	for i := range 20000 {
		body := randScanBody(r)
		fast, ok := fastScans([]byte(body))
		var slow event.RecordScans
		err := b.Bind([]byte(body), &slow)
		if !ok {
			continue
		}
		taken++
		require.NoError(t, err, "seed %d, body %d: the fast path took what the binder refuses: %s", seed, i, body)
		require.Equal(t, slow, fast, "seed %d, body %d: %s", seed, i, body)
	}
	t.Logf("the fast path took %d of 20000 bodies", taken)
	require.Greater(t, taken, 2000, "the fast path takes the common bodies")
	// The shape door devices send, 500 scans.
	var sb strings.Builder
	sb.WriteString(`{"scans":[`)
	for i := range 500 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"scanId":"s-%d","registrationId":"reg_%d","subjectType":"venue","subjectId":"ven_1","scannedAt":"2026-11-29T08:00:00Z","offline":true}`, i, i)
	}
	sb.WriteString(`]}`)
	fast, ok := fastScans([]byte(sb.String()))
	require.True(t, ok)
	var slow event.RecordScans
	require.NoError(t, b.Bind([]byte(sb.String()), &slow))
	require.Equal(t, slow, fast)
	require.True(t, json.Valid([]byte(sb.String())))
}

func BenchmarkScanBody(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"scans":[`)
	for i := range 500 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"scanId":"r3-%d","registrationId":"reg_01kb0a%08d","subjectType":"venue","subjectId":"ven_01kb0a9","scannedAt":"2026-11-29T08:00:00Z","offline":true}`, i, i)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := fastScans(body); !ok {
				b.Fatal("declined")
			}
		}
	})
	// As the handler runs it: the scans go back to their pool once the
	// event answered.
	b.Run("fast-released", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cmd, ok := fastScans(body)
			if !ok {
				b.Fatal("declined")
			}
			releaseScans(cmd.Scans)
		}
	})
	b.Run("bind", func(b *testing.B) {
		b.ReportAllocs()
		var bd bind.Binder
		for b.Loop() {
			var cmd event.RecordScans
			if err := bd.Bind(body, &cmd); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// strBytewise is scanParser.str as it read a byte at a time, before it
// read eight: the reference for the word-at-a-time reading.
func strBytewise(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	i++
	start := i
	for ; i < len(b); i++ {
		c := b[i]
		if c == '"' {
			return b[start:i], i + 1, true
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return nil, i, false
		}
	}
	return nil, i, false
}

// TestScanStrMatchesBytewise: the parser's strings, read eight bytes at a
// time, end and are declined exactly where a byte-by-byte reading ends
// and declines them: every byte that ends or spoils a string (", \, a
// control character, 0x7f, any byte >= 0x80) at every place in a word,
// around plain bytes of every value.
func TestScanStrMatchesBytewise(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		p := scanParser{b: b}
		got, ok := p.str()
		want, next, wantOK := strBytewise(b, 0)
		require.Equal(t, wantOK, ok, "%q", b)
		if ok {
			require.Equal(t, string(want), string(got), "%q", b)
			require.Equal(t, next, p.i, "%q", b)
		}
	}
	special := []byte{'"', '\\', 0x00, 0x01, 0x1f, 0x7f, 0x80, 0xc3, 0xff}
	for n := 0; n <= 20; n++ {
		for pos := 0; pos < n; pos++ {
			for _, c := range special {
				for _, fill := range []byte{' ', '!', '#', '0', 'A', '[', ']', 'a', '~', 0x20 + byte(n+pos)%0x5f} {
					b := append([]byte{'"'}, bytes.Repeat([]byte{fill}, n)...)
					b[1+pos] = c
					check(append(b, '"'))
					check(b) // unterminated
				}
			}
		}
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 34))
	for range 20000 {
		b := make([]byte, 1+r.IntN(40))
		b[0] = '"'
		for i := 1; i < len(b); i++ {
			if r.IntN(12) == 0 {
				b[i] = special[r.IntN(len(special))]
			} else {
				b[i] = byte(0x20 + r.IntN(0x5f))
			}
		}
		check(b)
	}
}

// FuzzScanStr: the word-at-a-time reading of a string agrees with the
// byte-at-a-time one on any bytes.
func FuzzScanStr(f *testing.F) {
	f.Add([]byte(`"scanId"`))
	f.Add([]byte(`"a\"b"`))
	f.Add([]byte("\"0123456\x7f89\""))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := scanParser{b: b}
		got, ok := p.str()
		want, next, wantOK := strBytewise(b, 0)
		if ok != wantOK || ok && (string(got) != string(want) || p.i != next) {
			t.Fatalf("%q: got %q %v at %d, want %q %v at %d", b, got, ok, p.i, want, wantOK, next)
		}
	})
}
