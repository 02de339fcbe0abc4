package http

import (
	"bufio"
	"context"
	"io"
	"net"
	nethttp "net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawConn is one client connection speaking HTTP/1.1 by hand, so the test
// decides when each connection is silent, idle or mid-request.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, h *harness) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (r *rawConn) send(method, path, token, body string) {
	r.t.Helper()
	req := method + " " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	_, err := io.WriteString(r.c, req)
	require.NoError(r.t, err)
}

// answer reads one response (status, body), or fails after 5 s.
func (r *rawConn) answer() (int, string) {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := nethttp.ReadResponse(r.br, nil)
	require.NoError(r.t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// closed reports whether the server has closed the connection without
// sending anything more.
func (r *rawConn) closed() bool {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := r.br.Read(make([]byte, 1))
	return n == 0 && err != nil && !isTimeout(err)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestListenerReclaimsIdleNeverBusy: at the total bound a newcomer takes the
// place of the connection idle the longest (silent ones get 408, kept-alive
// ones are closed quietly); a connection mid-request is never taken, and
// with every connection busy the newcomer gets 503.
func TestListenerReclaimsIdleNeverBusy(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxConns = 2 })
	slow := strings.Replace(goodOrder, "ann@", "slow@", 1)

	a := dialRaw(t, h)
	a.send("POST", "/v1/events/evt_1/orders", skLive, slow)
	<-h.entered // a is mid-request
	silent := dialRaw(t, h)
	time.Sleep(20 * time.Millisecond) // accepted, so older than d

	d := dialRaw(t, h)
	d.send("GET", "/storefront/v1/events/evt_1", pkLive, "")
	st, _ := d.answer()
	require.Equal(t, 200, st, "the newcomer is served")
	st, body := silent.answer()
	require.Equal(t, 408, st, "the silent connection was reclaimed: %s", body)

	// fasthttp marks d idle just after writing its answer: wait for it.
	busyConns := func() int { return h.srv.conns.Load().Busy() }
	require.Eventually(t, func() bool { return busyConns() == 1 }, 5*time.Second, time.Millisecond)
	e := dialRaw(t, h)
	e.send("GET", "/storefront/v1/events/evt_1", pkLive, "")
	st, _ = e.answer()
	require.Equal(t, 200, st)
	require.True(t, d.closed(), "the kept-alive idle one was reclaimed, quietly")

	// Both places busy: no room.
	e.send("POST", "/v1/events/evt_1/orders", skLive, slow)
	<-h.entered
	f := dialRaw(t, h)
	st, body = f.answer()
	require.Equal(t, 503, st)
	require.Contains(t, body, `"code":503`)

	close(h.gate)
	st, body = a.answer()
	require.Equal(t, 201, st, "a request in flight is never reclaimed: %s", body)
	st, _ = e.answer()
	require.Equal(t, 201, st)

	l := h.srv.conns.Load()
	require.Equal(t, int64(2), l.Stats.Reclaimed.Load())
	require.Equal(t, int64(1), l.Stats.RefusedTotal.Load())
}

// TestListenerPerIP: the bound counts addresses, IPv6 ones by /64, and
// exempts trusted proxies.
func TestListenerPerIP(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.MaxConnsPerIP = 2
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.9/32")}
	})
	dialFrom := func(local string) *rawConn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		c, err := d.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
	}
	for i := 0; i < 2; i++ {
		dialFrom("127.0.0.1")
	}
	third := dialFrom("127.0.0.1")
	st, body := third.answer()
	require.Equal(t, 429, st, "%s", body)
	other := dialFrom("127.0.0.2")
	other.send("GET", "/storefront/v1/events/evt_1", pkLive, "")
	st, _ = other.answer()
	require.Equal(t, 200, st)
	for i := 0; i < 5; i++ {
		p := dialFrom("127.0.0.9")
		p.send("GET", "/storefront/v1/events/evt_1", pkLive, "")
		st, _ := p.answer()
		require.Equal(t, 200, st, "a trusted proxy carries many clients")
	}

	require.Equal(t, netip.MustParseAddr("2001:db8:1:2::"), ipKey(netip.MustParseAddr("2001:db8:1:2:aaaa::1")))
	require.Equal(t, netip.MustParseAddr("192.0.2.7"), ipKey(netip.MustParseAddr("192.0.2.7")))
}

// TestShutdownLetsSilentConnectionsGo: connections that never sent a
// request do not hold Shutdown for ReadTimeout; a request in flight is
// still finished.
func TestShutdownLetsSilentConnectionsGo(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ReadTimeout = time.Minute })
	for i := 0; i < 20; i++ {
		dialRaw(t, h)
	}
	a := dialRaw(t, h)
	a.send("POST", "/v1/events/evt_1/orders", skLive, strings.Replace(goodOrder, "ann@", "slow@", 1))
	<-h.entered
	require.Eventually(t, func() bool { return h.srv.conns.Load().Open() == 21 }, 5*time.Second, time.Millisecond)
	start := time.Now()
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- h.srv.Shutdown(ctx)
	}()
	time.Sleep(200 * time.Millisecond)
	close(h.gate)
	st, _ := a.answer()
	require.Equal(t, 201, st, "the request in flight is answered")
	require.NoError(t, <-shut)
	require.Less(t, time.Since(start), 3*time.Second, "not ReadTimeout")
}
