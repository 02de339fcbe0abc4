// Package jsonenc appends JSON strings byte for byte as encoding/json
// writes them (HTML escaping on), without reflection: the response encoder
// and the audit log write their hot values by hand and must give the bytes
// json.Marshal gives. It holds no state; every function is safe for
// concurrent use.
package jsonenc

import (
	"math/bits"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// Plain marks the ASCII bytes a JSON string holds as they are:
// printable, and none of ", \, <, >, &.
var Plain = func() (t [utf8.RuneSelf]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s as encoding/json writes a string with HTML
// escaping: short escapes for \b \f \n \r \t, \u00XX for other control
// characters and <, >, &, \ufffd for invalid UTF-8, and \u2028, \u2029.
//
// Most strings on the wire (ids, emails, names, codes) hold only Plain
// bytes: those are found 8 bytes at a time (plainLen) and copied at once;
// from the first other byte on, appendEscaped writes the rest.
func AppendString(b []byte, s string) []byte {
	i := 0
	if len(s) < 8 {
		// Too short for a word: the byte loop, here rather than in
		// plainLen, saves a short id the call.
		for i < len(s) && s[i] < utf8.RuneSelf && Plain[s[i]] {
			i++
		}
	} else {
		i = plainLen(s)
	}
	if i < len(s) {
		return appendEscaped(b, s, i)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainRunMin is the least bytes left for which appendEscaped looks for
// the end of a run of Plain bytes with plainLen (measured with
// BenchmarkAppendString: below it, the byte loop is as fast).
const plainRunMin = 16

// appendEscaped is AppendString for an s whose first byte that is not
// Plain is s[i]: from there on, every byte is written as encoding/json
// writes it, and a run of Plain bytes is found with plainLen and copied in
// one piece.
func appendEscaped(b []byte, s string, i int) []byte {
	b = append(b, '"')
	start := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if Plain[c] {
				// A long run is found a word at a time; a short one
				// (the rest of a name after its é) costs less byte by
				// byte than the call.
				if len(s)-i >= plainRunMin {
					i += plainLen(s[i:])
				} else {
					i++
				}
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
		// Not ASCII: checked rune by rune (no plainLen call per rune, which
		// would stop at once in a text that is not Latin).
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
		i += size // a valid rune: written as it is
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// The SWAR (SIMD within a register) constants: a byte's lowest bit in
// every byte of a word, and its highest.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plainLen returns the length of s's longest prefix of Plain bytes.
func plainLen(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if m := notPlain(load64(s[i : i+8])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	if i == len(s) {
		return i
	}
	if len(s) >= 8 {
		// The tail as the last 8 bytes, overlapping checked ones: those
		// are Plain, so the first flagged byte is the tail's.
		if m := notPlain(load64(s[len(s)-8:])); m != 0 {
			return len(s) - 8 + bits.TrailingZeros64(m)/8
		}
		return len(s)
	}
	for ; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || !Plain[c] {
			return i
		}
	}
	return i
}

// load64 reads w's 8 bytes as a little-endian word, so the string's first
// byte is the word's lowest (the compiler makes it one load).
func load64(w string) uint64 {
	_ = w[7]
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

// notPlain sets the high bit of x's lowest byte that is not Plain (a
// control character, ", \, <, >, & or any byte >= 0x80), and maybe of
// bytes above it, never of one below: each test below is exact up to its
// first hit, as a borrow only leaves a byte that hit, and so is their OR.
// 0 when all 8 bytes are Plain.
func notPlain(x uint64) uint64 {
	return x&msb | // >= 0x80: UTF-8, checked rune by rune
		(x-0x20*lsb)&^x&msb | // < 0x20: control characters
		hasZero(x^('\\'*lsb)) |
		hasZero((x|0x02*lsb)^('>'*lsb)) | // < (0x3c) or > (0x3e)
		hasZero((x|0x04*lsb)^('&'*lsb)) // " (0x22) or & (0x26)
}

// hasZero sets the high bit of x's lowest zero byte (and maybe of bytes
// above it, never of one below); 0 when no byte is zero.
func hasZero(x uint64) uint64 { return (x - lsb) &^ x & msb }
