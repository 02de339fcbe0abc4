package audit

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/persistence"
)

func TestAuditLogIsDurablePagedAndPruned(t *testing.T) {
	dir := t.TempDir()
	st, err := persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	l := New(st, 24*time.Hour, nil)
	l.now = func() time.Time { return now }
	l.lastPrune = now // no prune before the entries exist
	for i, at := range []time.Time{now.Add(-48 * time.Hour), now.Add(-2 * time.Hour), now.Add(-time.Hour)} {
		l.Record(AuditEntry{UnitID: "bu_1", Actor: "key_1", OperationID: "op" + strconv.Itoa(i), Method: "POST",
			After: json.RawMessage(`{"id":"x"}`), CreatedAt: event.At(at)})
		if i == 0 {
			require.NoError(t, l.Flush()) // a chunk of its own, all of it expired
		}
	}
	l.Record(AuditEntry{UnitID: "bu_2", Actor: "admin", OperationID: "other", Method: "PATCH", CreatedAt: event.At(now)})
	require.NoError(t, l.Close())
	require.NoError(t, st.Close())

	st, err = persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	l = New(st, 24*time.Hour, nil)
	l.now = func() time.Time { return now }
	l.lastPrune = now
	got, more, err := l.List("bu_1", Filter{}, "", 10)
	require.NoError(t, err)
	assert.False(t, more)
	require.Len(t, got, 2, "the entry beyond the retention is not listed")
	assert.Equal(t, "op2", got[0].OperationID, "newest first")
	assert.JSONEq(t, `{"id":"x"}`, string(got[0].After))

	p1, more, err := l.List("bu_1", Filter{}, "", 1)
	require.NoError(t, err)
	assert.True(t, more)
	p2, _, err := l.List("bu_1", Filter{}, p1[0].ID, 1)
	require.NoError(t, err)
	assert.Equal(t, "op1", p2[0].OperationID)

	// The prune (done by a flush, at most hourly) deletes expired entries.
	keys := func() int {
		n := 0
		require.NoError(t, st.Scan([]byte(auditPrefix), func(_, _ []byte) error { n++; return nil }))
		return n
	}
	assert.Equal(t, 3, keys(), "one chunk per unit and flush")
	l.lastPrune = now.Add(-auditPruneEvery)
	require.NoError(t, l.Flush())
	assert.Equal(t, 2, keys())
	other, _, err := l.List("bu_2", Filter{Actor: "admin"}, "", 10)
	require.NoError(t, err)
	require.Len(t, other, 1)
	assert.Equal(t, "other", other[0].OperationID)
}

// A flush stores a unit's entries as chunks of at most auditFlushMax,
// about a fifth of their JSON in size; paging reads each entry once,
// newest first, across chunks and the one-entry layout of older builds.
func TestAuditLogChunksPageExactly(t *testing.T) {
	st, err := persistence.Open(persistence.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer st.Close()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	l := New(st, 24*time.Hour, nil)
	l.now = func() time.Time { return now }
	l.lastPrune = now

	// An entry as an older build stored it: one key, its JSON as value.
	legacy := AuditEntry{ID: "aud_" + string(appendAuditSuffix(nil, now.Add(-time.Hour), 1)), UnitID: "bu_1",
		OperationID: "legacy", Method: "POST", CreatedAt: event.At(now.Add(-time.Hour))}
	v, ok := appendAuditRecord(nil, &legacy)
	require.True(t, ok)
	b := st.NewBatch()
	b.Put([]byte(auditPrefix+"bu_1/"+legacy.ID[len("aud_"):]), v)
	require.NoError(t, st.Commit(b))
	b.Close()

	const n = auditFlushMax + 44
	body := []byte(`{"id":"chk_01","registrationId":"reg_0123456789","subjectType":"event","status":"checked_in"}`)
	var rawBytes int
	l.mu.Lock() // one flush for all: no timer may flush a part of them
	for i := range n {
		e := AuditEntry{UnitID: "bu_1", Actor: "key_1", OperationID: "createCheckin", Method: "POST",
			Route: "/v1/events/{eventId}/checkins", Path: "/p/" + strconv.Itoa(i), After: body, CreatedAt: event.At(now.Add(time.Duration(i) * time.Millisecond))}
		raw, ok := appendAuditRecord(nil, &e)
		require.True(t, ok)
		rawBytes += len(raw)
		l.seq++
		l.buf = append(l.buf, auditRecord{e: e, seq: l.seq})
	}
	l.mu.Unlock()
	require.NoError(t, l.Flush())

	var chunks, stored int
	require.NoError(t, st.Scan([]byte(auditPrefix+"bu_1/"), func(k, v []byte) error {
		if v[0] == auditChunkVersion {
			chunks++
			stored += len(v)
		}
		return nil
	}))
	assert.Equal(t, 2, chunks, "%d entries: one full chunk and the rest", n)
	assert.Less(t, stored, rawBytes/3, "chunks are compressed")

	var got []AuditEntry
	after := ""
	for {
		page, more, err := l.List("bu_1", Filter{}, after, 7)
		require.NoError(t, err)
		got = append(got, page...)
		if !more {
			break
		}
		after = page[len(page)-1].ID
	}
	require.Len(t, got, n+1)
	for _, e := range got {
		require.True(t, ValidID(e.ID), "every id listed is a valid cursor position: %s", e.ID)
	}
	for i, e := range got[:n] {
		require.Equal(t, "/p/"+strconv.Itoa(n-1-i), e.Path, "newest first, each once")
	}
	assert.Equal(t, "legacy", got[n].OperationID, "the one-entry layout is read, oldest here")

	// Record keeps its own copy of the bodies (a response buffer is reused).
	after0 := []byte(`{"id":"a"}`)
	l.Record(AuditEntry{UnitID: "bu_2", OperationID: "x", Method: "POST", After: after0, CreatedAt: event.At(now)})
	copy(after0, `{"id":"b"}`)
	one, _, err := l.List("bu_2", Filter{}, "", 1)
	require.NoError(t, err)
	require.Len(t, one, 1)
	assert.JSONEq(t, `{"id":"a"}`, string(one[0].After))
}

func TestRedactSecrets(t *testing.T) {
	assert.JSONEq(t, `{"id":"k","key":"[redacted]"}`, string(RedactSecrets([]byte(`{"id":"k","key":"sk_live_123"}`))))
	assert.JSONEq(t, `{"secret":"[redacted]","n":1}`, string(RedactSecrets([]byte(`{"secret":"whsec_abc","n":1}`))))
	assert.Equal(t, `{"redacted":true}`, string(RedactSecrets([]byte(`{"nested":{"k":"sk_x"}}`))))
	assert.Equal(t, `{"a":"b"}`, string(RedactSecrets([]byte(`{"a":"b"}`))))
	// A created door device's answer: the one-time code and its link.
	assert.JSONEq(t, `{"id":"dev_1","setupCode":"[redacted]","setupUrl":"[redacted]"}`,
		string(RedactSecrets([]byte(`{"id":"dev_1","setupCode":"ABCD-EFGH","setupUrl":"http://x/door?setup=ABCD-EFGH"}`))))
	assert.JSONEq(t, `{"deviceId":"dev_1","key":"[redacted]"}`, string(RedactSecrets([]byte(`{"deviceId":"dev_1","key":"dk_abc"}`))))
}

func TestValidID(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	suffix := string(appendAuditSuffix(nil, now, 7))
	for id, want := range map[string]bool{
		"aud_" + suffix:                          true, // the one-entry layout
		"aud_" + suffix + "-00a1":                true,
		"aud_" + suffix + "-00A1":                false,
		"aud_" + suffix + "-0a1":                 false,
		"aud_" + suffix + "+00a1":                false,
		"aud_" + suffix[:24]:                     false,
		"aud_" + suffix[:16] + "x" + suffix[17:]: false,
		suffix + "-00a1":                         false,
		"aud_":                                   false,
		"":                                       false,
		"hello":                                  false,
	} {
		assert.Equal(t, want, ValidID(id), id)
	}
	st, err := persistence.Open(persistence.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer st.Close()
	l := New(st, 24*time.Hour, nil)
	_, _, err = l.List("bu_1", Filter{}, "hello", 10)
	require.ErrorIs(t, err, ErrBadAfter)
}
