package http

import (
	"slices"

	"github.com/valyala/fasthttp"
)

const (
	corsAllowHeaders  = "Authorization, Content-Type, Idempotency-Key, service-version, Request-Id, Queue-Token"
	corsExposeHeaders = "service-version, Request-Id, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, Idempotent-Replayed"
	corsMaxAgeSeconds = "600"
)

// allowOrigin marks a storefront response readable by origin.
func allowOrigin(rc *fasthttp.RequestCtx, origin []byte) {
	h := &rc.Response.Header
	h.SetBytesV("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
}

// checkOrigin enforces the storefront's origin rule on a request: without an
// Origin header (servers, curl) nothing is restricted; with one it must be
// among the key's origins, or be the service's own origin (self: the
// interactive docs' try-it-out sends it). It returns false when the request
// must be refused.
func checkOrigin(rc *fasthttp.RequestCtx, p *Principal, self string) bool {
	origin, _ := PeekHeader(&rc.Request.Header, "Origin")
	if len(origin) == 0 {
		return true
	}
	if string(origin) != self && !slices.Contains(p.Origins, string(origin)) {
		return false
	}
	allowOrigin(rc, origin)
	return true
}

// preflight answers OPTIONS. On the storefront a preflight carries no key,
// so an origin is allowed when any live publishable key lists it (see
// OriginChecker); the real request is then checked against its own key.
// The router has already put the path's methods in the Allow header.
func (s *Server) preflight(rc *fasthttp.RequestCtx) {
	start := s.begin(rc)
	path := rc.Request.URI().Path()
	if hasPrefix(path, "/storefront/v1/") {
		rc.Response.Header.Set("Vary", "Origin")
		origin := rc.Request.Header.Peek("Origin")
		if len(origin) > 0 && s.origins != nil && s.origins.OriginAllowed(string(origin)) {
			h := &rc.Response.Header
			h.SetBytesV("Access-Control-Allow-Origin", origin)
			h.SetBytesV("Access-Control-Allow-Methods", h.Peek("Allow"))
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", corsMaxAgeSeconds)
		}
	}
	rc.SetStatusCode(fasthttp.StatusNoContent)
	s.finish(rc, start, nil, nil, false)
}
