package api_test

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSoldOutFastPath: refusals of a sold-out ticket type answered from
// the event's published sale view (issue 34) are the actor's answer (an
// order with an Idempotency-Key always asks the actor: the same status,
// envelope and reason); a buyer with an open order still hears
// ORDER_ALREADY_OPEN; and a cancellation's freed place goes to the very
// next order.
func TestSoldOutFastPath(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	s := f.store(t, map[string]any{"capacity": 2})
	var numbers []string
	for i := range 2 {
		o := apiWant(t, s.sfOrder(t, s.sf, s.tt, fmt.Sprintf("b%d@example.com", i), nil), 201)
		numbers = append(numbers, apiS(o, "orderNumber"))
	}
	for round := range 3 {
		fast := s.sfOrder(t, s.sf, s.tt, "late@example.com", nil)
		e := apiWantErr(t, fast, 412, "FAILED_PRECONDITION")
		assert.Equal(t, "SOLD_OUT", e["reason"])
		slow := s.sfOrder(t, s.sf.WithHeader("Idempotency-Key", fmt.Sprintf("k-%d", round)), s.tt, "late@example.com", nil)
		assert.Equal(t, e, apiWantErr(t, slow, 412, "FAILED_PRECONDITION"), "the view's refusal is the actor's")
		assert.Equal(t, slow.Header.Get("Content-Type"), fast.Header.Get("Content-Type"))

		e = apiWantErr(t, s.sfOrder(t, s.sf, s.tt, "b1@example.com", nil), 409, "ALREADY_EXISTS")
		assert.Equal(t, "ORDER_ALREADY_OPEN", e["reason"], "a buyer with an open order")

		apiWant(t, s.sf.Do("POST", s.sfPath("/orders/"+numbers[0]+"/cancel"), nil), 200)
		o := apiWant(t, s.sfOrder(t, s.sf, s.tt, fmt.Sprintf("next%d@example.com", round), nil), 201)
		require.Equal(t, "open", o["status"], "round %d: the very next order gets the freed place", round)
		numbers[0] = apiS(o, "orderNumber")
	}
	assert.Equal(t, "3", saleViewAnswers(t, f, "sold_out"), "the three refusals without a key came from the view")
}

// saleViewAnswers reads ticketd_sale_view_answers_total{kind} of f's
// service.
func saleViewAnswers(t *testing.T, f *apiFx, kind string) string {
	t.Helper()
	st, _, body := visit(t, loopbackClient("127.0.0.1"), "GET", f.s.URL+"/metrics", f.s.Admin)
	require.Equal(t, 200, st)
	m := regexp.MustCompile(`ticketd_sale_view_answers_total\{kind="` + kind + `"\} (\d+)`).FindSubmatch(body)
	require.NotNil(t, m, "the metric is served")
	return string(m[1])
}

// TestQueuePollFastPath: polls of waiting entries are answered from the
// sale view, each entry's own answer (with its Retry-After), from the
// first poll after the join.
func TestQueuePollFastPath(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	q := newQueueDrop(t, f, 2, 600, time.Minute)
	var ids []string
	for range 3 {
		ids = append(ids, apiS(q.join(t, q.sf), "queueId"))
	}
	for range 2 {
		for _, id := range ids {
			m := q.poll(t, q.sf, id)
			assert.Equal(t, id, m["queueId"])
			assert.Equal(t, "waiting", m["state"])
			assert.Nil(t, m["position"], "before onSaleAt")
		}
	}
	assert.Equal(t, "6", saleViewAnswers(t, f, "queue_poll"))
	apiWantErr(t, q.sf.Do("GET", q.sfPath("/queue/q_unknown"), nil), 404, "NOT_FOUND")
	assert.Equal(t, "6", saleViewAnswers(t, f, "queue_poll"), "an unknown entry is the actor's to answer")
}
