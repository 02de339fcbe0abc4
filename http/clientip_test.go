package http

import (
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, c := range []struct {
		peer string
		xff  []string
		want string
	}{
		{"192.0.2.1", nil, "192.0.2.1"},
		{"192.0.2.1", []string{"203.0.113.5"}, "192.0.2.1"}, // untrusted peer: XFF ignored
		{"10.1.1.1", nil, "10.1.1.1"},
		{"10.1.1.1", []string{"203.0.113.5"}, "203.0.113.5"},
		{"10.1.1.1", []string{"6.6.6.6, 203.0.113.5, 10.2.2.2"}, "203.0.113.5"},
		{"10.1.1.1", []string{"6.6.6.6", "203.0.113.5"}, "203.0.113.5"}, // several headers
		{"10.1.1.1", []string{"10.3.3.3, 10.2.2.2"}, "10.3.3.3"},        // all trusted: left-most
		{"10.1.1.1", []string{"garbage, 10.2.2.2"}, "10.2.2.2"},
		{"10.1.1.1", []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
		{"::1", []string{"2001:db8::1"}, "2001:db8::1"},
	} {
		var rc fasthttp.RequestCtx
		var req fasthttp.Request
		for _, x := range c.xff {
			req.Header.Add("X-Forwarded-For", x)
		}
		rc.Init(&req, &net.TCPAddr{IP: net.ParseIP(c.peer), Port: 1}, nil)
		require.Equal(t, c.want, ClientIP(&rc, trusted).String(), "%s %v", c.peer, c.xff)
	}
}
