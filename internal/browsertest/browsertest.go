package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// startMax bounds chromium's start: a browser that does not come up fails
// the test instead of hanging it.
const startMax = 20 * time.Second

// Binary answers the path of chromium. It skips t in -short mode or
// without chromium (make browser-deps installs it): a test calls it before
// a costly set-up that only the browser needs.
func Binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on this machine: install Debian's chromium (make browser-deps)")
	return ""
}

// Start starts chromium headless with a window of width x height px and
// the extra options (flags of the test's own) and answers its context and
// a function listing the console errors, exceptions and CSP violations
// seen so far. It skips t as Binary does.
func Start(t *testing.T, width, height int, extra ...chromedp.ExecAllocatorOption) (context.Context, func() []string) {
	t.Helper()
	bin := Binary(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(width, height),
	}
	opts = append(opts, extra...)
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
		if err != nil {
			t.Fatalf("browsertest: start chromium: %v", err)
		}
	case <-time.After(startMax):
		cancelCtx()
		t.Fatalf("browsertest: chromium did not start within %v", startMax)
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

// Screenshot saves a full-page PNG of the current page as
// bin/test-artifacts/sub/name at the module's root.
func Screenshot(t *testing.T, sub, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		buf, err := chromedp.FullScreenshot(100)(ctx, tg) // quality 100: PNG
		if err != nil {
			return err
		}
		dir, err := artifactDir(sub)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		path := filepath.Join(dir, name)
		t.Logf("screenshot %s", path)
		return os.WriteFile(path, buf, 0o644)
	})
}

// artifactDir is bin/test-artifacts/sub under the module's root, the
// nearest directory above the test's working directory (its package's)
// that holds a go.mod.
func artifactDir(sub string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("browsertest: %w", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "bin", "test-artifacts", sub), nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("browsertest: no go.mod above %s", wd)
		}
		dir = up
	}
}
