package http

import (
	"bytes"
	"net"
	"net/netip"

	"github.com/valyala/fasthttp"

	"ticketd/http/conns"
)

// clientIP returns the address of the client: the peer address, or, when the
// peer is a trusted proxy, the right-most X-Forwarded-For hop that is not a
// trusted proxy itself. Hops left of an untrusted one are ignored because the
// client could have written them.
func ClientIP(rc *fasthttp.RequestCtx, trusted []netip.Prefix) netip.Addr {
	peer, ok := conns.Peer(rc.Conn())
	if !ok {
		if ta, ok := rc.RemoteAddr().(*net.TCPAddr); ok {
			peer, _ = netip.AddrFromSlice(ta.IP)
			peer = peer.Unmap()
		}
	}
	if len(trusted) == 0 || !isTrusted(peer, trusted) {
		return peer
	}
	ip := peer
	var hops [][]byte
	for _, v := range rc.Request.Header.PeekAll("X-Forwarded-For") {
		hops = append(hops, bytes.Split(v, []byte(","))...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(string(bytes.TrimSpace(hops[i])))
		if err != nil {
			// A garbled hop ends the chain we can believe.
			return ip
		}
		ip = a.Unmap()
		if !isTrusted(ip, trusted) {
			return ip
		}
	}
	return ip
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool { return conns.Trusted(a, trusted) }

// ipKey is the address a per-client rate budget counts: the one the
// connection bound counts (conns.IPKey), IPv6 clients by their /64.
func ipKey(a netip.Addr) netip.Addr { return conns.IPKey(a) }
