package openapi_test

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docsBrowser returns a headless Chromium context, or skips the test when
// the machine has no Chromium (Debian's `chromium` package).
func docsBrowser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	var bin string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no chromium on this machine")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// No timeout on the browser's own context: it would stop the browser.
	// Steps get a deadline of their own.
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// TestDocsPageWorksInABrowser loads /docs in a real browser: Swagger UI
// renders every operation from the embedded assets under the page's strict
// Content-Security-Policy (any violation is a console error), and
// try-it-out sends a real request to the server and shows its answer.
func TestDocsPageWorksInABrowser(t *testing.T) {
	ctx := docsBrowser(t)
	base := toyServer(t)

	// Collect console errors, uncaught exceptions and browser-log errors
	// (a CSP violation is one) while the page runs.
	msgCtx, stopMsgs := context.WithCancel(ctx)
	msgs := chromedp.Console(msgCtx)
	var mu sync.Mutex
	var problems []string
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
				mu.Lock()
				problems = append(problems, m.String())
				mu.Unlock()
			}
		}
	}()

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

	stopMsgs()
	<-collected
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, problems, "no CSP violation, no script error")
}
