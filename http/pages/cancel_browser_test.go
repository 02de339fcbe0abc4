package pages_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"ticketd/internal/browsertest"
)

// TestHostedCancelInABrowser: in chromium 390 px wide, a buyer who went to
// the payment page and changed their mind opens the order page, presses
// "Cancel this order" (a touch target of at least 44 px that fits the
// screen) and lands on the order page saying the order was cancelled, with
// no cancel left to press and nothing wider than the screen.
func TestHostedCancelInABrowser(t *testing.T) {
	ctx, problems := browsertest.Start(t, 390, 844)
	s := pgStart(t)
	u := s.NewUnit("Browser cancel")
	ev := pgOneSeat(t, s, u.Secret, 25)
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	id := func(s string) chromedp.ID { return chromedp.ID(s) }
	// The window cannot be narrower than chromium's minimum: the viewport
	// is emulated at a phone's 390 px.
	require.NoError(t, chromedp.Do(tctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(pgSession(t, s, u.Secret, ev)),
		chromedp.WaitVisible(id("co-email")),
		chromedp.SendKeys(id("co-email"), "cleo@example.com"),
		chromedp.Click(id("co-submit")),
		chromedp.WaitVisible(id("pay-button")),
	))
	number, err := chromedp.Run(tctx, chromedp.Text(id("pay-order")))
	require.NoError(t, err)
	number = strings.TrimSpace(number)
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(s.URL+"/orders/"+number),
		chromedp.WaitVisible(id("cancel-order")),
		shot(t, "hosted-cancel-1-order.png"),
	))
	type box struct{ Height, Right, Inner, Scroll float64 }
	b, err := chromedp.Run(tctx, chromedp.Evaluate[box](`(() => { const r = document.getElementById("cancel-order").getBoundingClientRect();
		return {Height: r.height, Right: r.right, Inner: window.innerWidth, Scroll: document.documentElement.scrollWidth} })()`))
	require.NoError(t, err)
	require.Equal(t, 390.0, b.Inner, "a phone's width")
	require.GreaterOrEqual(t, b.Height, 44.0, "the cancel button is a touch target")
	require.LessOrEqual(t, b.Right, b.Inner, "the cancel button fits the screen")
	require.LessOrEqual(t, b.Scroll, b.Inner, "nothing is wider than the screen")

	require.NoError(t, chromedp.Do(tctx,
		chromedp.Click(id("cancel-order")),
		chromedp.WaitVisible(id("order-notice")),
		shot(t, "hosted-cancel-2-cancelled.png"),
	))
	notice, err := chromedp.Run(tctx, chromedp.Text(id("order-notice")))
	require.NoError(t, err)
	require.Contains(t, notice, "Your order has been cancelled and its tickets released.")
	left, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.getElementById("cancel-order") !== null`))
	require.NoError(t, err)
	require.False(t, left, "a cancelled order offers no cancel")
	scroll, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
	require.NoError(t, err)
	require.True(t, scroll, "nothing is wider than the screen")
	require.Equal(t, "cancelled", pgOrderStatus(t, s, u.Secret, ev.ID, number))
	require.Empty(t, problems(), "console errors or CSP violations")
}
