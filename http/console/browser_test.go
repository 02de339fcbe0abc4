package console_test

import (
	"context"
	"encoding/json"
	"io"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
	"ticketd/internal/browsertest"
)

// consoleBrowser starts chromium headless at a phone's width (390 px: the
// console must work there) and returns its context and the console errors
// and CSP violations seen so far. It skips in -short mode or without
// chromium.
func consoleBrowser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	return browsertest.Start(t, 390, 844)
}

// shot checks that the page fits the 390 px phone (no sideways
// scrolling) and saves a full-page screenshot as a test artifact.
func shot(t *testing.T, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		width, err := chromedp.Evaluate[int](`document.documentElement.scrollWidth`)(ctx, tg)
		if err != nil {
			return err
		}
		if width > 390 {
			t.Errorf("%s: the page is %d px wide, more than the 390 px phone", name, width)
		}
		_, err = browsertest.Screenshot(t, "console", name)(ctx, tg)
		return err
	})
}

func byID(s string) chromedp.ID { return chromedp.ID(s) }

// signOut presses the header's sign-out button.
func signOut() chromedp.Action[chromedp.Void] {
	return chromedp.Click(chromedp.CSS(`form[action="/console/logout"] button`))
}

// TestConsoleInABrowser is an organizer's whole first day in chromium at
// 390 px: the operator signs in with the admin token, creates a unit and
// invites its owner; the owner accepts, makes a publishable key with two
// origins (which then works from one of them), builds an event with a
// paid ticket type and publishes it; two buyers go through the hosted
// checkout; the owner sees the orders and the dashboard, refunds one,
// downloads the attendees CSV and invites a door member, who checks the
// other buyer in at the door page.
func TestConsoleInABrowser(t *testing.T) {
	ctx, problems := consoleBrowser(t)
	s := apptest.Start(t)
	tctx, cancel := context.WithTimeout(ctx, 150*time.Second)
	defer cancel()
	value := func(id string) string {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Value(byID(id)))
		require.NoError(t, err)
		return v
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err)
		return strings.TrimSpace(v)
	}

	// The operator.
	require.NoError(t, chromedp.Do(tctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(s.URL+"/console"),
		chromedp.WaitVisible(byID("token")),
		shot(t, "01-login.png"),
		chromedp.SendKeys(byID("token"), s.Admin),
		chromedp.Click(byID("operator-submit")),
		chromedp.WaitVisible(byID("unit-name")),
		chromedp.SendKeys(byID("unit-name"), "Gopher Events"),
		chromedp.Submit(byID("unit-name")),
		chromedp.WaitVisible(byID("inv-email")),
		chromedp.SendKeys(byID("inv-email"), "olivia@example.com"),
		chromedp.SetValue(byID("inv-role"), "owner"),
		chromedp.Submit(byID("inv-email")),
		chromedp.WaitVisible(byID("once-link")),
		shot(t, "02-unit-invitation.png"),
	))
	invite := value("once-link")
	unitURL, err := chromedp.Run(tctx, chromedp.Location())
	require.NoError(t, err)
	unitURL = strings.TrimSuffix(unitURL, "/invitations")
	require.Contains(t, invite, "/console/invitations/")

	// The owner accepts and makes a publishable key with two origins.
	require.NoError(t, chromedp.Do(tctx,
		signOut(),
		chromedp.WaitVisible(byID("token")),
		chromedp.Navigate(invite),
		chromedp.WaitVisible(byID("password2")),
		chromedp.SendKeys(byID("name"), "Olivia Owner"),
		chromedp.SendKeys(byID("password"), "correct horse battery"),
		chromedp.SendKeys(byID("password2"), "correct horse battery"),
		shot(t, "03-accept.png"),
		chromedp.Submit(byID("password2")),
		chromedp.WaitVisible(byID("inv-email")),
		chromedp.Click(chromedp.CSS(`a[href$="/keys"]`)),
		chromedp.WaitVisible(byID("key-origins")),
		chromedp.Click(byID("type-pub")),
		chromedp.SendKeys(byID("key-name"), "Shop"),
		chromedp.SendKeys(byID("key-origins"), "https://shop.example.com\nhttp://localhost:3000"),
		chromedp.Submit(byID("key-name")),
		chromedp.WaitVisible(byID("new-key")),
		shot(t, "04-keys.png"),
	))
	pk := value("new-key")
	require.True(t, strings.HasPrefix(pk, "pk_"), pk)

	// An event with a paid ticket type, published.
	// (Each wait names an element the next page has and this one has not,
	// so no step acts on a page that is being replaced.)
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(unitURL),
		chromedp.WaitVisible(byID("ev-name")), // an empty unit shows the form open
		chromedp.SendKeys(byID("ev-name"), "GopherCon Night"),
		chromedp.SetValue(byID("ev-tz"), "Europe/Paris"),
		chromedp.SetValue(byID("ev-start"), "2030-06-01T18:00"),
		chromedp.SetValue(byID("ev-end"), "2030-06-01T23:00"),
		chromedp.Submit(byID("ev-name")),
		chromedp.WaitVisible(byID("add-tt")),
		chromedp.Click(byID("add-tt")),
		chromedp.WaitVisible(byID("tt-name")),
		chromedp.SendKeys(byID("tt-name"), "General"),
		chromedp.SendKeys(byID("tt-price"), "25"),
		chromedp.SendKeys(byID("tt-cap"), "100"),
		chromedp.Submit(byID("tt-name")),
		chromedp.WaitVisible(byID("types")),
		chromedp.Click(chromedp.CSS(`nav[aria-label="Event"] a:first-child`)),
		chromedp.WaitVisible(chromedp.CSS(`input[id^="cap-"]`)),
		chromedp.Click(byID("publish")),
		chromedp.WaitNotPresent(byID("publish")),
		shot(t, "05-event.png"),
	))
	require.Equal(t, "published", text("#event-status"))
	evURL, err := chromedp.Run(tctx, chromedp.Location())
	require.NoError(t, err)
	eventID := evURL[strings.LastIndex(evURL, "/")+1:]

	// The publishable key works from one of its origins: the storefront
	// answers with that origin allowed, and makes the checkout sessions.
	checkout := func(email string) string {
		t.Helper()
		body := `{"items":[{"itemType":"registration_type","itemId":"` + typeOf(t, s, eventID) + `","quantity":1}],"email":"` + email + `","returnUrl":"http://localhost:3000/done"}`
		req, _ := nethttp.NewRequest("POST", s.URL+"/storefront/v1/events/"+eventID+"/checkout-sessions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+pk)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "http://localhost:3000")
		res, err := nethttp.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		require.Equal(t, 201, res.StatusCode, string(raw))
		require.Equal(t, "http://localhost:3000", res.Header.Get("Access-Control-Allow-Origin"))
		var cs map[string]any
		require.NoError(t, json.Unmarshal(raw, &cs))
		return cs["url"].(string)
	}
	buy := func(email, name string) {
		t.Helper()
		require.NoError(t, chromedp.Do(tctx,
			chromedp.Navigate(checkout(email)),
			chromedp.WaitVisible(byID("co-name")),
			chromedp.SendKeys(byID("co-name"), name),
			chromedp.Click(byID("co-submit")),
			chromedp.WaitVisible(byID("pay-button")),
			chromedp.Click(byID("pay-button")),
			chromedp.WaitVisible(byID("gate-email")),
		))
	}
	buy("bea@example.com", "Bea Buyer")
	buy("carl@example.com", "Carl Client")

	// The owner sees the orders and the dashboard, refunds Bea's order and
	// downloads the attendees.
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(s.URL+"/console/events/"+eventID+"/dashboard"),
		chromedp.WaitVisible(byID("stat-sold")),
		shot(t, "06-dashboard.png"),
	))
	require.Equal(t, "2", text("#stat-sold"))
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(s.URL+"/console/events/"+eventID+"/orders?q=bea@example.com"),
		chromedp.WaitVisible(chromedp.CSS(`a[id^="order-"]`)),
		shot(t, "07-orders.png"),
		chromedp.Click(chromedp.CSS(`a[id^="order-"]`)),
		chromedp.WaitVisible(byID("refund")),
		chromedp.Click(byID("refund")),
		chromedp.WaitVisible(byID("refund-confirm")),
		shot(t, "08-order-refund.png"),
		chromedp.Click(byID("refund-confirm")),
		chromedp.WaitNotPresent(byID("refund-confirm")),
	))
	require.Equal(t, "refunded", text("#order-status"))
	csv, err := chromedp.Run(tctx, chromedp.Evaluate[string](
		`fetch("/console/events/`+eventID+`/attendees.csv").then(r => r.text())`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Contains(t, csv, "bea@example.com,Bea Buyer,General,cancelled")
	require.Contains(t, csv, "carl@example.com,Carl Client,General,confirmed")
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(s.URL+"/console/events/"+eventID+"/attendees"),
		chromedp.WaitVisible(chromedp.CSS(`a[href$="attendees.csv"]`)),
		shot(t, "09-attendees.png"),
	))

	// A door member checks Carl in.
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(unitURL),
		chromedp.WaitVisible(byID("inv-email")),
		chromedp.SendKeys(byID("inv-email"), "dora@example.com"),
		chromedp.SetValue(byID("inv-role"), "door"),
		chromedp.Submit(byID("inv-email")),
		chromedp.WaitVisible(byID("once-link")),
	))
	doorLink := value("once-link")
	require.NoError(t, chromedp.Do(tctx,
		signOut(),
		chromedp.WaitVisible(byID("token")),
		chromedp.Navigate(doorLink),
		chromedp.WaitVisible(byID("password2")),
		chromedp.SendKeys(byID("name"), "Dora Door"),
		chromedp.SendKeys(byID("password"), "door password 1"),
		chromedp.SendKeys(byID("password2"), "door password 1"),
		chromedp.Submit(byID("password2")),
		chromedp.WaitVisible(chromedp.CSS(`a[href$="/door"]`)),
		chromedp.Click(chromedp.CSS(`a[href$="/door"]`)),
		chromedp.WaitVisible(byID("q")),
		chromedp.SendKeys(byID("q"), "Carl"),
		chromedp.Submit(byID("q")),
		chromedp.WaitVisible(chromedp.CSS(`button[id^="checkin-"]`)),
		shot(t, "10-door-search.png"),
		chromedp.Click(chromedp.CSS(`button[id^="checkin-"]`)),
		chromedp.WaitVisible(byID("verdict")),
		shot(t, "11-door-checked-in.png"),
	))
	require.Contains(t, text("#verdict"), "Admitted: Carl Client")
	width, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	require.NoError(t, err)
	require.LessOrEqual(t, width, 390, "the door page fits a 390 px phone")
	require.Empty(t, problems(), "console errors or CSP violations")
}

// typeOf returns the event's first ticket type id, read through the
// actor system.
func typeOf(t *testing.T, s *apptest.Service, eventID string) string {
	t.Helper()
	res, err := s.Sys.Ask(context.Background(), eventID, listTypes())
	require.NoError(t, err)
	return firstTypeID(t, res)
}
