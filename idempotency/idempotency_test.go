package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
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
