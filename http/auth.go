package http

import (
	"bytes"
	"crypto/subtle"
	"net/netip"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/event"
)

// Principal is who a request acts for, as the Authenticator found it.
type Principal struct {
	KeyID   string
	UnitID  string
	Type    string // "secret" or "publishable"; "admin" for the admin token
	Version string // the API version the key is pinned to
	Origins []string
	// EventID is a device key's event (Type "device"); KeyID is then
	// the device's id.
	EventID string
}

// Key types of Principal.Type.
const (
	KeySecret      = "secret"
	KeyPublishable = "publishable"
	KeyAdmin       = "admin"
	KeyDevice      = "device"
)

// Authenticator resolves a bearer token to its key. Unknown, revoked and
// expired keys answer a nil Principal and no error; the server gives all of
// them the same 401. An error means it cannot tell whether the token is a
// live key (in cluster mode: this node could not read the directory's
// log, where another node may have just made or revoked it): the server
// answers 503 DIRECTORY_UNAVAILABLE, never a 401 that may be false. It is
// called on every request, concurrently: it must be fast and safe.
type Authenticator interface {
	Authenticate(token string, now time.Time) (*Principal, error)
}

// OriginChecker is an optional interface of the Authenticator: it answers a
// CORS preflight, which carries no key, by whether any live publishable key
// lists the origin. Without it every preflight is answered without CORS
// headers (so browsers refuse cross-origin storefront calls).
type OriginChecker interface {
	OriginAllowed(origin string) bool
}

const msgUnauthenticated = "invalid or missing API key"

// bearer extracts the token of "Authorization: Bearer <token>"; the scheme
// is case-insensitive as RFC 9110 says.
func bearer(rc *fasthttp.RequestCtx) []byte {
	h := rc.Request.Header.Peek("Authorization")
	if len(h) < 7 || !bytes.EqualFold(h[:7], []byte("bearer ")) {
		return nil
	}
	return bytes.TrimSpace(h[7:])
}

// errAuthUnavailable answers a request whose key the Authenticator could
// not tell live or not. Retry-After: 1 goes with it.
var errAuthUnavailable = &Error{Status: 503, Reason: event.ReasonDirectoryUnavailable,
	Message: "this node cannot read the directory of keys now, so it cannot tell whether the key is live; retry"}

// authenticate resolves the principal of a route's surface, or returns nil
// for any failure: the caller answers every failure with the same 401. An
// error is the Authenticator's "cannot tell" (see Authenticator): the
// caller answers errAuthUnavailable.
func (s *Server) authenticate(rc *fasthttp.RequestCtx, surface Surface, now time.Time) (*Principal, error) {
	tok := bearer(rc)
	if len(tok) == 0 || len(tok) > 512 {
		return nil, nil
	}
	want, prefix := "", ""
	switch surface {
	case Admin:
		if s.adminToken == nil || subtle.ConstantTimeCompare(tok, s.adminToken) != 1 {
			return nil, nil
		}
		return &s.adminPrincipal, nil
	case Developer:
		want, prefix = KeySecret, "sk_"
	case Storefront:
		want, prefix = KeyPublishable, "pk_"
	case Door:
		want, prefix = KeyDevice, "dk_"
	default:
		return nil, nil
	}
	if !bytes.HasPrefix(tok, []byte(prefix)) {
		return nil, nil
	}
	p, err := s.auth.Authenticate(string(tok), now)
	if err != nil {
		return nil, err
	}
	if p == nil || p.Type != want {
		return nil, nil
	}
	return p, nil
}

// authAllowed refuses, with 429, a client IP that has spent its failed
// authentication budget (Config.AuthFailuresPerMinute), before its token is
// checked: guessing tokens then runs at the budget's pace, whatever the
// client's. A caller that then fails authentication spends a token with
// s.authFails.fail.
func (s *Server) authAllowed(rc *fasthttp.RequestCtx, ip netip.Addr, now time.Time) bool {
	blocked, retry := s.authFails.blocked(ip, now)
	if !blocked {
		return true
	}
	rc.Response.Header.Set("Retry-After", strconv.Itoa(retry))
	s.writeError(rc, httpError(429, "too many failed authentication attempts, retry after "+strconv.Itoa(retry)+" seconds").WithReason(event.ReasonAuthThrottled))
	return false
}

// adminAuthorized checks the admin token of a request outside the route
// table (/metrics), with the failed-authentication budget of the table's
// routes. It writes the 429 or 401 when it returns false.
func (s *Server) adminAuthorized(rc *fasthttp.RequestCtx, ip netip.Addr, now time.Time) bool {
	if !s.authAllowed(rc, ip, now) {
		return false
	}
	tok := bearer(rc)
	if s.adminToken == nil || len(tok) == 0 || subtle.ConstantTimeCompare(tok, s.adminToken) != 1 {
		s.authFails.fail(ip, now)
		s.writeError(rc, httpError(401, msgUnauthenticated))
		return false
	}
	return true
}
