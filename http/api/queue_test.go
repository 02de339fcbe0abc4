package api_test

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queueDrop is an event with a waiting room opening for sale shortly.
type queueDrop struct {
	apiStore
	onSaleAt time.Time
}

func newQueueDrop(t *testing.T, f *apiFx, capacity, rate int, wait time.Duration) queueDrop {
	t.Helper()
	s := f.store(t, map[string]any{"capacity": capacity})
	at := time.Now().Add(wait).UTC().Truncate(time.Second).Add(time.Second)
	ev := apiWant(t, s.dev.Do("PATCH", "/v1/events/"+s.ev, map[string]any{"waitingRoom": map[string]any{
		"onSaleAt": at.Format(time.RFC3339), "admitPerMinute": rate, "admissionMinutes": 5,
	}}), 200)
	wr := apiM(ev, "waitingRoom")
	require.NotNil(t, wr, "the event answers its waiting room")
	assert.Equal(t, true, wr["enabled"])
	assert.EqualValues(t, rate, wr["admitPerMinute"])
	return queueDrop{apiStore: s, onSaleAt: at}
}

func (q queueDrop) join(t testing.TB, c *apiClient) map[string]any {
	t.Helper()
	r := c.Do("POST", q.sfPath("/queue"), map[string]any{})
	m := apiWant(t, r, 201)
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	return m
}

func (q queueDrop) poll(t testing.TB, c *apiClient, id string) map[string]any {
	t.Helper()
	r := c.Do("GET", q.sfPath("/queue/"+id), nil)
	m := apiWant(t, r, 200)
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err)
	assert.EqualValues(t, ra, m["retryAfterSeconds"])
	return m
}

// open moves onSaleAt to the next whole second (the room was made with
// it far out, so the joins before it never race the sale however slow
// the machine is) and waits until the pre-queue is shuffled.
func (q *queueDrop) open(t testing.TB) {
	t.Helper()
	q.onSaleAt = time.Now().UTC().Truncate(time.Second).Add(time.Second)
	apiWant(t, q.dev.Do("PATCH", "/v1/events/"+q.ev, map[string]any{"waitingRoom": map[string]any{
		"onSaleAt": q.onSaleAt.Format(time.RFC3339)}}), 200)
	deadline := time.Now().Add(15 * time.Second)
	for {
		ev := apiWant(t, q.dev.Do("GET", "/v1/events/"+q.ev, nil), 200)
		if apiM(ev, "waitingRoom")["shuffled"] == true {
			require.False(t, time.Now().Before(q.onSaleAt), "shuffled before onSaleAt %s", q.onSaleAt)
			return
		}
		require.Truef(t, time.Now().Before(deadline), "the room is not shuffled 15 s after onSaleAt %s", q.onSaleAt)
		time.Sleep(50 * time.Millisecond)
	}
}

// waitState polls id until its state is want (or the deadline).
func (q queueDrop) waitState(t testing.TB, c *apiClient, id, want string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		m := q.poll(t, c, id)
		if m["state"] == want {
			return m
		}
		require.Truef(t, time.Now().Before(deadline), "entry %s still %v after %s, want %s", id, m["state"], within, want)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestQueueRules is decisions §19 black-box: configuration, joins, the
// pre-queue shuffle, admission in queue order within the stock, tokens
// (required, garbage, another event's, used twice), sold out for every
// waiter, joins after sold out, and the Developer API not queued.
func TestQueueRules(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t, withTrustedProxies("127.0.0.1/32"))
	const places, buyers = 4, 12
	q := newQueueDrop(t, f, places, 600, time.Hour)
	from := func(i int) *apiClient { return q.sf.WithHeader("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1)) }

	// Bad configuration, each field named.
	for body, field := range map[string]string{
		`{"admitPerMinute":0}`:               "waitingRoom.admitPerMinute",
		`{"admissionMinutes":500}`:           "waitingRoom.admissionMinutes",
		`{"opensAt":"2099-01-01T00:00:00Z"}`: "waitingRoom.opensAt",
		`{"onSaleAt":"not a time"}`:          "waitingRoom.onSaleAt",
		`{"enabled":"yes"}`:                  "waitingRoom.enabled",
	} {
		r := q.dev.AllowInvalidRequest().Do("PATCH", "/v1/events/"+q.ev, []byte(`{"waitingRoom":`+body+`}`))
		assert.Contains(t, apiWant400(t, r, field), field, body)
	}
	// Another event without a room: joining it is refused.
	other := f.store(t, nil)
	apiWantErr(t, other.sf.Do("POST", other.sfPath("/queue"), map[string]any{}), 412, "FAILED_PRECONDITION")

	// Joins before onSaleAt: no position yet.
	ids := make([]string, buyers)
	for i := range buyers {
		m := q.join(t, from(i))
		assert.Equal(t, "waiting", m["state"])
		assert.Nil(t, m["position"], "no position before the shuffle")
		ids[i] = apiS(m, "queueId")
	}
	apiWantErr(t, q.sf.Do("GET", q.sfPath("/queue/q_garbage"), nil), 404, "NOT_FOUND")
	apiWantErr(t, other.sf.Do("GET", other.sfPath("/queue/"+ids[0]), nil), 404, "NOT_FOUND")
	// Before onSaleAt no token is needed (the ticket type's window is
	// the organizer's); the Developer API never needs one.
	box := apiWant(t, q.dev.Do("POST", "/v1/events/"+q.ev+"/orders", map[string]any{"email": "box@example.com", "items": apiTicket(q.tt)}), 201)

	// onSaleAt: positions appear; the shuffle is not join order (12
	// entries: the chance of the identity is 1 in 479 million).
	q.open(t)
	pos := map[string]int{}
	for _, id := range ids {
		m := q.poll(t, q.sf, id)
		if p, ok := m["position"].(float64); ok {
			pos[id] = int(p)
		} else {
			require.Equal(t, "admitted", m["state"], "after the shuffle a waiting entry has a position")
			pos[id] = 0
		}
	}
	identity := true
	for i, id := range ids {
		if pos[id] != 0 && pos[id] != i+1 {
			identity = false
		}
	}
	assert.False(t, identity, "positions %v follow join order", pos)

	// Orders need a token from now on.
	e := apiWantErr(t, q.sfOrder(t, q.sf, q.tt, "a@example.com", nil), 412, "FAILED_PRECONDITION")
	assert.Equal(t, "QUEUE_TOKEN_REQUIRED", e["reason"])
	e = apiWantErr(t, q.sfOrder(t, q.sf.WithHeader("Queue-Token", "qt_garbage"), q.tt, "a@example.com", nil), 412, "FAILED_PRECONDITION")
	assert.Equal(t, "QUEUE_TOKEN_INVALID", e["reason"])
	e = apiWantErr(t, q.sf.Do("POST", q.sfPath("/checkout-sessions"), map[string]any{"items": apiTicket(q.tt)}), 412, "FAILED_PRECONDITION")
	assert.Equal(t, "QUEUE_TOKEN_REQUIRED", e["reason"])

	// Stock-aware admission: 3 places are left (the box office took
	// one), so 3 entries are admitted and the rest wait.
	admitted := map[string]string{}
	deadline := time.Now().Add(10 * time.Second)
	for len(admitted) < places-1 && time.Now().Before(deadline) {
		for _, id := range ids {
			if m := q.poll(t, q.sf, id); m["state"] == "admitted" && admitted[id] == "" {
				admitted[id] = apiS(m, "queueToken")
				assert.NotEmpty(t, m["admittedUntil"])
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Len(t, admitted, places-1)
	time.Sleep(1500 * time.Millisecond) // a tick or more: nobody else may be admitted
	n := 0
	for _, id := range ids {
		if q.poll(t, q.sf, id)["state"] == "admitted" {
			n++
		}
	}
	assert.Equal(t, places-1, n, "admitted tokens never exceed the places for sale")
	// In queue order: the admitted are the first positions.
	for id := range admitted {
		assert.LessOrEqual(t, pos[id], places-1, "entry at position %d admitted before the front", pos[id])
	}

	// Each token places one order; another event's token is refused.
	otherQ := newQueueDrop(t, f, 5, 600, time.Hour)
	oid := apiS(otherQ.join(t, otherQ.sf), "queueId")
	otherQ.open(t)
	otherToken := apiS(otherQ.waitState(t, otherQ.sf, oid, "admitted", 10*time.Second), "queueToken")
	e = apiWantErr(t, q.sfOrder(t, q.sf.WithHeader("Queue-Token", otherToken), q.tt, "x@example.com", nil), 412, "FAILED_PRECONDITION")
	assert.Equal(t, "QUEUE_TOKEN_INVALID", e["reason"], "a token of another event")
	i := 0
	var orders []string
	for id, tok := range admitted {
		c := from(100+i).WithHeader("Queue-Token", tok)
		o := apiWant(t, q.sfOrder(t, c, q.tt, fmt.Sprintf("fan%d@example.com", i), nil), 201)
		orders = append(orders, apiS(o, "orderNumber"))
		e = apiWantErr(t, q.sfOrder(t, c, q.tt, fmt.Sprintf("again%d@example.com", i), nil), 412, "FAILED_PRECONDITION")
		assert.Equal(t, "QUEUE_TOKEN_INVALID", e["reason"], "a token used twice")
		assert.Equal(t, "admitted", q.poll(t, q.sf, id)["state"])
		i++
	}
	// Every place held: nobody admitted, nobody sold out yet (a hold could lapse).
	// waiter is the front of those still waiting.
	var waiter string
	for _, id := range ids {
		if admitted[id] == "" && (waiter == "" || pos[id] < pos[waiter]) {
			waiter = id
		}
	}
	assert.Equal(t, "waiting", q.poll(t, q.sf, waiter)["state"])
	// Every order paid (free), the box office's too: nothing for sale and
	// no hold that could lapse, so sold out for every waiter within 2 s.
	for _, num := range orders {
		apiWant(t, q.sf.Do("POST", q.sfPath("/orders/"+num+"/confirm"), nil), 200)
	}
	assert.Equal(t, "waiting", q.poll(t, q.sf, waiter)["state"], "the box office's hold could still lapse")
	boxPaid := apiWant(t, q.dev.Do("POST", "/v1/events/"+q.ev+"/orders/"+apiS(box, "id")+"/confirm", map[string]any{}), 200)
	// Sold out is the room's (the next tick sets it): a poll that started
	// 2 s after the last confirm and still answered waiting proves the
	// rule broken, however long the polls themselves take on a busy
	// machine.
	soldAt := time.Now()
	for deadline := soldAt.Add(15 * time.Second); ; {
		start := time.Now()
		st := q.poll(t, q.sf, waiter)["state"]
		if st == "sold_out" {
			break
		}
		require.Equal(t, "waiting", st)
		require.Lessf(t, start.Sub(soldAt), 2*time.Second, "a waiter still waiting %s after nothing was left for sale", start.Sub(soldAt))
		require.True(t, time.Now().Before(deadline))
		time.Sleep(50 * time.Millisecond)
	}
	for _, id := range ids {
		if admitted[id] == "" {
			assert.Equal(t, "sold_out", q.poll(t, q.sf, id)["state"], "sold out for every waiter at once")
		}
	}
	e = apiWantErr(t, q.sf.Do("POST", q.sfPath("/queue"), map[string]any{}), 412, "FAILED_PRECONDITION")
	assert.Equal(t, "SOLD_OUT", e["reason"], "a join after sold out")
	ev := apiWant(t, q.dev.Do("GET", "/v1/events/"+q.ev, nil), 200)
	assert.Equal(t, true, apiM(ev, "waitingRoom")["soldOut"])
	assert.EqualValues(t, places-1, apiM(ev, "waitingRoom")["used"])

	// A place comes back (the box office's registration cancelled):
	// admission resumes.
	apiWant(t, q.dev.Do("POST", "/v1/events/"+q.ev+"/registrations/"+apiS(boxPaid, "registrationId")+"/cancel", map[string]any{}), 200)
	q.waitState(t, q.sf, waiter, "admitted", 10*time.Second)
}

// TestQueueSurvivesRestart: a live queue's positions and tokens, and its
// tokens' one use, survive a restart.
func TestQueueSurvivesRestart(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	q := newQueueDrop(t, f, 2, 60, time.Hour)
	var ids []string
	for range 5 {
		ids = append(ids, apiS(q.join(t, q.sf), "queueId"))
	}
	q.open(t)
	// The first admission (one a tick at 60 a minute), whoever it is.
	before := map[string]map[string]any{}
	var token string
	for deadline := time.Now().Add(15 * time.Second); token == ""; {
		require.True(t, time.Now().Before(deadline), "nobody admitted 15 s after the shuffle")
		time.Sleep(100 * time.Millisecond)
		for _, id := range ids {
			m := q.poll(t, q.sf, id)
			before[id] = m
			if m["state"] == "admitted" && token == "" {
				token = apiS(m, "queueToken")
			}
		}
	}
	apiWant(t, q.sfOrder(t, q.sf.WithHeader("Queue-Token", token), q.tt, "first@example.com", nil), 201)

	f.s.Restart()
	q.sf, q.dev = f.client(t).WithKey(q.Publishable), f.client(t).WithKey(q.Secret)
	for _, id := range ids {
		m := q.poll(t, q.sf, id)
		if before[id]["state"] == "admitted" {
			assert.Equal(t, "admitted", m["state"])
			assert.Equal(t, before[id]["queueToken"], m["queueToken"])
		} else if m["state"] == "waiting" {
			assert.LessOrEqual(t, m["position"], before[id]["position"], "a position only moves forward")
		}
	}
	e := apiWantErr(t, q.sfOrder(t, q.sf.WithHeader("Queue-Token", token), q.tt, "second@example.com", nil), 412, "FAILED_PRECONDITION")
	assert.Equal(t, "QUEUE_TOKEN_INVALID", e["reason"], "the token's use survived the restart")
	// The queue goes on after the restart.
	ev := apiWant(t, q.dev.Do("GET", "/v1/events/"+q.ev, nil), 200)
	assert.Equal(t, true, apiM(ev, "waitingRoom")["shuffled"])
}

// TestQueueJoinsBatchedDurableInOrder: joins sent together go to the
// event's actor in batches (one message, one log record each), and each
// is still answered only once durable and in queue order: after the
// shuffle, 200 concurrent joins answer the positions 1 to 200, each once;
// the service restarts and every entry polls the position its join
// answered. The joins went in fewer batches than joins (the batcher's
// counters on /metrics).
func TestQueueJoinsBatchedDurableInOrder(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	q := newQueueDrop(t, f, 10, 60, time.Hour)
	apiWant(t, q.dev.Do("PATCH", "/v1/events/"+q.ev, map[string]any{"waitingRoom": map[string]any{"paused": true}}), 200)
	q.open(t)
	const joiners, each = 50, 4
	type joined struct {
		id  string
		pos int
	}
	var mu sync.Mutex
	var all []joined
	var wg sync.WaitGroup
	for range joiners {
		c := f.client(t).WithKey(q.Publishable)
		wg.Go(func() {
			for range each {
				m := apiWant(t, c.Do("POST", q.sfPath("/queue"), map[string]any{}), 201)
				pos, ok := m["position"].(float64)
				if !assert.True(t, ok, "a join after the shuffle answers its position: %v", m) {
					return
				}
				mu.Lock()
				all = append(all, joined{apiS(m, "queueId"), int(pos)})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, all, joiners*each)
	seen := map[int]bool{}
	for _, j := range all {
		require.False(t, seen[j.pos], "position %d answered twice", j.pos)
		seen[j.pos] = true
		require.True(t, j.pos >= 1 && j.pos <= joiners*each, "position %d", j.pos)
	}
	batches, joins := queueJoinMetrics(t, f)
	require.Equal(t, joiners*each, joins, "every join went in a batch")
	require.Less(t, batches, joins, "joins that arrived together went together")
	t.Logf("%d joins in %d batches", joins, batches)

	f.s.Restart()
	q.sf = f.client(t).WithKey(q.Publishable)
	for _, j := range all {
		m := q.poll(t, q.sf, j.id)
		require.Equal(t, "waiting", m["state"])
		require.EqualValues(t, j.pos, m["position"], "entry %s: the position its join answered, after a restart", j.id)
	}
}

// queueJoinMetrics reads the join batcher's counters of f's service.
func queueJoinMetrics(t *testing.T, f *apiFx) (batches, joins int) {
	t.Helper()
	st, _, body := visit(t, loopbackClient("127.0.0.1"), "GET", f.s.URL+"/metrics", f.s.Admin)
	require.Equal(t, 200, st)
	read := func(name string) int {
		m := regexp.MustCompile(name + ` (\d+)`).FindSubmatch(body)
		require.NotNil(t, m, "%s is served", name)
		n, err := strconv.Atoi(string(m[1]))
		require.NoError(t, err)
		return n
	}
	return read("ticketd_queue_join_batches_total"), read("ticketd_queue_joins_batched_total")
}
