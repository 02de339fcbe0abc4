package e2e_test

import (
	"context"
	"fmt"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/internal/browsertest"
)

// TestHostedCheckoutReachesStripeInABrowser: in Stripe mode the hosted
// checkout page, submitted in chromium, sends the buyer to the Checkout
// Session's url. The browser never leaves loopback: Stripe's checkout host
// resolves to a TLS server of the test, which records where the browser
// arrived and answers a stand-in page.
func TestHostedCheckoutReachesStripeInABrowser(t *testing.T) {
	browsertest.Binary(t) // skips before the set-up when there is no browser
	f := start(t)
	evt, typeID := f.drop(42, 10)

	arrived := make(chan *url.URL, 1)
	stripePage := httptest.NewTLSServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		u := *r.URL
		u.Scheme, u.Host = "https", r.Host
		select {
		case arrived <- &u:
		default:
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>Stripe stand-in</title><h1 id="stripe-page">Pay with Stripe</h1></html>`)
	}))
	t.Cleanup(stripePage.Close)
	_, port, err := net.SplitHostPort(stripePage.Listener.Addr().String())
	require.NoError(t, err)

	cs := f.want(201, "POST", "/v1/events/"+evt+"/checkout-sessions", f.sk, map[string]any{
		"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}, "locale": "en",
	})

	// Every host but loopback is unreachable; Stripe's checkout host is
	// the test's server, whose certificate is its own.
	ctx, _ := browsertest.Start(t, 412, 915,
		chromedp.Flag("host-resolver-rules", "MAP checkout.stripe.com 127.0.0.1:"+port+", MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.Flag("ignore-certificate-errors", true))

	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	id := func(s string) chromedp.ID { return chromedp.ID(s) }
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(cs["url"].(string)),
		chromedp.WaitVisible(id("co-email")),
		chromedp.SendKeys(id("co-email"), "dee@example.com"),
		chromedp.SendKeys(id("co-name"), "Dee Buyer"),
		chromedp.Click(id("co-submit")),
	))
	wctx, wcancel := context.WithTimeout(tctx, 15*time.Second)
	err = chromedp.Do(wctx, chromedp.WaitVisible(id("stripe-page")))
	wcancel()
	if err != nil {
		loc, _ := chromedp.Run(tctx, chromedp.Location())
		body, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("not on Stripe's page: at %s: %.200s; stripe saw %v", loc, body, f.rec.Requests(""))
	}
	var got *url.URL
	select {
	case got = <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the browser did not reach Stripe's checkout address")
	}

	// The page the browser reached is the order's paymentUrl: the
	// session's url as Stripe answered it.
	number := ""
	for _, r := range f.rec.Requests("POST /v1/checkout/sessions") {
		number = r.Form.Get("client_reference_id")
	}
	require.NotEmpty(t, number, "a Checkout Session was created")
	o := f.order(evt, number)
	assert.Equal(t, "awaiting_payment", o["status"])
	want, err := url.Parse(o["paymentUrl"].(string))
	require.NoError(t, err)
	assert.Equal(t, "checkout.stripe.com", want.Hostname())
	assert.Equal(t, want.Path, got.Path)
	location, err := chromedp.Run(tctx, chromedp.Location())
	require.NoError(t, err)
	assert.Equal(t, want.Host, mustURL(t, location).Hostname())
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}
