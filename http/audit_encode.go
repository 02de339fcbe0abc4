package http

import (
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// This file encodes audit entries without reflection: every audited write
// (each check-in of a burst) records one, and encoding/json's reflection
// and RawMessage compaction were most of the HTTP side of a check-in. The
// bytes are exactly those of json.Marshal(struct{V int; AuditEntry}{1, e})
// (audit_encode_test.go checks this), so stored entries do not change.

// appendAuditRecord appends the stored form of e. ok is false when Before
// or After is not plainly compact, HTML-safe JSON (whitespace, <, >, &,
// U+2028, U+2029 or empty): encoding/json would rewrite it, so the caller
// falls back to json.Marshal. auditJSON and the response encoder produce
// compact, escaped JSON, so the fallback is for foreign callers only.
func appendAuditRecord(b []byte, e *AuditEntry) (_ []byte, ok bool) {
	if !plainRaw(e.Before) || !plainRaw(e.After) {
		return b, false
	}
	b = append(b, `{"v":1,"id":`...)
	b = appendStdJSONString(b, e.ID)
	b = append(b, `,"unitId":`...)
	b = appendStdJSONString(b, e.UnitID)
	b = append(b, `,"actor":`...)
	b = appendStdJSONString(b, e.Actor)
	b = append(b, `,"actorType":`...)
	b = appendStdJSONString(b, e.ActorType)
	b = append(b, `,"operationId":`...)
	b = appendStdJSONString(b, e.OperationID)
	b = append(b, `,"method":`...)
	b = appendStdJSONString(b, e.Method)
	b = append(b, `,"route":`...)
	b = appendStdJSONString(b, e.Route)
	b = append(b, `,"path":`...)
	b = appendStdJSONString(b, e.Path)
	b = append(b, `,"targetIds":`...)
	if e.TargetIDs == nil {
		b = append(b, "null"...)
	} else {
		var keysBuf [8]string
		keys := keysBuf[:0]
		for k := range e.TargetIDs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendStdJSONString(b, k)
			b = append(b, ':')
			b = appendStdJSONString(b, e.TargetIDs[k])
		}
		b = append(b, '}')
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"before":`...)
	b = appendRaw(b, e.Before)
	b = append(b, `,"after":`...)
	b = appendRaw(b, e.After)
	b = append(b, `,"requestId":`...)
	b = appendStdJSONString(b, e.RequestID)
	b = append(b, `,"createdAt":"`...)
	b = e.CreatedAt.UTC().Truncate(time.Second).AppendFormat(b, time.RFC3339)
	return append(b, `"}`...), true
}

// plainRaw reports whether raw is written unchanged by encoding/json's
// compaction with HTML escaping: no whitespace outside strings, no <, >, &
// and no U+2028 or U+2029 anywhere. nil is plain (it becomes null).
func plainRaw(raw []byte) bool {
	if raw == nil {
		return true
	}
	if len(raw) == 0 {
		return false
	}
	inStr, esc := false, false
	for i, c := range raw {
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xe2 && i+2 < len(raw) && raw[i+1] == 0x80 && (raw[i+2] == 0xa8 || raw[i+2] == 0xa9):
			return false
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			return false
		}
	}
	return true
}

func appendRaw(b, raw []byte) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// appendAuditSuffix appends the time-and-sequence part of an audit key and
// id: 16 hex digits of ^unix nanoseconds, "-", 8 hex digits of seq.
func appendAuditSuffix(b []byte, t time.Time, seq uint32) []byte {
	b = appendHexPad(b, ^uint64(t.UnixNano()), 16)
	b = append(b, '-')
	return appendHexPad(b, uint64(seq), 8)
}

// appendHexPad appends v in lower-case hex, zero-padded to width digits.
func appendHexPad(b []byte, v uint64, width int) []byte {
	var buf [16]byte
	d := strconv.AppendUint(buf[:0], v, 16)
	for i := len(d); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// jsonPlain marks the ASCII bytes a JSON string holds as they are:
// printable, and none of ", \, <, >, &.
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendStdJSONString appends s as encoding/json writes a string with HTML
// escaping: short escapes for \b \f \n \r \t, \u00XX for other control
// characters and <, >, &, \ufffd for invalid UTF-8, and \u2028, \u2029.
func appendStdJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonPlain[c] {
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
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
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
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
