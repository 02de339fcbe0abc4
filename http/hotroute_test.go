package http

import (
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

type noAuth struct{}

func (noAuth) Authenticate(string, time.Time) (*Principal, error) { return nil, nil }

// hotTable is a table whose hot routes share paths with others in every
// way the router breaks ties: a literal beside a parameter, another
// method, a longer pattern, a Handle route.
func hotTable(hot bool) []Route {
	echo := func(names ...string) HandlerFunc {
		return func(c *Ctx) (any, error) {
			out := map[string]string{"op": c.Route().OperationID}
			for _, n := range names {
				out[n] = c.Param(n)
			}
			return out, nil
		}
	}
	rs := []Route{
		{Method: "POST", Path: "/a/{id}/orders", OperationID: "orders", Handle: echo("id")},
		{Method: "GET", Path: "/a/{id}/orders", OperationID: "listOrders", Handle: echo("id")},
		{Method: "POST", Path: "/a/{id}/orders/{n}", OperationID: "order", Handle: echo("id", "n")},
		{Method: "GET", Path: "/q/{id}/queue/{qid}", OperationID: "poll", Handle: echo("id", "qid")},
		{Method: "POST", Path: "/b/{id}/x", OperationID: "bx", Handle: echo("id")},
		{Method: "POST", Path: "/b/static/x", OperationID: "bstatic", Handle: echo()},
		{Method: "GET", Path: "/c/{id}", OperationID: "c", Handle: echo("id")},
	}
	for i := range rs {
		rs[i].Surface = Public
		rs[i].Hot = hot
	}
	return rs
}

// TestHotRoutesAnswerAsTheRouter: every request answers the same (route,
// parameters, status) whether the table's routes are hot or not; a hot
// route that shares paths with another is left to the router.
func TestHotRoutesAnswerAsTheRouter(t *testing.T) {
	build := func(hot bool) (*Server, fasthttp.RequestHandler) {
		cfg := DefaultConfig()
		cfg.Logger = slog.New(slog.DiscardHandler)
		s, err := NewServer(cfg, noAuth{}, hotTable(hot))
		require.NoError(t, err)
		s.Handle("GET", "/c/{id}/page", func(rc *fasthttp.RequestCtx) { rc.SetBodyString("page") })
		s.Handle("GET", "/c/special", func(rc *fasthttp.RequestCtx) { rc.SetBodyString("special") })
		s.Handle("GET", "/", func(rc *fasthttp.RequestCtx) { rc.SetBodyString("root") })
		s.Handle("POST", "/a/{id}/orders/{n}/{rest:*}", func(rc *fasthttp.RequestCtx) { rc.SetBodyString("rest") })
		return s, s.Handler()
	}
	hotSrv, hotH := build(true)
	_, coldH := build(false)
	on := map[string]bool{}
	for _, h := range hotSrv.hot {
		on[h.r.OperationID] = !h.off
	}
	require.Equal(t, map[string]bool{"orders": true, "listOrders": true, "order": false, "poll": true,
		"bx": false, "bstatic": false, "c": false}, on, "which hot routes stand")

	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	do := func(h fasthttp.RequestHandler, method, uri string) string {
		var r fasthttp.Request
		r.Header.SetMethod(method)
		r.SetRequestURI(uri)
		var rc fasthttp.RequestCtx
		rc.Init(&r, addr, nil)
		h(&rc)
		return strconv.Itoa(rc.Response.Header.StatusCode()) + " " + string(rc.Response.Body())
	}
	hits := 0
	for _, m := range []string{"GET", "POST", "PUT"} {
		for _, p := range []string{
			"/a/evt_1/orders", "/a/evt%2F1/orders", "/a/evt%201/orders", "/a//orders", "/a/evt_1/orders/", "/a/evt_1/orders/7",
			"/a/evt_1/orders/7/", "/a/evt_1/orders//", "/a/evt_1/orders/7/8/9", "/a/evt_1", "/a/evt_1/order", "/a/evt_1/ordersx", "/A/evt_1/orders",
			"/q/e/queue/q_1", "/q/e/queue/", "/q/e/queue/q_1/x", "/b/static/x", "/b/other/x", "/c/1", "/c/special", "/c/1/page",
			"/", "//a/evt_1/orders", "/a/evt_1/orders?x=1", "/a/" + strings.Repeat("x", 200) + "/orders",
		} {
			want, got := do(coldH, m, "http://h"+p), do(hotH, m, "http://h"+p)
			require.Equal(t, want, got, "%s %s", m, p)
			if strings.Contains(got, `"op"`) {
				hits++
			}
		}
	}
	require.Greater(t, hits, 10)
}
