package e2e_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
	"ticketd/payments"
)

// TestHostedPagesCancelClosesTheCheckoutSession: the buyer of an order
// awaiting payment at Stripe gives it up on the hosted order page (past
// its email gate); the order is cancelled and the Checkout Session expired
// at Stripe at once, as every door's cancel does (ops.CancelOrder wakes
// the checkout closer).
func TestHostedPagesCancelClosesTheCheckoutSession(t *testing.T) {
	f := start(t)
	evt, typeID := f.drop(20, 10)
	const buyer = "hosted-cancel@example.com"
	number := f.place(evt, typeID, buyer)
	_, session := f.confirmed(evt, number)
	expire := "POST /v1/checkout/sessions/" + session + "/expire"
	require.Empty(t, f.rec.Requests(expire))

	b := apptest.NewBrowser(t)
	page := f.svc.URL + "/orders/" + number
	// Without the gate passed the cancel is the gate form, and nothing changes.
	p := b.Post(page, url.Values{"form": {"cancel"}})
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, `id="gate-email"`)
	require.Equal(t, "awaiting_payment", f.order(evt, number)["status"])
	require.Equal(t, 303, b.Post(page, url.Values{"form": {"gate"}, "email": {buyer}}).Status)
	p = b.Get(page)
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, `id="cancel-order"`, "an order awaiting payment can be cancelled")

	p = b.Post(page, url.Values{"form": {"cancel"}})
	require.Equal(t, 303, p.Status, p.Body)
	assert.Equal(t, "cancelled", f.order(evt, number)["status"])
	require.Eventually(t, func() bool { return len(f.rec.Requests(expire)) == 1 },
		10*time.Second, 20*time.Millisecond, "the closer, woken by the cancel, expires the session: %v", f.rec.Requests(""))
	require.Eventually(t, func() bool {
		left, err := payments.CheckoutsToClose(f.svc.Sys.Store(), 10)
		return err == nil && len(left) == 0
	}, 10*time.Second, 20*time.Millisecond, "the entry goes once Stripe answered")
	p = b.Get(p.Header.Get("Location"))
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, "Your order has been cancelled and its tickets released.")
	assert.NotContains(t, p.Body, `id="cancel-order"`)
}
