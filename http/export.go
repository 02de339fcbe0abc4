package http

import (
	"log/slog"
	"net/netip"

	"github.com/valyala/fasthttp"

	"ticketd/actors"
	"ticketd/event"
)

// This file exports the pipeline's pieces that the handler packages
// (http/api, http/pages) use, so the pipeline files stay as they are.

// NewError returns an error that answers status with msg and details in
// the one error envelope.
func NewError(status int, msg string, details ...event.Detail) *Error {
	return httpError(status, msg, details...)
}

// ClientIP is the request's client address: the peer, or the last
// untrusted hop of X-Forwarded-For when the peer is a trusted proxy.
func ClientIP(rc *fasthttp.RequestCtx, trusted []netip.Prefix) netip.Addr {
	return clientIP(rc, trusted)
}

// WriteError answers err in the one error envelope, outside the route
// table's pipeline (webhooks, hosted pages' forms).
func (s *Server) WriteError(rc *fasthttp.RequestCtx, err error) { s.writeError(rc, err) }

// MaxLoggedPath bounds the concrete request path the developer log and
// the audit log keep.
const MaxLoggedPath = maxDevLogPath

// NotePath marks the request's concrete path for the developer log (see
// RequestInfo.URLPath); the audit middleware calls it for audited writes.
func (c *Ctx) NotePath() { c.notePath() }

// AppendJSON appends the response encoder's bytes of v when it has a
// hand-written encoding for v's type; ok is false otherwise.
func AppendJSON(b []byte, v any) (_ []byte, ok bool) { return appendFastJSON(b, v) }

// RegisterMetrics serves GET /metrics on srv: the HTTP series and the
// actor system's gauges.
func RegisterMetrics(srv *Server, sys *actors.System) { registerMetrics(srv, sys) }

// RegisterLogs makes srv record its keyed requests in the developer log d.
func RegisterLogs(srv *Server, d *DevLog) { registerLogs(srv, d) }

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

// Logger is the server's logger (Config.Logger or its default).
func (s *Server) Logger() *slog.Logger { return s.log }

// RegisterHealth serves GET /healthz and GET /readyz.
func RegisterHealth(srv *Server, sys *actors.System) { registerHealth(srv, sys) }

// ErrStorageUnavailable is the answer while writes cannot be made durable
// (503, reason STORAGE_UNAVAILABLE).
var ErrStorageUnavailable error = errStorageUnavailable

// LogPath is the request path as the access log writes it: pass tokens
// redacted, bounded.
func LogPath(rc *fasthttp.RequestCtx, raw []byte) string { return logPath(rc, raw) }
