package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/directory"
	thttp "ticketd/http"
	"ticketd/http/bind"
)

// loopbackClient is a client whose connections leave from the loopback
// address local: on Linux all of 127.0.0.0/8 is loopback, so one test can
// be several visitors. The server's client IP is the peer address (no
// trusted proxies here).
func loopbackClient(local string) *nethttp.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return &nethttp.Client{Timeout: 10 * time.Second, Transport: &nethttp.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}}
}

// visit sends one request as the visitor c and returns the status, headers
// and body.
func visit(t *testing.T, c *nethttp.Client, method, url, token string, hdr ...string) (int, nethttp.Header, []byte) {
	t.Helper()
	req, err := nethttp.NewRequest(method, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header, b
}

// withLimits adjusts the HTTP server's configuration of the started
// service after app has built it from its own.
func withLimits(f func(hc *thttp.Config)) serviceOption {
	return func(c *app.Config) {
		var t app.Tuning
		if c.Tune != nil {
			t = *c.Tune
		}
		prev := t.HTTP
		t.HTTP = func(hc *thttp.Config) {
			if prev != nil {
				prev(hc)
			}
			f(hc)
		}
		c.Tune = &t
	}
}

// TestStorefrontPerIPSparesTheKey: one visitor hammering the catalog is
// refused by its own per-(key, IP) budget, and those refusals cost the
// key's shared budget nothing, so every other visitor is still served.
func TestStorefrontPerIPSparesTheKey(t *testing.T) {
	// Buckets of 30, 10 and 5 (half a minute's), on a clock that stands
	// still: no request comes back mid-test.
	f := newAPIFx(t, withLimits(func(hc *thttp.Config) {
		hc.StorefrontKeyLimitPerMinute = 60
		hc.StorefrontCatalogIPLimitPerMinute = 20
		hc.StorefrontIPLimitPerMinute = 10
	}), freezeHTTPClock)
	u := f.unit(t)
	ev := apiPublished(t, u.dev)
	catalog := f.s.URL + "/storefront/v1/events/" + ev
	list := f.s.URL + "/storefront/v1/events"

	hammer := loopbackClient("127.0.0.1")
	got := map[int]int{}
	for i := 0; i < 60; i++ {
		url := catalog
		if i%2 == 1 {
			url = list // both catalog reads share the budget
		}
		st, h, _ := visit(t, hammer, "GET", url, u.Publishable)
		got[st]++
		if st == 429 {
			assert.NotEmpty(t, h.Get("Retry-After"))
			assert.Equal(t, "10", h.Get("RateLimit-Limit"), "the refusing budget is the per-IP one")
		}
	}
	require.Equal(t, map[int]int{200: 10, 429: 50}, got, "the hammering visitor gets its own 10")

	// The key has spent 10 of 30: two more visitors get their 10 each.
	for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		c := loopbackClient(ip)
		for i := 0; i < 10; i++ {
			st, _, body := visit(t, c, "GET", catalog, u.Publishable)
			require.Equal(t, 200, st, "visitor %s request %d: %s", ip, i, body)
		}
	}
	// Now the key's budget is spent, for everyone.
	st, h, _ := visit(t, loopbackClient("127.0.0.4"), "GET", catalog, u.Publishable)
	require.Equal(t, 429, st)
	require.Equal(t, "30", h.Get("RateLimit-Limit"), "the key's budget")
}

// TestStorefrontCatalogAndOrderBudgetsApart: browsing does not spend the
// visitor's budget of order routes, and that budget is per IP too.
func TestStorefrontCatalogAndOrderBudgetsApart(t *testing.T) {
	f := newAPIFx(t, withLimits(func(hc *thttp.Config) {
		hc.StorefrontKeyLimitPerMinute = 1000
		hc.StorefrontCatalogIPLimitPerMinute = 6 // a bucket of 3
		hc.StorefrontIPLimitPerMinute = 4        // a bucket of 2
	}), freezeHTTPClock)
	u := f.unit(t)
	ev := apiPublished(t, u.dev)
	a, b := loopbackClient("127.0.0.1"), loopbackClient("127.0.0.2")
	for i := 0; i < 5; i++ {
		visit(t, a, "GET", f.s.URL+"/storefront/v1/events/"+ev, u.Publishable)
	}
	order := f.s.URL + "/storefront/v1/events/" + ev + "/orders/ORD-NOPE"
	for i := 0; i < 2; i++ {
		st, _, body := visit(t, a, "GET", order, u.Publishable)
		require.Equal(t, 404, st, "an order read within the order budget: %s", body)
	}
	st, _, _ := visit(t, a, "GET", order, u.Publishable)
	require.Equal(t, 429, st)
	st, _, _ = visit(t, b, "GET", order, u.Publishable)
	require.Equal(t, 404, st, "another visitor has its own order budget")
}

// TestFailedAuthThrottledPerIP: failed authentications spend a per-IP
// bucket; once it is empty each further failure answers 429 AUTH_THROTTLED,
// while valid credentials from the same address are still served
// (decisions §17); successes spend nothing; another IP is unaffected.
func TestFailedAuthThrottledPerIP(t *testing.T) {
	f := newAPIFx(t, withLimits(func(hc *thttp.Config) { hc.AuthFailuresPerMinute = 5 }), freezeHTTPClock)
	u := f.unit(t)
	units := f.s.URL + "/admin/v1/business-units"
	guesser := loopbackClient("127.0.0.1")
	for i := 0; i < 5; i++ {
		st, _, _ := visit(t, guesser, "GET", units, "adm_guess_"+strings.Repeat("x", i+10))
		require.Equal(t, 401, st)
	}
	st, h, body := visit(t, guesser, "GET", units, "adm_guess_again_000000")
	require.Equal(t, 429, st, "%s", body)
	require.NotEmpty(t, h.Get("Retry-After"))
	var env thttp.ErrorEnvelope
	require.NoError(t, json.Unmarshal(body, &env))
	require.Equal(t, "RESOURCE_EXHAUSTED", env.Error.Status)
	require.Equal(t, "AUTH_THROTTLED", env.Error.Reason)
	st, _, _ = visit(t, guesser, "GET", units, f.s.Admin)
	require.Equal(t, 200, st, "the admin token is served however many failures its address made")
	st, _, _ = visit(t, guesser, "GET", f.s.URL+"/v1/events", u.Secret)
	require.Equal(t, 200, st, "and a secret key")
	st, _, _ = visit(t, guesser, "GET", f.s.URL+"/storefront/v1/events", u.Publishable)
	require.Equal(t, 200, st, "and a publishable key")
	st, _, _ = visit(t, guesser, "GET", f.s.URL+"/v1/events", "sk_guess")
	require.Equal(t, 429, st, "one bucket for every surface")
	st, _, _ = visit(t, guesser, "GET", f.s.URL+"/v1/events", u.Publishable)
	require.Equal(t, 429, st, "a key on the wrong surface is a failure like any")

	// Another IP, successes only: never throttled.
	other := loopbackClient("127.0.0.2")
	for i := 0; i < 30; i++ {
		st, _, _ := visit(t, other, "GET", units, f.s.Admin)
		require.Equal(t, 200, st)
		st, _, _ = visit(t, other, "GET", f.s.URL+"/v1/events", u.Secret)
		require.Equal(t, 200, st)
	}
	// Its failures on API keys count too.
	for i := 0; i < 5; i++ {
		st, _, _ := visit(t, other, "GET", f.s.URL+"/storefront/v1/events", "pk_guess")
		require.Equal(t, 401, st)
	}
	st, _, _ = visit(t, other, "GET", f.s.URL+"/storefront/v1/events", "pk_guess")
	require.Equal(t, 429, st)
	st, _, _ = visit(t, other, "GET", f.s.URL+"/storefront/v1/events", u.Publishable)
	require.Equal(t, 200, st)

	// Failures run at the bucket's pace: a burst of 500 from a third
	// address gets 5 answered 401, the rest 429.
	third := loopbackClient("127.0.0.3")
	got := map[int]int{}
	for i := 0; i < 500; i++ {
		st, _, _ := visit(t, third, "GET", units, "adm_guess_burst_0000000")
		got[st]++
	}
	require.Equal(t, map[int]int{401: 5, 429: 495}, got)
}

// TestMetricsNeedAdminToken: /metrics answers 401 without the admin token,
// and failures there spend the same per-IP bucket, which never locks the
// admin token out.
func TestMetricsNeedAdminToken(t *testing.T) {
	f := newAPIFx(t, withLimits(func(hc *thttp.Config) { hc.AuthFailuresPerMinute = 3 }), freezeHTTPClock)
	u := f.unit(t)
	metrics := f.s.URL + "/metrics"
	c := loopbackClient("127.0.0.1")
	for _, tok := range []string{"", u.Secret, u.Publishable} {
		st, _, body := visit(t, c, "GET", metrics, tok)
		require.Equal(t, 401, st, "token %q", tok)
		require.Contains(t, string(body), "UNAUTHENTICATED")
		require.NotContains(t, string(body), "ticketd_")
	}
	st, _, body := visit(t, c, "GET", metrics, "")
	require.Equal(t, 429, st, "three failures spent the bucket")
	require.Contains(t, string(body), "AUTH_THROTTLED")
	st, h, body := visit(t, c, "GET", metrics, f.s.Admin)
	require.Equal(t, 200, st, "the admin token is still served")
	require.Contains(t, h.Get("Content-Type"), "text/plain")
	require.Contains(t, string(body), "ticketd_http_requests_total")
	require.Contains(t, string(body), "ticketd_http_connections_open")
}

// TestPassTokenRedactedInLogs: the access log names the pass page's event,
// never the token's secret, however the path is spelled.
func TestPassTokenRedactedInLogs(t *testing.T) {
	var mu sync.Mutex
	var logs bytes.Buffer
	f := newAPIFx(t, withLimits(func(hc *thttp.Config) {
		hc.Logger = slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, nil))
	}))
	const secret = "S3CRETPASSTOKENPART0123456789AB"
	c := loopbackClient("127.0.0.1")
	visit(t, c, "GET", f.s.URL+"/pass/evt_01abc."+secret, "")
	visit(t, c, "POST", f.s.URL+"/pass/evt_01abc."+secret, "")
	visit(t, c, "GET", f.s.URL+"/pass/evt_01abc.%53"+secret[1:], "") // %53 is S
	visit(t, c, "GET", f.s.URL+"/pass/"+secret, "")
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	require.NotContains(t, out, secret[1:])
	require.Contains(t, out, `"path":"/pass/evt_01abc.[redacted]"`)
	require.Contains(t, out, `"path":"/pass/[redacted]"`)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestPreflightWithManyKeys: a CORS preflight is answered from the origin
// index: listed origins get the CORS headers among 300 keys, a revoked
// key's origin stops being listed, and a preflight flood stays cheap.
func TestPreflightWithManyKeys(t *testing.T) {
	f := newAPIFx(t)
	ctx := context.Background()
	unit, err := f.s.Sys.CreateUnit(ctx, "many keys")
	require.NoError(t, err)
	var last string
	for i := 0; i < 300; i++ {
		k, _, err := f.s.Sys.CreateKey(ctx, actors.NewKeySpec{UnitID: unit.ID, Type: directory.Publishable,
			Origins: []string{"https://shop" + strconv.Itoa(i) + ".example"}, Version: thttp.CurrentVersion})
		require.NoError(t, err)
		last = k.ID
	}
	c := loopbackClient("127.0.0.1")
	preflight := func(origin string) string {
		_, h, _ := visit(t, c, "OPTIONS", f.s.URL+"/storefront/v1/events", "", "Origin", origin,
			"Access-Control-Request-Method", "GET")
		return h.Get("Access-Control-Allow-Origin")
	}
	require.Equal(t, "https://shop299.example", preflight("https://shop299.example"))
	require.Equal(t, "https://shop0.example", preflight("https://shop0.example"))
	require.Empty(t, preflight("https://evil.example"))
	_, err = f.s.Sys.RevokeKey(ctx, last)
	require.NoError(t, err)
	require.Empty(t, preflight("https://shop299.example"), "the revoked key's origin")

	start := time.Now()
	for i := 0; i < 500; i++ {
		preflight("https://evil.example")
	}
	t.Logf("500 preflights of an unlisted origin among 300 keys: %s", time.Since(start))
}

// TestStorefrontListSkipsKnownDrafts: the storefront's event list asks
// only the events that may be published. Once the actors of a unit's drafts
// have told the index their status, a listing no longer visits them, and
// a draft published (or an event archived) later shows (or goes) at once.
func TestStorefrontListSkipsKnownDrafts(t *testing.T) {
	f := newAPIFx(t)
	u := f.unit(t)
	const drafts = 1000
	var published []string // newest first
	for i := 0; i < drafts; i++ {
		if i%300 == 0 {
			published = append([]string{apiPublished(t, u.dev)}, published...)
		}
		apiEvent(t, u.dev, nil)
	}
	list := func() []string {
		var ids []string
		cursor := ""
		for i := 0; i < 20; i++ {
			p := apiWant(t, u.sf.Do("GET", "/storefront/v1/events?limit=2&cursor="+cursor, nil), 200)
			ids = append(ids, apiIDs(t, p)...)
			if cursor = apiS(p, "nextCursor"); cursor == "" {
				return ids
			}
		}
		t.Fatal("too many pages")
		return nil
	}
	start := time.Now()
	require.Equal(t, published, list())
	cold := time.Since(start)
	cand, ok := f.s.Sys.PublishedCandidates(u.ID, "")
	require.True(t, ok)
	require.Len(t, cand, len(published), "every draft is known once its actor has loaded")
	start = time.Now()
	for i := 0; i < 10; i++ {
		require.Equal(t, published, list())
	}
	t.Logf("%d drafts, %d published: first listing %s, then %s per listing", drafts, len(published), cold, time.Since(start)/10)

	// Status changes reach the index.
	draft := apiS(apiEvent(t, u.dev, map[string]any{"startsAt": apiStartsAt}), "id")
	require.Equal(t, published, list())
	apiSetStatus(t, u.dev, "/v1/events/"+draft, "published")
	require.Equal(t, append([]string{draft}, published...), list())
	apiWant(t, u.dev.Do("POST", "/v1/events/"+published[0]+"/archive", nil), 200)
	require.Equal(t, append([]string{draft}, published[1:]...), list())
	// A cursor naming an event that has since become a known draft still
	// pages on from its place.
	p := apiWant(t, u.sf.Do("GET", "/storefront/v1/events?limit=1", nil), 200)
	require.Equal(t, []string{draft}, apiIDs(t, p))
	apiSetStatus(t, u.dev, "/v1/events/"+draft, "draft")
	p = apiWant(t, u.sf.Do("GET", "/storefront/v1/events?limit=5&cursor="+apiS(p, "nextCursor"), nil), 200)
	require.Equal(t, published[1:], apiIDs(t, p))
	// Another unit's event is an unknown cursor.
	other := f.unit(t)
	foreign := apiPublished(t, other.dev)
	apiWant400(t, u.sf.AllowInvalidRequest().Do("GET", "/storefront/v1/events?cursor="+bind.EncodeCursor(foreign), nil), "cursor")
}

// TestDefaultStorefrontBudgets: with every default limit on (as `ticketd
// serve` runs), a visitor bursting the catalog gets its bucket of 30 and
// then 429 with Retry-After, while the key's own budget (a bucket of
// 400,000: 10,000 such visitors) is nowhere near spent, so the next
// visitor is served; failed authentications from the bursting visitor's
// address do not stop its valid key.
func TestDefaultStorefrontBudgets(t *testing.T) {
	f := newAPIFx(t, apptest.DefaultLimits(), freezeHTTPClock)
	u := f.unit(t)
	ev := apiPublished(t, u.dev)
	catalog := f.s.URL + "/storefront/v1/events/" + ev
	a := loopbackClient("127.0.0.1")
	for i := 0; i < 30; i++ {
		st, h, body := visit(t, a, "GET", catalog, u.Publishable)
		require.Equal(t, 200, st, "request %d: %s", i, body)
		require.Equal(t, "30", h.Get("RateLimit-Limit"), "the tighter budget: the visitor's bucket")
	}
	st, h, body := visit(t, a, "GET", catalog, u.Publishable)
	require.Equal(t, 429, st, "%s", body)
	require.Contains(t, string(body), "RATE_LIMITED")
	require.Equal(t, "1", h.Get("Retry-After"), "one request back in a second (60 a minute)")
	for i := 0; i < 25; i++ {
		st, _, _ = visit(t, a, "GET", catalog, "pk_guessguessguessguessguess0000")
	}
	require.Equal(t, 429, st, "failures past the budget of 20")
	st, h, _ = visit(t, loopbackClient("127.0.0.2"), "GET", catalog, u.Publishable)
	require.Equal(t, 200, st, "another visitor is served")
	require.Equal(t, "29", h.Get("RateLimit-Remaining"))
	st, _, _ = visit(t, a, "GET", f.s.URL+"/v1/events", u.Secret)
	require.Equal(t, 200, st, "the throttled address's valid secret key is served")
}
