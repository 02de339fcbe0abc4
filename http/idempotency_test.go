package http

import (
	"strings"
	"testing"
	"ticketd/idempotency"
	"time"

	"github.com/stretchr/testify/require"
)

func TestIdempotencyReplayMismatchInFlight(t *testing.T) {
	h := newHarness(t, nil)
	post := func(key, body string) resp {
		return h.do("POST", "/v1/events/evt_1/orders", skLive, body, "Idempotency-Key", key)
	}
	first := post("k1", goodOrder)
	require.Equal(t, 201, first.status)
	require.Empty(t, first.header.Get("Idempotent-Replayed"))

	again := post("k1", goodOrder)
	require.Equal(t, 201, again.status)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, string(first.body), string(again.body), "the first answer, not a second run")
	require.Equal(t, "application/json", again.header.Get("Content-Type"))

	r := post("k1", strings.Replace(goodOrder, "ann@", "bob@", 1))
	require.Equal(t, 422, r.status)
	require.Equal(t, "INVALID_ARGUMENT", r.envelope(t).Status)

	// Another key id has its own namespace.
	r = h.do("POST", "/v1/events/evt_1/orders", skOld, goodOrder, "Idempotency-Key", "k1")
	require.Equal(t, 201, r.status)
	require.Empty(t, r.header.Get("Idempotent-Replayed"))
	require.NotEqual(t, first.result(t).Seq, r.result(t).Seq)

	// 4xx answers are stored too; 5xx are not, so a retry runs again.
	bad := post("k2", `{"email":"x"}`)
	require.Equal(t, 400, bad.status)
	r = post("k2", `{"email":"x"}`)
	require.Equal(t, 400, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	boom := strings.Replace(goodOrder, "ann@", "boom@", 1)
	require.Equal(t, 500, post("k3", boom).status)
	r = post("k3", boom)
	require.Equal(t, 500, r.status)
	require.Empty(t, r.header.Get("Idempotent-Replayed"))

	// In flight: the first request waits on the gate.
	slow := strings.Replace(goodOrder, "ann@", "slow@", 1)
	done := make(chan resp)
	go func() { done <- post("k4", slow) }()
	<-h.entered
	r = post("k4", slow)
	require.Equal(t, 409, r.status)
	require.Equal(t, "ALREADY_EXISTS", r.envelope(t).Status)
	require.Equal(t, "a request with this idempotency key is in progress", r.envelope(t).Message)
	close(h.gate)
	require.Equal(t, 201, (<-done).status)
	require.Equal(t, "true", post("k4", slow).header.Get("Idempotent-Replayed"))

	// Without the header nothing is remembered.
	a, b := h.do("POST", "/v1/events/evt_1/orders", skLive, goodOrder), h.do("POST", "/v1/events/evt_1/orders", skLive, goodOrder)
	require.NotEqual(t, a.result(t).Seq, b.result(t).Seq)

	r = post(strings.Repeat("k", 256), goodOrder)
	require.Equal(t, 400, r.status)
}

func TestMemoryIdempotencyBounds(t *testing.T) {
	now := time.Unix(1000, 0)
	m := NewMemoryIdempotency(time.Hour, 2, 10)
	fp := fingerprint([]byte("POST"), []byte("/x"), []byte("{}"))
	done := func(k string, body string) {
		st, _ := m.Begin("s", k, fp, now)
		require.Equal(t, idempotency.New, st)
		m.Finish("s", k, &idempotency.StoredResponse{Status: 200, Body: []byte(body)}, now)
	}
	done("a", "1234")
	done("b", "1234")
	done("c", "1234") // over 2 entries: a goes
	st, _ := m.Begin("s", "a", fp, now)
	require.Equal(t, idempotency.New, st)
	m.Finish("s", "a", nil, now) // released

	st, got := m.Begin("s", "c", fp, now)
	require.Equal(t, idempotency.Replay, st)
	require.Equal(t, "1234", string(got.Body))

	done("d", "12345678901") // over 10 bytes: older entries go
	require.LessOrEqual(t, m.bytes, 10+11)
	require.LessOrEqual(t, m.order.Len(), 2)

	st, _ = m.Begin("s", "d", fp, now.Add(2*time.Hour))
	require.Equal(t, idempotency.New, st, "expired after the ttl")
	require.Equal(t, 1, m.order.Len())
}

func TestIdempotencyComparesJSONByMeaning(t *testing.T) {
	h := newHarness(t, nil)
	post := func(key, body string) resp {
		return h.do("POST", "/v1/events/evt_1/orders", skLive, body, "Idempotency-Key", key)
	}
	first := post("canon", goodOrder)
	require.Equal(t, 201, first.status)
	// A retry layer that re-serialises: other key order, spacing, escapes
	// and number spelling is the same request.
	for _, body := range []string{
		"{\n  \"items\": [ {\"quantity\": 1, \"itemId\": \"tt_1\", \"itemType\": \"registration_type\"} ],\n  \"email\": \"ann@example.com\"\n}",
		`{"email":"\u0061nn@example.com","items":[{"itemType":"registration_type","itemId":"tt_1","quantity":1.0}]}`,
	} {
		r := post("canon", body)
		require.Equal(t, 201, r.status, body)
		require.Equal(t, "true", r.header.Get("Idempotent-Replayed"), body)
		require.Equal(t, string(first.body), string(r.body))
	}
	// Another value, or a number sent as a string, is another request.
	for _, body := range []string{
		strings.Replace(goodOrder, `"quantity":1`, `"quantity":2`, 1),
		strings.Replace(goodOrder, `"quantity":1`, `"quantity":"1"`, 1),
		strings.Replace(goodOrder, "ann@", "Ann@", 1),
	} {
		require.Equal(t, 422, post("canon", body).status, body)
	}
}

func TestFingerprintCanonical(t *testing.T) {
	m, p := []byte("POST"), []byte("/v1/x")
	fp := func(body string) [32]byte { return fingerprint(m, p, []byte(body)) }
	require.Equal(t, fp(`{"a":1,"b":[true,null,"x"]}`), fp(` { "b" : [ true , null , "\u0078" ] , "a" : 1.0 } `))
	require.NotEqual(t, fp(`{"a":1}`), fp(`{"a":2}`))
	require.NotEqual(t, fp(`{"a":1}`), fp(`{"a":1}x`), "trailing bytes are not the same document")
	require.Equal(t, fp(`not json`), fp(`not json`))
	require.NotEqual(t, fp(`not json`), fp(`not  json`), "a body that is not JSON counts by its bytes")
	require.NotEqual(t, fp(`1e400`), fp(`1E400`), "exponents count as written (no huge numbers are built)")
}

// unreachableIdem is an IdempotencyStore that cannot be read (a cluster
// without a majority).
type unreachableIdem struct{ finished int }

func (*unreachableIdem) Begin(string, string, [32]byte, time.Time) (idempotency.State, *idempotency.StoredResponse) {
	return idempotency.Unavailable, nil
}

func (u *unreachableIdem) Finish(string, string, *idempotency.StoredResponse, time.Time) {
	u.finished++
}

// TestIdempotencyStoreUnreachable: a key whose store cannot be read may
// have been answered already, so the request does not run: 503
// UNAVAILABLE, to be retried with the same key.
func TestIdempotencyStoreUnreachable(t *testing.T) {
	store := &unreachableIdem{}
	h := newHarness(t, func(c *Config) { c.Idempotency = store })
	r := h.do("POST", "/v1/events/evt_1/orders", skLive, goodOrder, "Idempotency-Key", "k1")
	require.Equal(t, 503, r.status)
	env := r.envelope(t)
	require.Equal(t, "UNAVAILABLE", env.Reason)
	require.Contains(t, env.Message, "retry it with the same Idempotency-Key")
	require.Zero(t, store.finished, "the request did not run")
	// Without a key the request runs as ever.
	require.Equal(t, 201, h.do("POST", "/v1/events/evt_1/orders", skLive, goodOrder).status)
}
