package shell

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// flashCookie carries the confirmation of a form across its redirect
// (post, redirect, get): the next page shows it once. It is signed with a
// key derived from the admin token, so every node of a cluster reads it
// and nobody else can make the console say something.
const (
	flashCookie = "ticketd_console_flash"
	// flashMax bounds a confirmation, in bytes.
	flashMax = 600
	// flashTTL is how long a confirmation waits for the page after its
	// redirect.
	flashTTL = time.Minute
)

// mac signs value for purpose with the console's key.
func (c *Console) mac(purpose, value string) string {
	h := hmac.New(sha256.New, c.macKey[:])
	h.Write([]byte(purpose))
	h.Write([]byte{0})
	h.Write([]byte(value))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// RedirectNotice answers a successful form with 303 to to, whose page
// then confirms what was done with msg.
func RedirectNotice(r *Req, to, msg string) error {
	if len(msg) > flashMax {
		msg = msg[:flashMax]
	}
	v := base64.RawURLEncoding.EncodeToString([]byte(msg))
	r.Console.setCookie(r.RC, flashCookie, v+"."+r.Console.mac("flash", v), flashTTL)
	return Redirect(r, to)
}

// takeFlash reads (and clears) the confirmation the previous form left,
// "" when none or not the console's.
func (c *Console) takeFlash(rc *fasthttp.RequestCtx) string {
	raw := string(rc.Request.Header.Cookie(flashCookie))
	if raw == "" {
		return ""
	}
	c.setCookie(rc, flashCookie, "", -1)
	v, sig, ok := strings.Cut(raw, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(c.mac("flash", v))) {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return ""
	}
	return string(b)
}
