package http

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"ticketd/http/conns"
)

// otherRoute labels requests outside the route table (hosted pages, docs,
// webhooks, unknown paths). Their raw paths carry tokens and ids, so they
// are folded into one label to keep the series count bounded.
const otherRoute = "other"

// latencyBuckets are the request latency bounds in seconds: 50 µs to about
// 13 s in powers of two, so a durable order (one fsync, about 0.1 to 2 ms
// here) and a stalled one (seconds) land in different buckets.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 19)

// RegisterMetrics serves GET /metrics, to the admin token only, in the Prometheus text format: request
// counts and latency histograms per route (fed by Config.OnRequest, chained
// after any hook already set), the actor system's counters, the WAL's
// group-commit statistics (extra: the application layer's collector),
// and the Go runtime. It must be called before Serve, and at most once per
// server.
func RegisterMetrics(srv *Server, extra ...prometheus.Collector) {
	reg := prometheus.NewRegistry()
	hm := newHTTPMetrics(srv.routes)
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsGC, collectors.MetricsScheduler)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		hm.requests, hm.latency,
	)
	reg.MustRegister(connCollectors(srv)...)
	reg.MustRegister(extra...)
	prev := srv.cfg.OnRequest
	srv.cfg.OnRequest = func(info RequestInfo) {
		hm.observe(info)
		if prev != nil {
			prev(info)
		}
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		// A scrape is a handful of small writes; bound concurrent ones so
		// a misbehaving scraper cannot pile up collections.
		MaxRequestsInFlight: 4,
		ErrorHandling:       promhttp.ContinueOnError,
	})
	metrics := fasthttpadaptor.NewFastHTTPHandler(h)
	// Request counts per route are sales volume: the admin token only.
	srv.Handle("GET", "/metrics", func(rc *fasthttp.RequestCtx) {
		if !srv.adminAuthorized(rc, ClientIP(rc, srv.cfg.TrustedProxies), srv.cfg.Now()) {
			return
		}
		metrics(rc)
	})
}

// connCollectors expose the connection listener's counters (zero before
// Serve).
func connCollectors(srv *Server) []prometheus.Collector {
	stat := func(f func(*conns.Listener) int64) func() float64 {
		return func() float64 {
			if l := srv.conns.Load(); l != nil {
				return float64(f(l))
			}
			return 0
		}
	}
	counter := func(name, help string, f func(*conns.Listener) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, stat(f))
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ticketd_http_connections_open", Help: "Open client connections."},
			stat(func(l *conns.Listener) int64 { return int64(l.Open()) })),
		counter("ticketd_http_connections_accepted_total", "Client connections admitted.",
			func(l *conns.Listener) int64 { return l.Stats.Accepted.Load() }),
		counter("ticketd_http_connections_refused_per_ip_total", "Connections refused (429) at the per-address bound.",
			func(l *conns.Listener) int64 { return l.Stats.RefusedPerIP.Load() }),
		counter("ticketd_http_connections_refused_total", "Connections refused (503) at the total bound with none idle.",
			func(l *conns.Listener) int64 { return l.Stats.RefusedTotal.Load() }),
		counter("ticketd_http_connections_reclaimed_total", "Idle connections closed to admit another or to free a descriptor.",
			func(l *conns.Listener) int64 { return l.Stats.Reclaimed.Load() }),
		counter("ticketd_http_accept_errors_total", "Accept errors (such as out of file descriptors), each retried.",
			func(l *conns.Listener) int64 { return l.Stats.AcceptErrors.Load() }),
	}
}

// httpMetrics holds the per-route series. A table route's series are
// resolved once per (operation, status) and found again through a map
// built at start (read-only, no lock) and a short copy-on-write list of
// statuses, so the request path hashes no labels and boxes no keys.
// Requests outside the table go through the sync.Map of children.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	ops      map[string]*opSeries // operation id -> its series; read-only after start
	children sync.Map             // childKey -> *routeChildren, outside the table
}

type childKey struct {
	operation, method string
	status            int
}

type routeChildren struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// opSeries are the series of one table operation, by status.
type opSeries struct {
	op, method string
	mu         sync.Mutex // serializes adding a status
	byStatus   atomic.Pointer[[]statusSeries]
}

type statusSeries struct {
	status int
	c      *routeChildren
}

func newHTTPMetrics(routes []Route) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketd_http_requests_total",
			Help: "Finished HTTP requests by operation (route table operation id, or \"other\"), method and status code.",
		}, []string{"operation", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ticketd_http_request_duration_seconds",
			Help:    "Latency of finished HTTP requests by operation and status code, from arrival to the handler's return.",
			Buckets: latencyBuckets,
		}, []string{"operation", "method", "code"}),
		ops: make(map[string]*opSeries, len(routes)),
	}
	for _, r := range routes {
		m.ops[r.OperationID] = &opSeries{op: r.OperationID, method: r.Method}
	}
	return m
}

// observe records one finished request. It runs on the request path.
func (m *httpMetrics) observe(info RequestInfo) {
	status := info.Status
	if status < 100 || status > 599 {
		status = 0
	}
	var c *routeChildren
	if o := m.ops[info.OperationID]; o != nil && o.method == info.Method {
		c = o.children(m, status)
	} else {
		c = m.other(info, status)
	}
	c.requests.Inc()
	c.latency.Observe(info.Latency.Seconds())
}

// children returns the series of status, creating them on first use.
func (o *opSeries) children(m *httpMetrics, status int) *routeChildren {
	if list := o.byStatus.Load(); list != nil {
		for _, s := range *list {
			if s.status == status {
				return s.c
			}
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var cur []statusSeries
	if list := o.byStatus.Load(); list != nil {
		cur = *list
		for _, s := range cur {
			if s.status == status {
				return s.c
			}
		}
	}
	code := strconv.Itoa(status)
	c := &routeChildren{
		requests: m.requests.WithLabelValues(o.op, o.method, code),
		latency:  m.latency.WithLabelValues(o.op, o.method, code),
	}
	next := append(slices.Clip(cur), statusSeries{status: status, c: c})
	o.byStatus.Store(&next)
	return c
}

// other returns the series of a request outside the route table.
func (m *httpMetrics) other(info RequestInfo, status int) *routeChildren {
	k := childKey{operation: info.OperationID, method: info.Method, status: status}
	if k.operation == "" {
		k.operation = otherRoute
		// Unrouted methods are client input: keep only the known ones.
		switch k.method {
		case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		default:
			k.method = otherRoute
		}
	}
	c, ok := m.children.Load(k)
	if !ok {
		code := strconv.Itoa(k.status)
		c, _ = m.children.LoadOrStore(k, &routeChildren{
			requests: m.requests.WithLabelValues(k.operation, k.method, code),
			latency:  m.latency.WithLabelValues(k.operation, k.method, code),
		})
	}
	return c.(*routeChildren)
}
