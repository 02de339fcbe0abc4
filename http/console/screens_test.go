package console_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
	"ticketd/internal/browsertest"
)

// Widths every console page is screenshotted at: a phone and a desktop.
const (
	phoneWidth   = 390
	desktopWidth = 1280
)

// shotAt sizes the window to width, checks the page does not scroll
// sideways there, and saves a full-page screenshot as
// bin/test-artifacts/console/<dir>/<name>.
func shotAt(t *testing.T, width int, dir, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.EmulateViewport(int64(width), 900)(ctx, tg); err != nil {
			return err
		}
		got, err := chromedp.Evaluate[int](`document.documentElement.scrollWidth`)(ctx, tg)
		if err != nil {
			return err
		}
		if got > width {
			t.Errorf("%s: the page is %d px wide at a %d px window", name, got, width)
		}
		_, err = browsertest.Screenshot(t, filepath.Join("console", dir), name)(ctx, tg)
		return err
	})
}

// TestConsolePagesAtPhoneAndDesktopWidths fills a unit and an event
// through the console's forms (a member, keys, a ticket type, codes, a
// program, two sales and a refund), then opens every console page in
// chromium and screenshots it at 390 px and at 1280 px, neither wider
// than its window; a keyboard user sees where the focus is.
func TestConsolePagesAtPhoneAndDesktopWidths(t *testing.T) {
	ctx, problems := consoleBrowser(t)
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Gopher Events")
	owner := accept(t, op.invite(unit, "olivia@example.com", "owner"), "Olivia Owner", "owner password")
	owner.invite(unit, "dora@example.com", "door")
	key := owner.secretKey(unit)
	ev := op.newEvent(unit, "GopherCon Night")
	base := "/console/events/" + ev
	require.Equal(t, 303, op.post(base+"/publish").Status)
	tt := match(t, typeRE, op.get(base).Body)
	require.Equal(t, 303, op.post(base+"/ticket-types", "ttName", "Workshop pass with a long name for the lunch and the evening",
		"priceAmount", "1250.50", "capacity", "40", "status", "open").Status)
	require.Equal(t, 303, op.post(base+"/codes", "registrationTypeId", tt, "count", "3", "label", "Speakers").Status)
	require.Equal(t, 303, op.post(base+"/promotion-codes", "promoCode", "EARLY", "kind", "percent", "off", "10").Status)
	require.Equal(t, 303, op.post(base+"/program/venues", "name", "Main hall").Status)
	require.Equal(t, 303, op.post(base+"/program/sessions", "title", "Keynote", "startsAt", "2030-06-01T19:00", "endsAt", "2030-06-01T20:00").Status)
	num := sell(t, s, key, ev, tt, "bea.buyer.with.a.long.address@example.com", "Bea Buyer")
	sell(t, s, key, ev, tt, "carl@example.com", "Carl Client")
	require.Equal(t, 303, op.post(base+"/orders/"+num+"/refund", "reason", "asked").Status)
	mailPath := match(t, mailLinkRE, op.get(base+"/orders/"+num).Body)
	resetLink := match(t, linkRE, op.post("/console/units/"+unit+"/members/"+
		match(t, regexp.MustCompile(`/members/(mem_[A-Za-z0-9]+)/reset`), op.get("/console/units/"+unit).Body)+"/reset").Body)
	invite := op.invite(unit, "vic@example.com", "viewer")

	tctx, cancel := context.WithTimeout(ctx, 240*time.Second)
	defer cancel()
	pages := []struct{ name, path, wait string }{
		{"home", "/console", "unit-name"},
		{"unit", "/console/units/" + unit, "inv-email"},
		{"keys", "/console/units/" + unit + "/keys", "key-name"},
		{"webhooks", "/console/units/" + unit + "/webhooks", "hook-url"},
		{"audit", "/console/units/" + unit + "/audit", "a-actor"},
		{"request-log", "/console/units/" + unit + "/request-log", ""},
		{"outbox", "/console/outbox", ""},
		{"sign-ins", "/console/sign-ins", "a-actor"},
		{"event", base, "event-status"},
		{"dashboard", base + "/dashboard", "stat-sold"},
		{"orders", base + "/orders", ""},
		{"order", base + "/orders/" + num, "emails"},
		{"email", mailPath, "mail-state"},
		{"attendees", base + "/attendees", ""},
		{"codes", base + "/codes", "mint-count"},
		{"addons", base + "/addons", ""},
		{"program", base + "/program", ""},
		{"translations", base + "/translations", ""},
		{"door", base + "/door?q=carl@example.com", "q"},
	}
	require.NoError(t, chromedp.Do(tctx,
		chromedp.EmulateViewport(desktopWidth, 900),
		chromedp.Navigate(s.URL+"/console/login"),
		chromedp.WaitVisible(byID("token")),
		shotAt(t, desktopWidth, "desktop", "00-login.png"),
		shotAt(t, phoneWidth, "phone", "00-login.png"),
		chromedp.SendKeys(byID("token"), s.Admin),
		chromedp.Click(byID("operator-submit")),
		chromedp.WaitVisible(byID("unit-name")),
	))
	for i, p := range pages {
		file := fmt.Sprintf("%02d-%s.png", i+1, p.name)
		wait := chromedp.WaitVisible(chromedp.CSS("main h1"))
		if p.wait != "" {
			wait = chromedp.WaitVisible(byID(p.wait))
		}
		require.NoError(t, chromedp.Do(tctx,
			chromedp.EmulateViewport(desktopWidth, 900),
			chromedp.Navigate(s.URL+p.path),
			wait,
			shotAt(t, desktopWidth, "desktop", file),
			shotAt(t, phoneWidth, "phone", file),
		), p.path)
		title, err := chromedp.Run(tctx, chromedp.Title())
		require.NoError(t, err)
		require.NotContains(t, title, "Not found", p.path)
		require.NotContains(t, title, "Something went wrong", p.path)
	}

	// A keyboard user sees where the focus is: the first Tab lands on the
	// skip link, the next ones on the header's controls, each outlined.
	require.NoError(t, chromedp.Do(tctx,
		chromedp.EmulateViewport(desktopWidth, 900),
		chromedp.Navigate(s.URL+base+"/orders"),
		chromedp.WaitVisible(chromedp.CSS("main h1")),
	))
	for range 4 {
		require.NoError(t, chromedp.Do(tctx, chromedp.KeyEvent("\t")))
		outline, err := chromedp.Run(tctx, chromedp.Evaluate[string](
			`(() => { const s = getComputedStyle(document.activeElement); return s.outlineStyle + " " + s.outlineWidth + " " + s.boxShadow })()`))
		require.NoError(t, err)
		tag, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.activeElement.outerHTML.slice(0, 80)`))
		require.NoError(t, err)
		require.False(t, strings.HasPrefix(outline, "none") && strings.HasSuffix(outline, "none"), "no visible focus on %s: %s", tag, outline)
	}
	require.NoError(t, chromedp.Do(tctx, shotAt(t, desktopWidth, "desktop", "30-focus.png")))

	// The pages without a session: an invitation and a password reset.
	require.NoError(t, chromedp.Do(tctx,
		signOut(),
		chromedp.WaitVisible(byID("token")),
		chromedp.Navigate(invite),
		chromedp.WaitVisible(byID("password2")),
		shotAt(t, desktopWidth, "desktop", "31-accept.png"),
		shotAt(t, phoneWidth, "phone", "31-accept.png"),
		chromedp.Navigate(resetLink),
		chromedp.WaitVisible(byID("password2")),
		shotAt(t, desktopWidth, "desktop", "32-reset.png"),
		shotAt(t, phoneWidth, "phone", "32-reset.png"),
	))
	require.Empty(t, problems(), "console errors or CSP violations")
}
