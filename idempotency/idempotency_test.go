package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecordRoundTrip: a record decodes to what was encoded (the expiry
// to the second), a keyed write's record holds its answer, and bytes that
// are not a record are ErrBadRecord, never a panic.
func TestRecordRoundTrip(t *testing.T) {
	fp := [32]byte{1, 2, 3}
	exp := time.Unix(1_900_000_000, 0)
	w := &KeyedWrite{Key: RecordKey("key_1", "k1"), FP: fp, Expires: exp, Status: 201}
	rec := w.Record([]byte(`{"id":"evt_1"}`))
	gotFP, gotExp, r, err := DecodeRecord(rec)
	require.NoError(t, err)
	require.Equal(t, fp, gotFP)
	require.True(t, exp.Equal(gotExp))
	require.Equal(t, &StoredResponse{Status: 201, ContentType: "application/json", Body: []byte(`{"id":"evt_1"}`)}, r)
	h := sha256.Sum256([]byte("k1"))
	require.Equal(t, "idem/key_1/"+hex.EncodeToString(h[:]), string(w.Key), "the key is scoped and hashed")

	for _, bad := range [][]byte{nil, {2}, rec[:44], append([]byte{1}, make([]byte, 43)...)} {
		_, _, _, err := DecodeRecord(bad)
		require.ErrorIs(t, err, ErrBadRecord, "%x", bad)
	}
	require.True(t, Live(rec), "expires in 2030")
	require.False(t, Live(EncodeRecord(fp, time.Now().Add(-time.Second), r)), "expired")
	require.False(t, Live([]byte("x")), "not a record")
}

// TestKeyedWriteRecordOf: the record another node remakes of a write's
// result is the result itself, its named view, or the fixed answer; an
// unknown view records nothing.
func TestKeyedWriteRecordOf(t *testing.T) {
	RegisterView("test.half", func(r any) any { return r.(int) / 2 })
	enc := func(v any) ([]byte, bool) { return []byte(fmt.Sprint(v)), true }
	w := &KeyedWrite{Key: RecordKey("s", "k"), FP: [32]byte{7}, Expires: time.Now().Add(time.Hour), Status: 200}
	body := func(rec []byte) string {
		t.Helper()
		fp, _, r, err := DecodeRecord(rec)
		if err != nil || fp != w.FP {
			t.Fatalf("record %q: %v", rec, err)
		}
		return fmt.Sprint(r.Status, " ", string(r.Body))
	}
	if got := body(w.RecordOf(42, enc)); got != "200 42" {
		t.Fatalf("the result itself: %s", got)
	}
	w.View = "test.half"
	if got := body(w.RecordOf(42, enc)); got != "200 21" {
		t.Fatalf("the named view: %s", got)
	}
	w.Fixed = &StoredResponse{Status: 503, ContentType: "application/json", Body: []byte("refused")}
	if got := body(w.RecordOf(42, enc)); got != "503 refused" {
		t.Fatalf("the fixed answer: %s", got)
	}
	w.Fixed, w.View = nil, "test.unknown"
	if rec := w.RecordOf(42, enc); rec != nil {
		t.Fatalf("an unknown view recorded %q", rec)
	}
}
