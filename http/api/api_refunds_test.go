package api_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/payments"
)

// apiPaid places a paid order of one ticket, pays it through a signed
// sandbox webhook and returns the paid order.
func apiPaid(t *testing.T, f *apiFx, s apiShop, email, amount string) map[string]any {
	t.Helper()
	aw := apiAwaiting(t, s, email)
	st, b := apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), apiPaymentBody("dlv_"+email, "payment.succeeded", aw, amount))
	require.Equalf(t, 200, st, "webhook: %s", b)
	o := apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(aw, "orderNumber")), nil), 200)
	require.Equal(t, "paid", o["status"])
	return o
}

func (s apiShop) refundPath(number string) string {
	return "/admin/v1/events/" + s.ev + "/orders/" + number + "/refund"
}

func apiRefunds(t testing.TB, o map[string]any) []map[string]any {
	t.Helper()
	return apiData(t, map[string]any{"data": o["refunds"]})
}

func TestAPIRefundFreesThePlace(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	adm := f.admin(t)
	s := f.shop(t, map[string]any{"capacity": 1, "priceAmount": 25})
	o := apiPaid(t, f, s, "first@example.com", "25")
	number := apiS(o, "orderNumber")
	apiWantErr(t, s.order(t, s.tt, "second@example.com", nil), 412, "FAILED_PRECONDITION")
	assert.EqualValues(t, 0, apiAvailability(t, s.c, s.ev, s.tt)["remaining"])

	// The policy until the console sets one: refundable, no deadline, no fee.
	p := apiWant(t, adm.Do("GET", "/admin/v1/events/"+s.ev+"/refund-policy", nil), 200)
	assert.Equal(t, true, p["refundable"])
	assert.Nil(t, p["effectiveDeadline"])

	// The Developer API does not cancel a paid order: refunds are in the console.
	apiWantErr(t, s.c.Do("POST", s.path("/orders/"+number+"/cancel"), nil), 412, "FAILED_PRECONDITION")

	r := apiWant(t, adm.Do("POST", s.refundPath(number), map[string]any{"reason": "cannot come"}), 200)
	assert.Equal(t, "refunded", r["status"])
	refunds := apiRefunds(t, r)
	require.Len(t, refunds, 1)
	assert.Equal(t, "succeeded", refunds[0]["status"])
	assert.EqualValues(t, 25, refunds[0]["amount"])
	assert.Equal(t, "cannot come", refunds[0]["reason"])
	assert.Equal(t, true, refunds[0]["full"])

	// The place is free again, the registration cancelled, and the next
	// buyer can buy.
	assert.EqualValues(t, 1, apiAvailability(t, s.c, s.ev, s.tt)["remaining"])
	reg := apiWant(t, s.c.Do("GET", s.path("/registrations/"+apiS(o, "registrationId")), nil), 200)
	assert.Equal(t, "cancelled", reg["status"])
	got := apiWant(t, s.c.Do("GET", s.path("/orders/"+number), nil), 200)
	assert.Equal(t, "refunded", got["status"])
	require.Len(t, apiRefunds(t, got), 1)
	assert.Equal(t, []string{apiS(o, "id")}, apiIDs(t, apiWant(t, s.c.Do("GET", s.path("/orders?status=refunded"), nil), 200)))
	apiPaid(t, f, s, "second@example.com", "25")

	// A repeated refund of a refunded order is refused.
	apiWantErr(t, adm.Do("POST", s.refundPath(number), nil), 412, "FAILED_PRECONDITION")

	// Unknown orders, orders of another event and unknown events are 404.
	apiWantErr(t, adm.Do("POST", s.refundPath(strings.Split(number, "-")[0]+"-ZZZZZZZZ"), nil), 404, "NOT_FOUND")
	other := f.shop(t, nil)
	apiWantErr(t, adm.Do("POST", other.refundPath(number), nil), 404, "NOT_FOUND")
	apiWantErr(t, adm.Do("POST", "/admin/v1/events/evt_nope/orders/"+number+"/refund", nil), 404, "NOT_FOUND")
	apiWantErr(t, adm.Do("GET", "/admin/v1/events/evt_nope/refund-policy", nil), 404, "NOT_FOUND")

	// The console only: a secret key is not the admin token.
	assert.Equal(t, 401, s.c.AllowInvalidRequest().Do("POST", s.refundPath(number), nil).Status)
}

func TestAPIPartialRefund(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	adm := f.admin(t)
	s := f.shop(t, map[string]any{"capacity": 1, "priceAmount": 40})
	o := apiPaid(t, f, s, "part@example.com", "40")
	number := apiS(o, "orderNumber")

	apiWant400(t, adm.Do("POST", s.refundPath(number), map[string]any{"amount": 50}), "amount")
	r := apiWant(t, adm.Do("POST", s.refundPath(number), map[string]any{"amount": 10.5}), 200)
	assert.Equal(t, "paid", r["status"])
	assert.Equal(t, false, apiRefunds(t, r)[0]["full"])
	// A partial refund keeps the place.
	assert.EqualValues(t, 0, apiAvailability(t, s.c, s.ev, s.tt)["remaining"])
	assert.Equal(t, "confirmed", apiWant(t, s.c.Do("GET", s.path("/registrations/"+apiS(o, "registrationId")), nil), 200)["status"])

	// The default amount is the rest; it ends the order.
	r = apiWant(t, adm.Do("POST", s.refundPath(number), nil), 200)
	assert.Equal(t, "refunded", r["status"])
	refunds := apiRefunds(t, r)
	require.Len(t, refunds, 2)
	assert.EqualValues(t, 29.5, refunds[1]["amount"])
	assert.EqualValues(t, 1, apiAvailability(t, s.c, s.ev, s.tt)["remaining"])
}

func TestAPIRefundPolicyAndForce(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	adm := f.admin(t)
	s := f.shop(t, map[string]any{"capacity": 5, "priceAmount": 50})
	policy := "/admin/v1/events/" + s.ev + "/refund-policy"

	apiWant400(t, adm.Do("PUT", policy, map[string]any{"refundable": true, "deadline": "2030-01-01T00:00:00Z", "hoursBeforeStart": 24}), "hoursBeforeStart")
	apiWant400(t, adm.AllowInvalidRequest().Do("PUT", policy, map[string]any{"refundable": true, "feePercent": 101}), "feePercent")

	p := apiWant(t, adm.Do("PUT", policy, map[string]any{"refundable": false}), 200)
	assert.Equal(t, false, p["refundable"])
	o := apiPaid(t, f, s, "nope@example.com", "50")
	apiWantErr(t, adm.Do("POST", s.refundPath(apiS(o, "orderNumber")), nil), 412, "FAILED_PRECONDITION")
	assert.Equal(t, "paid", apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "orderNumber")), nil), 200)["status"])
	r := apiWant(t, adm.Do("POST", s.refundPath(apiS(o, "orderNumber")), map[string]any{"force": true}), 200)
	assert.Equal(t, "refunded", r["status"])
	assert.Equal(t, true, apiRefunds(t, r)[0]["force"])
	assert.EqualValues(t, 50, apiRefunds(t, r)[0]["amount"], "force overrides the fee too")

	// A deadline in the past needs force; a fee is kept of the refund.
	apiWant(t, adm.Do("PUT", policy, map[string]any{"refundable": true, "deadline": "2020-01-01T00:00:00Z"}), 200)
	o = apiPaid(t, f, s, "late@example.com", "50")
	apiWantErr(t, adm.Do("POST", s.refundPath(apiS(o, "orderNumber")), nil), 412, "FAILED_PRECONDITION")
	p = apiWant(t, adm.Do("PUT", policy, map[string]any{"refundable": true, "hoursBeforeStart": 1, "feePercent": 10}), 200)
	assert.NotNil(t, p["effectiveDeadline"], "the event has a start")
	assert.EqualValues(t, 1, p["hoursBeforeStart"])
	assert.Equal(t, p, apiWant(t, adm.Do("GET", policy, nil), 200))
	r = apiWant(t, adm.Do("POST", s.refundPath(apiS(o, "orderNumber")), nil), 200)
	assert.Equal(t, "refunded", r["status"])
	assert.EqualValues(t, 45, apiRefunds(t, r)[0]["amount"], "10% fee kept")
}

func TestAPIHostedCheckoutDoubleSubmit(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	s := f.shop(t, map[string]any{"capacity": 5, "priceAmount": 30})
	cs := apiWant(t, s.c.Do("POST", s.path("/checkout-sessions"), map[string]any{"items": apiTicket(s.tt)}), 201)
	form := url.Values{"form": {"checkout"}, "email": {"twice@example.com"}, "name": {"Twice"}}
	submit := func() string {
		resp, b := apiRaw(t, "POST", apiS(cs, "url"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, []byte(form.Encode()))
		require.Equalf(t, 303, resp.StatusCode, "body: %s", b)
		return resp.Header.Get("Location")
	}
	first := submit()
	second := submit()
	assert.Equal(t, first, second, "the second submit follows the session's order")
	assert.Contains(t, first, "/pay/")
	orders := apiData(t, apiWant(t, s.c.Do("GET", s.path("/orders?email=twice@example.com"), nil), 200))
	require.Len(t, orders, 1, "one order, one hold")
	assert.EqualValues(t, 1, apiAvailability(t, s.c, s.ev, s.tt)["held"])
	// Reopening the page follows the order instead of offering the form.
	resp, _ := apiRaw(t, "GET", apiS(cs, "url"), nil, nil)
	require.Equal(t, 303, resp.StatusCode)
	assert.Equal(t, apiS(orders[0], "orderUrl"), resp.Header.Get("Location"))

	// Paid, the session still answers the same order.
	st, b := apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), apiPaymentBody("dlv_twice", "payment.succeeded", orders[0], "30"))
	require.Equalf(t, 200, st, "webhook: %s", b)
	third := submit()
	assert.Contains(t, third, "/orders/"+apiS(orders[0], "orderNumber"))
	require.Len(t, apiData(t, apiWant(t, s.c.Do("GET", s.path("/orders?email=twice@example.com"), nil), 200)), 1)
}

// TestAPIRefundResumedAfterCrash: a refund whose request was recorded but
// whose provider call never happened (a crash between the two) is listed
// in the pending-refund index (written in the batch of the request, so as
// durable as it), and the resumer settles it exactly once; a refund
// pending for less than the resumer's minimum age is left to the request
// working on it.
func TestAPIRefundResumedAfterCrash(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	s := f.shop(t, map[string]any{"capacity": 1, "priceAmount": 25})
	o := apiPaid(t, f, s, "crash@example.com", "25")
	number := apiS(o, "orderNumber")

	// Step one of the refund alone, as a crash right after it leaves it.
	res, err := f.s.Sys.Ask(context.Background(), s.ev, event.RequestRefund{Ref: number, Reason: "crash"})
	require.NoError(t, err)
	refundID := res.(event.RefundStart).Refund.ID
	pending, err := payments.PendingRefunds(f.s.Sys.Store())
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, s.ev, pending[0].EventID)
	assert.Equal(t, apiS(o, "id"), pending[0].OrderID)
	assert.Equal(t, refundID, pending[0].RefundID)
	got := apiWant(t, s.c.Do("GET", s.path("/orders/"+number), nil), 200)
	assert.Equal(t, "pending", apiRefunds(t, got)[0]["status"])

	// A refund younger than the minimum age is not taken over.
	n, err := f.s.Main.Refunds().Resume(time.Hour)
	require.NoError(t, err)
	assert.Zero(t, n)

	n, err = f.s.Main.Refunds().Resume(0)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	got = apiWant(t, s.c.Do("GET", s.path("/orders/"+number), nil), 200)
	assert.Equal(t, "refunded", got["status"])
	refunds := apiRefunds(t, got)
	require.Len(t, refunds, 1)
	assert.Equal(t, "succeeded", refunds[0]["status"])
	assert.Equal(t, refundID, refunds[0]["id"])
	assert.EqualValues(t, 1, apiAvailability(t, s.c, s.ev, s.tt)["remaining"])

	// Settled: the index is empty and a second pass does nothing.
	pending, err = payments.PendingRefunds(f.s.Sys.Store())
	require.NoError(t, err)
	assert.Empty(t, pending)
	n, err = f.s.Main.Refunds().Resume(0)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// TestAPIKeyedRefundReplays: a refund with an Idempotency-Key answers its
// retries (and, after a restart, from the Pebble store) with the first
// answer, Idempotent-Replayed, and refunds once; the key's record commits
// in the batch of the refund's outcome (payments.Refunds.SettleKeyed), so a
// retry whose answer was lost replays it instead of meeting a refunded
// order (412).
func TestAPIKeyedRefundReplays(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	s := f.shop(t, map[string]any{"capacity": 1, "priceAmount": 40})
	o := apiPaid(t, f, s, "keyed@example.com", "40")
	number := apiS(o, "orderNumber")
	body := map[string]any{"amount": 10, "reason": "keyed"}
	adm := f.admin(t).WithHeader("Idempotency-Key", "refund-"+number)
	first := adm.Do("POST", s.refundPath(number), body)
	require.Equal(t, 200, first.Status, string(first.Body))
	again := adm.Do("POST", s.refundPath(number), body)
	require.Equal(t, 200, again.Status)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, string(first.Body), string(again.Body))

	f.s.Restart()
	adm = newAPIClient(t, f.s.URL).WithKey(f.s.Admin).WithHeader("Idempotency-Key", "refund-"+number)
	again = adm.Do("POST", s.refundPath(number), body)
	require.Equal(t, 200, again.Status, string(again.Body))
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, string(first.Body), string(again.Body))
	// Refunded once: the rest is 30.
	rest := apiWant(t, newAPIClient(t, f.s.URL).WithKey(f.s.Admin).Do("POST", s.refundPath(number), nil), 200)
	require.Len(t, apiRefunds(t, rest), 2)
	require.EqualValues(t, 30, apiRefunds(t, rest)[1]["amount"])
	// The same key with another body is refused.
	r := adm.AllowInvalidRequest().Do("POST", s.refundPath(number), map[string]any{"amount": 5})
	require.Equal(t, 422, r.Status, string(r.Body))
}
