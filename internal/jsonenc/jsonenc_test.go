package jsonenc

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// appendStringRef is AppendString as it was before its fast path (a loop
// over every byte): the reference the new one must equal byte for byte.
func appendStringRef(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if Plain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// checkString asserts AppendString writes s as the reference does, as
// goccy/go-json (the API's encoder before the hand-written one) and
// encoding/json write it, after a prefix it keeps.
func checkString(t *testing.T, s string) {
	t.Helper()
	got := AppendString([]byte("pre"), s)
	if string(got[:3]) != "pre" {
		t.Fatalf("%q: prefix lost: %q", s, got)
	}
	got = got[3:]
	if want := appendStringRef(nil, s); string(got) != string(want) {
		t.Fatalf("%q: got %s, the reference writes %s", s, got, want)
	}
	goccy, err := gojson.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(goccy) {
		t.Fatalf("%q: got %s, goccy writes %s", s, got, goccy)
	}
	std, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(std) {
		t.Fatalf("%q: got %s, encoding/json writes %s", s, got, std)
	}
}

// edgeStrings are the cases the word-at-a-time scan could get wrong: every
// escape at each position of an 8-byte word and of the overlapping tail,
// lengths around 8 and 16, runs of multi-byte runes, invalid and truncated
// UTF-8, the line separators, DEL (0x7f, written as it is) and the bytes
// next to each escaped one (a borrow or a bit trick off by one would flag
// them).
var edgeStrings = []string{
	"", "a", "1234567", "12345678", "123456789", "123456789012345", "1234567890123456", "12345678901234567",
	"chk_01JDZ8Q3W9X7V5T3R1P0N8M6K4", "anna.smith42@example.com", "Chloé Müller", "日本語のテキスト",
	"\"", "\\", "<", ">", "&", "\b", "\f", "\n", "\r", "\t", "\x00", "\x01", "\x1f", "\x7f",
	" ", "!", "#", "%", "'", ";", "=", "?", "[", "]", "^", "~", "\x21\x23\x25\x27\x3b\x3d\x3f\x5b\x5d",
	"\u2028", "\u2029", "\u2027", "\u202a", "a\u2028b\u2029c", "\xe2\x80", "\xe2\x80\xa8\xe2",
	"\xff", "\xc3", "\xc3(", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xef\xbf\xbd", "😀", "😀😀😀😀😀",
	"1234567\xff", "12345678\x00", "1234567890123456<", "<1234567890123456", "abcdefg\"hijklmno\\pq",
	"é1234567", "1234567é", "12345678é", "123456789012345é", "ab\u2028cdefghijklmnop",
	"<script>alert('x')</script>", "https://t.example/o/1?a=b&c=d", "line\r\nnext\ttab",
	strings.Repeat("a", 1000), strings.Repeat("é", 100), strings.Repeat("a", 999) + "\n",
}

func TestAppendStringEdges(t *testing.T) {
	for _, s := range edgeStrings {
		checkString(t, s)
	}
}

// TestAppendStringEveryByteEveryPlace puts each of the 256 byte values at
// each position of strings of 1 to 24 Plain bytes (every word position,
// the overlapping tail, the short loop), alone and twice: the scan stops
// exactly where the reference first escapes or decodes.
func TestAppendStringEveryByteEveryPlace(t *testing.T) {
	for n := 1; n <= 24; n++ {
		for pos := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("x", n))
				b[pos] = byte(c)
				checkString(t, string(b))
				want := n
				if c >= utf8.RuneSelf || !Plain[c] {
					want = pos
				}
				if got := plainLen(string(b)); got != want {
					t.Fatalf("plainLen(%q) = %d, want %d", b, got, want)
				}
				if pos+1 < n {
					b[n-1] = byte(c)
					checkString(t, string(b))
				}
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range edgeStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkString(t, s)
	})
}

// typicalStrings are what the hottest answers write: ids, emails, names,
// codes, and a little text with escapes and runes outside ASCII.
var typicalStrings = []struct{ name, s string }{
	{"scanId", "r3-417"},
	{"verdict", "already_checked_in"},
	{"checkinId", "chk_01JDZ8Q3W9X7V5T3R1P0N8M6K4"},
	{"email", "grace.keller817@example.com"},
	{"name", "Grace Keller"},
	{"nameUTF8", "Chloé Müller"},
	{"url", "https://tickets.example.com/o/ord_01JDZ8Q3W9X7V5T3R1P0N8M6K4?a=b&c=d"},
	{"japanese", "東京国際フォーラム ホールA"},
	{"text", "Doors open at 18:00.\nBring \"this\" pass <and> a photo ID & smile."},
}

// BenchmarkAppendString compares the word-at-a-time AppendString ("new")
// with the byte loop it replaced ("old") on typicalStrings.
func BenchmarkAppendString(b *testing.B) {
	for _, tc := range typicalStrings {
		for _, impl := range []struct {
			name string
			fn   func([]byte, string) []byte
		}{{"old", appendStringRef}, {"new", AppendString}} {
			b.Run(tc.name+"/"+impl.name, func(b *testing.B) {
				b.ReportAllocs()
				buf := make([]byte, 0, 256)
				for b.Loop() {
					buf = impl.fn(buf[:0], tc.s)
				}
			})
		}
	}
}
