package pages_test

import (
	"context"
	"fmt"
	"net"
	nethttp "net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// artifactDir is where the browser tests leave their screenshots
// (bin/ is gitignored).
const artifactDir = "../../bin/test-artifacts"

// hostedBrowser starts Debian's chromium headless for the hosted pages and
// returns its context and a function listing console problems (errors, CSP
// violations) seen so far. It skips in -short mode or without chromium
// (`make test` installs it).
func hostedBrowser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no chromium on this machine: install Debian's chromium (make browser-deps)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(412, 915), // a phone: the pages must work there
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// The first Run starts the browser: bounded by a timer that cancels
	// the browser, not by a context deadline (that would stop it later).
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		require.NoError(t, err, "start chromium")
	case <-time.After(20 * time.Second):
		cancelCtx()
		t.Fatal("chromium did not start within 20s")
	}
	var mu sync.Mutex
	var problems []string
	go func() {
		for m, err := range chromedp.Console(ctx) {
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
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// shot saves a full-page screenshot as a test artifact.
func shot(t *testing.T, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		buf, err := chromedp.FullScreenshot(100)(ctx, tg) // quality 100: PNG
		if err != nil {
			return err
		}
		if err := os.MkdirAll(artifactDir, 0o755); err != nil {
			return err
		}
		path := filepath.Join(artifactDir, name)
		t.Logf("screenshot %s", path)
		return os.WriteFile(path, buf, 0o644)
	})
}

// TestHostedFlowInABrowser is the buyer's whole journey in chromium: the
// checkout page of a session, the sandbox payment page, the order page
// behind the email gate, the return button to the integrator's returnUrl
// (a loopback server of the test that checks the query), then the pass
// page from the ticket email's link, its gate and the QR code.
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
	require.NoError(t, chromedp.Do(tctx,
		shot(t, "hosted-2-pay.png"),
		chromedp.Click(id("pay-button")),
		chromedp.WaitVisible(id("gate-email")),
		shot(t, "hosted-3-order-gate.png"),
		chromedp.SendKeys(id("gate-email"), "Bea.Buyer@Example.com"),
		chromedp.Submit(id("gate-email")),
		chromedp.WaitVisible(id("order-status")),
	))
	status, err := chromedp.Run(tctx, chromedp.Text(id("order-status")))
	require.NoError(t, err)
	number, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("h1 .mono")))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(tctx,
		shot(t, "hosted-4-order.png"),
		chromedp.Click(id("return-link")),
		chromedp.WaitVisible(id("thanks")),
	))
	require.Equal(t, "40 EUR", strings.TrimSpace(amount), "ticket 25 + T-shirt 15")
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
		chromedp.WaitVisible(id("gate-email")),
		shot(t, "hosted-5-pass-gate.png"),
		chromedp.SendKeys(id("gate-email"), buyer),
		chromedp.Submit(id("gate-email")),
		chromedp.WaitVisible(id("qr")),
		shot(t, "hosted-6-pass.png"),
	))
	shown, err := chromedp.Run(tctx, chromedp.Text(id("checkin-code")))
	require.NoError(t, err)
	qrWidth, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.getElementById("qr").naturalWidth`))
	require.NoError(t, err)
	require.Equal(t, code, strings.TrimSpace(shown))
	require.Equal(t, 256, qrWidth, "the QR code image decoded in the browser")
	require.Empty(t, problems(), "console errors or CSP violations")
}
