package webhooks_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/persistence"
	"ticketd/webhooks"
)

// receiver is a real HTTP endpoint on a loopback port that records what it
// gets and fails the first `fail` requests with 500.
type receiver struct {
	mu    sync.Mutex
	fail  int
	calls []call
	srv   *httptest.Server
}

type call struct {
	id, sig string
	body    []byte
}

func newReceiver(t *testing.T, fail int) *receiver {
	r := &receiver{fail: fail}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.calls = append(r.calls, call{id: req.Header.Get("Webhook-Id"), sig: req.Header.Get(webhooks.SignatureHeader), body: b})
		n := len(r.calls)
		r.mu.Unlock()
		if n <= r.fail {
			w.WriteHeader(500)
			return
		}
		w.WriteHeader(204)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) got() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func open(t *testing.T, cfg webhooks.Config) (*webhooks.Service, *persistence.Store) {
	st, err := persistence.Open(persistence.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	if cfg.BackoffMin == 0 {
		cfg.BackoffMin, cfg.BackoffMax = 5*time.Millisecond, 20*time.Millisecond
	}
	cfg.PollInterval = 5 * time.Millisecond
	cfg.Timeout = 2 * time.Second
	w, err := webhooks.New(cfg, st, nil)
	require.NoError(t, err)
	w.Start()
	t.Cleanup(func() { _ = w.Close(); _ = st.Close() })
	return w, st
}

// enqueue writes a queue entry as an event actor would.
func enqueue(t *testing.T, st *persistence.Store, key, unit, typ string) webhooks.HookEvent {
	h := webhooks.HookEvent{ID: "whevt_" + key, Type: typ, EventID: "evt_1", UnitID: unit,
		CreatedAt: time.Now().UTC(), Data: json.RawMessage(`{"id":"reg_1"}`)}
	b, err := json.Marshal(h)
	require.NoError(t, err)
	bt := st.NewBatch()
	defer bt.Close()
	bt.Put([]byte(webhooks.InboxPrefix+"evt_1/"+key), b)
	require.NoError(t, st.Commit(bt))
	return h
}

func ptr[T any](v T) *T { return &v }

func TestRetriedWithSameIDAndSigned(t *testing.T) {
	w, st := open(t, webhooks.Config{AllowPrivate: true})
	rc := newReceiver(t, 2)
	ep, err := w.Create("bu_1", webhooks.Input{URL: ptr(rc.srv.URL), EventTypes: []string{webhooks.HookRegistrationCreated}})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(ep.Secret, "whsec_"))
	other, err := w.Create("bu_2", webhooks.Input{URL: ptr(rc.srv.URL), EventTypes: []string{webhooks.HookRegistrationCreated}})
	require.NoError(t, err)

	h := enqueue(t, st, "0000000000000001-0000", "bu_1", webhooks.HookRegistrationCreated)
	enqueue(t, st, "0000000000000002-0000", "bu_1", webhooks.HookCheckinCreated) // not subscribed
	w.Wake()
	require.Eventually(t, func() bool { return len(rc.got()) >= 3 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	calls := rc.got()
	require.Len(t, calls, 3, "two failures, one success, nothing else")
	for _, c := range calls {
		assert.Equal(t, h.ID, c.id)
		assert.Equal(t, string(calls[0].body), string(c.body), "the same bytes on every attempt")
		require.NoError(t, webhooks.Verify(c.sig, c.body, ep.Secret, time.Now(), time.Minute))
		assert.ErrorIs(t, webhooks.Verify(c.sig, c.body, other.Secret, time.Now(), time.Minute), webhooks.ErrBadSignature)
	}
	var b struct {
		ID, Type  string
		CreatedAt time.Time
		Data      map[string]any
	}
	require.NoError(t, json.Unmarshal(calls[0].body, &b))
	assert.Equal(t, h.ID, b.ID)
	assert.Equal(t, webhooks.HookRegistrationCreated, b.Type)
	assert.Equal(t, "reg_1", b.Data["id"])

	log, err := w.Deliveries("bu_1", ep.ID)
	require.NoError(t, err)
	require.Len(t, log, 3)
	assert.True(t, log[0].Succeeded)
	assert.Equal(t, 3, log[0].Attempt)
	assert.Equal(t, 500, log[2].StatusCode)
	assert.Equal(t, 1, log[2].Attempt)
	_, err = w.Deliveries("bu_2", ep.ID)
	assert.ErrorIs(t, err, webhooks.ErrNotFound, "another unit's endpoint")
	got, err := w.Get("bu_1", ep.ID)
	require.NoError(t, err)
	assert.Zero(t, got.ConsecutiveFailures, "a success resets the count")
}

func TestDisabledAfterConsecutiveFailures(t *testing.T) {
	w, st := open(t, webhooks.Config{AllowPrivate: true, DisableAfter: 3})
	rc := newReceiver(t, 1000)
	ep, err := w.Create("bu_1", webhooks.Input{URL: ptr(rc.srv.URL), EventTypes: []string{webhooks.HookOrderPaid}})
	require.NoError(t, err)
	enqueue(t, st, "0000000000000001-0000", "bu_1", webhooks.HookOrderPaid)
	w.Wake()
	require.Eventually(t, func() bool {
		e, err := w.Get("bu_1", ep.ID)
		return err == nil && !e.Enabled
	}, 5*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	assert.Len(t, rc.got(), 3, "no attempt after the endpoint was disabled")
	e, _ := w.Get("bu_1", ep.ID)
	assert.Contains(t, e.DisabledReason, "3 consecutive")

	// Disabled endpoints get no new deliveries; enabling resets the count.
	enqueue(t, st, "0000000000000002-0000", "bu_1", webhooks.HookOrderPaid)
	w.Wake()
	time.Sleep(50 * time.Millisecond)
	assert.Len(t, rc.got(), 3)
	e, err = w.SetEnabled("bu_1", ep.ID, true)
	require.NoError(t, err)
	assert.True(t, e.Enabled)
	assert.Zero(t, e.ConsecutiveFailures)
}

func TestRotationSignsWithBothSecrets(t *testing.T) {
	w, st := open(t, webhooks.Config{AllowPrivate: true})
	rc := newReceiver(t, 0)
	ep, err := w.Create("bu_1", webhooks.Input{URL: ptr(rc.srv.URL), EventTypes: []string{webhooks.HookCheckinCreated}})
	require.NoError(t, err)
	rot, err := w.RotateSecret("bu_1", ep.ID)
	require.NoError(t, err)
	require.NotEqual(t, ep.Secret, rot.Secret)
	enqueue(t, st, "0000000000000001-0000", "bu_1", webhooks.HookCheckinCreated)
	w.Wake()
	require.Eventually(t, func() bool { return len(rc.got()) == 1 }, 5*time.Second, 5*time.Millisecond)
	c := rc.got()[0]
	assert.Equal(t, 2, strings.Count(c.sig, "v1="))
	assert.NoError(t, webhooks.Verify(c.sig, c.body, rot.Secret, time.Now(), time.Minute))
	assert.NoError(t, webhooks.Verify(c.sig, c.body, ep.Secret, time.Now(), time.Minute))
}

func TestEndpointsDurableAndValidated(t *testing.T) {
	dir := t.TempDir()
	st, err := persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	w, err := webhooks.New(webhooks.Config{AllowPrivate: true}, st, nil)
	require.NoError(t, err)
	_, err = w.Create("bu_1", webhooks.Input{URL: ptr("ftp://x"), EventTypes: []string{webhooks.HookOrderPaid}})
	assert.ErrorIs(t, err, webhooks.ErrInvalid)
	_, err = w.Create("bu_1", webhooks.Input{URL: ptr("https://example.test/h"), EventTypes: []string{"nope"}})
	assert.ErrorIs(t, err, webhooks.ErrInvalid)
	ep, err := w.Create("bu_1", webhooks.Input{URL: ptr("https://example.test/h"), EventTypes: []string{webhooks.HookOrderPaid},
		Description: ptr("crm")})
	require.NoError(t, err)
	_, err = w.Update("bu_1", ep.ID, webhooks.Input{Description: ptr("crm sync")})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, st.Close())

	st, err = persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	w, err = webhooks.New(webhooks.Config{AllowPrivate: true}, st, nil)
	require.NoError(t, err)
	got, err := w.Get("bu_1", ep.ID)
	require.NoError(t, err)
	assert.Equal(t, "crm sync", got.Description)
	assert.Equal(t, ep.Secret, got.Secret)
	require.NoError(t, w.Delete("bu_1", ep.ID))
	assert.Empty(t, w.List("bu_1"))
}

func TestVerifyRejects(t *testing.T) {
	body := []byte(`{"a":1}`)
	now := time.Unix(1_700_000_000, 0)
	h := webhooks.Signature(now.Unix(), body, "whsec_a")
	assert.NoError(t, webhooks.Verify(h, body, "whsec_a", now, time.Minute))
	assert.ErrorIs(t, webhooks.Verify(h, []byte(`{"a":2}`), "whsec_a", now, time.Minute), webhooks.ErrBadSignature)
	assert.ErrorIs(t, webhooks.Verify(h, body, "whsec_a", now.Add(time.Hour), time.Minute), webhooks.ErrBadSignature)
	assert.ErrorIs(t, webhooks.Verify("garbage", body, "whsec_a", now, 0), webhooks.ErrBadSignature)
	assert.ErrorIs(t, webhooks.Verify("t=1", body, "whsec_a", now, 0), webhooks.ErrBadSignature)
}

func TestDeliveryLogIsDurableAndBounded(t *testing.T) {
	dir := t.TempDir()
	st, err := persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	cfg := webhooks.Config{AllowPrivate: true, BackoffMin: 5 * time.Millisecond, BackoffMax: 10 * time.Millisecond,
		PollInterval: 5 * time.Millisecond, LogMax: 2}
	w, err := webhooks.New(cfg, st, nil)
	require.NoError(t, err)
	w.Start()
	rc := newReceiver(t, 2)
	ep, err := w.Create("bu_1", webhooks.Input{URL: ptr(rc.srv.URL), EventTypes: []string{webhooks.HookOrderPaid}})
	require.NoError(t, err)
	enqueue(t, st, "0000000000000001-0000", "bu_1", webhooks.HookOrderPaid)
	w.Wake()
	require.Eventually(t, func() bool {
		l, err := w.Deliveries("bu_1", ep.ID)
		return err == nil && len(l) > 0 && l[0].Succeeded
	}, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, w.Close())
	require.NoError(t, st.Close())

	st, err = persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	w, err = webhooks.New(cfg, st, nil)
	require.NoError(t, err)
	l, err := w.Deliveries("bu_1", ep.ID)
	require.NoError(t, err)
	require.Len(t, l, 2, "three attempts, the log keeps the newest two")
	assert.Equal(t, 3, l[0].Attempt)
	assert.True(t, l[0].Succeeded)
	assert.Equal(t, 2, l[1].Attempt)
	assert.Equal(t, 500, l[1].StatusCode)
	require.NoError(t, w.Delete("bu_1", ep.ID))
	n := 0
	require.NoError(t, st.Scan([]byte("whlog/"), func(_, _ []byte) error { n++; return nil }))
	assert.Zero(t, n, "deleting an endpoint deletes its log")
}

// A backlog larger than a round is fanned out in rounds that go on where
// the last stopped (the queue reader's cursor), and an entry queued behind
// the cursor (an event whose key sorts first) is still delivered: every
// entry exactly once.
func TestBacklogDrainedInRoundsWithEntriesBehindTheCursor(t *testing.T) {
	w, st := open(t, webhooks.Config{AllowPrivate: true, BatchMax: 3})
	rc := newReceiver(t, 0)
	_, err := w.Create("bu_1", webhooks.Input{URL: ptr(rc.srv.URL), EventTypes: []string{webhooks.HookRegistrationCreated}})
	require.NoError(t, err)

	put := func(event string, seq int) string {
		key := fmt.Sprintf("%s/%016x-0000", event, seq)
		h := webhooks.HookEvent{ID: "whevt_" + key, Type: webhooks.HookRegistrationCreated, EventID: event, UnitID: "bu_1",
			CreatedAt: time.Now().UTC(), Data: json.RawMessage(`{"id":"reg_1"}`)}
		b, err := json.Marshal(h)
		require.NoError(t, err)
		bt := st.NewBatch()
		defer bt.Close()
		bt.Put([]byte(webhooks.InboxPrefix+key), b)
		require.NoError(t, st.Commit(bt))
		return h.ID
	}
	want := map[string]bool{}
	for i := 1; i <= 10; i++ {
		want[put("evt_2", i)] = true
	}
	w.Wake()
	require.Eventually(t, func() bool { return len(rc.got()) >= 4 }, 5*time.Second, time.Millisecond)
	want[put("evt_1", 1)] = true // behind the cursor by now
	w.Wake()
	require.Eventually(t, func() bool { return len(rc.got()) >= len(want) }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	seen := map[string]int{}
	for _, c := range rc.got() {
		seen[c.id]++
	}
	require.Len(t, seen, len(want))
	for id := range want {
		assert.Equal(t, 1, seen[id], id)
	}
}

// TestResendQueuesTheSameBodyAgain: a logged delivery is sent again, as a
// new signed delivery with the same bytes and event id, and logged; an
// unknown delivery, another unit's endpoint and a disabled endpoint are
// refused, and nothing else is sent.
func TestResendQueuesTheSameBodyAgain(t *testing.T) {
	w, st := open(t, webhooks.Config{AllowPrivate: true})
	rc := newReceiver(t, 0)
	ep, err := w.Create("bu_1", webhooks.Input{URL: ptr(rc.srv.URL), EventTypes: []string{webhooks.HookRegistrationCreated}})
	require.NoError(t, err)
	h := enqueue(t, st, "0000000000000001-0000", "bu_1", webhooks.HookRegistrationCreated)
	w.Wake()
	var log []webhooks.Delivery
	require.Eventually(t, func() bool {
		log, err = w.Deliveries("bu_1", ep.ID)
		return err == nil && len(log) == 1
	}, 5*time.Second, 5*time.Millisecond)
	require.NotEmpty(t, log[0].ID)

	_, _, err = w.Resend("bu_1", ep.ID, "0000000000000000-00000000")
	assert.ErrorIs(t, err, webhooks.ErrNoDelivery)
	_, _, err = w.Resend("bu_1", ep.ID, "../x")
	assert.ErrorIs(t, err, webhooks.ErrNoDelivery)
	_, _, err = w.Resend("bu_2", ep.ID, log[0].ID)
	assert.ErrorIs(t, err, webhooks.ErrNotFound, "another unit's endpoint")

	task, d, err := w.Resend("bu_1", ep.ID, log[0].ID)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(task, ep.ID+"/resend-"), task)
	assert.Equal(t, h.ID, d.EventID)
	require.Eventually(t, func() bool { return len(rc.got()) == 2 }, 5*time.Second, 5*time.Millisecond)
	calls := rc.got()
	assert.Equal(t, string(calls[0].body), string(calls[1].body), "the same bytes")
	assert.Equal(t, h.ID, calls[1].id, "the same event id")
	require.NoError(t, webhooks.Verify(calls[1].sig, calls[1].body, ep.Secret, time.Now(), time.Minute))
	require.Eventually(t, func() bool {
		log, _ = w.Deliveries("bu_1", ep.ID)
		return len(log) == 2
	}, 5*time.Second, 5*time.Millisecond)
	assert.True(t, log[0].Succeeded)
	assert.Equal(t, 1, log[0].Attempt, "a resend counts its own attempts")
	assert.NotEqual(t, log[0].ID, log[1].ID)

	_, err = w.SetEnabled("bu_1", ep.ID, false)
	require.NoError(t, err)
	_, _, err = w.Resend("bu_1", ep.ID, log[0].ID)
	assert.ErrorIs(t, err, webhooks.ErrDisabled)
	time.Sleep(50 * time.Millisecond)
	assert.Len(t, rc.got(), 2)
}
