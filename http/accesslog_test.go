package http

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func TestAccessLogAndRequestID(t *testing.T) {
	var sink syncBuffer
	h := newHarness(t, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(&sink, nil)) })
	r := h.do("GET", "/v1/events", skLive, "", "Request-Id", "client-id-1")
	require.Equal(t, "client-id-1", r.header.Get("Request-Id"))
	r2 := h.do("GET", "/v1/events", skLive, "", "Request-Id", "bad id/with?chars")
	id2 := r2.header.Get("Request-Id")
	require.True(t, strings.HasPrefix(id2, "req_"), id2)
	r3 := h.do("GET", "/v1/events", skLive, "")
	require.NotEqual(t, id2, r3.header.Get("Request-Id"))

	// Handle after Serve is refused; the check is cheap and keeps the router immutable while serving.
	require.Panics(t, func() { h.srv.Handle("GET", "/late", func(*fasthttp.RequestCtx) {}) })

	require.Eventually(t, func() bool { return len(sink.lines()) >= 3 }, 2e9, 1e7)
	l := sink.lines()[0]
	require.Equal(t, "request", l["msg"])
	require.Equal(t, "GET", l["method"])
	require.Equal(t, "/v1/events", l["path"])
	require.EqualValues(t, 200, l["status"])
	require.Equal(t, "key_sk", l["key_id"])
	require.Equal(t, "127.0.0.1", l["client_ip"])
	require.Equal(t, "client-id-1", l["request_id"])
	require.Contains(t, l, "latency_ms")

	h.mu.Lock()
	defer h.mu.Unlock()
	require.GreaterOrEqual(t, len(h.infos), 3)
	ri := h.infos[0]
	require.Equal(t, "listEvents", ri.OperationID)
	require.Equal(t, Developer, ri.Surface)
	require.Equal(t, "bu_1", ri.UnitID)
	require.Equal(t, 200, ri.Status)
}

func TestExtraHandlers(t *testing.T) {
	h := &harness{t: t, auth: newFakeAuth(), gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := NewServer(cfg, h.auth, toyRoutes(h))
	require.NoError(t, err)
	srv.Handle("GET", "/pay/{id}", func(rc *fasthttp.RequestCtx) {
		rc.SetContentType("text/html")
		rc.SetBodyString("<p>" + rc.UserValue("id").(string) + "</p>")
	})
	srv.Handle("GET", "/panic", func(rc *fasthttp.RequestCtx) { panic("x") })
	require.Len(t, srv.Routes(), len(toyRoutes(h)))

	var rc fasthttp.RequestCtx
	rc.Request.SetRequestURI("/pay/p_1")
	srv.Handler()(&rc)
	require.Equal(t, "<p>p_1</p>", string(rc.Response.Body()))
	require.Equal(t, "nosniff", string(rc.Response.Header.Peek("X-Content-Type-Options")))

	var rc2 fasthttp.RequestCtx
	rc2.Request.SetRequestURI("/panic")
	srv.Handler()(&rc2)
	require.Equal(t, 500, rc2.Response.StatusCode())
}

// TestRequestSeqUnique: the generated request numbers, taken from every
// processor at once and across collections (which drop the processors'
// blocks), never repeat and never are 0 (RequestInfo.ID's "no id").
func TestRequestSeqUnique(t *testing.T) {
	var s Server
	const workers, each = 8, 20_000
	got := make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if i%5000 == 0 {
					runtime.GC()
				}
				got[w] = append(got[w], s.nextSeq())
			}
		})
	}
	wg.Wait()
	seen := make(map[uint64]bool, workers*each)
	for _, l := range got {
		for _, n := range l {
			require.NotZero(t, n)
			require.False(t, seen[n], "number %d handed out twice", n)
			seen[n] = true
		}
	}
}
