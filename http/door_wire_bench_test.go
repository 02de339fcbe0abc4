package http_test

// Benchmarks of door-sync's caught-up delta request on the wire, against
// the bench's ceiling server under the same client (issue 33: the delta's
// req/s must be at least 0.8x the ceiling's). Unlike the Pipeline
// benchmarks, which call the handler, these serve connections: fasthttp
// reads and parses each request and writes each answer, the connection
// bounds (http/conns) track each connection, and the server's timeouts
// arm deadlines, as in loadgen. The client is the same for every server
// (raw request bytes written, the answer read with fasthttp), so the
// ratio of two cpu-ns/op is the ratio the scenario measures, diluted by
// the client's share.
//
// Two transports: mem (fasthttputil's in-memory pipes: no syscalls, so
// the servers' own work stands out) and tcp (loopback sockets, as loadgen).
//
//	go test ./http -run '^$' -bench 'Wire' -benchmem

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/bench/load"
	thttp "ticketd/http"
)

// wireConnsPerProc is connections per GOMAXPROCS: 64 on this 2-core
// machine, about loadgen's 128, each with one request in flight.
const wireConnsPerProc = 32

// wireDevices is how many devices the delta requests rotate through, as
// door-sync's 50.
const wireDevices = 50

// wireServer is where a benchmark's connections go.
type wireServer struct {
	dial func(b *testing.B, i int) net.Conn
}

// wireMem serves on an in-memory listener; each connection comes from its
// own loopback port (the service sees a TCP peer, as from a socket).
func wireMem(b *testing.B, serve func(net.Listener) error) wireServer {
	ln := &memListener{InmemoryListener: fasthttputil.NewInmemoryListener()}
	go func() { _ = serve(ln) }()
	b.Cleanup(func() { _ = ln.Close() })
	return wireServer{dial: func(b *testing.B, i int) net.Conn {
		c, err := ln.DialWithLocalAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 20000 + i})
		require.NoError(b, err)
		return c
	}}
}

// memListener says net.ErrClosed once closed, as a socket's listener
// does (the service's accept loop, http/conns, retries any other error),
// and may be closed twice (the benchmark's cleanup and the server's
// Shutdown).
type memListener struct {
	*fasthttputil.InmemoryListener
	once sync.Once
}

func (l *memListener) Close() error {
	l.once.Do(func() { _ = l.InmemoryListener.Close() })
	return nil
}

func (l *memListener) Accept() (net.Conn, error) {
	c, err := l.InmemoryListener.Accept()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", net.ErrClosed, err)
	}
	return c, nil
}

// wireTCP dials addr on loopback.
func wireTCP(addr string) wireServer {
	return wireServer{dial: func(b *testing.B, i int) net.Conn {
		c, err := net.Dial("tcp", addr)
		require.NoError(b, err)
		return c
	}}
}

// wireBare serves h as the ceiling role serves its handler.
func wireBare(b *testing.B, transport string, h fasthttp.RequestHandler) wireServer {
	srv := &fasthttp.Server{Handler: h, NoDefaultServerHeader: true, MaxRequestBodySize: 1 << 20}
	b.Cleanup(func() { _ = srv.Shutdown() })
	if transport == "mem" {
		return wireMem(b, srv.Serve)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	go func() { _ = srv.Serve(ln) }()
	return wireTCP(ln.Addr().String())
}

// wireRequest is a request's bytes as fasthttp's client writes them.
func wireRequest(b *testing.B, method, uri, key string, body []byte) []byte {
	var r fasthttp.Request
	load.SetRequest(&r, method, uri, key)
	if body != nil {
		r.SetBody(body)
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	require.NoError(b, r.Write(w))
	require.NoError(b, w.Flush())
	return buf.Bytes()
}

// wireRun sends b.N requests over wireConnsPerProc*GOMAXPROCS connections,
// one in flight on each; connection i sends reqs[i%len(reqs)], every
// answer must have status want.
func wireRun(b *testing.B, srv wireServer, reqs [][]byte, want int) {
	b.Helper()
	var next atomic.Int64
	// One answer first, so a broken set-up fails plainly.
	func() {
		c := srv.dial(b, 0)
		defer c.Close()
		_, err := c.Write(reqs[0])
		require.NoError(b, err)
		var resp fasthttp.Response
		require.NoError(b, resp.Read(bufio.NewReader(c)))
		require.Equal(b, want, resp.StatusCode(), "%s", resp.Body())
	}()
	b.ReportAllocs()
	b.SetParallelism(wireConnsPerProc)
	cpu0 := pipeCPU(b)
	b.ResetTimer()
	defer func() {
		b.ReportMetric(float64(pipeCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	}()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1))
		c := srv.dial(b, i)
		defer c.Close()
		req := reqs[i%len(reqs)]
		br := bufio.NewReaderSize(c, 4096)
		var resp fasthttp.Response
		for pb.Next() {
			if _, err := c.Write(req); err != nil {
				b.Error(err)
				return
			}
			if err := resp.Read(br); err != nil {
				b.Error(err)
				return
			}
			if st := resp.StatusCode(); st != want {
				b.Errorf("status %d, want %d: %s", st, want, resp.Body())
				return
			}
		}
	})
}

var wireTransports = []string{"mem", "tcp"}

// BenchmarkWireCeiling is the ceiling role's server and request, the
// figure door-sync's delta is divided by: a storefront order's JSON
// decoded, a placed order's worth of JSON answered.
func BenchmarkWireCeiling(b *testing.B) {
	for _, tr := range wireTransports {
		b.Run(tr, func(b *testing.B) {
			srv := wireBare(b, tr, load.CeilingHandler)
			req := wireRequest(b, "POST", "http://127.0.0.1:8080/storefront/v1/events/evt_ceiling/orders", "pk_ceiling",
				orderJSON(nil, 1, "tt_01m80je08a0hs5x214cz7we1b7"))
			wireRun(b, srv, [][]byte{req}, 201)
		})
	}
}

// wireDeltaReqs returns a caught-up delta request per device.
func wireDeltaReqs(b *testing.B, keys []string, cursor string) [][]byte {
	uri := "http://127.0.0.1:8080" + doorDeltaPath + "?cursor=" + url.QueryEscape(cursor)
	reqs := make([][]byte, len(keys))
	for i, k := range keys {
		reqs[i] = wireRequest(b, "GET", uri, k, nil)
	}
	return reqs
}

// BenchmarkWireDoorDelta is door-sync's caught-up delta request to the
// real service (app.Main's server, every middleware), 50 devices.
// limits=loadgen is the service as loadgen starts it: the request budgets
// off, the failed-authentication budget on (its default, checked by every
// request); limits=on keeps every default budget on (the device budget
// raised so that none of b.N is refused).
func BenchmarkWireDoorDelta(b *testing.B) {
	for _, limits := range []string{"loadgen", "on"} {
		for _, tr := range wireTransports {
			b.Run("limits="+limits+"/"+tr, func(b *testing.B) {
				opts := []apptest.Option{func(c *app.Config) { c.AuthFailuresPerMinute = thttp.DefaultAuthFailuresPerMinute }}
				if limits == "on" {
					opts = append(opts, apptest.DefaultLimits(), func(c *app.Config) { c.DevicePerMinute = 1 << 30 })
				}
				fx := newPipeFx(b, 10_000_000, opts...)
				fx.pipeRegistrations(b, 100)
				keys, cursor := fx.doorDevices(b, wireDevices)
				var srv wireServer
				if tr == "mem" {
					srv = wireMem(b, fx.svc.Main.Server().Serve)
				} else {
					srv = wireTCP(strings.TrimPrefix(fx.svc.URL, "http://"))
				}
				wireRun(b, srv, wireDeltaReqs(b, keys, cursor), 200)
			})
		}
	}
}

// BenchmarkWireBareDelta is the floor of the delta: the same requests
// answered with the same body by a bare fasthttp handler (no key
// checked, no middleware).
func BenchmarkWireBareDelta(b *testing.B) {
	const cursor = "cGFzc2VzOjE"
	body := []byte(`{"data":[],"hasMore":false,"nextCursor":"` + cursor + `"}`)
	keys := make([]string, wireDevices)
	for i := range keys {
		keys[i] = "dk_bare" + strings.Repeat("x", 32)
	}
	for _, tr := range wireTransports {
		b.Run(tr, func(b *testing.B) {
			srv := wireBare(b, tr, func(rc *fasthttp.RequestCtx) {
				rc.SetContentType("application/json")
				rc.SetBody(body)
			})
			wireRun(b, srv, wireDeltaReqs(b, keys, cursor), 200)
		})
	}
}
