package http

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/idempotency"
	"ticketd/persistence"
)

func TestDurableIdempotencySurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 8, 22, 10, 0, 0, 0, time.UTC)
	open := func() (*persistence.Store, *DurableIdempotency) {
		st, err := persistence.Open(persistence.Options{Dir: dir})
		require.NoError(t, err)
		return st, NewDurableIdempotency(st, 24*time.Hour, nil)
	}
	st, d := open()
	fp := fingerprint([]byte("POST"), []byte("/v1/events"), []byte(`{"a":1}`))
	other := fingerprint([]byte("POST"), []byte("/v1/events"), []byte(`{"a":2}`))

	state, _ := d.Begin("key_1", "k1", fp, now)
	require.Equal(t, idempotency.New, state)
	state, _ = d.Begin("key_1", "k1", fp, now)
	assert.Equal(t, idempotency.InFlight, state, "a second request while the first runs")
	d.Finish("key_1", "k1", &idempotency.StoredResponse{Status: 201, ContentType: "application/json", Body: []byte(`{"id":"evt_1"}`)}, now)

	state, _ = d.Begin("key_1", "k2", fp, now)
	require.Equal(t, idempotency.New, state)
	d.Finish("key_1", "k2", nil, now) // a 5xx: released, not stored
	state, _ = d.Begin("key_1", "k2", fp, now)
	assert.Equal(t, idempotency.New, state, "a released claim can be retried")
	d.Finish("key_1", "k2", nil, now)
	require.NoError(t, st.Close())

	st, d = open()
	defer st.Close()
	state, resp := d.Begin("key_1", "k1", fp, now.Add(time.Hour))
	require.Equal(t, idempotency.Replay, state, "the answer survives a restart")
	assert.Equal(t, 201, resp.Status)
	assert.Equal(t, `{"id":"evt_1"}`, string(resp.Body))
	assert.Equal(t, "application/json", resp.ContentType)
	state, _ = d.Begin("key_1", "k1", other, now.Add(time.Hour))
	assert.Equal(t, idempotency.Mismatch, state)
	state, _ = d.Begin("key_2", "k1", other, now.Add(time.Hour))
	assert.Equal(t, idempotency.New, state, "another API key never sees the answer")
	d.Finish("key_2", "k1", nil, now)

	n, err := d.Sweep(now.Add(25 * time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	state, _ = d.Begin("key_1", "k1", other, now.Add(25*time.Hour))
	assert.Equal(t, idempotency.New, state, "expired answers are gone")
}

// TestDurableIdempotencyRecordCommittedWithTheWrite: the entry Record
// makes, committed in another batch (the write's, by its actor), is what
// Begin replays after a restart; Finish of the same answer stores nothing
// more; a request whose write may still land holds its key (409) until
// the hold ends, after which the durable record tells.
func TestDurableIdempotencyRecordCommittedWithTheWrite(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 8, 22, 10, 0, 0, 0, time.UTC)
	st, err := persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	d := NewDurableIdempotency(st, 24*time.Hour, nil)
	fp := fingerprint([]byte("POST"), []byte("/v1/events"), []byte(`{"a":1}`))

	state, _ := d.Begin("key_1", "k1", fp, now)
	require.Equal(t, idempotency.New, state)
	answer := &idempotency.StoredResponse{Status: 201, ContentType: "application/json", Body: []byte(`{"id":"evt_1"}`), Durable: true}
	w := &idempotency.KeyedWrite{Key: idempotency.RecordKey("key_1", "k1"), FP: fp, Expires: now.Add(d.TTL()), Status: 201}
	k, v := w.Key, KeyedValue(w, map[string]any{"id": "evt_1"})
	b := st.NewBatch()
	b.Append("evt_1", 1, []byte("the write"))
	b.Put(k, v)
	require.NoError(t, st.Commit(b))
	b.Close()
	d.Finish("key_1", "k1", answer, now)

	// A write whose ask timed out: its key is held, then the store tells.
	state, _ = d.Begin("key_1", "k2", fp, now)
	require.Equal(t, idempotency.New, state)
	d.Hold("key_1", "k2", now.Add(time.Minute))
	state, _ = d.Begin("key_1", "k2", fp, now.Add(30*time.Second))
	assert.Equal(t, idempotency.InFlight, state, "held while the write may still land")
	w2 := &idempotency.KeyedWrite{Key: idempotency.RecordKey("key_1", "k2"), FP: fp, Expires: now.Add(d.TTL()), Status: 201}
	k2, v2 := w2.Key, KeyedValue(w2, map[string]any{"id": "evt_2"})
	b = st.NewBatch()
	b.Put(k2, v2) // it landed
	require.NoError(t, st.Commit(b))
	b.Close()
	state, resp := d.Begin("key_1", "k2", fp, now.Add(61*time.Second))
	require.Equal(t, idempotency.Replay, state, "after the hold, the record the write committed")
	assert.Equal(t, `{"id":"evt_2"}`, string(resp.Body))
	require.NoError(t, st.Close())

	st, err = persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	d = NewDurableIdempotency(st, 24*time.Hour, nil)
	state, resp = d.Begin("key_1", "k1", fp, now.Add(time.Hour))
	require.Equal(t, idempotency.Replay, state)
	assert.Equal(t, 201, resp.Status)
	assert.Equal(t, `{"id":"evt_1"}`, string(resp.Body))
	other := fingerprint([]byte("POST"), []byte("/v1/events"), []byte(`{"a":2}`))
	state, _ = d.Begin("key_1", "k1", other, now.Add(time.Hour))
	assert.Equal(t, idempotency.Mismatch, state, "another body under a committed key: 422")
}
