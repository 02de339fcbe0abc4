package e2e_test

import (
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
	"ticketd/payments"
)

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestConsoleCancelClosesTheCheckoutSession: an order awaiting payment at
// Stripe, cancelled from the web console (the operator's form on the
// order page), is cancelled, and the checkout closer expires its Checkout
// Session at Stripe at once: the console's cancel is the application
// layer's one cancel (ops.CancelOrder, the API's), which wakes the closer,
// rather than leaving the session to the closer's next pass (30 s).
func TestConsoleCancelClosesTheCheckoutSession(t *testing.T) {
	f := start(t)
	evt, typeID := f.drop(20, 10)
	number := f.place(evt, typeID, "console-cancel@example.com")
	_, session := f.confirmed(evt, number)
	expire := "POST /v1/checkout/sessions/" + session + "/expire"
	require.Empty(t, f.rec.Requests(expire))

	b := apptest.NewBrowser(t)
	csrf := func(p apptest.Page) string {
		t.Helper()
		m := csrfRE.FindStringSubmatch(p.Body)
		require.NotNil(t, m, p.Body)
		return m[1]
	}
	p := b.Get(f.svc.URL + "/console/login")
	require.Equal(t, 200, p.Status)
	p = b.Post(f.svc.URL+"/console/login", url.Values{"csrf": {csrf(p)}, "token": {f.svc.Admin}})
	require.Equal(t, 303, p.Status, p.Body)
	page := f.svc.URL + "/console/events/" + evt + "/orders/" + number
	p = b.Get(page)
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, `id="cancel-order"`, "an order awaiting payment can be cancelled")

	p = b.Post(page+"/cancel", url.Values{"csrf": {csrf(p)}})
	require.Equal(t, 303, p.Status, p.Body)
	assert.Equal(t, "cancelled", f.order(evt, number)["status"])
	require.Eventually(t, func() bool { return len(f.rec.Requests(expire)) == 1 },
		10*time.Second, 20*time.Millisecond, "the closer, woken by the cancel, expires the session: %v", f.rec.Requests(""))
	require.Eventually(t, func() bool {
		left, err := payments.CheckoutsToClose(f.svc.Sys.Store(), 10)
		return err == nil && len(left) == 0
	}, 10*time.Second, 20*time.Millisecond, "the entry goes once Stripe answered")

	p = b.Get(page)
	require.Equal(t, 200, p.Status)
	assert.NotContains(t, p.Body, `id="cancel-order"`, "a cancelled order offers no cancel")
	// Cancelling again is the core's no-op, not an error.
	p = b.Post(page+"/cancel", url.Values{"csrf": {csrf(p)}})
	assert.Equal(t, 303, p.Status, p.Body)
}
