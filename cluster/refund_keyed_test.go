package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/event"
	"ticketd/payments/stripe/stripemock"
	"ticketd/webhooks"
)

const rkStripeSecret = "whsec_refund_keyed_test"

// TestKeyedRefundsExactlyOnceThroughAnotherNode: in cluster mode a keyed
// refund served by a node that does not own the event commits its
// Idempotency-Key record with the refund's start (the order, its refund
// pending) and with a refusal, at the event's owner, in the writes' own
// batches (decisions §20, issue 31 item 3). Two partial refunds through
// Stripe (stripe-mock) are asked of node A, which does not own the event,
// with their answers lost (the crash hook drops A's store of them, as a
// kill -9 of A would): one Stripe answers pending and then settles
// (refund.updated), one Stripe refuses. Retried through node C with the
// same keys, each replays its first answer, and each order has one
// refund: Stripe is asked for none again. Before, the records of a
// refund's start and refusal were views that could not travel to the
// owner, so only A's lost answer held them: the retry started a second
// refund of each order (paid out twice for the first).
func TestKeyedRefundsExactlyOnceThroughAnotherNode(t *testing.T) {
	t.Parallel() // see parallelTests
	rec := stripemock.NewRecorder(t, stripemock.Start(t))
	lost := &apptest.Lost{}
	nodes := startNodes(t, 3, func(c *app.Config) {
		c.PaymentProvider = app.PaymentStripe
		c.Stripe.SecretKey, c.Stripe.WebhookSecret, c.Stripe.APIBase = "sk_test_refundkeyed", rkStripeSecret, rec.URL
		c.Stripe.RequestTimeout, c.Stripe.MaxNetworkRetries = 5*time.Second, 1
	}, apptest.LoseAnswers("lost-", lost))
	unit := newUnit(t, nodes[0], "Keyed refunds")
	_, sk := newKey(t, nodes[0], unit)

	st, ev := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", nodes[0].URL+"/v1/events", sk, map[string]any{"name": "Keyed refunds", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
	})
	require.Equal(t, 201, st, "%v", ev)
	evt := ev["id"].(string)
	st, tt := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", nodes[0].URL+"/v1/events/"+evt+"/ticket-types", sk, map[string]any{"name": "GA", "capacity": 10, "priceAmount": 30})
	})
	require.Equal(t, 201, st, "%v", tt)
	typeID := tt["id"].(string)
	st, m := do(t, "PATCH", nodes[0].URL+"/v1/events/"+evt+"/ticket-types/"+typeID, sk, map[string]any{"status": "open"})
	require.Equal(t, 200, st, "%v", m)
	st, m = do(t, "PATCH", nodes[0].URL+"/v1/events/"+evt, sk, map[string]any{"status": "published"})
	require.Equal(t, 200, st, "%v", m)

	// A and C are the two nodes that do not own the event.
	var owner *node
	var others []*node
	ownerName := ownerOf(t, nodes[0], evt)
	for _, nd := range nodes {
		if nd.name == ownerName {
			owner = nd
		} else {
			others = append(others, nd)
		}
	}
	require.NotNil(t, owner, "the event's owner %q", ownerName)
	a, c := others[0], others[1]

	deliver := func(nd *node, body []byte) {
		t.Helper()
		req, err := nethttp.NewRequest("POST", nd.URL+"/webhooks/payments/stripe", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Stripe-Signature", webhooks.Signature(time.Now().Unix(), body, rkStripeSecret))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		require.Equal(t, 200, resp.StatusCode, "%v", m)
	}
	// paid places and confirms an order through A and pays it (Stripe's
	// checkout.session.completed, delivered to A).
	paid := func(name string) string {
		t.Helper()
		st, o := retry503(t, func() (int, map[string]any) {
			return do(t, "POST", a.URL+"/v1/events/"+evt+"/orders", sk, map[string]any{"email": name + "@example.com",
				"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}})
		})
		require.Equal(t, 201, st, "%v", o)
		number := o["orderNumber"].(string)
		st, o = retry503(t, func() (int, map[string]any) {
			return do(t, "POST", a.URL+"/v1/events/"+evt+"/orders/"+number+"/confirm", sk,
				map[string]any{"successUrl": "https://shop.example.com/thanks", "cancelUrl": "https://shop.example.com/cart"})
		})
		require.Equal(t, 200, st, "%v", o)
		res, err := owner.Sys.Ask(context.Background(), evt, event.GetOrder{Ref: number})
		require.NoError(t, err)
		session := res.(event.Order).ProviderRef
		require.True(t, strings.HasPrefix(session, "cs_"), session)
		deliver(a, []byte(fmt.Sprintf(`{"id":"evt_rk_%s_pay","object":"event","api_version":"2025-01-27.acacia","created":%d,
"livemode":false,"type":"checkout.session.completed","data":{"object":{"id":%q,"object":"checkout.session",
"client_reference_id":%q,"metadata":{"orderNumber":%q},"payment_status":"paid","status":"complete","amount_total":3000,
"currency":"usd","payment_intent":"pi_rk_%s"}}}`, name, time.Now().Unix(), session, number, number, name)))
		eventually(t, 20*time.Second, name+" paid", func() bool {
			st, o := do(t, "GET", c.URL+"/v1/events/"+evt+"/orders/"+number, sk, nil)
			return st == 200 && o["status"] == "paid"
		})
		return number
	}
	refund := func(nd *node, number, key string) (int, map[string]any, bool) {
		t.Helper()
		return doIdem(t, nd.URL+"/admin/v1/events/"+evt+"/orders/"+number+"/refund", nd.Admin, key,
			map[string]any{"amount": 10, "reason": "keyed"})
	}
	refunds := func(number string) []any {
		t.Helper()
		st, o := do(t, "GET", c.URL+"/v1/events/"+evt+"/orders/"+number, sk, nil)
		require.Equal(t, 200, st, "%v", o)
		rs, _ := o["refunds"].([]any)
		return rs
	}

	// Stripe answers pending; refund.updated then says succeeded.
	pending := paid("pending")
	rec.Fail("POST /v1/refunds", stripemock.Fault{Status: 200, Body: `{"id":"re_rk","object":"refund","amount":1000,"currency":"usd","status":"pending"}`})
	st, firstPending, _ := refund(a, pending, "lost-pending")
	require.Equal(t, 200, st, "%v", firstPending)
	rf := firstPending["refunds"].([]any)[0].(map[string]any)
	require.Equal(t, "pending", rf["status"])
	deliver(a, []byte(fmt.Sprintf(`{"id":"evt_rk_upd","object":"event","created":%d,"type":"refund.updated","data":{"object":
{"id":"re_rk","object":"refund","amount":1000,"currency":"usd","status":"succeeded","payment_intent":"pi_rk_pending",
"metadata":{"refundId":%q,"orderNumber":%q}}}}`, time.Now().Unix(), rf["id"], pending)))
	eventually(t, 20*time.Second, "the pending refund settled", func() bool {
		rs := refunds(pending)
		return len(rs) == 1 && rs[0].(map[string]any)["status"] == "succeeded"
	})

	// Stripe refuses.
	refused := paid("refused")
	rec.Fail("POST /v1/refunds", stripemock.Fault{Status: 400, Body: `{"error":{"type":"invalid_request_error","message":"refused by the bank"}}`})
	st, firstRefused, _ := refund(a, refused, "lost-refused")
	require.Equal(t, 503, st, "%v", firstRefused)
	require.Equal(t, "failed", refunds(refused)[0].(map[string]any)["status"])
	require.Contains(t, lost.Keys(), "lost-pending", "the crash hook dropped the answer A kept")

	creates := len(rec.Requests("POST /v1/refunds"))
	for _, x := range []struct {
		number, key string
		status      int
		first       map[string]any
	}{
		{pending, "lost-pending", 200, firstPending},
		{refused, "lost-refused", 503, firstRefused},
	} {
		st, again, replayed := refund(c, x.number, x.key)
		for end := time.Now().Add(30 * time.Second); st == 409 && time.Now().Before(end); {
			// A's claim of the key stands until released or stale.
			time.Sleep(250 * time.Millisecond)
			st, again, replayed = refund(c, x.number, x.key)
		}
		require.Equal(t, x.status, st, "%s: %v", x.key, again)
		require.True(t, replayed, "the retried %s through %s ran again: %v", x.key, c.name, again)
		require.Equal(t, x.first, again, x.key)
		require.Len(t, refunds(x.number), 1, "%s: one refund", x.key)
	}
	require.Equal(t, creates, len(rec.Requests("POST /v1/refunds")), "no refund was asked of Stripe again")
	require.Equal(t, "succeeded", refunds(pending)[0].(map[string]any)["status"])
	require.Equal(t, "failed", refunds(refused)[0].(map[string]any)["status"])
}
