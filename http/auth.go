package http

import (
	"bytes"
	"crypto/subtle"
	"net/netip"
	"strconv"
	"time"
	"unsafe"

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
	// Local is the Authenticator's own state of the key, shared by the
	// key's requests while the Principal is (http/api: a door device's
	// last-seen cell); nil when it keeps none. The server never reads it.
	Local any
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
// called on every request, concurrently: it must be fast and safe. The
// token shares the request's buffer: it is valid during the call only,
// so an implementation that keeps it copies it (every one looks it up).
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
	h, _ := PeekHeader(&rc.Request.Header, "Authorization")
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
// for any failure: the caller answers every failure alike (refuseAuth). An
// error is the Authenticator's "cannot tell" (see Authenticator): the
// caller answers errAuthUnavailable.
func (s *Server) authenticate(rc *fasthttp.RequestCtx, surface Surface, ip netip.Addr, now time.Time) (*Principal, error) {
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
	if s.local != nil && s.authFails.spent(ip, now) {
		// An address out of failures: a key this node does not hold is
		// looked up elsewhere at most every throttledReadEvery, for all
		// such addresses together (see LocalAuthenticator), so guesses
		// cannot turn into reads of the directory's log, and a key just
		// made on another node is still served within that pause.
		if p := s.local.AuthenticateLocal(view(tok), now); p == nil {
			last := s.throttledRead.Load()
			if now.UnixNano()-last < int64(throttledReadEvery) || !s.throttledRead.CompareAndSwap(last, now.UnixNano()) {
				return nil, nil
			}
		}
	}
	p, err := s.auth.Authenticate(view(tok), now) // no copy: see Authenticator
	if err != nil {
		return nil, err
	}
	if p == nil || p.Type != want {
		return nil, nil
	}
	return p, nil
}

// throttledReadEvery spaces the reads elsewhere (the directory's log) for
// keys this node does not hold sent from addresses out of failures.
const throttledReadEvery = 100 * time.Millisecond

// LocalAuthenticator is an optional interface of the Authenticator: it
// answers from what this node holds in memory, never reading elsewhere (in
// cluster mode Authenticate reads the directory's log for a key it does not
// know). The server asks it first for a client IP whose failed
// authentication budget is spent, so that a flood of made-up keys costs a
// map lookup each: a key the node does not hold goes on to Authenticate at
// most every throttledReadEvery, for all such addresses together.
//
// Its token, too, is valid during the call only.
type LocalAuthenticator interface {
	AuthenticateLocal(token string, now time.Time) *Principal
}

// refuseAuth answers a failed authentication (missing, unknown, revoked,
// expired or wrong-surface credentials: one answer for all): 401 while the
// client IP has failures left in its budget (Config.AuthFailuresPerMinute),
// which this failure spends, and 429 AUTH_THROTTLED with Retry-After once
// it is spent. Only failures reach it: a valid credential is served however
// many failures its IP made (decisions §17).
func (s *Server) refuseAuth(rc *fasthttp.RequestCtx, ip netip.Addr, now time.Time) {
	if ok, retry := s.authFails.take(ip, now); !ok {
		rc.Response.Header.Set("Retry-After", strconv.Itoa(retry))
		s.WriteError(rc, NewError(429, "too many failed authentications from this address, retry after "+strconv.Itoa(retry)+" seconds").WithReason(event.ReasonAuthThrottled))
		return
	}
	s.WriteError(rc, NewError(401, msgUnauthenticated))
}

// adminAuthorized checks the admin token of a request outside the route
// table (/metrics), with the failed-authentication budget of the table's
// routes. It writes the 401 or 429 when it returns false.
func (s *Server) adminAuthorized(rc *fasthttp.RequestCtx, ip netip.Addr, now time.Time) bool {
	tok := bearer(rc)
	if s.adminToken == nil || len(tok) == 0 || subtle.ConstantTimeCompare(tok, s.adminToken) != 1 {
		s.refuseAuth(rc, ip, now)
		return false
	}
	return true
}

// view is b as a string without a copy, valid while b is.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
