package audit

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
)

// auditStd is the reference encoding of a stored audit entry.
func auditStd(t *testing.T, e AuditEntry) []byte {
	t.Helper()
	v, err := json.Marshal(struct {
		V int `json:"v"`
		AuditEntry
	}{1, e})
	require.NoError(t, err)
	return v
}

// auditRandString draws strings rich in what JSON escapes: quotes,
// backslashes, control characters, HTML characters, invalid UTF-8,
// U+2028/2029 and multi-byte runes.
func auditRandString(r *rand.Rand) string {
	pieces := []string{"a", "Z", "0", "/", "\"", "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f",
		"<", ">", "&", "\u2028", "\u2029", "é", "日本", "😀", "\xff", "\xe2\x80", "\xed\xa0\x80", " ", "{", "}"}
	n := r.IntN(12)
	s := ""
	for range n {
		s += pieces[r.IntN(len(pieces))]
	}
	return s
}

func TestAppendAuditRecordMatchesEncodingJSON(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range 2000 {
		e := AuditEntry{
			ID: auditRandString(r), UnitID: auditRandString(r), Actor: auditRandString(r), ActorType: auditRandString(r),
			OperationID: auditRandString(r), Method: auditRandString(r), Route: auditRandString(r), Path: auditRandString(r),
			Status: r.IntN(1000) - 100, RequestID: auditRandString(r),
			CreatedAt: event.At(time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)).In(time.FixedZone("x", 3600))),
		}
		switch r.IntN(3) {
		case 0:
			e.TargetIDs = nil
		case 1:
			e.TargetIDs = map[string]string{}
		default:
			e.TargetIDs = map[string]string{}
			for range r.IntN(12) {
				e.TargetIDs[auditRandString(r)] = auditRandString(r)
			}
		}
		if r.IntN(4) > 0 {
			e.Before = auditJSON(map[string]any{"s": auditRandString(r), "n": r.Float64() * 1e6, "a": []string{auditRandString(r)}})
		}
		if r.IntN(4) > 0 {
			e.After = auditJSON(event.Detail{Field: auditRandString(r), Reason: auditRandString(r)})
		}
		got, ok := appendAuditRecord(nil, &e)
		require.True(t, ok, "seed %d case %d", seed, i)
		require.Equal(t, string(auditStd(t, e)), string(got), "seed %d case %d", seed, i)
	}
}

func TestAppendAuditRecordFallsBackOnRawThatEncodingJSONRewrites(t *testing.T) {
	for _, raw := range []string{`{ "a": 1 }`, `{"a":"<b>"}`, "[\n1]", `"` + "\u2028" + `"`, ``} {
		e := AuditEntry{After: json.RawMessage(raw)}
		_, ok := appendAuditRecord(nil, &e)
		require.False(t, ok, "%q", raw)
	}
	e := AuditEntry{After: json.RawMessage(`{"a":[1,2,{"b":null}],"c":"\u003c","d":"x y\" z"}`), TargetIDs: map[string]string{"eventId": "evt_1"}}
	got, ok := appendAuditRecord(nil, &e)
	require.True(t, ok)
	require.Equal(t, string(auditStd(t, e)), string(got))
}

func TestAppendAuditSuffixMatchesSprintf(t *testing.T) {
	for _, c := range []struct {
		t   time.Time
		seq uint32
	}{{time.Unix(0, 0), 0}, {time.Unix(1_800_000_000, 123), 1}, {time.Unix(-5, 0), 0xffffffff}, {time.Unix(1<<33, 999), 0xabc}} {
		want := fmtAuditSuffix(c.t, c.seq)
		require.Equal(t, want, string(appendAuditSuffix(nil, c.t, c.seq)))
	}
}

// fmtAuditSuffix is how Record formatted the key suffix before it was
// hand-written.
func fmtAuditSuffix(t time.Time, seq uint32) string {
	return fmt.Sprintf("%016x-%08x", ^uint64(t.UnixNano()), seq)
}

// auditJSON encodes v as the recording middleware stores a body.
func auditJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return RedactSecrets(b)
}
