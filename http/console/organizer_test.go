package console_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
)

// shotsDir keeps the organizer walk's screenshots where a person can look
// at them after the run (go test ./http/console -run TestOrganizer
// -console-shots=/tmp/shots); without it they go to the test's temp dir.
var shotsDir = flag.String("console-shots", "", "directory that keeps the organizer walk's screenshots (default: the test's temp dir)")

// TestOrganizerRunsAnEventFromTheConsole: a new organizer, in chromium,
// creates a paid event with a venue and two ticket types with sale
// windows (a refused price first: the sentence is next to the field, what
// was typed stays, the address stays the form's), edits one, publishes
// and opens the public page, shares a ticket type's checkout link through
// which a buyer sees the event's name, date and venue and pays on a page
// branded with the event, refunds part of the order (typed with a decimal
// comma) and reads the net amount, finds the attendee and sees them
// checked in, reads the dashboard's time axis, duplicates and unpublishes
// the event: each page at 1280 and 390 px, none wider than its window.
func TestOrganizerRunsAnEventFromTheConsole(t *testing.T) {
	ctx, problems := consoleBrowser(t)
	s := apptest.Start(t)
	dir := *shotsDir
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	tctx, cancel := context.WithTimeout(ctx, 200*time.Second)
	defer cancel()
	run := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(tctx, actions...))
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, sel)
		return strings.Join(strings.Fields(v), " ")
	}
	path := func() string {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Evaluate[string](`location.pathname`))
		require.NoError(t, err)
		return v
	}
	n := 0
	snap := func(name string) {
		t.Helper()
		n++
		for _, w := range []int{1280, 390} {
			run(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				if _, err := chromedp.EmulateViewport(int64(w), 900)(ctx, tg); err != nil {
					return err
				}
				got, err := chromedp.Evaluate[int](`document.documentElement.scrollWidth`)(ctx, tg)
				if err != nil {
					return err
				}
				if got > w {
					t.Errorf("%s: %d px wide at a %d px window", name, got, w)
				}
				buf, err := chromedp.FullScreenshot(100)(ctx, tg)
				if err != nil {
					return err
				}
				file := filepath.Join(dir, fmt.Sprintf("%02d-%s-%d.png", n, strings.ReplaceAll(name, " ", "-"), w))
				return os.WriteFile(file, buf, 0o644)
			}))
		}
		run(chromedp.EmulateViewport(1280, 900))
	}

	// First minutes: / leads to the sign-in page, which says where the
	// admin token is.
	run(chromedp.EmulateViewport(1280, 900), chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(byID("token")))
	assert.Equal(t, "/console/login", path())
	assert.Contains(t, text("#token-hint"), "The admin token is")
	snap("sign in")
	run(chromedp.SendKeys(byID("token"), s.Admin), chromedp.Click(byID("operator-submit")), chromedp.WaitVisible(byID("unit-name")),
		chromedp.SendKeys(byID("unit-name"), "Gopher Events"), chromedp.Submit(byID("unit-name")), chromedp.WaitVisible(byID("ev-name")))
	assert.Contains(t, text("main"), "No events yet. Create the first one", "an empty unit says what to do, the form open")
	snap("unit empty")

	// The event.
	run(chromedp.SendKeys(byID("ev-name"), "GopherCon Night"), chromedp.SetValue(byID("ev-tz"), "Europe/Paris"),
		chromedp.SetValue(byID("ev-start"), "2030-06-01T18:00"), chromedp.SetValue(byID("ev-end"), "2030-06-01T23:00"),
		chromedp.Submit(byID("ev-name")), chromedp.WaitVisible(byID("add-tt")))
	assert.Contains(t, text(".note"), "“GopherCon Night” created as a draft. Next: add its ticket types and its venue, then publish it.")
	assert.Contains(t, text(".empty"), "No ticket types yet")
	assert.Equal(t, "Overview", text(`nav[aria-label="Event"] a[aria-current="page"]`), "you are here")
	snap("event new")
	eventPath := path()

	// "Edit event" is in view, not folded away: its button in the actions
	// row and its form open on the page, at 390 px as at 1280.
	run(chromedp.EmulateViewport(390, 900))
	visible := func(sel string) bool {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+strconv.Quote(sel)+`);
			if (!e) return false; const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 && !e.closest('details:not([open])'); })()`))
		require.NoError(t, err)
		return v
	}
	assert.True(t, visible("#edit-link"), "an Edit event button among the event's actions")
	assert.True(t, visible("#ev-name"), "the edit form is open on the page")
	assert.Equal(t, "Edit event", text("#edit-link"))
	run(chromedp.Click(byID("edit-link")), chromedp.WaitVisible(byID("ev-name")), chromedp.EmulateViewport(1280, 900))
	eventID := eventPath[strings.LastIndex(eventPath, "/")+1:]

	// A refused ticket type: a sentence next to the field, nothing typed
	// lost, the address the form's own.
	run(chromedp.Click(byID("add-tt")), chromedp.WaitVisible(byID("tt-name")),
		chromedp.SendKeys(byID("tt-name"), "Early bird"), chromedp.SendKeys(byID("tt-price"), "twelve"),
		chromedp.SetValue(byID("tt-opens"), "2030-05-01T09:00"), chromedp.SetValue(byID("tt-closes"), "2030-04-01T09:00"),
		chromedp.Submit(byID("tt-name")), chromedp.WaitVisible(chromedp.CSS(".field-error")))
	errs := text("form .field-error")
	assert.Regexp(t, `^The (price|sale end) `, errs)
	assert.NotRegexp(t, regexp.MustCompile(`\b(priceAmount|closesAt|opensAt)\b|^It `), errs)
	assert.Equal(t, "/console/events/"+eventID+"/ticket-types", path(), "the address stays the form's page")
	v, err := chromedp.Run(tctx, chromedp.Value(byID("tt-name")))
	require.NoError(t, err)
	assert.Equal(t, "Early bird", v, "what was typed stays")
	assert.Equal(t, "Ticket types", text(`nav[aria-label="Event setup"] a[aria-current="page"]`))
	snap("ticket type refused")
	run(chromedp.SetValue(byID("tt-price"), "12,50"), chromedp.SetValue(byID("tt-closes"), "2030-05-31T23:00"),
		chromedp.Submit(byID("tt-name")), chromedp.WaitVisible(byID("types")))
	assert.Contains(t, text(".note"), "Ticket type “Early bird” added and on sale.")
	run(chromedp.SetValue(byID("tt-name"), "Regular"), chromedp.SetValue(byID("tt-price"), "1.234,00"), chromedp.SetValue(byID("tt-cap"), "200"),
		chromedp.SetValue(byID("tt-opens"), "2030-04-01T09:00"), chromedp.Submit(byID("tt-name")), chromedp.WaitVisible(chromedp.CSS(`#types tbody tr:nth-child(2)`)))
	assert.Contains(t, text("#types"), "12,50 €")
	assert.Contains(t, text("#types"), "1.234,00 €", "a decimal comma and thousands points read as the organizer meant")
	assert.Contains(t, text("#types"), "until Fri 31 May 2030 23:00 CEST")
	snap("ticket types")

	// Edit a type: name, price, the sale window, visibility kept.
	run(chromedp.Click(chromedp.CSS(`#types a[href*="/ticket-types/"]`)), chromedp.WaitVisible(byID("tt-save")))
	buyLink, err := chromedp.Run(tctx, chromedp.Value(byID("buy-link")))
	require.NoError(t, err)
	assert.Contains(t, buyLink, "/buy/"+eventID+"/")
	run(chromedp.SetValue(byID("tt-name"), "Early bird ticket"), chromedp.SetValue(byID("tt-price"), "15"),
		chromedp.SetValue(byID("tt-opens"), "2026-01-01T09:00"), chromedp.Click(byID("tt-appr")))
	arrow, err := chromedp.Run(tctx, chromedp.Evaluate[string](`getComputedStyle(document.getElementById("tt-state")).backgroundImage`))
	require.NoError(t, err)
	assert.Contains(t, arrow, "svg", "a select shows its arrow, not a text box's look")
	snap("ticket type edit")
	run(chromedp.Click(byID("tt-appr")), chromedp.Click(byID("tt-save")), chromedp.WaitVisible(byID("types")))
	assert.Contains(t, text(".note"), "Ticket type “Early bird ticket” saved.")
	assert.Contains(t, text("#types"), "15,00 €")
	assert.Contains(t, text("#types"), "from Thu 1 Jan 2026 09:00 CET")

	// The venue.
	run(chromedp.Click(chromedp.CSS(`a[href$="/venue"]`)), chromedp.WaitVisible(byID("venue-name")))
	assert.Contains(t, text(".empty"), "No venue yet")
	run(chromedp.SendKeys(byID("venue-name"), "Kulturbrauerei"), chromedp.SendKeys(byID("venue-address"), "Schönhauser Allee 36, 10435 Berlin"),
		chromedp.SendKeys(byID("venue-online"), "meet.example.com"), chromedp.Click(byID("venue-save")), chromedp.WaitVisible(chromedp.CSS(".field-error")))
	assert.Equal(t, "The online link must be an http or https address, such as https://meet.example.com/gopher-night.", text(".field-error"))
	assert.Equal(t, "/console/events/"+eventID+"/venue", path())
	_, err = chromedp.Run(tctx, chromedp.Evaluate[string](`document.getElementById("venue-online").value = ""`))
	require.NoError(t, err)
	run(chromedp.Click(byID("venue-save")), chromedp.WaitVisible(byID("venue-now")))
	assert.Contains(t, text(".note"), "Venue saved: buyers now see “Kulturbrauerei, Schönhauser Allee 36, 10435 Berlin”")
	snap("venue")

	// Publish: the confirmation gives the public page, which shows the
	// date and the place.
	run(chromedp.Navigate(s.URL+eventPath), chromedp.WaitVisible(byID("publish")), chromedp.Click(byID("publish")), chromedp.WaitVisible(byID("unpublish")))
	assert.Contains(t, text(".note"), "“GopherCon Night” is published. Share its page: "+s.URL+"/e/"+eventID)
	assert.Equal(t, "published", text("#event-status"))
	assert.Equal(t, "Kulturbrauerei, Schönhauser Allee 36, 10435 Berlin", text("#event-venue"))
	snap("event published")
	run(chromedp.Click(byID("public-link")), chromedp.WaitVisible(byID("ev-h")))
	assert.Contains(t, text("#event-place"), "Kulturbrauerei, Schönhauser Allee 36, 10435 Berlin")
	snap("public page")

	// The shared checkout link: the buyer sees the event, its date and
	// venue; the pay page is the event's, with no machine id as headline.
	run(chromedp.Navigate(buyLink), chromedp.WaitVisible(byID("buy")))
	assert.Contains(t, text("#buy-h"), "GopherCon Night", "the link's own page says what it sells before anything is created")
	snap("checkout link")
	run(chromedp.Click(byID("buy")), chromedp.WaitVisible(byID("co-name")))
	place := text("#event-place")
	assert.Contains(t, place, "Sat 1 Jun 2030, 18:00 CEST")
	assert.Contains(t, place, "Kulturbrauerei")
	assert.Equal(t, "GopherCon Night", text("header .brand"))
	snap("checkout")
	run(chromedp.SendKeys(byID("co-email"), "bea@example.com"), chromedp.SendKeys(byID("co-name"), "Bea Buyer"),
		chromedp.Click(byID("co-submit")), chromedp.WaitVisible(byID("pay-button")))
	assert.Equal(t, "GopherCon Night", text("header .brand"), "the pay page is the event's")
	assert.NotContains(t, text("#pay-h"), "ORD", "the headline is words, not the order id")
	assert.Contains(t, text("#event-place"), "Kulturbrauerei")
	wraps, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`(() => { document.body.style.width = "390px"; const e = document.getElementById("pay-order"); return e.getClientRects().length > 1 })()`))
	require.NoError(t, err)
	assert.False(t, wraps, "the order number never breaks over two lines")
	snap("pay")
	gate := func(then string) {
		t.Helper()
		run(chromedp.WaitVisible(chromedp.CSS("#gate-email, #" + then)))
		if ok, _ := chromedp.Run(tctx, chromedp.Evaluate[bool](`!!document.getElementById("gate-email")`)); ok {
			run(chromedp.SendKeys(byID("gate-email"), "bea@example.com"), chromedp.Submit(byID("gate-email")), chromedp.WaitVisible(byID(then)))
		}
	}
	run(chromedp.Click(byID("pay-button")))
	gate("pass-link")
	assert.Contains(t, text("#event-place"), "Kulturbrauerei", "the order page says where")
	run(chromedp.Click(byID("pass-link")))
	gate("checkin-code")
	assert.Contains(t, text("#event-place"), "Kulturbrauerei", "the pass says where")
	run(chromedp.EmulateViewport(390, 900))
	lines, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.getElementById("checkin-code").getClientRects().length`))
	require.NoError(t, err)
	assert.Equal(t, 1, lines, "the check-in code stays on one line at 390 px")
	snap("pass")

	// The order: a partial refund typed with a decimal comma, then the
	// net amount.
	run(chromedp.Navigate(s.URL+eventPath+"/orders"), chromedp.WaitVisible(chromedp.CSS(`a[id^="order-"]`)))
	snap("orders")
	run(chromedp.Click(chromedp.CSS(`a[id^="order-"]`)), chromedp.WaitVisible(byID("refund")), chromedp.Click(byID("refund")),
		chromedp.SendKeys(byID("rf-amount"), "5,50"), chromedp.SendKeys(byID("rf-reason"), "Came late"),
		chromedp.Click(byID("refund-confirm")), chromedp.WaitVisible(byID("order-net")))
	assert.Equal(t, "paid, partly refunded", text("#order-status"))
	assert.Equal(t, "−5,50 €", text("#order-refunded"), "innerText gives the no-break space as a space")
	assert.Equal(t, "9,50 €", text("#order-net"))
	snap("order refunded")

	// Attendees: found by name, then checked in at the door.
	run(chromedp.Navigate(s.URL+eventPath+"/attendees"), chromedp.WaitVisible(byID("att-q")),
		chromedp.SendKeys(byID("att-q"), "Bea"), chromedp.Submit(byID("att-q")), chromedp.WaitVisible(byID("att-matching")))
	assert.Contains(t, text("table.items"), "Bea Buyer")
	assert.Equal(t, "not yet", text(`td[data-label="Checked in"]`))
	code := text(`td[data-label="Check-in code"]`)
	op := operator(t, s)
	op.get(eventPath + "/door")
	require.Equal(t, 200, op.post(eventPath+"/door", "checkinCode", code, "door", "event").Status)
	run(chromedp.Navigate(s.URL+eventPath+"/attendees?q=Bea"), chromedp.WaitVisible(byID("att-matching")))
	assert.Contains(t, text(`td[data-label="Checked in"]`), "✓")
	snap("attendees")

	// The attendees' action buttons at 390 px: each row's buttons apart
	// from one another (at least 4 px between any two boxes), none
	// overlapping or touching.
	run(chromedp.Navigate(s.URL+eventPath+"/attendees"), chromedp.WaitVisible(byID("att-q")), chromedp.EmulateViewport(390, 900))
	gaps, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](`(() => {
		const out = [];
		for (const row of document.querySelectorAll('table.items tbody tr')) {
			const bs = [...row.querySelectorAll('.btn, button')].filter(b => !b.closest('details:not([open]) form'))
				.map(b => [b.textContent.trim(), b.getBoundingClientRect()]).filter(([, r]) => r.width > 0);
			for (let i = 0; i < bs.length; i++) for (let j = i + 1; j < bs.length; j++) {
				const [na, a] = bs[i], [nb, b] = bs[j];
				const dx = Math.max(b.left - a.right, a.left - b.right), dy = Math.max(b.top - a.bottom, a.top - b.bottom);
				out.push(na + ' / ' + nb + ': ' + Math.max(dx, dy).toFixed(1));
			}
		}
		return out;
	})()`))
	require.NoError(t, err)
	require.NotEmpty(t, gaps, "the attendee rows have action buttons to measure")
	t.Logf("attendee action buttons at 390 px, px apart: %v", gaps)
	for _, g := range gaps {
		px, err := strconv.ParseFloat(g[strings.LastIndex(g, " ")+1:], 64)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, px, 4.0, "buttons too close at 390 px: %s", g)
	}
	run(chromedp.EmulateViewport(1280, 900))

	// The dashboard's sales chart has a time axis.
	run(chromedp.Navigate(s.URL+eventPath+"/dashboard"), chromedp.WaitVisible(chromedp.CSS("svg.chart")))
	ticks, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll('svg.chart text[text-anchor="middle"]').length`))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ticks, 4, "hour labels along the axis")
	title, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.querySelector("svg.chart title").textContent`))
	require.NoError(t, err)
	assert.Contains(t, title, "Paid orders per hour")
	snap("dashboard")

	// Duplicate, then unpublish the original.
	run(chromedp.Navigate(s.URL+eventPath), chromedp.WaitVisible(byID("duplicate")), chromedp.Click(byID("duplicate")),
		chromedp.WaitVisible(chromedp.CSS(".note")))
	assert.Contains(t, text(".note"), "“GopherCon Night (copy)” is a copy of “GopherCon Night” with its 2 ticket types, 0 add-ons, 0 registration forms and 0 program items, as a draft.")
	assert.NotEqual(t, eventPath, path())
	assert.Contains(t, text("table.items"), "Early bird ticket")
	assert.Equal(t, "Kulturbrauerei, Schönhauser Allee 36, 10435 Berlin", text("#event-venue"))
	snap("event duplicated")
	run(chromedp.Navigate(s.URL+eventPath), chromedp.WaitVisible(byID("unpublish")), chromedp.Click(byID("unpublish")), chromedp.WaitVisible(byID("publish")))
	assert.Contains(t, text(".note"), "is a draft again")
	assert.Equal(t, "draft", text("#event-status"))
	// The refused form above answered 400 on purpose; nothing else failed.
	var other []string
	for _, p := range problems() {
		if !strings.Contains(p, "status of 400") {
			other = append(other, p)
		}
	}
	require.Empty(t, other, "console errors or CSP violations")
	t.Logf("screenshots in %s", dir)
}

// TestVenueAndOnlineLinkOnBuyerPages: the venue page's place and online
// link show on the public page and the checkout a ticket type's link
// opens; a duplicate keeps them.
func TestVenueAndOnlineLinkOnBuyerPages(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) { c.StorefrontIPPerMinute = 20 }) // the default budget
	op := operator(t, s)
	unit := op.newUnit("Places")
	ev := op.newEvent(unit, "Hybrid Night")
	op.get("/console/events/" + ev + "/venue")
	p := op.post("/console/events/"+ev+"/venue", "venue", "Kulturbrauerei", "address", "Schönhauser Allee 36", "onlineUrl", "https://meet.example.com/hybrid")
	require.Equal(t, 303, p.Status, p.Body)
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	b := apptest.NewBrowser(t)
	page := b.Get(s.URL + "/e/" + ev)
	require.Equal(t, 200, page.Status)
	assert.Contains(t, page.Body, `<p class="place" id="event-place">Kulturbrauerei, Schönhauser Allee 36 · https://meet.example.com/hybrid</p>`)
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	// The link's GET (a chat app's preview, a crawler) shows what it
	// sells and creates nothing: 25 of them spend none of the client's
	// budget of checkouts (20 a minute), which the Buy button's POSTs spend.
	link := s.URL + "/buy/" + ev + "/" + tt
	for range 25 {
		p = b.Get(link)
		require.Equal(t, 200, p.Status)
	}
	assert.Contains(t, p.Body, `<h1 id="buy-h">Hybrid Night</h1>`)
	assert.Contains(t, p.Body, `<strong id="buy-type">General</strong> · <span id="buy-price">25,00`+"\u00a0"+`€</span>`)
	assert.Contains(t, p.Body, `<form method="post" action="/buy/`+ev+`/`+tt+`">`)
	p = b.Post(link, nil)
	require.Equal(t, 303, p.Status, p.Body)
	require.Contains(t, p.Header.Get("Location"), "/checkout/")
	co := b.Get(p.Header.Get("Location"))
	require.Equal(t, 200, co.Status)
	assert.Contains(t, co.Body, "Sat 1 Jun 2030, 18:00 CEST · Kulturbrauerei, Schönhauser Allee 36 · https://meet.example.com/hybrid")
	assert.Equal(t, 404, b.Get(s.URL+"/buy/"+ev+"/tt_nope").Status, "an unknown type is not on sale")
	assert.Equal(t, 404, b.Post(s.URL+"/buy/"+ev+"/tt_nope", nil).Status)
	limited := false
	for range 21 {
		if p = b.Post(link, nil); p.Status == 429 {
			limited = true
			break
		}
		require.Equal(t, 303, p.Status, p.Body)
	}
	require.True(t, limited, "a checkout beyond the client's budget (20 a minute) is refused")
	assert.NotEmpty(t, p.Header.Get("Retry-After"))
	assert.Contains(t, p.Body, "Too many checkouts were started from your connection")

	p = op.post("/console/events/" + ev + "/duplicate")
	require.Equal(t, 303, p.Status)
	cp := op.get(p.Header.Get("Location"))
	assert.Contains(t, cp.Body, "Hybrid Night (copy)")
	assert.Contains(t, cp.Body, "Kulturbrauerei, Schönhauser Allee 36 · https://meet.example.com/hybrid")
}
