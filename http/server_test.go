package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"ticketd/event"
	"ticketd/http/bind"
	"ticketd/http/bind/bindtest"
)

// fakeAuth is an Authenticator over a fixed table of tokens.
type fakeAuth struct {
	mu   sync.Mutex
	keys map[string]*Principal
}

func (f *fakeAuth) Authenticate(token string, _ time.Time) (*Principal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keys[token], nil
}

func (f *fakeAuth) OriginAllowed(origin string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.keys {
		for _, o := range p.Origins {
			if o == origin {
				return true
			}
		}
	}
	return false
}

const (
	skLive   = "sk_live_aaaaaaaaaaaaaaaa"
	skOld    = "sk_old_bbbbbbbbbbbbbbbbbb"
	pkLive   = "pk_live_cccccccccccccccc"
	pkAsSK   = "sk_is_really_publishable"
	adminTok = "admin-token-0123456789"
)

func newFakeAuth() *fakeAuth {
	return &fakeAuth{keys: map[string]*Principal{
		skLive: {KeyID: "key_sk", UnitID: "bu_1", Type: KeySecret, Version: CurrentVersion},
		skOld:  {KeyID: "key_old", UnitID: "bu_1", Type: KeySecret, Version: "2026-03-15"},
		pkLive: {KeyID: "key_pk", UnitID: "bu_1", Type: KeyPublishable, Version: CurrentVersion,
			Origins: []string{"https://shop.example.com"}},
		// A publishable key whose token wrongly looks secret: the type wins.
		pkAsSK: {KeyID: "key_x", UnitID: "bu_1", Type: KeyPublishable, Version: CurrentVersion},
	}}
}

type (
	toyMoney = bindtest.Money
	toyItem  = bindtest.Item
	toyOrder = bindtest.Order
)

type toyQuery struct {
	bind.ListQuery
	Status string `query:"status" v:"enum=open|closed"`
	Big    *bool  `query:"big"`
}

type toyResult struct {
	EventID string    `json:"eventId"`
	Email   string    `json:"email"`
	Items   int       `json:"items"`
	Version string    `json:"version"`
	Seq     int       `json:"seq"`
	IP      string    `json:"ip"`
	Amount  int64     `json:"amount"`
	Cap     *int      `json:"capacity"`
	Query   *toyQuery `json:"query,omitempty"`
}

// harness is a real server on a loopback port with a toy route table.
type harness struct {
	t       *testing.T
	srv     *Server
	base    string
	auth    *fakeAuth
	calls   sync.Map      // operation -> *int
	gate    chan struct{} // closed to release "slow@" requests
	entered chan struct{} // a "slow@" request is in its handler
	seq     int
	mu      sync.Mutex
	infos   []RequestInfo
}

func (h *harness) next() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	return h.seq
}

func toyRoutes(h *harness) []Route {
	place := func(c *Ctx) (any, error) {
		var cmd toyOrder
		if err := c.Bind(&cmd); err != nil {
			return nil, err
		}
		cmd.EventID = c.Param("eventId")
		if cmd.Email == "slow@example.com" {
			h.entered <- struct{}{}
			<-h.gate
		}
		if cmd.Email == "boom@example.com" {
			return nil, errors.New("disk on fire at /var/secret")
		}
		if cmd.Email == "full@example.com" {
			return nil, event.Errorf(event.FailedPrecondition, "sold out")
		}
		if cmd.Email == "repeat@example.com" {
			c.SetStatus(200)
		}
		if cmd.Email == "bad-status@example.com" {
			c.SetStatus(202)
		}
		res := toyResult{EventID: cmd.EventID, Email: cmd.Email, Items: len(cmd.Items),
			Version: c.Version(), Seq: h.next(), IP: c.ClientIP().String(), Cap: cmd.Capacity}
		if cmd.Amount != nil {
			res.Amount = int64(*cmd.Amount)
		}
		return res, nil
	}
	list := func(c *Ctx) (any, error) {
		var q toyQuery
		if err := c.BindQuery(&q); err != nil {
			return nil, err
		}
		return toyResult{Query: &q, Version: c.Version()}, nil
	}
	bundle := func(c *Ctx) (any, error) {
		var items []toyItem
		if err := c.Bind(&items); err != nil {
			return nil, err
		}
		return toyResult{Items: len(items)}, nil
	}
	action := func(c *Ctx) (any, error) { return toyResult{EventID: c.Param("eventId"), Seq: h.next()}, nil }
	return []Route{
		{Surface: Developer, Method: "POST", Path: "/v1/events/{eventId}/orders", OperationID: "placeOrder",
			Body: toyOrder{}, Success: 201, AltSuccess: []int{200}, Response: toyResult{}, Handle: place},
		{Surface: Developer, Method: "GET", Path: "/v1/events", OperationID: "listEvents",
			Query: toyQuery{}, Success: 200, Response: toyResult{}, Handle: list},
		{Surface: Developer, Method: "PUT", Path: "/v1/bundles/{id}/items", OperationID: "putItems",
			Body: []toyItem{}, Success: 200, Response: toyResult{}, Handle: bundle},
		{Surface: Developer, Method: "POST", Path: "/v1/events/{eventId}/archive", OperationID: "archive",
			Success: 200, Response: toyResult{}, Handle: action},
		{Surface: Storefront, Method: "GET", Path: "/storefront/v1/events/{eventId}", OperationID: "sfEvent",
			Success: 200, Response: toyResult{}, Handle: action},
		{Surface: Storefront, Method: "POST", Path: "/storefront/v1/events/{eventId}/orders", OperationID: "sfPlace",
			Body: toyOrder{}, Success: 201, AltSuccess: []int{200}, Response: toyResult{}, Handle: place, IPLimited: true},
		{Surface: Admin, Method: "POST", Path: "/admin/v1/business-units", OperationID: "createUnit",
			Success: 201, Response: toyResult{}, Handle: action},
		{Surface: Public, Method: "GET", Path: "/openapi.json", OperationID: "openapi",
			Success: 200, Handle: func(c *Ctx) (any, error) { return map[string]string{"openapi": "3.1.0"}, nil }},
	}
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	return serveHarness(t, mod, nil)
}

// serveHarness is newHarness with register adding the server's own routes
// (health, metrics) before it serves.
func serveHarness(t *testing.T, mod func(*Config), register func(*Server)) *harness {
	t.Helper()
	h := &harness{t: t, auth: newFakeAuth(), gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	cfg := DefaultConfig()
	cfg.AdminToken = adminTok
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.OnRequest = func(ri RequestInfo) {
		h.mu.Lock()
		h.infos = append(h.infos, ri)
		h.mu.Unlock()
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := NewServer(cfg, h.auth, toyRoutes(h))
	require.NoError(t, err)
	if register != nil {
		register(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
		require.NoError(t, <-done)
	})
	h.srv, h.base = srv, "http://"+ln.Addr().String()
	return h
}

// resp is a decoded answer.
type resp struct {
	status int
	header nethttp.Header
	body   []byte
}

func (r resp) envelope(t *testing.T) ErrorObject {
	t.Helper()
	var env ErrorEnvelope
	require.NoError(t, json.Unmarshal(r.body, &env), "body %s", r.body)
	require.Equal(t, r.status, env.Error.Code)
	return env.Error
}

func (r resp) result(t *testing.T) toyResult {
	t.Helper()
	var out toyResult
	require.NoError(t, json.Unmarshal(r.body, &out), "body %s", r.body)
	return out
}

func (h *harness) do(method, path, token, body string, hdr ...string) resp {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := nethttp.NewRequest(method, h.base+path, rd)
	require.NoError(h.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := nethttp.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(h.t, err)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

const goodOrder = `{"email":"ann@example.com","items":[{"itemType":"registration_type","itemId":"tt_1","quantity":1}]}`

func TestServeSuccess(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("POST", "/v1/events/evt_1/orders", skLive, goodOrder)
	require.Equal(t, 201, r.status, "%s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
	require.NotEmpty(t, r.header.Get("Request-Id"))
	require.Equal(t, CurrentVersion, r.header.Get("Service-Version"))
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))
	out := r.result(t)
	require.Equal(t, "evt_1", out.EventID)
	require.Equal(t, 1, out.Items)
	require.Equal(t, CurrentVersion, out.Version)

	r = h.do("POST", "/v1/events/evt_1/orders", skLive, strings.Replace(goodOrder, "ann@", "repeat@", 1))
	require.Equal(t, 200, r.status)
}

func TestInternalErrorsDoNotLeak(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("POST", "/v1/events/evt_1/orders", skLive, strings.Replace(goodOrder, "ann@", "boom@", 1))
	require.Equal(t, 500, r.status)
	e := r.envelope(t)
	require.Equal(t, "INTERNAL", e.Status)
	require.NotContains(t, string(r.body), "secret")

	r = h.do("POST", "/v1/events/evt_1/orders", skLive, strings.Replace(goodOrder, "ann@", "bad-status@", 1))
	require.Equal(t, 500, r.status, "an undocumented status is a programming error")

	r = h.do("POST", "/v1/events/evt_1/orders", skLive, strings.Replace(goodOrder, "ann@", "full@", 1))
	require.Equal(t, 412, r.status)
	require.Equal(t, "FAILED_PRECONDITION", r.envelope(t).Status)
}

var _ = fmt.Sprint
var _ = bytes.Equal
var _ = netip.Addr{}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	for name, mod := range map[string]func(*Config){
		"negative rate":  func(c *Config) { c.RateLimitPerMinute = -1 },
		"negative ip":    func(c *Config) { c.StorefrontIPLimitPerMinute = -1 },
		"negative body":  func(c *Config) { c.MaxBodyBytes = -1 },
		"short admin":    func(c *Config) { c.AdminToken = "short" },
		"relative base":  func(c *Config) { c.BaseURL = "/x" },
		"ftp base":       func(c *Config) { c.BaseURL = "ftp://x" },
		"bad proxy":      func(c *Config) { c.TrustedProxies = []netip.Prefix{{}} },
		"negative ttl":   func(c *Config) { c.IdempotencyTTL = -1 },
		"negative bound": func(c *Config) { c.RateLimitMaxKeys = -1 },
	} {
		c := DefaultConfig()
		mod(&c)
		require.Error(t, c.Validate(), name)
		_, err := NewServer(c, newFakeAuth(), nil)
		require.Error(t, err, name)
	}
	c := DefaultConfig().withDefaults()
	require.Equal(t, "http://127.0.0.1:8080", c.BaseURL)
	require.Equal(t, 1<<20, c.MaxBodyBytes)

	_, err := NewServer(DefaultConfig(), nil, nil)
	require.Error(t, err)
	h := &harness{t: t}
	rs := toyRoutes(h)
	_, err = NewServer(DefaultConfig(), newFakeAuth(), append(rs, rs[0]))
	require.ErrorContains(t, err, "duplicate operation id")
	require.Panics(t, func() {
		type badTag struct {
			X int `json:"x" v:"mni=1"`
		}
		_, _ = NewServer(DefaultConfig(), newFakeAuth(), []Route{{Method: "POST", Path: "/x", OperationID: "x",
			Body: badTag{}, Handle: func(*Ctx) (any, error) { return nil, nil }}})
	}, "a tag typo fails at start")
	type badQuery struct {
		IDs []string `query:"ids"`
	}
	_, err = NewServer(DefaultConfig(), newFakeAuth(), []Route{{Method: "GET", Path: "/x", OperationID: "x",
		Query: badQuery{}, Handle: func(*Ctx) (any, error) { return nil, nil }}})
	require.ErrorContains(t, err, `query parameter "ids" has unsupported type []string`)
}

func TestShutdownFinishesInFlight(t *testing.T) {
	h := newHarness(t, nil)
	done := make(chan resp, 1)
	go func() {
		done <- h.do("POST", "/v1/events/evt_1/orders", skLive, strings.Replace(goodOrder, "ann@", "slow@", 1))
	}()
	<-h.entered
	shut := make(chan error, 1)
	go func() { shut <- h.srv.fast.Shutdown() }()
	select {
	case <-shut:
		t.Fatal("shutdown returned with a request in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(h.gate)
	require.Equal(t, 201, (<-done).status)
	require.NoError(t, <-shut)
}

func TestCtxParamIsDecoded(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("POST", "/v1/events/evt%201/archive", skLive, "")
	require.Equal(t, 200, r.status)
	require.Equal(t, "evt 1", r.result(t).EventID)
}

// BenchmarkServePlaceOrder measures the whole runtime around a handler that
// only binds: routing, auth, version, rate limit, binding, encoding, log.
func BenchmarkServePlaceOrder(b *testing.B) {
	h := &harness{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	cfg := DefaultConfig()
	cfg.RateLimitPerMinute = 0
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := NewServer(cfg, newFakeAuth(), toyRoutes(h))
	require.NoError(b, err)
	handler := srv.Handler()
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/v1/events/evt_1/orders")
	req.Header.Set("Authorization", "Bearer "+skLive)
	req.SetBodyString(goodOrder)
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	var rc fasthttp.RequestCtx
	b.ReportAllocs()
	for b.Loop() {
		rc.Init(&req, addr, nil)
		handler(&rc)
		if rc.Response.StatusCode() != 201 {
			b.Fatalf("status %d: %s", rc.Response.StatusCode(), rc.Response.Body())
		}
	}
}

func TestListQueryThroughServer(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("GET", "/v1/events", skLive, "")
	require.Equal(t, 200, r.status)
	require.Equal(t, bind.DefaultPageSize, r.result(t).Query.Limit)
	r = h.do("GET", "/v1/events?limit=7&cursor=abc&status=open&utm_source=x", skLive, "")
	require.Equal(t, 200, r.status, "unknown parameters are ignored")
	q := r.result(t).Query
	require.Equal(t, 7, q.Limit)
	require.Equal(t, "abc", q.Cursor)
	require.Equal(t, "open", q.Status)
	r = h.do("GET", "/v1/events?limit=0&status=nope", skLive, "")
	require.Equal(t, 400, r.status)
	require.Equal(t, []event.Detail{
		{Field: "limit", Reason: "must be at least 1"},
		{Field: "status", Reason: "must be one of: open, closed"},
	}, r.envelope(t).Details)
}
