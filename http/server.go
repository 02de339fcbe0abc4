package http

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/router"
	gojson "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"ticketd/event"
	"ticketd/http/bind"
	"ticketd/http/conns"
	"ticketd/idempotency"
	"ticketd/internal/logredact"
)

// Config configures the HTTP server. Zero MaxBodyBytes, Logger and Now take
// their defaults; zero rate limits mean "off" (benchmarks), so start from
// DefaultConfig to get the service's default limits.
type Config struct {
	Addr       string // listen address, used by the caller that opens the listener
	BaseURL    string // absolute prefix of every URL handed out; default "http://"+Addr
	AdminToken string // bearer token of /admin/v1; empty disables the admin surface

	// The request budgets, each a token bucket holding half a minute's
	// requests and refilled continuously at the rate given per minute
	// (burstOf); 0 = off.
	RateLimitPerMinute          int // per secret key on /v1
	StorefrontKeyLimitPerMinute int // per publishable key on /storefront/v1
	StorefrontIPLimitPerMinute  int // per (key, client IP) on Route.IPLimited routes
	// StorefrontCatalogIPLimitPerMinute is the per (key, client IP) budget
	// of every other storefront route (catalog reads, code lookup, confirm,
	// cancel); 0 = off. A request a per-IP budget refuses costs the key's
	// budget nothing.
	StorefrontCatalogIPLimitPerMinute int
	RateLimitMaxKeys                  int // bound of tracked budgets per minute; default 1<<20
	// DeviceLimitPerMinute is the budget of each door device on /door/v1
	// (decisions §18: 600; a batch of scans counts once); 0 = off.
	DeviceLimitPerMinute int
	// AuthFailuresPerMinute bounds failed authentications (admin token,
	// API keys) per client IP (IPv6 per /64): a bucket of that many,
	// refilled over a minute; once it is empty each further failure gets
	// 429 AUTH_THROTTLED. Valid credentials are served whatever their IP
	// spent. 0 = off.
	AuthFailuresPerMinute int

	// MaxConns bounds open connections in total: at the bound the
	// connection idle the longest is reclaimed for a newcomer, and without
	// an idle one the newcomer gets 503. Default conns.DefaultMax() (from
	// the file descriptor limit).
	MaxConns int
	// MaxConnsPerIP bounds open connections per client address (IPv6: per
	// /64; trusted proxies are exempt); more get 429. Default
	// conns.DefaultMaxPerIP.
	MaxConnsPerIP int

	TrustedProxies []netip.Prefix // peers whose X-Forwarded-For is believed
	MaxBodyBytes   int            // request body bound; default 1 MiB, larger answers 413

	// Idempotency stores Idempotency-Key answers; nil = an in-memory store
	// of IdempotencyTTL (default 24h) and IdempotencyMaxEntries (default 100000).
	Idempotency           idempotency.Store
	IdempotencyTTL        time.Duration
	IdempotencyMaxEntries int

	// ReadTimeout bounds reading one request, from the connection's
	// accept or the request's first byte (default 15s): a silent or
	// trickling client is let go. WriteTimeout bounds writing the answer
	// (default 30s). IdleTimeout bounds the wait for the next request on a
	// kept-alive connection (default 60s).
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration

	Logger    *slog.Logger
	Now       func() time.Time
	OnRequest func(RequestInfo) // called after every request, synchronously: keep it cheap
}

// Default budgets per minute (Config).
const (
	DefaultRateLimitPerMinute                = 120
	DefaultStorefrontIPLimitPerMinute        = 20
	DefaultStorefrontCatalogIPLimitPerMinute = 60
	DefaultAuthFailuresPerMinute             = 20
	// StorefrontKeyVisitors is how many distinct visitors, each spending
	// its whole per-IP budgets, the default per-key storefront budget
	// serves at once: the key's budget protects other tenants but never
	// makes a drop impossible (decisions §22).
	StorefrontKeyVisitors = 10_000
	// DefaultStorefrontKeyLimitPerMinute is StorefrontKeyVisitors times a
	// visitor's two per-IP budgets: 800,000 a minute, a bucket of 400,000.
	DefaultStorefrontKeyLimitPerMinute = StorefrontKeyVisitors * (DefaultStorefrontIPLimitPerMinute + DefaultStorefrontCatalogIPLimitPerMinute)
)

// DefaultConfig returns the default limits and timeouts.
func DefaultConfig() Config {
	return Config{
		Addr:                              "127.0.0.1:8080",
		RateLimitPerMinute:                DefaultRateLimitPerMinute,
		StorefrontKeyLimitPerMinute:       DefaultStorefrontKeyLimitPerMinute,
		StorefrontIPLimitPerMinute:        DefaultStorefrontIPLimitPerMinute,
		StorefrontCatalogIPLimitPerMinute: DefaultStorefrontCatalogIPLimitPerMinute,
		DeviceLimitPerMinute:              600,
		AuthFailuresPerMinute:             DefaultAuthFailuresPerMinute,
		MaxBodyBytes:                      1 << 20,
	}
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	switch {
	case c.RateLimitPerMinute < 0:
		return errors.New("http: config: rate limit per minute must not be negative")
	case c.StorefrontKeyLimitPerMinute < 0:
		return errors.New("http: config: storefront key limit per minute must not be negative")
	case c.StorefrontIPLimitPerMinute < 0:
		return errors.New("http: config: storefront ip limit per minute must not be negative")
	case c.DeviceLimitPerMinute < 0:
		return errors.New("http: config: device limit per minute must not be negative")
	case c.StorefrontCatalogIPLimitPerMinute < 0:
		return errors.New("http: config: storefront catalog ip limit per minute must not be negative")
	case c.AuthFailuresPerMinute < 0:
		return errors.New("http: config: auth failures per minute must not be negative")
	case c.RateLimitMaxKeys < 0, c.IdempotencyMaxEntries < 0, c.MaxConns < 0, c.MaxConnsPerIP < 0:
		return errors.New("http: config: bounds must not be negative")
	case c.MaxBodyBytes < 0:
		return errors.New("http: config: max body bytes must not be negative")
	case c.IdempotencyTTL < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0:
		return errors.New("http: config: durations must not be negative")
	case c.AdminToken != "" && len(c.AdminToken) < 16:
		return errors.New("http: config: admin token must be at least 16 characters")
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil {
			return fmt.Errorf("http: config: base url: %w", err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("http: config: base url %q must be an absolute http(s) url", c.BaseURL)
		}
	}
	for _, p := range c.TrustedProxies {
		if !p.IsValid() {
			return errors.New("http: config: invalid trusted proxy prefix")
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.BaseURL == "" && c.Addr != "" {
		c.BaseURL = "http://" + c.Addr
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.RateLimitMaxKeys == 0 {
		c.RateLimitMaxKeys = 1 << 20
	}
	if c.IdempotencyTTL == 0 {
		c.IdempotencyTTL = 24 * time.Hour
	}
	if c.IdempotencyMaxEntries == 0 {
		c.IdempotencyMaxEntries = 100_000
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = 15 * time.Second
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 60 * time.Second
	}
	if c.MaxConns == 0 {
		c.MaxConns = conns.DefaultMax()
	}
	if c.MaxConnsPerIP == 0 {
		c.MaxConnsPerIP = conns.DefaultMaxPerIP
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if _, ok := c.Logger.Handler().(*logredact.Handler); !ok {
		// No credential reaches the log, whoever built the logger (app
		// wraps its own, with the configuration's secrets).
		c.Logger = slog.New(logredact.New(c.Logger.Handler(), c.AdminToken))
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	proxies := make([]netip.Prefix, len(c.TrustedProxies)) // the caller's slice stays untouched
	for i, p := range c.TrustedProxies {
		proxies[i] = p.Masked()
	}
	c.TrustedProxies = proxies
	return c
}

// Server serves the route table over fasthttp. Build it with NewServer, add
// non-table handlers with Handle, then Serve; Shutdown stops it.
type Server struct {
	cfg       Config
	log       *slog.Logger
	auth      Authenticator
	origins   OriginChecker // nil when auth does not implement it
	routes    []Route
	router    *router.Router
	fast      *fasthttp.Server
	binder    bind.Binder
	limiter   *rateLimiter
	authFails *failLimiter
	local     LocalAuthenticator // nil when auth does not implement it
	// throttledRead is the unix nanos of the last read elsewhere for an
	// address out of failures (see authenticate).
	throttledRead atomic.Int64
	conns         atomic.Pointer[conns.Listener] // the listener Serve wraps, for metrics and Shutdown
	idem          idempotency.Store
	// selfOrigin is the scheme://host[:port] of BaseURL: the service's own
	// pages (the docs' try-it-out) may call the storefront with any key.
	selfOrigin string

	hot []*hotRoute // Route.Hot routes, matched ahead of the router (hotroute.go)

	adminToken     []byte
	adminPrincipal Principal
	holdClients    *holdClientCache

	// clock says Config.Now is the default time.Now, so one reading
	// serves as both the request's time and its latency start.
	clock     bool
	ctxPool   sync.Pool
	reqPrefix string
	reqSeq    seqCounter
	idBlocks  sync.Pool // *idBlock: each processor's run of request numbers (nextSeq)
	serving   atomic.Bool
	// closing is closed when Shutdown starts, so long answers (the door's
	// event stream) end instead of holding the shutdown up.
	closing   chan struct{}
	closeOnce sync.Once
}

// seqCounter hands out the blocks of generated request ids (nextSeq), on
// a cache line of its own: on a line shared with the fields every request
// reads (the configuration, the pool, the prefix) each add on one core
// would make the others' next reads of them miss.
type seqCounter struct {
	_ [64]byte
	atomic.Uint64
	_ [56]byte
}

// Closing returns a channel closed when Shutdown starts.
func (s *Server) Closing() <-chan struct{} { return s.closing }

// NewServer builds the router from routes (which it copies). It panics on a
// malformed table (duplicate paths, bad v tags): tables are code.
func NewServer(cfg Config, auth Authenticator, routes []Route) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if auth == nil {
		return nil, errors.New("http: new server: nil authenticator")
	}
	clock := cfg.Now == nil
	cfg = cfg.withDefaults()
	s := &Server{
		closing:     make(chan struct{}),
		clock:       clock,
		cfg:         cfg,
		log:         cfg.Logger,
		auth:        auth,
		routes:      append([]Route(nil), routes...),
		router:      router.New(),
		limiter:     newRateLimiter(cfg.RateLimitMaxKeys),
		authFails:   newFailLimiter(cfg.AuthFailuresPerMinute, cfg.RateLimitMaxKeys),
		idem:        cfg.Idempotency,
		reqPrefix:   newRequestIDPrefix(),
		holdClients: newHoldClientCache(),
	}
	if u, err := url.Parse(cfg.BaseURL); err == nil && u.Host != "" {
		s.selfOrigin = u.Scheme + "://" + u.Host
	}
	s.origins, _ = auth.(OriginChecker)
	s.local, _ = auth.(LocalAuthenticator)
	if s.idem == nil {
		s.idem = NewMemoryIdempotency(cfg.IdempotencyTTL, cfg.IdempotencyMaxEntries, 256<<20)
	}
	if cfg.AdminToken != "" {
		s.adminToken = []byte(cfg.AdminToken)
	}
	s.adminPrincipal = Principal{KeyID: "admin", Type: KeyAdmin}
	s.ctxPool.New = func() any { return new(Ctx) }

	s.router.RedirectTrailingSlash = false
	s.router.RedirectFixedPath = false
	s.router.HandleMethodNotAllowed = true
	s.router.HandleOPTIONS = true
	s.router.GlobalOPTIONS = s.preflight
	s.router.NotFound = s.notFound
	s.router.MethodNotAllowed = s.methodNotAllowed
	seen := map[string]bool{}
	for i := range s.routes {
		r := &s.routes[i]
		if r.Handle == nil || r.OperationID == "" {
			return nil, fmt.Errorf("http: new server: route %s %s needs a handler and an operation id", r.Method, r.Path)
		}
		if seen[r.OperationID] {
			return nil, fmt.Errorf("http: new server: duplicate operation id %q", r.OperationID)
		}
		seen[r.OperationID] = true
		// Build the plans now so a bad tag fails at start, not mid-sale.
		var body *bind.Plan
		if r.Body != nil {
			body = s.binder.Prepare(r.Body)
		}
		if r.Query != nil {
			if err := s.binder.PrepareQuery(r.Query); err != nil {
				return nil, fmt.Errorf("http: new server: route %s: %w", r.OperationID, err)
			}
		}
		s.router.Handle(r.Method, r.Path, s.routeHandler(r, body))
		if r.Hot {
			s.addHot(r, body)
		}
	}
	s.noteTable()
	s.fast = &fasthttp.Server{
		Handler:               s.safe(s.dispatch),
		ErrorHandler:          s.transportError,
		MaxRequestBodySize:    cfg.MaxBodyBytes,
		ReadTimeout:           cfg.ReadTimeout,
		WriteTimeout:          cfg.WriteTimeout,
		IdleTimeout:           cfg.IdleTimeout,
		ConnState:             conns.State,
		NoDefaultServerHeader: true,
		// A request fasthttp refuses is logged without its bytes: they
		// hold its credentials (the log's redaction is the second guard).
		SecureErrorLogMessage: true,
		Logger:                fastLogger{cfg.Logger},
	}
	return s, nil
}

// Routes returns the route table the server was built with.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// Handle adds a handler outside the route table (hosted pages, docs, the
// payment webhook, metrics). It gets the request id, security headers and
// access log, but no authentication. Call it before Serve.
func (s *Server) Handle(method, path string, h fasthttp.RequestHandler) {
	if s.serving.Load() {
		panic("http: Handle after Serve")
	}
	s.noteRoute(method, path, nil)
	s.router.Handle(method, path, func(rc *fasthttp.RequestCtx) {
		st := s.begin(rc)
		defer func() {
			if v := recover(); v != nil {
				s.log.Error("http: handler panic", "path", path, "panic", v, "stack", string(debug.Stack()), "request_id", st.id(s))
				rc.ResetBody()
				s.WriteError(rc, errors.New("panic"))
			}
			s.finish(rc, st, nil, nil, false)
		}()
		h(rc)
	})
}

// Handler returns the request handler, for tests and for serving on a
// listener the caller runs itself.
func (s *Server) Handler() fasthttp.RequestHandler { return s.safe(s.dispatch) }

// safe is the last line of defence: fasthttp does not recover panics, and
// one escaping a handler would end the process. The pipeline recovers its
// own; this catches the rest (preflight, 404 and 405 paths).
func (s *Server) safe(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(rc *fasthttp.RequestCtx) {
		defer func() {
			if v := recover(); v != nil {
				s.log.Error("http: panic", "panic", v, "stack", string(debug.Stack()))
				rc.ResetBody()
				s.WriteError(rc, errors.New("panic"))
			}
		}()
		h(rc)
	}
}

// Serve accepts connections on ln until Shutdown, within the connection
// bounds of Config (see http/conns). No accept error ends it: it returns
// only when ln is closed.
func (s *Server) Serve(ln net.Listener) error {
	s.serving.Store(true)
	cl := conns.New(ln, conns.Config{Max: s.cfg.MaxConns, MaxPerIP: s.cfg.MaxConnsPerIP, Exempt: s.cfg.TrustedProxies, Log: s.log,
		Refuse429: cannedError(429, "too many connections from this address"),
		Refuse503: cannedError(503, "too many connections; retry shortly")})
	s.conns.Store(cl)
	return s.fast.Serve(cl)
}

// Shutdown stops accepting connections, waits for in-flight requests to
// finish (or ctx to end) and returns. Connections without a request in
// flight are let go at once: fasthttp closes the kept-alive ones, but would
// wait out ReadTimeout for those that never sent one (an idle flood).
func (s *Server) Shutdown(ctx context.Context) error {
	s.closeOnce.Do(func() { close(s.closing) })
	done := make(chan error, 1)
	go func() { done <- s.fast.ShutdownWithContext(ctx) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if l := s.conns.Load(); l != nil {
			l.ReclaimAllIdle()
		}
		select {
		case err := <-done:
			return err
		case <-tick.C:
		}
	}
}

func (s *Server) routeHandler(r *Route, body *bind.Plan) fasthttp.RequestHandler {
	params := pathParamNames(r.Path)
	return func(rc *fasthttp.RequestCtx) { s.serve(rc, r, params, body, nil) }
}

// serve runs the pipeline of a table route: authenticate, check origin,
// rate limit, pick the version, claim the idempotency key, run the handler,
// write the answer.
func (s *Server) serve(rc *fasthttp.RequestCtx, r *Route, params []string, body *bind.Plan, hp *hotParams) {
	st := s.begin(rc)
	c := s.ctxPool.Get().(*Ctx)
	c.rc, c.srv, c.route, c.now, c.ip, c.req, c.bodyPlan = rc, s, r, st.at, st.ip, st, body
	if hp != nil {
		c.hp, c.hot = *hp, true
	}
	defer func() {
		// fasthttp does not recover panics: one in the Authenticator, a
		// store or a hook would take the whole process down.
		if v := recover(); v != nil {
			s.log.Error("http: panic outside the handler", "operation", r.OperationID, "panic", v,
				"stack", string(debug.Stack()), "request_id", st.id(s))
			rc.ResetBody()
			s.WriteError(rc, errors.New("panic"))
		}
		s.finish(rc, st, r, c.principal, c.pathNoted)
		c.reset()
		s.ctxPool.Put(c)
	}()
	versioned := r.Surface == Developer || r.Surface == Storefront
	// Every answer echoes the version, errors before the key's pin is
	// known included (decisions §4, §17): a known one as sent, else the
	// current one until the key's pin is known.
	echoed := CurrentVersion
	var hv []byte
	var hvSent bool
	if versioned {
		hv, hvSent = headerSent(&rc.Request.Header, versionHeader)
		if v, ok := internVersion(hv); ok {
			echoed = v
		}
		setCanonical(&rc.Response.Header, hdrVersion, echoed)
	}
	if r.Surface == Storefront {
		setCanonical(&rc.Response.Header, hdrVary, "Origin")
	}
	if r.Surface != Public {
		// Answers carry keys and personal data: no shared cache may keep them.
		setCanonical(&rc.Response.Header, hdrCacheControl, "no-store")
	}
	if r.Surface != Public && !r.NoKey {
		// The credential first: a valid one is served however many
		// failures its address made (decisions §17).
		p, err := s.authenticate(rc, r.Surface, c.ip, c.now)
		if err != nil {
			// Neither accepted nor refused: no failed authentication is
			// counted, and the client retries.
			s.log.Info("http: key not checked: the directory cannot be read", "err", err)
			rc.Response.Header.Set("Retry-After", "1")
			s.WriteError(rc, errAuthUnavailable)
			return
		}
		c.principal = p
		if c.principal == nil {
			if r.Surface == Storefront {
				// Let a listed browser origin read why it was refused.
				if o := rc.Request.Header.Peek("Origin"); len(o) > 0 && s.origins != nil && s.origins.OriginAllowed(string(o)) {
					allowOrigin(rc, o)
				}
			}
			s.refuseAuth(rc, c.ip, c.now)
			return
		}
		if r.Surface == Storefront && !checkOrigin(rc, c.principal, s.selfOrigin) {
			s.WriteError(rc, NewError(401, msgUnauthenticated))
			return
		}
	}
	if versioned {
		pinned := CurrentVersion
		if ValidVersion(c.principal.Version) {
			pinned = c.principal.Version
		}
		c.version = pinned
		if hvSent {
			v, ok := internVersion(hv)
			if !ok {
				rc.Response.Header.Set(versionHeader, pinned)
				reason := "must be one of 2026-03-15, 2026-08-22"
				msg := "unknown API version " + strconv.Quote(string(truncate(hv, 64)))
				if len(hv) == 0 {
					msg, reason = "the service-version header is empty: send a version or leave the header out", "must not be empty; "+reason
				}
				s.WriteError(rc, NewError(400, msg,
					event.Detail{Field: versionHeader, Reason: reason}).WithReason(event.ReasonUnknownAPIVersion))
				return
			}
			c.version = v
		}
		if c.version != echoed { // else it is already set
			setCanonical(&rc.Response.Header, hdrVersion, c.version)
		}
	}
	if r.Surface != Public && !r.NoKey && !s.limit(c) {
		return
	}
	if err := checkPathParams(c, params); err != nil {
		s.WriteError(rc, err)
		return
	}
	if r.Surface == Public || r.NoKey || string(rc.Method()) != fasthttp.MethodPost {
		s.run(c)
		return
	}
	if idemKey, sent := headerSent(&rc.Request.Header, "Idempotency-Key"); sent {
		if len(idemKey) == 0 {
			// Sent empty is not left out: the client meant a key.
			s.WriteError(rc, NewError(400, "Idempotency-Key is empty: send 1 to 255 characters or leave the header out",
				event.Detail{Field: "Idempotency-Key", Reason: "must not be empty"}))
			return
		}
		s.serveIdempotent(c, string(idemKey))
		return
	}
	s.run(c)
}

// serveIdempotent runs c under its Idempotency-Key.
func (s *Server) serveIdempotent(c *Ctx, key string) {
	rc := c.rc
	if len(key) > 255 {
		s.WriteError(rc, NewError(400, "Idempotency-Key must be at most 255 characters",
			event.Detail{Field: "Idempotency-Key", Reason: "must be at most 255 characters"}))
		return
	}
	fp := fingerprint(rc.Method(), rc.Request.URI().Path(), rc.PostBody())
	scope := idemScope(c)
	state, stored := s.idem.Begin(scope, key, fp, c.now)
	switch state {
	case idempotency.Mismatch:
		s.WriteError(rc, NewError(422, "this idempotency key was already used with another request").WithReason(event.ReasonIdempotencyKeyReused))
		return
	case idempotency.InFlight:
		s.WriteError(rc, NewError(409, "a request with this idempotency key is in progress").WithReason(event.ReasonIdempotencyKeyInProgress))
		return
	case idempotency.Unavailable:
		s.WriteError(rc, NewError(503, "the idempotency keys cannot be read now: the request was not run; retry it with the same Idempotency-Key").WithReason(event.ReasonUnavailable))
		return
	case idempotency.Replay:
		rc.SetStatusCode(stored.Status)
		if stored.ContentType != "" {
			rc.SetContentType(stored.ContentType)
		}
		rc.SetBody(stored.Body)
		rc.Response.Header.Set("Idempotent-Replayed", "true")
		return
	}
	if rs, ok := s.idem.(idempotency.RecordingStore); ok {
		c.idem = &idemClaim{store: rs, scope: scope, key: key, fp: fp, now: c.now, status: c.route.successStatus()}
	}
	var resp *idempotency.StoredResponse
	defer func() {
		// Runs on panic too, so a crashed handler frees its key.
		if cl := c.idem; cl != nil && resp == nil && (cl.unknown.Load() || cl.committed.Load() != nil) {
			// A write was asked for and its outcome is unknown (an ask
			// that timed out may still commit, with the key's record):
			// the key stays claimed until it has, or never will.
			cl.store.Hold(scope, key, time.Now().Add(idemUnknownHold))
			return
		}
		s.idem.Finish(scope, key, resp, c.now)
	}()
	s.run(c)
	if cl := c.idem; cl != nil && (cl.replayed != nil || cl.mismatch) {
		// The write was made before: its record answers (or the key was
		// used with another request).
		rc.Response.ResetBody()
		if cl.mismatch {
			s.WriteError(rc, NewError(422, "this idempotency key was already used with another request").WithReason(event.ReasonIdempotencyKeyReused))
			return
		}
		rc.SetStatusCode(cl.replayed.Status)
		rc.SetContentType(cl.replayed.ContentType)
		rc.SetBody(cl.replayed.Body)
		rc.Response.Header.Set("Idempotent-Replayed", "true")
		resp = cl.replayed
		resp.Durable = true // the write's batch holds it
		return
	}
	st := rc.Response.StatusCode()
	var committed *idempotency.StoredResponse
	if cl := c.idem; cl != nil {
		committed = cl.committed.Load()
	}
	if st < 500 || committed != nil {
		r := &idempotency.StoredResponse{
			Status:      st,
			ContentType: string(rc.Response.Header.ContentType()),
			Body:        append([]byte(nil), rc.Response.Body()...),
		}
		// The answer the write committed with its changes is this one:
		// nothing more to store (and no second sync). Else (no write, or
		// a handler that made more of the result) Finish stores it. A 5xx
		// is kept only when a write committed it as its answer (a refund
		// the provider refused); else the key is free for a retry.
		switch {
		case sameAnswer(committed, r):
			r.Durable = true
			resp = r
		case st < 500:
			resp = r
		}
	}
}

// idemScope is whose Idempotency-Keys a request's key is among: its API
// key's, and on the storefront, where a publishable key is every
// visitor's, its API key's and client address's, so one visitor can
// neither replay another's answer nor block it with a 422.
func idemScope(c *Ctx) string {
	if c.route.Surface == Storefront {
		return c.principal.KeyID + "@" + c.ip.String()
	}
	return c.principal.KeyID
}

// run calls the handler and writes its answer; a panic becomes a logged 500.
func (s *Server) run(c *Ctx) {
	rc := c.rc
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("http: handler panic", "operation", c.route.OperationID, "panic", v,
				"stack", string(debug.Stack()), "request_id", c.RequestID())
			rc.ResetBody()
			s.WriteError(rc, errors.New("panic"))
		}
	}()
	r := c.route
	if r.Body == nil && len(rc.PostBody()) > 0 {
		// Routes without a body accept nothing but an empty one or {}.
		if err := c.Bind(&struct{}{}); err != nil {
			s.writeHandlerError(c, err)
			return
		}
	}
	out, err := r.Handle(c)
	if err != nil {
		s.writeHandlerError(c, err)
		return
	}
	status := c.status
	if status == 0 {
		status = r.successStatus()
	}
	rc.SetStatusCode(status)
	if out == nil || status == fasthttp.StatusNoContent {
		return
	}
	if c.body != nil {
		rc.SetContentType("application/json")
		// The audit wrapper's bytes are ours alone: no copy.
		rc.Response.SetBodyRaw(c.body)
		return
	}
	if p, ok := out.(PiecesAppender); ok {
		writePieces(rc, p) // respstream.go
		return
	}
	// Encode straight into the response's pooled body buffer, rather than
	// into a fresh slice that is then copied there: by hand for an order or
	// a check-in, else with goccy's Encoder, which writes Marshal's bytes
	// plus a newline, which is cut.
	rc.Response.ResetBody()
	b, ok := AppendJSON(rc.Response.SwapBody(nil)[:0], out)
	rc.Response.SwapBody(b)
	if ok {
		rc.SetContentType("application/json")
		return
	}
	if err := gojson.NewEncoder(rc.Response.BodyWriter()).Encode(out); err != nil {
		rc.Response.ResetBody()
		s.writeHandlerError(c, fmt.Errorf("http: encode %s response: %w", r.OperationID, err))
		return
	}
	rc.SetContentType("application/json")
	b = rc.Response.SwapBody(nil)
	rc.Response.SwapBody(b[:len(b)-1])
}

func (s *Server) writeHandlerError(c *Ctx, err error) {
	if isSoldOut(err) {
		writeSoldOut(c.rc)
		return
	}
	status, env, internal := errorResponse(err)
	if internal {
		// The cause too: a mapped failure's message is the one every
		// caller gets ("temporarily unavailable; retry"), which tells an
		// operator nothing of what failed.
		cause := ""
		if u := errors.Unwrap(err); u != nil {
			cause = u.Error()
		}
		s.log.Error("http: request failed", "operation", c.route.OperationID, "status", status,
			"err", err, "cause", cause, "request_id", c.RequestID())
	}
	writeEnvelope(c.rc, status, env)
}

// WriteError writes the envelope of err (see errorResponse).
func (s *Server) WriteError(rc *fasthttp.RequestCtx, err error) {
	if isSoldOut(err) {
		writeSoldOut(rc)
		return
	}
	status, env, _ := errorResponse(err)
	writeEnvelope(rc, status, env)
}

// writeEnvelope writes an error answer: status and its envelope.
func writeEnvelope(rc *fasthttp.RequestCtx, status int, env ErrorEnvelope) {
	rc.SetStatusCode(status)
	rc.SetContentType("application/json")
	if status == 429 && len(rc.Response.Header.Peek("Retry-After")) == 0 {
		// A limit of the core (an address's open orders or checkout
		// sessions): a hold lapses or is paid within minutes.
		rc.Response.Header.Set("Retry-After", strconv.Itoa(holdLimitRetrySeconds))
	}
	// Encode into the response's own (pooled) body buffer.
	b := rc.Response.SwapBody(nil)
	rc.Response.SwapBody(appendErrorJSON(b[:0], env.Error))
}

// notFound answers paths no route matches, in the envelope.
func (s *Server) notFound(rc *fasthttp.RequestCtx) {
	st := s.begin(rc)
	s.echoVersionUnrouted(rc)
	s.WriteError(rc, NewError(404, "no such path").WithReason(event.ReasonPathNotFound))
	s.finish(rc, st, nil, nil, false)
}

// methodNotAllowed answers a known path with a wrong method; the router has
// set the Allow header.
func (s *Server) methodNotAllowed(rc *fasthttp.RequestCtx) {
	st := s.begin(rc)
	s.echoVersionUnrouted(rc)
	s.WriteError(rc, NewError(405, "method "+string(truncate(rc.Method(), 16))+" is not allowed on this path").WithReason(event.ReasonMethodNotAllowed))
	s.finish(rc, st, nil, nil, false)
}

// transportError answers requests fasthttp refused before routing: a body
// over MaxBodyBytes (413), a request not received within ReadTimeout (408,
// also what a reclaimed silent connection gets) or a malformed one (400).
func (s *Server) transportError(rc *fasthttp.RequestCtx, err error) {
	// Not begin: fasthttp has not stamped this request's time (the
	// context may hold the previous request's on the connection).
	st := s.beginAt(rc, time.Now())
	// The request may not have been parsed far enough to know its path:
	// every refusal echoes the version (decisions §4).
	v := CurrentVersion
	if hv, ok := internVersion(rc.Request.Header.Peek(versionHeader)); ok {
		v = hv
	}
	setCanonical(&rc.Response.Header, hdrVersion, v)
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		drainBody(rc.Conn(), rc.Request.Header.ContentLength(), 8*s.cfg.MaxBodyBytes)
		s.WriteError(rc, NewError(413, "request body exceeds "+strconv.Itoa(s.cfg.MaxBodyBytes)+" bytes").WithReason(event.ReasonPayloadTooLarge))
	} else if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		// A silent or trickling client, or an idle connection reclaimed.
		rc.SetConnectionClose()
		s.WriteError(rc, NewError(408, "request not received in time").WithReason(event.ReasonRequestTimeout))
	} else {
		s.WriteError(rc, NewError(400, "malformed HTTP request").WithReason(event.ReasonMalformedRequest))
	}
	s.finish(rc, st, nil, nil, false)
}

// drainBody reads and drops what the client is still sending of a refused
// body, up to maxBytes, before fasthttp answers and closes the connection.
// Closing a socket with unread input makes the kernel send a reset, and a
// client still writing its body then loses the 413 we answered.
func drainBody(conn net.Conn, contentLength, maxBytes int) {
	if conn == nil {
		return
	}
	// fasthttp may already hold up to a read buffer (4 KiB) of the body, so
	// past contentLength minus that, wait only briefly for more.
	sure := maxBytes
	if contentLength > 0 {
		sure = min(maxBytes, contentLength-4096)
		maxBytes = min(maxBytes, contentLength)
	}
	buf := make([]byte, 32<<10)
	for n := 0; n < maxBytes; {
		wait := 20 * time.Millisecond
		if n < sure {
			wait = time.Second // a slow client still sending
		}
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		m, err := conn.Read(buf)
		n += m
		if err != nil {
			break
		}
	}
	_ = conn.SetReadDeadline(time.Time{})
}

// echoVersionUnrouted echoes service-version on unrouted /v1 and
// /storefront/v1 answers: the requested version when known, else current.
func (s *Server) echoVersionUnrouted(rc *fasthttp.RequestCtx) {
	path := rc.Request.URI().Path()
	if !hasPrefix(path, "/v1/") && !hasPrefix(path, "/storefront/v1/") && !bytes.Equal(path, []byte("/v1")) {
		return
	}
	v := CurrentVersion
	if hv, ok := internVersion(rc.Request.Header.Peek(versionHeader)); ok {
		v = hv
	}
	rc.Response.Header.Set(versionHeader, v)
}

// headerSent returns a request header's value and whether it was sent at
// all: an empty value sent is not a header left out (Peek alone tells the
// two apart only by a nil slice, which fasthttp does not promise).
func headerSent(h *fasthttp.RequestHeader, name string) ([]byte, bool) {
	v, sent := PeekHeader(h, name)
	if len(v) == 0 {
		v = nil
	}
	return v, sent
}

func hasPrefix(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func itoa(n int) string { return strconv.Itoa(n) }

// fastLogger sends fasthttp's own messages (accept errors and the like) to
// slog. fasthttp quotes what it read from the client in them, a refused
// header's value ("invalid header value %q") even with
// SecureErrorLogMessage: a credential with a control byte in it would be
// written in part whatever the log's redaction recognises, so every quoted
// piece but the connection's addresses is cut out here.
type fastLogger struct{ l *slog.Logger }

func (f fastLogger) Printf(format string, args ...any) {
	f.l.Warn("http: fasthttp: " + redactQuoted(fmt.Sprintf(format, args...)))
}

// quotedPiece is a Go-quoted string (%q) as fasthttp writes them.
var quotedPiece = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// redactQuoted replaces each quoted piece of msg that is not an address
// (host:port) with "[redacted]".
func redactQuoted(msg string) string {
	return quotedPiece.ReplaceAllStringFunc(msg, func(q string) string {
		if uq, err := strconv.Unquote(q); err == nil {
			if _, err := netip.ParseAddrPort(uq); err == nil {
				return q
			}
		}
		return `"[redacted]"`
	})
}

// Logger is the server's logger (Config.Logger or its default).
func (s *Server) Logger() *slog.Logger { return s.log }
