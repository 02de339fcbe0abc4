package pages_test

import (
	"bufio"
	"context"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/skip2/go-qrcode"
	"github.com/stretchr/testify/require"

	"ticketd/internal/browsertest"
)

// writeQRY4M writes a Y4M video (raw I420 frames, which chromium's fake
// camera reads) of a QR code of text on white, so the scanner page scans a
// real QR code through a real camera pipeline.
func writeQRY4M(t *testing.T, text string) string {
	t.Helper()
	const w, h, frames = 640, 480, 10
	q, err := qrcode.New(text, qrcode.Medium)
	require.NoError(t, err)
	img := q.Image(400)
	ox, oy := (w-img.Bounds().Dx())/2, (h-img.Bounds().Dy())/2
	y := make([]byte, w*h)
	for i := range y {
		y[i] = 255
	}
	b := img.Bounds()
	for py := b.Min.Y; py < b.Max.Y; py++ {
		for px := b.Min.X; px < b.Max.X; px++ {
			if g := color.GrayModel.Convert(img.At(px, py)).(color.Gray); g.Y < 128 {
				y[(oy+py-b.Min.Y)*w+ox+px-b.Min.X] = 0
			}
		}
	}
	chroma := make([]byte, w*h/4)
	for i := range chroma {
		chroma[i] = 128
	}
	path := filepath.Join(t.TempDir(), "qr.y4m")
	f, err := os.Create(path)
	require.NoError(t, err)
	bw := bufio.NewWriter(f)
	fmt.Fprintf(bw, "YUV4MPEG2 W%d H%d F10:1 Ip A1:1 C420jpeg\n", w, h)
	for range frames {
		bw.WriteString("FRAME\n")
		bw.Write(y)
		bw.Write(chroma)
		bw.Write(chroma)
	}
	require.NoError(t, bw.Flush())
	require.NoError(t, f.Close())
	return path
}

// waitJS polls a JavaScript boolean expression until it holds.
func waitJS(t *testing.T, ctx context.Context, expr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({verdict: (document.getElementById("verdict")||{}).dataset, body: document.body && document.body.dataset, state: (document.getElementById("sync-state")||{}).textContent, queued: (document.getElementById("queued")||{}).textContent, counts: (document.getElementById("counts")||{}).textContent})`))
			t.Fatalf("within %s: %s never held (err %v); page: %s", within, expr, err, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// emulateParams are Network.emulateNetworkConditions' parameters: the
// command cdproto marks deprecated, and the one this chromium takes that
// both fails requests and sets navigator.onLine (its by-rule successor
// answers "Invalid parameters" here).
type emulateParams struct {
	Offline            bool    `json:"offline"`
	Latency            float64 `json:"latency"`
	DownloadThroughput float64 `json:"downloadThroughput"`
	UploadThroughput   float64 `json:"uploadThroughput"`
}

var emulateNetwork = cdp.Command[emulateParams, cdp.Empty]{Method: "Network.emulateNetworkConditions"}

// setOffline takes the page's network down (requests and navigator.onLine)
// or brings it back.
func setOffline(offline bool) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return fmt.Errorf("network enable: %w", err)
		}
		if _, err := chromedp.Call(ctx, emulateNetwork, emulateParams{Offline: offline, DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
			return fmt.Errorf("emulate network conditions: %w", err)
		}
		return nil
	})
}

// TestScannerInABrowser sets a phone up as a door device from its setup
// link, scans a real pass QR code through chromium's fake camera (admitted,
// then already checked in), goes offline, checks two passes in with the
// keyboard (the wedge's code then Enter), reloads while offline (the
// queue survives, the page opens from its service worker), comes back
// online and sees the queue drain into check-ins on the server; a scan by
// a second device reaches the page through its stream.
func TestScannerInABrowser(t *testing.T) {
	browsertest.Binary(t)
	s := pgStart(t)
	u := s.NewUnit("Door")
	ev := pgPublished(t, s, u.Secret, 0)
	var regs []map[string]any
	for i := range 4 {
		regs = append(regs, pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations",
			map[string]any{"email": fmt.Sprintf("guest%d@door.io", i), "name": fmt.Sprintf("Guest %d", i), "registrationTypeId": ev.TypeID}))
	}
	code := func(i int) string { return regs[i]["checkinCode"].(string) }
	dev := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/devices", map[string]any{"name": "Front door"})
	setupURL := dev["setupUrl"].(string)
	require.True(t, strings.HasPrefix(setupURL, s.URL+"/door?setup="))

	y4m := writeQRY4M(t, code(0))
	ctx, problems := browsertest.Start(t, 390, 844,
		chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.Flag("use-fake-device-for-media-stream", true),
		chromedp.Flag("use-file-for-fake-video-capture", y4m))
	tctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()

	checkins := func() map[string]map[string]any {
		l := pgAPI(t, s, u.Secret, "GET", "/v1/events/"+ev.ID+"/checkins", nil)
		out := map[string]map[string]any{}
		for _, c := range l["data"].([]any) {
			m := c.(map[string]any)
			out[m["registrationId"].(string)] = m
		}
		return out
	}

	// Set up from the link; the camera reads the QR code of guest 0.
	require.NoError(t, chromedp.Do(tctx, chromedp.Navigate(setupURL+"&camera=1")))
	waitJS(t, tctx, `document.body.dataset.ready === "1"`, 20*time.Second)
	waitJS(t, tctx, `document.getElementById("counts").textContent === "0 / 4"`, 10*time.Second)
	waitJS(t, tctx, `document.getElementById("verdict").dataset.verdict === "admitted" && !document.getElementById("verdict").hidden`, 30*time.Second)
	title, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.getElementById("verdict-title").textContent + "|" + document.getElementById("verdict-name").textContent + "|" + document.body.dataset.decoder`))
	require.NoError(t, err)
	require.Equal(t, "Admitted|Guest 0|jsQR", title)
	require.NoError(t, chromedp.Do(tctx, browsertest.Screenshot(t, "door", "door-1-admitted-390.png")))
	c := checkins()
	require.Len(t, c, 1)
	require.Equal(t, dev["id"], c[regs[0]["id"].(string)]["deviceId"])
	// The same QR again, once the verdict is gone: amber, with when and where.
	waitJS(t, tctx, `document.getElementById("verdict").dataset.verdict === "already_checked_in" && !document.getElementById("verdict").hidden`, 30*time.Second)
	detail, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.getElementById("verdict-title").textContent + "|" + document.getElementById("verdict-detail").textContent`))
	require.NoError(t, err)
	require.Contains(t, detail, "Already checked in|in at ")
	require.Contains(t, detail, "Front door")
	require.NoError(t, chromedp.Do(tctx, browsertest.Screenshot(t, "door", "door-2-already-390.png")))
	require.Len(t, checkins(), 1, "a second scan records nothing")

	// The page is kept by its service worker; reload without the camera.
	waitJS(t, tctx, `!!navigator.serviceWorker.controller`, 20*time.Second)
	require.NoError(t, chromedp.Do(tctx, chromedp.Navigate(s.URL+"/door")))
	waitJS(t, tctx, `document.body.dataset.ready === "1" && document.getElementById("counts").textContent === "1 / 4"`, 20*time.Second)

	// Offline: two passes checked in with the keyboard, from the local list.
	require.NoError(t, chromedp.Do(tctx, setOffline(true)))
	waitJS(t, tctx, `document.getElementById("sync-state").textContent === "offline" || !navigator.onLine`, 10*time.Second)
	for i, want := range map[int]string{1: "Guest 1", 2: "Guest 2"} {
		require.NoError(t, chromedp.Do(tctx, chromedp.SendKeys(chromedp.ID("code"), code(i)+"\r")))
		waitJS(t, tctx, `!document.getElementById("verdict").hidden && document.getElementById("verdict").dataset.verdict === "admitted" && document.getElementById("verdict-name").textContent === "`+want+`"`, 10*time.Second)
		require.NoError(t, chromedp.Do(tctx, chromedp.Click(chromedp.ID("verdict"))))
		waitJS(t, tctx, `document.getElementById("verdict").hidden`, 5*time.Second)
	}
	waitJS(t, tctx, `document.getElementById("queued").textContent === "2"`, 5*time.Second)
	require.Len(t, checkins(), 1, "nothing reached the server while offline")

	// Reload while offline: the page opens and the queue is still there.
	require.NoError(t, chromedp.Do(tctx, chromedp.Reload()))
	waitJS(t, tctx, `document.body.dataset.ready === "1"`, 20*time.Second)
	waitJS(t, tctx, `document.getElementById("queued").textContent === "2" && JSON.parse(localStorage.getItem("ticketd.door.queue")).length === 2`, 10*time.Second)
	require.NoError(t, chromedp.Do(tctx, browsertest.Screenshot(t, "door", "door-3-offline-queued-390.png")))
	// Guest 1 scanned again offline is amber from the local list.
	require.NoError(t, chromedp.Do(tctx, chromedp.SendKeys(chromedp.ID("code"), code(1)+"\r")))
	waitJS(t, tctx, `!document.getElementById("verdict").hidden && document.getElementById("verdict").dataset.verdict === "already_checked_in"`, 10*time.Second)
	require.NoError(t, chromedp.Do(tctx, chromedp.Click(chromedp.ID("verdict"))))

	// Back online: the queue drains into check-ins on the server.
	require.NoError(t, chromedp.Do(tctx, setOffline(false)))
	waitJS(t, tctx, `document.getElementById("queued").textContent === "0"`, 20*time.Second)
	c = checkins()
	require.Len(t, c, 3)
	for _, i := range []int{1, 2} {
		require.Equal(t, dev["id"], c[regs[i]["id"].(string)]["deviceId"], "guest %d checked in by the page's device", i)
	}

	// A second device's scan reaches this page through its stream.
	dev2 := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/devices", map[string]any{"name": "Side door"})
	init := pgAPI(t, s, "", "POST", "/door/v1/device/initialize", map[string]any{"setupCode": dev2["setupCode"]})
	pgAPI(t, s, init["key"].(string), "POST", "/door/v1/scans", map[string]any{"scans": []map[string]any{{
		"scanId": "side-1", "checkinCode": code(3), "subjectType": "event", "scannedAt": time.Now().UTC().Format(time.RFC3339)}}})
	waitJS(t, tctx, `document.getElementById("counts").textContent === "4 / 4"`, 10*time.Second)

	// Search shows who is in; the wide layout works too.
	waitJS(t, tctx, `document.getElementById("verdict").hidden`, 10*time.Second)
	require.NoError(t, chromedp.Do(tctx, chromedp.SendKeys(chromedp.ID("code"), "guest")))
	waitJS(t, tctx, `document.querySelectorAll("#results li").length === 4 && document.querySelectorAll("#results .in").length === 4`, 5*time.Second)
	visible, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`getComputedStyle(document.getElementById("verdict")).display !== "none"`))
	require.NoError(t, err)
	require.False(t, visible, "a dismissed verdict is gone from the screen")
	require.NoError(t, chromedp.Do(tctx, browsertest.Screenshot(t, "door", "door-4-search-390.png"),
		chromedp.EmulateViewport(1280, 800), browsertest.Screenshot(t, "door", "door-5-search-1280.png")))

	var bad []string
	for _, p := range problems() {
		// Requests that fail while offline are the point of the test.
		if !strings.Contains(p, "ERR_INTERNET_DISCONNECTED") && !strings.Contains(p, "Failed to fetch") && !strings.Contains(p, "net::ERR_") {
			bad = append(bad, p)
		}
	}
	require.Empty(t, bad, "console errors or CSP violations")
}
