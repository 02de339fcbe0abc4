package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
	"ticketd/payments/stripe/stripemock"
)

// TestStripeKeyedRefundsLostAnswersNeverRefundTwice: keyed partial refunds
// through Stripe (stripe-mock) whose answers are lost (the crash hook drops
// the pipeline's store of them, then the service restarts, as a kill -9
// would) replay their first answer when retried with the same key, and
// refund once, whatever the provider said (issue 31 item 3; decisions
// §20): one Stripe could not take (503: the refund stays pending, and the
// resumer then pays it out), one Stripe answered pending (then
// refund.updated says succeeded), one Stripe refused (400). Before, a
// refund that failed or stayed pending committed no record: each retry
// started a second refund (two refunds of the same order, paid out twice
// for the first two).
func TestStripeKeyedRefundsLostAnswersNeverRefundTwice(t *testing.T) {
	lost := &apptest.Lost{}
	f := start(t, apptest.LoseAnswers("lost-", lost))
	evt, typeID := f.drop(30, 10)
	paid := func(name string) string {
		t.Helper()
		number := f.place(evt, typeID, name+"@example.com")
		_, session := f.confirmed(evt, number)
		body := stripeEvent("evt_"+name+"_pay", "checkout.session.completed", session, number, "paid", 3000, "usd")
		st, ack := f.deliver(body, sign(body, testSecret, time.Now()))
		require.Equal(t, 200, st, ack)
		return number
	}
	refund := func(number, key string) (int, map[string]any, bool) {
		t.Helper()
		return f.callReplayed("POST", "/admin/v1/events/"+evt+"/orders/"+number+"/refund", f.svc.Admin,
			map[string]any{"amount": 10, "reason": "keyed"}, "Idempotency-Key", key)
	}
	refunds := func(number string) []any {
		t.Helper()
		rs, _ := f.order(evt, number)["refunds"].([]any)
		return rs
	}

	// Stripe cannot be reached (the try and the adapter's one retry): the
	// refund stays pending; the resumer pays it out.
	down := paid("down")
	fault := stripemock.Fault{Status: 503, Body: `{"error":{"type":"api_error","message":"down"}}`}
	f.rec.Fail("POST /v1/refunds", fault, fault)
	stDown, firstDown, _ := refund(down, "lost-down")
	require.Equal(t, 503, stDown, "%v", firstDown)
	n, err := f.svc.Main.Refunds().Resume(0)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Stripe answers pending; refund.updated then says succeeded.
	pending := paid("pending")
	f.rec.Fail("POST /v1/refunds", stripemock.Fault{Status: 200, Body: `{"id":"re_keyed","object":"refund","amount":1000,"currency":"usd","status":"pending"}`})
	stPending, firstPending, _ := refund(pending, "lost-pending")
	require.Equal(t, 200, stPending, "%v", firstPending)
	rf := firstPending["refunds"].([]any)[0].(map[string]any)
	require.Equal(t, "pending", rf["status"])
	upd := []byte(fmt.Sprintf(`{"id":"evt_keyed_upd","object":"event","created":%d,"type":"refund.updated","data":{"object":
{"id":"re_keyed","object":"refund","amount":1000,"currency":"usd","status":"succeeded","payment_intent":"pi_x",
"metadata":{"refundId":%q,"orderNumber":%q}}}}`, time.Now().Unix(), rf["id"], pending))
	st, ack := f.deliver(upd, sign(upd, testSecret, time.Now()))
	require.Equal(t, 200, st, ack)
	require.Equal(t, "succeeded", refunds(pending)[0].(map[string]any)["status"])

	// Stripe refuses.
	refused := paid("refused")
	f.rec.Fail("POST /v1/refunds", stripemock.Fault{Status: 400, Body: `{"error":{"type":"invalid_request_error","message":"refused by the bank"}}`})
	stRefused, firstRefused, _ := refund(refused, "lost-refused")
	require.Equal(t, 503, stRefused, "%v", firstRefused)
	require.Equal(t, "failed", refunds(refused)[0].(map[string]any)["status"])
	// The crash hook dropped the answers kept (a 503 whose write
	// committed nothing is never kept: its key is free for a retry).
	require.Contains(t, lost.Keys(), "lost-pending")

	creates := len(f.rec.Requests("POST /v1/refunds"))
	f.svc.Restart()

	for _, c := range []struct {
		number, key string
		status      int
		first       map[string]any
	}{
		{down, "lost-down", 200, nil}, // the answer it made: its refund pending
		{pending, "lost-pending", 200, firstPending},
		{refused, "lost-refused", 503, firstRefused},
	} {
		st, again, replayed := refund(c.number, c.key)
		require.Equal(t, c.status, st, "%s: %v", c.key, again)
		require.True(t, replayed, "the retried %s ran again: %v", c.key, again)
		if c.first != nil {
			require.Equal(t, c.first, again, c.key)
		}
		require.Len(t, refunds(c.number), 1, "%s: one refund", c.key)
	}
	require.Equal(t, creates, len(f.rec.Requests("POST /v1/refunds")), "no refund was asked of Stripe again")
	require.Equal(t, "succeeded", refunds(down)[0].(map[string]any)["status"])
	require.Equal(t, "succeeded", refunds(pending)[0].(map[string]any)["status"])
	require.Equal(t, "failed", refunds(refused)[0].(map[string]any)["status"])
}

// callReplayed is call that also reports whether the answer was a replay
// (Idempotent-Replayed).
func (f *fx) callReplayed(method, path, key string, body any, header ...string) (int, map[string]any, bool) {
	f.t.Helper()
	b, err := json.Marshal(body)
	require.NoError(f.t, err)
	req, err := http.NewRequest(method, f.svc.URL+path, bytes.NewReader(b))
	require.NoError(f.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, resp.Header.Get("Idempotent-Replayed") == "true"
}
