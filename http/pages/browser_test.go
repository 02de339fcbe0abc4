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

	"ticketd/internal/browsertest"
)

// hostedBrowser starts chromium headless for the hosted pages at a phone's
// size (the pages must work there) and returns its context and a function
// listing console problems (errors, CSP violations) seen so far. It skips
// in -short mode or without chromium (`make test` installs it).
func hostedBrowser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	return browsertest.Start(t, 412, 915)
}

// shot saves a full-page screenshot as a test artifact.
func shot(t *testing.T, name string) chromedp.Action[chromedp.Void] {
	return browsertest.Screenshot(t, "", name)
}

// TestHostedFlowInABrowser is the buyer's whole journey in chromium, who
// types the email once: the checkout page of a session, the sandbox payment
// page, the order page (this device checked out: no email gate), its entry
// pass button (the order page vouches for the pass: no gate), the return
// button to the integrator's returnUrl (a loopback server of the test that
// checks the query), then the pass page from the ticket email's link. A
// second browser meets the gate of the same pass.
func TestHostedFlowInABrowser(t *testing.T) {
	ctx, problems := hostedBrowser(t)
	s := pgStart(t)
	u := s.NewUnit("Browser")
	ev := pgPublished(t, s, u.Secret, 25)

	// The integrator's site: where the return button lands.
	returned := make(chan url.Values, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	shop := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		select {
		case returned <- r.URL.Query():
		default:
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>Shop</title><h1 id="thanks">Thanks for your order</h1></html>`)
	})}
	go func() { _ = shop.Serve(ln) }()
	t.Cleanup(func() { _ = shop.Close() })
	shopURL := "http://" + ln.Addr().String() + "/done?shop=gophers"

	cs := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
		"items":     []map[string]any{{"itemType": "registration_type", "itemId": ev.TypeID, "quantity": 1}},
		"returnUrl": shopURL, "locale": "en",
	})
	const buyer = "bea.buyer@example.com"

	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	id := func(s string) chromedp.ID { return chromedp.ID(s) }
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(cs["url"].(string)),
		chromedp.WaitVisible(id("co-email")),
		shot(t, "hosted-1-checkout.png"),
		chromedp.SendKeys(id("co-email"), buyer),
		chromedp.SendKeys(id("co-name"), "Bea Buyer"),
		chromedp.Click(id("ao-"+ev.AddonID)),
		chromedp.Click(id("co-submit")),
		chromedp.WaitVisible(id("pay-button")),
	))
	amount, err := chromedp.Run(tctx, chromedp.Text(id("pay-amount")))
	require.NoError(t, err)
	noGate := func(page string) {
		t.Helper()
		gated, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.getElementById("gate-email") !== null`))
		require.NoError(t, err)
		require.Falsef(t, gated, "the %s page asked for the email again", page)
	}
	require.NoError(t, chromedp.Do(tctx,
		shot(t, "hosted-2-pay.png"),
		chromedp.Click(id("pay-button")),
		chromedp.WaitVisible(id("order-status")),
	))
	noGate("order")
	status, err := chromedp.Run(tctx, chromedp.Text(id("order-status")))
	require.NoError(t, err)
	number, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("h1 .mono")))
	require.NoError(t, err)
	passPrimary, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.getElementById("pass-link").classList.contains("primary") && !document.getElementById("return-link").classList.contains("primary")`))
	require.NoError(t, err)
	require.True(t, passPrimary, "the entry pass is the order page's primary action")
	orderURL, err := chromedp.Run(tctx, chromedp.Evaluate[string](`location.href`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(tctx,
		shot(t, "hosted-3-order.png"),
		chromedp.Click(id("pass-link")),
		chromedp.WaitVisible(id("qr")),
	))
	noGate("pass")
	require.NoError(t, chromedp.Do(tctx,
		shot(t, "hosted-4-pass.png"),
		chromedp.Navigate(orderURL),
		chromedp.WaitVisible(id("return-link")),
		chromedp.Click(id("return-link")),
		chromedp.WaitVisible(id("thanks")),
	))
	require.Equal(t, "40,00\u00a0€", strings.TrimSpace(amount), "ticket 25 + T-shirt 15")
	require.Contains(t, status, "Paid")
	select {
	case q := <-returned:
		require.Equal(t, "gophers", q.Get("shop"), "the returnUrl's own query is kept")
		require.Equal(t, number, q.Get("order"))
		require.Equal(t, "paid", q.Get("status"))
	case <-time.After(5 * time.Second):
		t.Fatal("the return button did not reach the returnUrl")
	}

	// The ticket email's link (from the durable outbox) opens the pass.
	var passURL, code string
	require.Eventually(t, func() bool {
		for _, m := range pgOutbox(t, s) {
			if m.Email == buyer {
				passURL, code = m.PassURL, m.CheckinCode
				return true
			}
		}
		return false
	}, 5*time.Second, 20*time.Millisecond)
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(passURL),
		chromedp.WaitVisible(id("qr")),
	))
	noGate("pass (from the email)")
	shown, err := chromedp.Run(tctx, chromedp.Text(id("checkin-code")))
	require.NoError(t, err)
	qrWidth, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.getElementById("qr").naturalWidth`))
	require.NoError(t, err)
	require.Equal(t, code, strings.TrimSpace(shown))
	require.Equal(t, 256, qrWidth, "the QR code image decoded in the browser")

	// Another device (a fresh browser profile) is asked for the email.
	other, _ := hostedBrowser(t)
	octx, ocancel := context.WithTimeout(other, 30*time.Second)
	defer ocancel()
	require.NoError(t, chromedp.Do(octx,
		chromedp.Navigate(passURL),
		chromedp.WaitVisible(id("gate-email")),
		shot(t, "hosted-5-pass-gate-other-device.png"),
		chromedp.SendKeys(id("gate-email"), buyer),
		chromedp.Submit(id("gate-email")),
		chromedp.WaitVisible(id("qr")),
	))
	require.Empty(t, problems(), "console errors or CSP violations")
}

// TestCheckoutFieldErrorsInABrowser: in chromium on a phone-sized window,
// every input, select and checkbox row of the checkout form is at least
// 44 px tall; a form sent with mistakes comes back with each error next to
// its field (described by it), the answers as typed, and no field path.
func TestCheckoutFieldErrorsInABrowser(t *testing.T) {
	ctx, problems := hostedBrowser(t)
	s := pgStart(t)
	u := s.NewUnit("Browser forms")
	_, csURL := pgFormEvent(t, s, u)
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	id := func(s string) chromedp.ID { return chromedp.ID(s) }
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(csURL),
		chromedp.WaitVisible(id("co-email")),
		shot(t, "hosted-form-1-empty.png"),
	))
	short, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("form input:not([type=hidden]):not([type=checkbox]), form select, form .check, form button")]
		.filter(e => e.getBoundingClientRect().height < 44).map(e => (e.id || e.className) + ":" + e.getBoundingClientRect().height)`))
	require.NoError(t, err)
	require.Empty(t, short, "touch targets under 44 px")
	looks, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](`["co-email","q-phone","q-dob","q-shirt"].map(id => { const c = getComputedStyle(document.getElementById(id)); return c.borderTopWidth + " " + c.borderRadius + " " + c.fontSize })`))
	require.NoError(t, err)
	for _, l := range looks[1:] {
		require.Equal(t, looks[0], l, "phone, date and select inputs look like the email input")
	}

	require.NoError(t, chromedp.Do(tctx,
		chromedp.SendKeys(id("co-email"), "ada@"),
		chromedp.SendKeys(id("co-name"), "Ada Lovelace"),
		chromedp.SendKeys(id("q-phone"), "call me"),
		chromedp.SetValue(id("q-shirt"), "M"),
		chromedp.Click(id("co-submit")),
		chromedp.WaitVisible(id("err-email")),
		shot(t, "hosted-form-2-errors.png"),
	))
	type fieldError struct{ Field, Text, DescribedBy string }
	errs, err := chromedp.Run(tctx, chromedp.Evaluate[[]fieldError](`[...document.querySelectorAll(".field-error")].map(p => {
		const f = p.closest(".field"); const input = f.querySelector("input, select");
		return {Field: input ? input.id : "", Text: p.textContent, DescribedBy: input ? (input.getAttribute("aria-describedby") || "") : ""} })`))
	require.NoError(t, err)
	byField := map[string]fieldError{}
	for _, e := range errs {
		byField[e.Field] = e
		require.Equal(t, "err-"+strings.TrimPrefix(e.Field, "co-"), e.DescribedBy, "%s is described by its error", e.Field)
	}
	require.Contains(t, byField, "co-email")
	require.Contains(t, byField, "q-company")
	require.Contains(t, byField, "q-terms")
	kept, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](`["co-email","co-name","q-phone","q-shirt"].map(id => document.getElementById(id).value)`))
	require.NoError(t, err)
	require.Equal(t, []string{"ada@", "Ada Lovelace", "call me", "M"}, kept)

	// Fix what the page marked; the phone number is the service's finding.
	require.NoError(t, chromedp.Do(tctx,
		chromedp.SetValue(id("co-email"), "ada@example.com"),
		chromedp.SendKeys(id("q-company"), "Analytical Engines"),
		chromedp.Click(id("q-terms")),
		chromedp.Click(id("co-submit")),
		chromedp.WaitVisible(id("err-q-phone")),
		shot(t, "hosted-form-3-phone-error.png"),
	))
	text, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("main")))
	require.NoError(t, err)
	require.Contains(t, text, "Enter a phone number")
	require.NotContains(t, text, "responses.")
	require.NoError(t, chromedp.Do(tctx,
		chromedp.SetValue(id("q-phone"), "+44 20 7946 0958"),
		chromedp.Click(id("co-submit")),
		chromedp.WaitVisible(id("order-status")),
		shot(t, "hosted-form-4-order.png"),
	))
	// The form's 400 answers are logged by chromium as failed loads; any
	// other problem (a CSP violation, a script) is not expected.
	var other []string
	for _, p := range problems() {
		if !strings.Contains(p, "status of 400") {
			other = append(other, p)
		}
	}
	require.Empty(t, other, "console errors or CSP violations")
}
