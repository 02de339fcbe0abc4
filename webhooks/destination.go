package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrDestination: a delivery's address is not a public one (decisions
// §23). It wraps the dial error of a refused delivery, which is logged as
// refused and not sent.
var ErrDestination = errors.New("webhooks: destination refused")

// refusal is a delivery refused for its destination; it is ErrDestination.
type refusal struct{ why string }

func (r *refusal) Error() string        { return "webhooks: destination refused: " + r.why }
func (r *refusal) Is(target error) bool { return target == ErrDestination }

func refused(format string, args ...any) error {
	return &refusal{why: fmt.Sprintf(format, args...)}
}

// resolveTimeout bounds the name lookup of an endpoint's host at save.
const resolveTimeout = 3 * time.Second

// nonPublic lists the ranges that IsPrivate, IsLoopback and the other
// netip predicates do not cover but that are no place on the public
// internet either (IANA special-purpose registries), so that an endpoint
// cannot reach a carrier-grade NAT, a benchmark network or a v4 network
// through a v6 translation prefix.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may embed a private v4 address
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (Teredo, ORCHID...)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: may embed a private v4 address
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
}

// publicAddr says why a is no public unicast address, or "" when it is one.
func publicAddr(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsPrivate():
		return "a private address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		return "a multicast address"
	case !a.IsGlobalUnicast():
		return "not a public address"
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return "a reserved, non-public address"
		}
	}
	return ""
}

// isLocalhost reports whether host names this machine: the http scheme is
// allowed for it alone, and only in development (AllowPrivate).
func isLocalhost(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// checkDestination checks an endpoint URL at save (decisions §23): https,
// or http for localhost when private destinations are allowed; and unless
// they are, a host that is, or resolves only to, public addresses. A name
// that does not resolve now is taken: the dialer refuses at each delivery
// whatever it resolves to then. The error is ErrInvalid naming the url.
func (s *Service) checkDestination(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: url: must be an absolute https url", ErrInvalid)
	}
	host := u.Hostname()
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && s.cfg.AllowPrivate && isLocalhost(host):
	case u.Scheme == "http" && s.cfg.AllowPrivate:
		return fmt.Errorf("%w: url: must be https (http only for localhost in development)", ErrInvalid)
	case u.Scheme == "http":
		return fmt.Errorf("%w: url: must be https", ErrInvalid)
	default:
		return fmt.Errorf("%w: url: must be an absolute https url", ErrInvalid)
	}
	if s.cfg.AllowPrivate {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if why := publicAddr(a); why != "" {
			return fmt.Errorf("%w: url: %s is %s; webhook endpoints must be public", ErrInvalid, a, why)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	addrs, err := s.cfg.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if why := publicAddr(a); why != "" {
			return fmt.Errorf("%w: url: %s resolves to %s, %s; webhook endpoints must be public", ErrInvalid, host, a.Unmap(), why)
		}
	}
	return nil
}

// refusedBeforeDial says why a delivery to raw is refused before any
// connection: its scheme, or an address literal that is not public. A
// name is left to the dialer (guardedControl), which sees the address
// actually dialed.
func (s *Service) refusedBeforeDial(raw string) error {
	if s.cfg.AllowPrivate {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return refused("unparsable url")
	}
	if u.Scheme != "https" {
		return refused("%s is not https", u.Scheme)
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil {
		if why := publicAddr(a); why != "" {
			return refused("%s is %s", a.Unmap(), why)
		}
	}
	return nil
}

// guardedControl is the dialer's Control: it runs after the name is
// resolved and before connect, on the address about to be dialed, so a
// name that resolved to a public address at save and to an internal one
// now (DNS rebinding) is refused.
func guardedControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refused("unparsable address %q", address)
	}
	if why := publicAddr(ap.Addr()); why != "" {
		return refused("%s is %s", ap.Addr().Unmap(), why)
	}
	return nil
}

// newClient is the default Client: no redirects followed (a redirect
// would be a way round the destination check), no proxy from the
// environment (the proxy would be the address dialed), and unless private
// destinations are allowed a dialer that refuses non-public addresses.
func newClient(timeout time.Duration, allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = guardedControl
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
