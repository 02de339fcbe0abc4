package webhooks_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/outbox"
	"ticketd/persistence"
	"ticketd/webhooks"
)

// hangingEndpoint is a real loopback endpoint that holds every request
// past the sender's timeout, counting them.
func hangingEndpoint(t *testing.T) (*httptest.Server, func() int) {
	release := make(chan struct{})
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		w.WriteHeader(204)
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestHangingEndpointDoesNotDelayOthers: one unit's endpoint hangs past
// the timeout on every request; another unit's endpoint, and another
// endpoint of the same unit, get their deliveries at once, both those
// queued behind the hanging endpoint's and those queued while it backs
// off. The hanging endpoint sees one request at a time, spaced by its
// backoff.
func TestHangingEndpointDoesNotDelayOthers(t *testing.T) {
	w, st := open(t, webhooks.Config{AllowPrivate: true, BackoffMin: 300 * time.Millisecond, BackoffMax: 600 * time.Millisecond,
		DisableAfter: 100})
	slow, hung := hangingEndpoint(t)
	fast := newReceiver(t, 0)
	sibling := newReceiver(t, 0)
	_, err := w.Create("bu_a", webhooks.Input{URL: ptr(slow.URL), EventTypes: []string{webhooks.HookOrderPaid}})
	require.NoError(t, err)
	_, err = w.Create("bu_a", webhooks.Input{URL: ptr(sibling.srv.URL), EventTypes: []string{webhooks.HookCheckinCreated}})
	require.NoError(t, err)
	_, err = w.Create("bu_b", webhooks.Input{URL: ptr(fast.srv.URL), EventTypes: []string{webhooks.HookOrderPaid}})
	require.NoError(t, err)

	// The hanging endpoint's events come first in the queue.
	for i := 1; i <= 5; i++ {
		enqueue(t, st, fmt.Sprintf("%016x-0000", i), "bu_a", webhooks.HookOrderPaid)
	}
	for i := 6; i <= 10; i++ {
		enqueue(t, st, fmt.Sprintf("%016x-0000", i), "bu_b", webhooks.HookOrderPaid)
		enqueue(t, st, fmt.Sprintf("%016x-0001", i), "bu_a", webhooks.HookCheckinCreated)
	}
	start := time.Now()
	w.Wake()
	require.Eventually(t, func() bool { return len(fast.got()) == 5 && len(sibling.got()) == 5 }, 5*time.Second, 2*time.Millisecond)
	require.Less(t, time.Since(start), 1500*time.Millisecond, "held up by the hanging endpoint (timeout 2 s)")

	// While the slow endpoint hangs and then backs off, new events of the
	// others still go out at once.
	for round := range 3 {
		key := fmt.Sprintf("%016x-0000", 100+round)
		enqueue(t, st, key, "bu_b", webhooks.HookOrderPaid)
		enqueue(t, st, fmt.Sprintf("%016x-0000", 200+round), "bu_a", webhooks.HookOrderPaid)
		sent := time.Now()
		w.Wake()
		require.Eventually(t, func() bool { return len(fast.got()) == 6+round }, 5*time.Second, 2*time.Millisecond)
		assert.Less(t, time.Since(sent), time.Second, "round %d (the hanging endpoint holds 2 s)", round)
		time.Sleep(400 * time.Millisecond)
	}
	// One request at a time, and a pause after each failure: far fewer
	// requests than tasks.
	assert.LessOrEqual(t, hung(), 3, "the hanging endpoint was not backed off")
	assert.GreaterOrEqual(t, hung(), 1)
}

// TestTaskBackoffSurvivesARestart: a failed delivery's attempts and next
// attempt time are durable: after a restart it is not retried early, and
// then delivered with the same event id.
func TestTaskBackoffSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	st, err := persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	cfg := webhooks.Config{AllowPrivate: true, BackoffMin: 1500 * time.Millisecond, BackoffMax: 3 * time.Second,
		PollInterval: 5 * time.Millisecond, Timeout: time.Second}
	w, err := webhooks.New(cfg, st, nil)
	require.NoError(t, err)
	w.Start()
	rc := newReceiver(t, 1)
	ep, err := w.Create("bu_1", webhooks.Input{URL: ptr(rc.srv.URL), EventTypes: []string{webhooks.HookOrderPaid}})
	require.NoError(t, err)
	h := enqueue(t, st, "0000000000000001-0000", "bu_1", webhooks.HookOrderPaid)
	w.Wake()
	q, err := outbox.NewQueue(st, webhooks.TaskQueue, "")
	require.NoError(t, err)
	var before outbox.Entry
	require.Eventually(t, func() bool {
		es, err := q.List("", 10)
		if err != nil || len(es) != 1 || es[0].Attempts != 1 {
			return false
		}
		before = es[0]
		return true
	}, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, w.Close())
	require.NoError(t, st.Close())

	st, err = persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	q, err = outbox.NewQueue(st, webhooks.TaskQueue, "")
	require.NoError(t, err)
	es, err := q.List("", 10)
	require.NoError(t, err)
	require.Len(t, es, 1)
	assert.Equal(t, before.ID, es[0].ID)
	assert.Equal(t, 1, es[0].Attempts)
	assert.True(t, before.NextAt.Equal(es[0].NextAt))
	assert.Contains(t, es[0].LastError, "500")
	w, err = webhooks.New(cfg, st, nil)
	require.NoError(t, err)
	w.Start()
	defer w.Close()
	if wait := time.Until(before.NextAt); wait > 300*time.Millisecond {
		time.Sleep(wait - 200*time.Millisecond)
		require.Len(t, rc.got(), 1, "retried before its time after a restart")
	}
	require.Eventually(t, func() bool { return len(rc.got()) == 2 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, h.ID, rc.got()[1].id)
	// The log is written once the answer is in: wait for it.
	var log []webhooks.Delivery
	require.Eventually(t, func() bool {
		log, err = w.Deliveries("bu_1", ep.ID)
		return err == nil && len(log) == 2
	}, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, 2, log[0].Attempt)
	assert.True(t, log[0].Succeeded)
}

// TestTasksOfTheOldFormatAreDelivered: a delivery stored by an earlier
// version ("whq/<due>/<endpoint>/<hook>" with its attempts) is carried
// into the queue and delivered, its attempts counted on.
func TestTasksOfTheOldFormatAreDelivered(t *testing.T) {
	dir := t.TempDir()
	st, err := persistence.Open(persistence.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	w, err := webhooks.New(webhooks.Config{AllowPrivate: true}, st, nil)
	require.NoError(t, err)
	rc := newReceiver(t, 0)
	ep, err := w.Create("bu_1", webhooks.Input{URL: ptr(rc.srv.URL), EventTypes: []string{webhooks.HookOrderPaid}})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	body := []byte(`{"id":"whevt_old","type":"order.paid","createdAt":"2026-01-01T00:00:00Z","data":{"id":"ord_1"}}`)
	old, err := json.Marshal(map[string]any{"v": 1, "endpoint": ep.ID, "eventId": "whevt_old", "type": webhooks.HookOrderPaid,
		"hook": "evt_1/0000000000000001-0000", "body": json.RawMessage(body), "attempts": 2})
	require.NoError(t, err)
	bt := st.NewBatch()
	bt.Put([]byte(fmt.Sprintf("whq/%016x/%s/evt_1/0000000000000001-0000", uint64(time.Now().Add(-time.Second).UnixNano()), ep.ID)), old)
	require.NoError(t, st.Commit(bt))
	bt.Close()

	w, err = webhooks.New(webhooks.Config{AllowPrivate: true, BackoffMin: 5 * time.Millisecond, BackoffMax: 10 * time.Millisecond,
		PollInterval: 5 * time.Millisecond}, st, nil)
	require.NoError(t, err)
	w.Start()
	defer w.Close()
	require.Eventually(t, func() bool { return len(rc.got()) == 1 }, 5*time.Second, 5*time.Millisecond)
	c := rc.got()[0]
	assert.Equal(t, "whevt_old", c.id)
	assert.JSONEq(t, string(body), string(c.body))
	require.NoError(t, webhooks.Verify(c.sig, c.body, ep.Secret, time.Now(), time.Minute))
	require.Eventually(t, func() bool {
		l, err := w.Deliveries("bu_1", ep.ID)
		return err == nil && len(l) == 1 && l[0].Attempt == 3
	}, 5*time.Second, 5*time.Millisecond)
	n := 0
	require.NoError(t, st.Scan([]byte("whq/"), func(_, _ []byte) error { n++; return nil }))
	assert.Zero(t, n)
}

// TestBusyEndpointBacklogDoesNotHideOthers: an endpoint that answers, but
// slowly, has a backlog far larger than a round; another unit's event,
// queued after all of it, still goes out at once, and the backlog drains
// completely, each event once.
func TestBusyEndpointBacklogDoesNotHideOthers(t *testing.T) {
	w, st := open(t, webhooks.Config{AllowPrivate: true, BatchMax: 20})
	var mu sync.Mutex
	seen := map[string]int{}
	slow := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		seen[r.Header.Get("Webhook-Id")]++
		mu.Unlock()
		rw.WriteHeader(204)
	}))
	t.Cleanup(slow.Close)
	fast := newReceiver(t, 0)
	_, err := w.Create("bu_a", webhooks.Input{URL: ptr(slow.URL), EventTypes: []string{webhooks.HookOrderPaid}})
	require.NoError(t, err)
	_, err = w.Create("bu_b", webhooks.Input{URL: ptr(fast.srv.URL), EventTypes: []string{webhooks.HookOrderPaid}})
	require.NoError(t, err)
	const backlog = 200 // 4 s of the slow endpoint's time
	for i := 1; i <= backlog; i++ {
		enqueue(t, st, fmt.Sprintf("%016x-0000", i), "bu_a", webhooks.HookOrderPaid)
	}
	enqueue(t, st, fmt.Sprintf("%016x-0000", backlog+1), "bu_b", webhooks.HookOrderPaid)
	start := time.Now()
	w.Wake()
	aDone := 0 // the busy endpoint's deliveries when the other's arrived
	require.Eventually(t, func() bool {
		if len(fast.got()) == 0 {
			return false
		}
		mu.Lock()
		aDone = len(seen)
		mu.Unlock()
		return true
	}, 10*time.Second, 2*time.Millisecond)
	assert.Less(t, aDone, backlog/4, "hidden behind the busy endpoint's backlog")
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == backlog
	}, 30*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for id, n := range seen {
		require.Equal(t, 1, n, id)
	}
	t.Logf("backlog of %d drained in %s", backlog, time.Since(start).Round(time.Millisecond))
}

// TestCloseCancelsAHangingPostAndKeepsItsTask: Close does not wait for an
// endpoint that hangs; the task it was sending is neither charged nor
// lost, and is due at once for the next start.
func TestCloseCancelsAHangingPostAndKeepsItsTask(t *testing.T) {
	st, err := persistence.Open(persistence.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer st.Close()
	w, err := webhooks.New(webhooks.Config{AllowPrivate: true, Timeout: 20 * time.Second, PollInterval: 5 * time.Millisecond}, st, nil)
	require.NoError(t, err)
	slow, hung := hangingEndpoint(t)
	_, err = w.Create("bu_1", webhooks.Input{URL: ptr(slow.URL), EventTypes: []string{webhooks.HookOrderPaid}})
	require.NoError(t, err)
	enqueue(t, st, "0000000000000001-0000", "bu_1", webhooks.HookOrderPaid)
	enqueue(t, st, "0000000000000002-0000", "bu_1", webhooks.HookOrderPaid)
	w.Start()
	require.Eventually(t, func() bool { return hung() == 1 }, 5*time.Second, 2*time.Millisecond)
	start := time.Now()
	require.NoError(t, w.Close())
	require.Less(t, time.Since(start), 2*time.Second, "Close waited for the endpoint")
	q, err := outbox.NewQueue(st, webhooks.TaskQueue, "")
	require.NoError(t, err)
	es, err := q.List("", 10)
	require.NoError(t, err)
	require.Len(t, es, 2)
	for _, e := range es {
		assert.Zero(t, e.Attempts, e.ID)
		assert.False(t, e.NextAt.After(time.Now()), "%s is leased past the close", e.ID)
	}
}
