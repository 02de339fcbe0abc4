package http

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/stretchr/testify/require"

	"ticketd/event"
)

func TestAuthFailuresAreIdentical(t *testing.T) {
	h := newHarness(t, nil)
	var bodies []string
	check := func(path, auth string) {
		t.Helper()
		r := h.do("GET", path, "", "", "Authorization", auth)
		require.Equal(t, 401, r.status, "%s %q", path, auth)
		e := r.envelope(t)
		require.Equal(t, "UNAUTHENTICATED", e.Status)
		require.Equal(t, msgUnauthenticated, e.Message)
		require.Equal(t, CurrentVersion, r.header.Get("service-version"), "401 echoes the current version")
		bodies = append(bodies, string(r.body))
	}
	for _, a := range []string{
		"",                               // missing
		"Basic " + skLive,                // wrong scheme
		"Bearer",                         // no token
		"Bearer sk_unknown_key_zzzzzzzz", // unknown (also revoked/expired: the directory says false)
		"Bearer " + pkLive,               // publishable on /v1
		"Bearer " + pkAsSK,               // sk_ prefix but a publishable key
		"Bearer " + adminTok,             // the admin token is not an API key
	} {
		check("/v1/events", a)
	}
	for _, a := range []string{"", "Bearer " + skLive, "Bearer pk_unknown", "Bearer " + adminTok} {
		check("/storefront/v1/events/evt_1", a)
	}
	for i := range bodies {
		require.JSONEq(t, bodies[0], bodies[i])
	}

	for _, a := range []string{"", "Bearer " + skLive, "Bearer " + adminTok + "x", "Bearer admin-token-012345678"} {
		r := h.do("POST", "/admin/v1/business-units", "", "", "Authorization", a)
		require.Equal(t, 401, r.status, a)
		require.JSONEq(t, bodies[0], string(r.body))
		require.Empty(t, r.header.Get("service-version"), "the admin surface is not versioned")
	}

	require.Equal(t, 200, h.do("GET", "/v1/events", skLive, "").status)
	require.Equal(t, 200, h.do("GET", "/storefront/v1/events/evt_1", pkLive, "").status)
	require.Equal(t, 201, h.do("POST", "/admin/v1/business-units", adminTok, "").status)
	require.Equal(t, 200, h.do("GET", "/v1/events", "", "", "Authorization", "bearer "+skLive).status, "scheme is case-insensitive")
	require.Equal(t, 200, h.do("GET", "/openapi.json", "", "").status, "public routes need no key")
}

func TestAdminDisabledWithoutToken(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.AdminToken = "" })
	require.Equal(t, 401, h.do("POST", "/admin/v1/business-units", "", "", "Authorization", "Bearer ").status)
	require.Equal(t, 401, h.do("POST", "/admin/v1/business-units", adminTok, "").status)
}

// panicAuth is an Authenticator with a bug.
type panicAuth struct{}

func (panicAuth) Authenticate(string, time.Time) (*Principal, error) { panic("directory bug") }

func TestPanicOutsideHandlerIsA500(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	h := &harness{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	srv, err := NewServer(cfg, panicAuth{}, toyRoutes(h))
	require.NoError(t, err)
	var rc fasthttp.RequestCtx
	rc.Request.SetRequestURI("/v1/events")
	rc.Request.Header.Set("Authorization", "Bearer sk_x")
	srv.Handler()(&rc)
	require.Equal(t, 500, rc.Response.StatusCode())
	require.Contains(t, string(rc.Response.Body()), `"INTERNAL"`)
}

// cannotTellAuth is an Authenticator that cannot read its directory.
type cannotTellAuth struct{}

func (cannotTellAuth) Authenticate(string, time.Time) (*Principal, error) {
	return nil, errors.New("directory: no majority")
}

// TestAuthCannotTellIs503: a key the Authenticator cannot tell live or
// not is answered 503 DIRECTORY_UNAVAILABLE in the envelope with
// Retry-After, never 401, and is not counted as a failed authentication
// (a client retrying a key made a moment ago is not throttled).
func TestAuthCannotTellIs503(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.AuthFailuresPerMinute = 1
	h := &harness{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	srv, err := NewServer(cfg, cannotTellAuth{}, toyRoutes(h))
	require.NoError(t, err)
	for range 3 {
		var rc fasthttp.RequestCtx
		rc.Request.SetRequestURI("/v1/events")
		rc.Request.Header.Set("Authorization", "Bearer sk_made_elsewhere")
		srv.Handler()(&rc)
		require.Equal(t, 503, rc.Response.StatusCode())
		require.Equal(t, "1", string(rc.Response.Header.Peek("Retry-After")))
		var env struct {
			Error struct {
				Code   int    `json:"code"`
				Status string `json:"status"`
				Reason string `json:"reason"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(rc.Response.Body(), &env), "%s", rc.Response.Body())
		require.Equal(t, 503, env.Error.Code)
		require.Equal(t, "UNAVAILABLE", env.Error.Status)
		require.Equal(t, event.ReasonDirectoryUnavailable, env.Error.Reason)
	}
}

// TestAuthFailureEchoesVersionAndEmptyHeaders: a 401 echoes a known
// service-version as sent (decisions §4, §17); a header sent empty is not a
// header left out: an empty service-version or Idempotency-Key answers 400.
func TestAuthFailureEchoesVersionAndEmptyHeaders(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("GET", "/v1/events", "", "", "service-version", "2026-03-15")
	require.Equal(t, 401, r.status)
	require.Equal(t, "2026-03-15", r.header.Get("service-version"))
	r = h.do("GET", "/v1/events", "", "", "service-version", "1999-01-01")
	require.Equal(t, 401, r.status)
	require.Equal(t, CurrentVersion, r.header.Get("service-version"), "an unknown one: the current")

	r = h.do("GET", "/v1/events", skLive, "", "service-version", "")
	require.Equal(t, 400, r.status, "%s", r.body)
	e := r.envelope(t)
	require.Equal(t, event.ReasonUnknownAPIVersion, e.Reason)
	require.Equal(t, "service-version", e.Details[0].Field)
	require.Equal(t, 200, h.do("GET", "/v1/events", skLive, "").status, "left out: the key's pin")

	r = h.do("POST", "/storefront/v1/events/evt_1/orders", pkLive, goodOrder, "Idempotency-Key", "")
	require.Equal(t, 400, r.status, "%s", r.body)
	e = r.envelope(t)
	require.Equal(t, "Idempotency-Key", e.Details[0].Field)
	require.Equal(t, "must not be empty", e.Details[0].Reason)
}

// remoteAuth is an Authenticator like cluster mode's: Authenticate may read
// elsewhere (counted), AuthenticateLocal answers from memory only, and a
// key made on "another node" is known to Authenticate alone.
type remoteAuth struct {
	*fakeAuth
	remote map[string]*Principal
	reads  atomic.Int64
}

func (r *remoteAuth) Authenticate(token string, now time.Time) (*Principal, error) {
	if p, _ := r.fakeAuth.Authenticate(token, now); p != nil {
		return p, nil
	}
	r.reads.Add(1) // not held here: read the directory's log
	return r.remote[token], nil
}

func (r *remoteAuth) AuthenticateLocal(token string, now time.Time) *Principal {
	p, _ := r.fakeAuth.Authenticate(token, now)
	return p
}

// TestThrottledAddressCostsNoRemoteReads: once an address has spent its
// failures, a key this node does not hold is read elsewhere (the
// directory's log) at most every throttledReadEvery, whatever the number of
// guesses, while the keys this node holds are served, and a key just made
// on another node is served after that pause.
func TestThrottledAddressCostsNoRemoteReads(t *testing.T) {
	auth := &remoteAuth{fakeAuth: newFakeAuth(), remote: map[string]*Principal{
		"sk_made_on_another_node_0000": {KeyID: "key_remote", UnitID: "bu_1", Type: KeySecret, Version: CurrentVersion}}}
	cfg := DefaultConfig()
	cfg.AuthFailuresPerMinute = 3
	cfg.Logger = slog.New(slog.DiscardHandler)
	at := time.Date(2026, 8, 22, 10, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(at.UnixNano())
	cfg.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	h := &harness{t: t, auth: auth.fakeAuth, gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	srv, err := NewServer(cfg, auth, toyRoutes(h))
	require.NoError(t, err)
	call := func(tok string) int {
		var rc fasthttp.RequestCtx
		rc.Request.SetRequestURI("/v1/events")
		rc.Request.Header.Set("Authorization", "Bearer "+tok)
		srv.Handler()(&rc)
		return rc.Response.StatusCode()
	}
	require.Equal(t, 200, call("sk_made_on_another_node_0000"), "a key made elsewhere is read and served")
	require.EqualValues(t, 1, auth.reads.Load())
	for i := 0; i < 3; i++ {
		require.Equal(t, 401, call("sk_guess_guess_guess_guess_"+strconv.Itoa(i)))
	}
	require.EqualValues(t, 4, auth.reads.Load())
	for i := 0; i < 50; i++ {
		require.Equal(t, 429, call("sk_guess_guess_guess_guess_x"+strconv.Itoa(i)))
	}
	require.EqualValues(t, 5, auth.reads.Load(), "50 guesses from a throttled address in an instant: one read")
	require.Equal(t, 200, call(skLive), "a key held here is served")
	auth.remote["sk_made_a_moment_ago_000000"] = &Principal{KeyID: "key_new", UnitID: "bu_1", Type: KeySecret, Version: CurrentVersion}
	require.Equal(t, 429, call("sk_made_a_moment_ago_000000"), "within the pause: not read")
	clock.Add(int64(throttledReadEvery))
	require.Equal(t, 200, call("sk_made_a_moment_ago_000000"), "after it, a key made elsewhere is read and served")
	require.EqualValues(t, 6, auth.reads.Load())
}
