package http

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/actors/event"
	"ticketd/persistence"
)

func TestAuditLogIsDurablePagedAndPruned(t *testing.T) {
	dir := t.TempDir()
	st, err := persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	l := NewAuditLog(st, 24*time.Hour, nil)
	l.now = func() time.Time { return now }
	l.lastPrune = now // no prune before the entries exist
	for i, at := range []time.Time{now.Add(-48 * time.Hour), now.Add(-2 * time.Hour), now.Add(-time.Hour)} {
		l.Record(AuditEntry{UnitID: "bu_1", Actor: "key_1", OperationID: "op" + itoa(i), Method: "POST",
			After: json.RawMessage(`{"id":"x"}`), CreatedAt: event.At(at)})
	}
	l.Record(AuditEntry{UnitID: "bu_2", Actor: "admin", OperationID: "other", Method: "PATCH", CreatedAt: event.At(now)})
	require.NoError(t, l.Close())
	require.NoError(t, st.Close())

	st, err = persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	l = NewAuditLog(st, 24*time.Hour, nil)
	l.now = func() time.Time { return now }
	l.lastPrune = now
	got, more, err := l.List("bu_1", AuditFilter{}, "", 10)
	require.NoError(t, err)
	assert.False(t, more)
	require.Len(t, got, 2, "the entry beyond the retention is not listed")
	assert.Equal(t, "op2", got[0].OperationID, "newest first")
	assert.JSONEq(t, `{"id":"x"}`, string(got[0].After))

	p1, more, err := l.List("bu_1", AuditFilter{}, "", 1)
	require.NoError(t, err)
	assert.True(t, more)
	p2, _, err := l.List("bu_1", AuditFilter{}, p1[0].ID, 1)
	require.NoError(t, err)
	assert.Equal(t, "op1", p2[0].OperationID)

	// The prune (done by a flush, at most hourly) deletes expired entries.
	keys := func() int {
		n := 0
		require.NoError(t, st.Scan([]byte(auditPrefix), func(_, _ []byte) error { n++; return nil }))
		return n
	}
	assert.Equal(t, 4, keys())
	l.lastPrune = now.Add(-auditPruneEvery)
	require.NoError(t, l.Flush())
	assert.Equal(t, 3, keys())
	other, _, err := l.List("bu_2", AuditFilter{Actor: "admin"}, "", 10)
	require.NoError(t, err)
	require.Len(t, other, 1)
	assert.Equal(t, "other", other[0].OperationID)
}

func TestRedactSecrets(t *testing.T) {
	assert.JSONEq(t, `{"id":"k","key":"[redacted]"}`, string(redactSecrets([]byte(`{"id":"k","key":"sk_live_123"}`))))
	assert.JSONEq(t, `{"secret":"[redacted]","n":1}`, string(redactSecrets([]byte(`{"secret":"whsec_abc","n":1}`))))
	assert.Equal(t, `{"redacted":true}`, string(redactSecrets([]byte(`{"nested":{"k":"sk_x"}}`))))
	assert.Equal(t, `{"a":"b"}`, string(redactSecrets([]byte(`{"a":"b"}`))))
}
