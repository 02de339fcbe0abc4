package http

import (
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
var latencyBuckets = prometheus.ExponentialBuckets(latencyBase/1e9, 2, latencyBucketCount)

// latencyBucketCount is how many bounds latencyBuckets has.
const latencyBucketCount = 19

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
		hm,
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

// httpMetrics holds the per-route series: request counts and latency
// histograms by (operation, method, status), exported at scrape time
// (it is the registry's Collector of both families). A table route's
// series are resolved once per (operation, status) and found again
// through a map built at start (read-only, no lock) and a short
// copy-on-write list of statuses, so the request path hashes no labels
// and boxes no keys. Requests outside the table go through a sync.Map.
//
// Each series is striped (metricStripes): a request adds to the stripe of
// its connection, two atomic adds (its bucket, the latency sum), where
// prometheus' own counter and histogram take five on lines every core
// shares (issue 33: the door's caught-up poll, a few microseconds a
// request, paid for them in cache misses when both cores served). The
// count is the sum of the buckets, so a scrape's count and buckets agree.
type httpMetrics struct {
	requests, latency *prometheus.Desc

	ops      map[string]*opSeries // operation id -> its series; read-only after start
	children sync.Map             // childKey -> *statSeries, outside the table
}

type childKey struct {
	operation, method string
	status            int
}

// opSeries are the series of one table operation, by status.
type opSeries struct {
	op, method string
	mu         sync.Mutex // serializes adding a status
	byStatus   atomic.Pointer[[]statusSeries]
}

type statusSeries struct {
	status int
	c      *statSeries
}

// metricStripes is how many stripes a series has: concurrent requests on
// different connections share one with a chance of 1 in this many.
const metricStripes = 8

// latencyBase is the first latency bound (latencyBuckets[0]) in
// nanoseconds; each next bound doubles it.
const latencyBase = 50_000

// statSeries is one series' counts, striped.
type statSeries struct {
	labels  [3]string // operation, method, code
	stripes [metricStripes]statStripe
}

// statStripe is one stripe: the requests per latency bucket (the last
// slot: above every bound) and the latencies' sum, padded so that two
// stripes share no cache line.
type statStripe struct {
	buckets [latencyBucketCount + 1]atomic.Uint64
	sumNs   atomic.Int64
	_       [64]byte
}

// observe adds one request of latency d, from connection conn.
func (s *statSeries) observe(conn uint64, d time.Duration) {
	ns := max(int64(d), 0)
	i := 0
	if ns > latencyBase {
		i = min(bits.Len64(uint64(ns-1)/latencyBase), latencyBucketCount)
	}
	st := &s.stripes[conn%metricStripes]
	st.buckets[i].Add(1)
	st.sumNs.Add(ns)
}

// collect sends the series' request count and histogram.
func (s *statSeries) collect(m *httpMetrics, ch chan<- prometheus.Metric) {
	var slots [latencyBucketCount + 1]uint64
	var sum int64
	for i := range s.stripes {
		st := &s.stripes[i]
		for j := range slots {
			slots[j] += st.buckets[j].Load()
		}
		sum += st.sumNs.Load()
	}
	buckets := make(map[float64]uint64, len(latencyBuckets))
	var count uint64
	for j, le := range latencyBuckets {
		count += slots[j]
		buckets[le] = count
	}
	count += slots[len(latencyBuckets)]
	ch <- prometheus.MustNewConstMetric(m.requests, prometheus.CounterValue, float64(count), s.labels[:]...)
	ch <- prometheus.MustNewConstHistogram(m.latency, count, float64(sum)/1e9, buckets, s.labels[:]...)
}

func newHTTPMetrics(routes []Route) *httpMetrics {
	labels := []string{"operation", "method", "code"}
	m := &httpMetrics{
		requests: prometheus.NewDesc("ticketd_http_requests_total",
			"Finished HTTP requests by operation (route table operation id, or \"other\"), method and status code.", labels, nil),
		latency: prometheus.NewDesc("ticketd_http_request_duration_seconds",
			"Latency of finished HTTP requests by operation and status code, from arrival to the handler's return.", labels, nil),
		ops: make(map[string]*opSeries, len(routes)),
	}
	for _, r := range routes {
		m.ops[r.OperationID] = &opSeries{op: r.OperationID, method: r.Method}
	}
	return m
}

// Describe and Collect make m the registry's collector of its two
// families.
func (m *httpMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.requests
	ch <- m.latency
}

func (m *httpMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, o := range m.ops {
		if list := o.byStatus.Load(); list != nil {
			for _, s := range *list {
				s.c.collect(m, ch)
			}
		}
	}
	m.children.Range(func(_, v any) bool {
		v.(*statSeries).collect(m, ch)
		return true
	})
}

// observe records one finished request. It runs on the request path.
func (m *httpMetrics) observe(info RequestInfo) {
	status := info.Status
	if status < 100 || status > 599 {
		status = 0
	}
	var c *statSeries
	if o := m.ops[info.OperationID]; o != nil && o.method == info.Method {
		c = o.children(status)
	} else {
		c = m.other(info, status)
	}
	c.observe(info.conn, info.Latency)
}

// children returns the series of status, creating them on first use.
func (o *opSeries) children(status int) *statSeries {
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
	c := &statSeries{labels: [3]string{o.op, o.method, strconv.Itoa(status)}}
	next := append(slices.Clip(cur), statusSeries{status: status, c: c})
	o.byStatus.Store(&next)
	return c
}

// other returns the series of a request outside the route table.
func (m *httpMetrics) other(info RequestInfo, status int) *statSeries {
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
		c, _ = m.children.LoadOrStore(k, &statSeries{labels: [3]string{k.operation, k.method, strconv.Itoa(k.status)}})
	}
	return c.(*statSeries)
}
