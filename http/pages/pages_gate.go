package pages

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/event"
	thttp "ticketd/http"
)

// The email gate: an order or pass page shows nothing until
// the visitor types the order's (registration's) email. A match is
// remembered on that device by a cookie scoped to the page's path:
//
//	name   ticketd_gate
//	value  "v1." + expiry (unix seconds) + "." + base64url(HMAC-SHA256(secret,
//	       "gate\x00" + scope + "\x00" + lower(trim(email)) + "\x00" + expiry))
//	flags  Path=/orders/{n} or /pass/{token}; HttpOnly; SameSite=Lax;
//	       Secure when the base URL is https; Max-Age = gateCookieTTL
//
// The email itself is not in the cookie; the MAC binds the page (scope) and
// the email, so a cookie of one page or an edited one is refused. A rotated
// pass token is another scope: its devices are asked again.
//
// Wrong answers are limited per (scope, client IP): gateFailLimit in
// gateFailWindow, then every answer gets a 429 page until the window ends.

const (
	gateCookie     = "ticketd_gate"
	gateCookieTTL  = 30 * 24 * time.Hour
	gateFailLimit  = 5
	gateFailWindow = 15 * time.Minute
	gateMaxKeys    = 100_000
	maxEmailLen    = 320
	// resendLimit ticket resends per resendWindow per (checkout session,
	// client IP): each is an email to somebody's inbox.
	resendLimit  = 3
	resendWindow = time.Hour
)

type gateResult int

const (
	gateMissing gateResult = iota
	gateOK
	gateBad
)

func (p *Pages) gateMAC(scope, email string, exp int64) string {
	m := hmac.New(sha256.New, p.gateSecret())
	m.Write([]byte("gate\x00" + scope + "\x00" + event.NormEmail(email) + "\x00" + strconv.FormatInt(exp, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (p *Pages) gateValue(scope, email string, now time.Time) string {
	exp := now.Add(gateCookieTTL).Unix()
	return "v1." + strconv.FormatInt(exp, 10) + "." + p.gateMAC(scope, email, exp)
}

// checkGate verifies the request's gate cookie for scope and email.
func (p *Pages) checkGate(rc *fasthttp.RequestCtx, scope, email string, now time.Time) gateResult {
	raw := rc.Request.Header.Cookie(gateCookie)
	if len(raw) == 0 {
		return gateMissing
	}
	if len(raw) > 128 {
		return gateBad
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return gateBad
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || now.Unix() >= exp {
		return gateBad
	}
	if !hmac.Equal([]byte(parts[2]), []byte(p.gateMAC(scope, email, exp))) {
		return gateBad
	}
	return gateOK
}

func (p *Pages) setGateCookie(rc *fasthttp.RequestCtx, path, value string, maxAge time.Duration) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(gateCookie)
	c.SetValue(value)
	c.SetPath(path)
	c.SetHTTPOnly(true)
	c.SetSecure(p.secure)
	c.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	if maxAge > 0 {
		c.SetMaxAge(int(maxAge / time.Second))
	} else {
		c.SetExpire(fasthttp.CookieExpireDelete)
	}
	rc.Response.Header.SetCookie(c)
}

// remember marks this device as knowing email for scope, as a right gate
// answer does: the device that typed the email to place an order (or join
// a waitlist), or that opened the order page of the order's own pass. The
// cookie is the gate's own, so it is exactly as strong: per page, signed,
// HttpOnly, SameSite=Lax.
func (p *Pages) remember(rc *fasthttp.RequestCtx, scope, path, email string) {
	p.setGateCookie(rc, path, p.gateValue(scope, email, p.now()), gateCookieTTL)
}

// gate runs the email gate of a page at back for scope, whose owner's email
// is email; the cookie is scoped to path (a prefix of back). It returns true when the page may be shown; otherwise it has
// answered: the gate form, a wrong-answer page, a 429 page or, after a
// right answer, a redirect back to the page (so a reload does not post
// again).
func (p *Pages) gate(rc *fasthttp.RequestCtx, v *view, scope, path, back, email string) bool {
	now := p.now()
	if rc.IsPost() && string(rc.PostArgs().Peek("form")) == "gate" {
		key := scope + "\x00" + thttp.ClientIP(rc, p.cfg.TrustedProxies).String()
		if wait, limited := p.limiter.blocked(key, now); limited {
			rc.Response.Header.Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
			v.Gate, v.Limited, v.Error = true, true, v.L.T("gate.limited")
			p.render(rc, 429, pageOf(rc), v)
			return false
		}
		typed := string(rc.PostArgs().Peek("email"))
		if len(typed) <= maxEmailLen && event.NormEmail(typed) != "" && event.NormEmail(typed) == event.NormEmail(email) {
			p.setGateCookie(rc, path, p.gateValue(scope, email, now), gateCookieTTL)
			p.headers(rc)
			rc.Redirect(back, fasthttp.StatusSeeOther)
			return false
		}
		p.limiter.fail(key, now)
		// The error sits next to the field, which keeps what was typed
		// (a typo is then easy to see).
		v.Gate, v.Errors = true, map[string]string{"email": v.L.T("gate.wrong")}
		if len(typed) <= maxEmailLen {
			v.Email = typed
		}
		p.render(rc, 403, pageOf(rc), v)
		return false
	}
	switch p.checkGate(rc, scope, email, now) {
	case gateOK:
		return true
	case gateBad:
		p.setGateCookie(rc, path, "", 0)
		v.Gate, v.Error = true, v.L.T("gate.refused")
		p.render(rc, 403, pageOf(rc), v)
	default:
		v.Gate = true
		p.render(rc, 200, pageOf(rc), v)
	}
	return false
}

// pageOf names the template of a gated page by its path.
func pageOf(rc *fasthttp.RequestCtx) string {
	path := string(rc.Path())
	switch {
	case strings.HasPrefix(path, "/pass/"):
		return "pass"
	case strings.HasPrefix(path, "/checkout/"):
		return "checkout"
	case strings.HasSuffix(path, "/checkout"):
		return "continue"
	}
	return "order"
}

// gateLimiter counts wrong gate answers per key in fixed windows. Memory
// is bounded by maxKeys: when full, lapsed windows are dropped first, then
// an arbitrary entry (a lost count weakens the limit for one key, never
// locks anyone out).
type gateLimiter struct {
	mu      sync.Mutex
	limit   int
	window  time.Duration
	maxKeys int
	counts  map[string]gateCount
}

type gateCount struct {
	n     int
	until time.Time
}

func newGateLimiter(limit int, window time.Duration, maxKeys int) *gateLimiter {
	return &gateLimiter{limit: limit, window: window, maxKeys: maxKeys, counts: map[string]gateCount{}}
}

// blocked reports whether key used up its wrong answers, and for how long.
func (l *gateLimiter) blocked(key string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.counts[key]
	if !ok || !now.Before(c.until) {
		return 0, false
	}
	return c.until.Sub(now), c.n >= l.limit
}

// fail counts a wrong answer of key.
func (l *gateLimiter) fail(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.counts[key]
	if !ok || !now.Before(c.until) {
		if !ok && len(l.counts) >= l.maxKeys {
			l.evict(now)
		}
		c = gateCount{until: now.Add(l.window)}
	}
	c.n++
	l.counts[key] = c
}

func (l *gateLimiter) evict(now time.Time) {
	for k, c := range l.counts {
		if !now.Before(c.until) {
			delete(l.counts, k)
		}
	}
	for k := range l.counts {
		if len(l.counts) < l.maxKeys {
			return
		}
		delete(l.counts, k)
	}
}

// MaskEmail shows the first character of the local part and the domain:
// "a***@example.com".
func MaskEmail(e string) string {
	local, domain, ok := strings.Cut(e, "@")
	if !ok || local == "" {
		return "***"
	}
	return local[:1] + "***@" + domain
}
