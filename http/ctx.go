package http

import (
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/http/bind"
)

// Ctx is the request context a HandlerFunc receives. It is pooled: a
// handler must not keep it, or anything borrowed from it, after returning.
type Ctx struct {
	rc        *fasthttp.RequestCtx
	srv       *Server
	route     *Route
	principal *Principal
	version   string
	status    int
	now       time.Time
	ip        netip.Addr
	// req is the request's id as begin took it (RequestID formats it).
	req requestStart
	// body is the handler's result already encoded (by the audit wrapper,
	// which records the same bytes), so run does not encode it twice.
	body []byte
	// pathNoted asks finish to hand the concrete path to the developer
	// log (see NotePath).
	pathNoted bool
	// idem is the Idempotency-Key this request owns on a RecordingStore.
	idem *idemClaim
	// bodyPlan is the route's prepared body plan, so Bind looks none up.
	bodyPlan *bind.Plan
	// hp holds the path parameters of a hot route (hotroute.go), which
	// the router did not see.
	hp  hotParams
	hot bool
}

func (c *Ctx) reset() { *c = Ctx{} }

// NotePath marks the request's concrete path for the developer log: it
// reaches Config.OnRequest as RequestInfo.URLPath.
func (c *Ctx) NotePath() { c.pathNoted = true }

// RequestCtx returns the underlying fasthttp context, for the rare handler
// that needs raw headers. Its buffers are reused after the handler returns.
func (c *Ctx) RequestCtx() *fasthttp.RequestCtx { return c.rc }

// Param returns the path parameter name (e.g. "eventId"), percent-decoded,
// or "" if the route has none of that name.
func (c *Ctx) Param(name string) string {
	var s string
	if c.hot {
		s, _ = c.hp.param(name)
	} else {
		s, _ = c.rc.UserValue(name).(string)
	}
	if strings.IndexByte(s, '%') >= 0 {
		if u, err := url.PathUnescape(s); err == nil {
			return u
		}
	}
	return s
}

// Bind decodes and validates the JSON request body into dst, a pointer to
// the route's Body type (a struct, or a slice for array bodies). The error
// is an *event.Error (400) naming every field problem at once.
func (c *Ctx) Bind(dst any) error { return c.srv.binder.BindPlan(c.rc.PostBody(), dst, c.bodyPlan) }

// BindQuery decodes and validates query parameters into dst, a pointer to a
// struct with `query:"name"` tags (see ListQuery).
func (c *Ctx) BindQuery(dst any) error {
	args := c.rc.QueryArgs()
	return c.srv.binder.BindQuery(func(name string) ([]byte, bool) {
		if !args.Has(name) {
			return nil, false
		}
		return args.Peek(name), true
	}, dst)
}

// Principal returns the authenticated key; nil on Public routes.
func (c *Ctx) Principal() *Principal { return c.principal }

// Version returns the effective API version ("" on Admin and Public routes).
func (c *Ctx) Version() string { return c.version }

// SetStatus chooses the success status of the response. It must be the
// route's Success or one of its AltSuccess; anything else is a programming
// error and panics (the server turns the panic into a logged 500).
func (c *Ctx) SetStatus(code int) {
	if code != c.route.successStatus() && !slices.Contains(c.route.AltSuccess, code) {
		panic("http: status " + itoa(code) + " is not a documented success of " + c.route.OperationID)
	}
	c.status = code
}

// Now returns the time the request arrived, from Config.Now: one clock
// reading per request, so a handler sees a single consistent instant.
func (c *Ctx) Now() time.Time { return c.now }

// ClientIP returns the client address (see Config.TrustedProxies).
func (c *Ctx) ClientIP() netip.Addr { return c.ip }

// RequestID returns the request's id, echoed in the Request-Id header.
func (c *Ctx) RequestID() string { return c.req.id(c.srv) }

// Route returns the route being served.
func (c *Ctx) Route() *Route { return c.route }

// BaseURL returns Config.BaseURL, the prefix of every URL handed out.
func (c *Ctx) BaseURL() string { return c.srv.cfg.BaseURL }

func (r *Route) successStatus() int {
	if r.Success == 0 {
		return 200
	}
	return r.Success
}

// SwapRoute makes r the request's route and returns the previous one: the
// audit middleware runs a write's read route to record the state before.
func (c *Ctx) SwapRoute(r *Route) (old *Route) {
	old, c.route = c.route, r
	return old
}

// PrimarySuccess reports whether the response will carry the route's
// Success status (not an AltSuccess the handler chose).
func (c *Ctx) PrimarySuccess() bool { return c.status == 0 || c.status == c.route.successStatus() }

// SetEncodedBody hands the response its body already encoded as JSON, so
// a result the audit log encoded is not encoded twice.
func (c *Ctx) SetEncodedBody(b []byte) { c.body = b }
