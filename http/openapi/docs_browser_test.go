package openapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/internal/browsertest"
)

// docsBrowser returns a headless chromium context at a desktop size and
// the console problems (errors, exceptions, CSP violations) seen so far,
// or skips the test when the machine has no chromium.
func docsBrowser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	return browsertest.Start(t, 1280, 800)
}

// TestDocsPageWorksInABrowser loads /docs in a real browser: Swagger UI
// renders every operation from the embedded assets under the page's strict
// Content-Security-Policy (any violation is a console error), and
// try-it-out sends a real request to the server and shows its answer.
func TestDocsPageWorksInABrowser(t *testing.T) {
	ctx, problems := docsBrowser(t)
	base := toyServer(t)

	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	const op = "#operations-Things-getThing"
	err := chromedp.Do(sctx,
		chromedp.Navigate(base+"/docs"),
		chromedp.WaitVisible(chromedp.CSS(op)),
	)
	require.NoError(t, err)
	t.Logf("page rendered after %v", time.Since(start))
	ops, err := chromedp.Run(sctx, chromedp.Evaluate[int](`document.querySelectorAll('.opblock').length`))
	require.NoError(t, err)
	assert.Equal(t, 6, ops, "every Developer operation of the toy table is rendered")

	// Try it out: open the operation, fill the path parameters, execute.
	err = chromedp.Do(sctx,
		chromedp.Click(chromedp.CSS(op+" .opblock-summary-control")),
		chromedp.Click(chromedp.CSS(op+" button.try-out__btn")),
		chromedp.SendKeys(chromedp.CSS(op+` tr[data-param-name="eventId"] input`), "evt_1"),
		chromedp.SendKeys(chromedp.CSS(op+` tr[data-param-name="thingId"] input`), "thg_1"),
		chromedp.Click(chromedp.CSS(op+" button.execute")),
		chromedp.WaitVisible(chromedp.CSS(op+" .live-responses-table tbody .response-col_status")),
	)
	require.NoError(t, err)
	t.Logf("try-it-out answered after %v", time.Since(start))
	status, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(op+" .live-responses-table tbody .response-col_status")))
	require.NoError(t, err)
	body, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(op+" .live-responses-table tbody .response-col_description")))
	require.NoError(t, err)
	assert.Equal(t, "200", strings.TrimSpace(status))
	assert.Contains(t, body, "thg_1", "the answer of the live server is shown")

	assert.Empty(t, problems(), "no CSP violation, no script error")
}
