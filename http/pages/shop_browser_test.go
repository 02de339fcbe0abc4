package pages_test

import (
	"context"
	"fmt"
	"net"
	nethttp "net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// pgQueueDrop gives an event a waiting room selling at onSaleAt.
func pgQueueDrop(t testing.TB, s *service, key, eventID string, onSaleAt time.Time) {
	t.Helper()
	pgAPI(t, s, key, "PATCH", "/v1/events/"+eventID, map[string]any{"waitingRoom": map[string]any{
		"onSaleAt": onSaleAt.UTC().Format(time.RFC3339), "admitPerMinute": 600,
	}})
}

// pgBuyInCheckout fills the hosted checkout the browser is on and pays on
// the sandbox page; it answers the order page's status.
func pgBuyInCheckout(t *testing.T, ctx context.Context, email string) string {
	t.Helper()
	id := func(s string) chromedp.ID { return chromedp.ID(s) }
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(id("co-email")),
		chromedp.SendKeys(id("co-email"), email),
		chromedp.Click(id("co-submit")),
		chromedp.WaitVisible(id("pay-button")),
		chromedp.Click(id("pay-button")),
		chromedp.WaitVisible(id("order-status")),
	))
	status, err := chromedp.Run(ctx, chromedp.Text(id("order-status")))
	require.NoError(t, err)
	return status
}

// TestShopQueueInABrowser: a buyer opens the event's shop page, presses
// Buy, waits in the waiting room (the queue page refreshes itself), is
// admitted at onSaleAt, goes on to the hosted checkout by itself and pays.
func TestShopQueueInABrowser(t *testing.T) {
	ctx, problems := hostedBrowser(t)
	s := pgStart(t)
	u := s.NewUnit("Shop")
	ev := pgPublished(t, s, u.Secret, 25)
	pgAPI(t, s, s.Admin, "PUT", "/admin/v1/events/"+ev.ID+"/location", map[string]any{"venue": "Kulturbrauerei", "address": "Schönhauser Allee 36, Berlin"})
	pgQueueDrop(t, s, u.Secret, ev.ID, time.Now().Add(4*time.Second))

	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	id := func(s string) chromedp.ID { return chromedp.ID(s) }
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(s.URL+"/e/"+ev.ID),
		chromedp.WaitVisible(id("buy-"+ev.TypeID)),
		shot(t, "shop-1-page.png"),
	))
	page, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("main")))
	require.NoError(t, err)
	require.Contains(t, page, "Gophers Summit")
	require.Contains(t, page, "Kulturbrauerei")
	require.Contains(t, page, "General admission: 25,00\u00a0€")
	require.Contains(t, page, "waiting room")
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Click(id("buy-"+ev.TypeID)),
		chromedp.WaitVisible(id("q-pre")),
		shot(t, "shop-2-queue.png"),
	))
	// The script refreshes the page until admitted, then goes on to checkout.
	status := pgBuyInCheckout(t, tctx, "queued.buyer@example.com")
	require.Contains(t, status, "Paid")
	require.Empty(t, problems())
}

// TestWidgetOnAnotherOrigin: /widget.js on a page of a second loopback
// origin (the organizer's site, one of the key's origins) lists the
// tickets through the Storefront API, queues, and buys through the hosted
// checkout the same way.
func TestWidgetOnAnotherOrigin(t *testing.T) {
	ctx, problems := hostedBrowser(t)
	s := pgStart(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// localhost and 127.0.0.1 are two origins.
	site := "http://localhost:" + fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	u := s.NewUnit("Widget", site)
	ev := pgPublished(t, s, u.Secret, 25)
	pgQueueDrop(t, s, u.Secret, ev.ID, time.Now().Add(3*time.Second))
	srv := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><title>Our festival</title><h1>Our festival</h1>
<script src="%s/widget.js" data-event="%s" data-key="%s"></script></html>`, s.URL, ev.ID, u.Publishable)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	sel := `.ticketd-widget li[data-type="` + ev.TypeID + `"] button`
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(site+"/"),
		chromedp.WaitVisible(chromedp.CSS(sel)),
		shot(t, "widget-1-list.png"),
		chromedp.Click(chromedp.CSS(sel)),
	))
	status := pgBuyInCheckout(t, tctx, "widget.buyer@example.com")
	require.Contains(t, status, "Paid")
	for _, p := range problems() {
		require.False(t, strings.Contains(p, "CORS") || strings.Contains(p, "Content Security Policy"), p)
	}
}

// TestQueuePageWithoutScript: the shop's Buy and the queue page work
// without JavaScript: the queue page reloads itself by meta refresh and,
// once admitted, its button creates the checkout session with the queue
// token.
func TestQueuePageWithoutScript(t *testing.T) {
	s := pgStart(t)
	u := s.NewUnit("NoScript")
	ev := pgPublished(t, s, u.Secret, 25)
	pgQueueDrop(t, s, u.Secret, ev.ID, time.Now().Add(2*time.Second))
	b := apptest.NewBrowser(t)
	p := b.Post(s.URL+"/e/"+ev.ID+"/buy", url.Values{"type": {ev.TypeID}})
	require.Equal(t, 303, p.Status, p.Body)
	queue := s.URL + p.Header.Get("Location")
	require.Contains(t, queue, "/e/"+ev.ID+"/queue/q_")
	p = b.Get(queue)
	require.Equal(t, 200, p.Status, p.Body)
	require.Contains(t, p.Body, `<noscript><meta http-equiv="refresh"`)
	require.Contains(t, p.Body, `id="q-pre"`)
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(p.Body, `id="q-checkout"`) {
		require.True(t, time.Now().Before(deadline), "not admitted: %s", p.Body)
		time.Sleep(200 * time.Millisecond)
		p = b.Get(queue)
		require.Equal(t, 200, p.Status)
	}
	require.NotContains(t, p.Body, `http-equiv="refresh"`, "an admitted page stays put")
	p = b.Post(queue, url.Values{"type": {ev.TypeID}})
	require.Equal(t, 303, p.Status, p.Body)
	require.Contains(t, p.Header.Get("Location"), "/checkout/cs_")
	// Garbage queue ids are a 404, a Buy of an unknown type a refusal.
	require.Equal(t, 404, b.Get(s.URL+"/e/"+ev.ID+"/queue/q_garbage").Status)
	require.Equal(t, 412, b.Post(s.URL+"/e/"+ev.ID+"/buy", url.Values{"type": {"tt_nope"}}).Status)
}

// TestCheckoutOffersTheOpenOrder: a second hosted checkout with the email
// of an open order in the event is refused (decisions §22) and offers to
// continue the open one.
func TestCheckoutOffersTheOpenOrder(t *testing.T) {
	s := pgStart(t)
	u := s.NewUnit("Open order")
	ev := pgPublished(t, s, u.Secret, 25)
	session := func() string {
		cs := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
			"items": []map[string]any{{"itemType": "registration_type", "itemId": ev.TypeID, "quantity": 1}},
		})
		return cs["url"].(string)
	}
	b := apptest.NewBrowser(t)
	p := b.Post(session(), url.Values{"form": {"checkout"}, "email": {"twice@example.com"}})
	require.Equal(t, 303, p.Status, p.Body)
	p = b.Post(session(), url.Values{"form": {"checkout"}, "email": {"twice@example.com"}})
	require.Equal(t, 409, p.Status, p.Body)
	orders := pgAPI(t, s, u.Secret, "GET", "/v1/events/"+ev.ID+"/orders?email=twice@example.com", nil)["data"].([]any)
	require.Len(t, orders, 1, "the second checkout placed nothing")
	number := orders[0].(map[string]any)["orderNumber"].(string)
	require.Contains(t, p.Body, `<a class="btn" id="co-continue" href="/orders/`+number+`">`, "the continue link names the open order")
}
