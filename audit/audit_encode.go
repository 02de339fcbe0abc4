package audit

import (
	"slices"
	"strconv"
	"time"

	"ticketd/internal/jsonenc"
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
	b = jsonenc.AppendString(b, e.ID)
	b = append(b, `,"unitId":`...)
	b = jsonenc.AppendString(b, e.UnitID)
	b = append(b, `,"actor":`...)
	b = jsonenc.AppendString(b, e.Actor)
	b = append(b, `,"actorType":`...)
	b = jsonenc.AppendString(b, e.ActorType)
	b = append(b, `,"operationId":`...)
	b = jsonenc.AppendString(b, e.OperationID)
	b = append(b, `,"method":`...)
	b = jsonenc.AppendString(b, e.Method)
	b = append(b, `,"route":`...)
	b = jsonenc.AppendString(b, e.Route)
	b = append(b, `,"path":`...)
	b = jsonenc.AppendString(b, e.Path)
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
			b = jsonenc.AppendString(b, k)
			b = append(b, ':')
			b = jsonenc.AppendString(b, e.TargetIDs[k])
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
	b = jsonenc.AppendString(b, e.RequestID)
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
