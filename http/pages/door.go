package pages

import (
	"embed"

	"github.com/valyala/fasthttp"

	thttp "ticketd/http"
)

// The scanner page (decisions §18, last bullet): {base_url}/door, a
// static page whose script talks to /door/v1 with the device key it keeps
// in the browser. Its files are embedded: jsQR 1.4.0 (npm, Apache-2.0,
// door/jsqr-LICENSE.txt) decodes QR codes where the browser has no
// BarcodeDetector; no CDN.
//
//go:embed door
var doorFS embed.FS

// doorCSP lets the page run its own scripts, call the service and show
// the camera; nothing else.
const doorCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"media-src 'self' blob: mediastream:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func registerDoor(srv *thttp.Server) {
	for path, file := range map[string]struct{ name, ctype string }{
		"/door":         {"door/door.html", "text/html; charset=utf-8"},
		"/door/app.js":  {"door/app.js", "text/javascript; charset=utf-8"},
		"/door/app.css": {"door/app.css", "text/css; charset=utf-8"},
		"/door/jsqr.js": {"door/jsqr-1.4.0.js", "text/javascript; charset=utf-8"},
		// At the root, so its scope may be /door (the page itself).
		"/door-sw.js": {"door/sw.js", "text/javascript; charset=utf-8"},
	} {
		b, err := doorFS.ReadFile(file.name)
		if err != nil {
			panic("pages: embedded door file missing: " + file.name)
		}
		ctype := file.ctype
		srv.Handle("GET", path, func(rc *fasthttp.RequestCtx) {
			h := &rc.Response.Header
			h.Set("Content-Security-Policy", doorCSP)
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("X-Frame-Options", "DENY")
			h.Set("X-Content-Type-Options", "nosniff")
			// The page changes with the binary: revalidate, so a device
			// never keeps an old script after an upgrade.
			h.Set("Cache-Control", "no-cache")
			rc.SetContentType(ctype)
			rc.SetBody(b)
		})
	}
}
