package http

import (
	"context"
	"io"
	"log/slog"
	nethttp "net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	"ticketd/ops"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// metricsHarness is the toy route table served with RegisterMetrics over a
// real actor system on Pebble in a temp dir.
type metricsHarness struct {
	*harness
	sys   *actors.System
	store *persistence.Store
}

func newMetricsHarness(t *testing.T) *metricsHarness {
	t.Helper()
	sys, store := openSystem(t, nil)
	h := serveHarness(t, func(cfg *Config) { cfg.AdminToken = metricsAdminToken },
		func(srv *Server) { RegisterMetrics(srv, ops.SystemCollector(sys)) })
	return &metricsHarness{harness: h, sys: sys, store: store}
}

const metricsAdminToken = "adm_metrics_test_0123456789"

// scrape reads /metrics with the admin token and parses it as the
// Prometheus text format.
func (h *metricsHarness) scrape() map[string]*dto.MetricFamily {
	h.t.Helper()
	req, err := nethttp.NewRequest("GET", h.base+"/metrics", nil)
	require.NoError(h.t, err)
	req.Header.Set("Authorization", "Bearer "+metricsAdminToken)
	res, err := nethttp.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer res.Body.Close()
	require.Equal(h.t, 200, res.StatusCode)
	require.Contains(h.t, res.Header.Get("Content-Type"), "text/plain")
	body, err := io.ReadAll(res.Body)
	require.NoError(h.t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(h.t, err, "%s", body)
	return fams
}

// series returns the metric of family name whose labels include want.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "family %s missing", name)
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no %s series with labels %v", name, want)
	return nil
}

func TestMetricsPerRoute(t *testing.T) {
	h := newMetricsHarness(t)
	for range 2 {
		r := h.do("POST", "/v1/events/evt_1/orders", skLive, goodOrder)
		require.Equal(t, 201, r.status, "%s", r.body)
	}
	r := h.do("POST", "/v1/events/evt_1/orders", skLive, `{"email":"full@example.com","items":[{"itemType":"registration_type","itemId":"tt_1","quantity":1}]}`)
	require.Equal(t, 412, r.status)
	require.Equal(t, 401, h.do("GET", "/v1/events", "sk_wrong", "").status)
	// Unrouted paths carry ids and tokens: they must fold into one series.
	require.Equal(t, 404, h.do("GET", "/pass/tok_secret_1", "", "").status)
	require.Equal(t, 404, h.do("GET", "/pass/tok_secret_2", "", "").status)

	fams := h.scrape()
	ok := series(t, fams, "ticketd_http_requests_total", map[string]string{"operation": "placeOrder", "method": "POST", "code": "201"})
	require.Equal(t, 2.0, ok.GetCounter().GetValue())
	full := series(t, fams, "ticketd_http_requests_total", map[string]string{"operation": "placeOrder", "code": "412"})
	require.Equal(t, 1.0, full.GetCounter().GetValue())
	require.Equal(t, 1.0, series(t, fams, "ticketd_http_requests_total", map[string]string{"operation": "listEvents", "code": "401"}).GetCounter().GetValue())
	other := series(t, fams, "ticketd_http_requests_total", map[string]string{"operation": otherRoute, "method": "GET", "code": "404"})
	require.Equal(t, 2.0, other.GetCounter().GetValue())

	lat := series(t, fams, "ticketd_http_request_duration_seconds", map[string]string{"operation": "placeOrder", "code": "201"}).GetHistogram()
	require.Equal(t, uint64(2), lat.GetSampleCount())
	require.Greater(t, lat.GetSampleSum(), 0.0)
	require.GreaterOrEqual(t, len(lat.Bucket), len(latencyBuckets))

	for _, m := range fams["ticketd_http_requests_total"].Metric {
		for _, l := range m.Label {
			require.NotContains(t, l.GetValue(), "tok_secret", "raw paths must not become labels")
		}
	}
	// The hook that was already configured still sees every request.
	h.mu.Lock()
	require.GreaterOrEqual(t, len(h.infos), 6)
	h.mu.Unlock()
	// The scrape itself is counted once it has finished.
	fams = h.scrape()
	require.Equal(t, 1.0, series(t, fams, "ticketd_http_requests_total", map[string]string{"operation": otherRoute, "code": "200"}).GetCounter().GetValue())
}

func TestMetricsSystemAndRuntime(t *testing.T) {
	h := newMetricsHarness(t)
	ctx := context.Background()
	u, err := h.sys.CreateUnit(ctx, "Metrics")
	require.NoError(t, err)
	for range 3 {
		_, err := h.sys.CreateEvent(ctx, u.ID, h.sys.NewEventID(), event.CreateEvent{Name: "E", Timezone: "UTC"})
		require.NoError(t, err)
	}
	fams := h.scrape()
	gauge := func(name string) float64 {
		m := series(t, fams, name, nil)
		if m.Gauge != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	require.Equal(t, float64(h.sys.ActiveEvents()), gauge("ticketd_event_actors_active"))
	require.GreaterOrEqual(t, gauge("ticketd_event_actors_active"), 3.0)
	require.GreaterOrEqual(t, gauge("ticketd_event_actor_activations_total"), 3.0)
	require.Equal(t, 0.0, gauge("ticketd_event_actor_passivations_total"))
	require.Equal(t, 0.0, gauge("ticketd_snapshots_total"))
	require.Equal(t, 0.0, gauge("ticketd_snapshots_pending"))

	st := h.store.Stats()
	commits := gauge("ticketd_wal_commits_total")
	require.GreaterOrEqual(t, commits, 4.0, "a unit and three events were committed")
	require.LessOrEqual(t, commits, float64(st.Commits))
	require.Greater(t, gauge("ticketd_wal_records_total"), 0.0)
	require.Greater(t, gauge("ticketd_wal_syncs_total"), 0.0)
	require.Greater(t, gauge("ticketd_wal_bytes_total"), 0.0)

	hist := series(t, fams, "ticketd_wal_records_per_commit", nil).GetHistogram()
	require.Equal(t, uint64(commits), hist.GetSampleCount())
	require.Equal(t, gauge("ticketd_wal_records_total"), hist.GetSampleSum())
	prev := uint64(0)
	for _, b := range hist.Bucket {
		require.GreaterOrEqual(t, b.GetCumulativeCount(), prev, "buckets are cumulative")
		prev = b.GetCumulativeCount()
	}
	require.LessOrEqual(t, prev, hist.GetSampleCount())

	// The Go runtime, including the live heap that bench/ reads per registration.
	require.Greater(t, gauge("go_goroutines"), 0.0)
	require.Greater(t, gauge("go_memstats_heap_alloc_bytes"), 0.0)
	require.Contains(t, fams, "go_gc_heap_live_bytes")
	require.Contains(t, fams, "process_resident_memory_bytes")
}

// TestMetricsStoreBackgroundWork checks the store's flush and compaction
// counters on /metrics: zero before, moving once the memtable is flushed and
// the tables compacted, and equal to what the store's Stats say.
func TestMetricsStoreBackgroundWork(t *testing.T) {
	h := newMetricsHarness(t)
	ctx := context.Background()
	value := func(fams map[string]*dto.MetricFamily, name string) float64 {
		m := series(t, fams, name, nil)
		if m.Gauge != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	names := []string{"ticketd_store_flushes_total", "ticketd_store_compactions_total", "ticketd_store_flushed_bytes_total",
		"ticketd_store_compacted_bytes_total", "ticketd_store_compaction_read_bytes_total", "ticketd_store_compaction_seconds_total",
		"ticketd_store_l0_sublevels", "ticketd_store_l0_files"}
	fams := h.scrape()
	for _, n := range names {
		require.Equal(t, 0.0, value(fams, n), n)
	}
	u, err := h.sys.CreateUnit(ctx, "Metrics")
	require.NoError(t, err)
	// Two flushes, so level 0 holds two overlapping tables that a
	// compaction must merge (one table alone would only be moved down).
	for range 2 {
		_, err = h.sys.CreateEvent(ctx, u.ID, h.sys.NewEventID(), event.CreateEvent{Name: "E", Timezone: "UTC"})
		require.NoError(t, err)
		require.NoError(t, h.store.DB().Flush())
	}
	fams = h.scrape()
	require.GreaterOrEqual(t, value(fams, "ticketd_store_flushes_total"), 1.0)
	require.Greater(t, value(fams, "ticketd_store_flushed_bytes_total"), 0.0)
	// Pebble may already have moved the flushed tables down on its own
	// (a loaded machine gives it the time): then a compaction says so.
	if value(fams, "ticketd_store_l0_files") == 0 {
		require.GreaterOrEqual(t, value(fams, "ticketd_store_compactions_total"), 1.0, "level 0 emptied without a compaction")
	} else {
		require.GreaterOrEqual(t, value(fams, "ticketd_store_l0_sublevels"), 1.0)
	}

	require.NoError(t, h.store.DB().Compact(ctx, []byte{0}, []byte{0xff}, false))
	fams = h.scrape()
	st := h.store.Stats()
	require.GreaterOrEqual(t, value(fams, "ticketd_store_compactions_total"), 1.0)
	require.Greater(t, value(fams, "ticketd_store_compacted_bytes_total"), 0.0)
	require.Greater(t, value(fams, "ticketd_store_compaction_read_bytes_total"), 0.0)
	require.Greater(t, value(fams, "ticketd_store_compaction_seconds_total"), 0.0)
	require.Equal(t, float64(st.CompactedBytes), value(fams, "ticketd_store_compacted_bytes_total"))
	require.Equal(t, float64(st.FlushedBytes), value(fams, "ticketd_store_flushed_bytes_total"))
	require.Equal(t, 0.0, value(fams, "ticketd_store_l0_files"), "the compaction emptied level 0")
}

// openSystem opens an actor system on a Pebble store in a temp dir (on fs
// when it is not nil), both closed when the test ends.
func openSystem(t *testing.T, fs vfs.FS) (*actors.System, *persistence.Store) {
	t.Helper()
	store, err := persistence.Open(persistence.Options{Dir: t.TempDir(), FS: fs, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	sys, err := actors.Open(actors.Config{Event: event.Config{BaseURL: "http://x", OrderHold: time.Minute, CheckoutSessionTTL: time.Hour}},
		store, snapshots.New(store, 2))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = sys.Close()
		_ = store.Close()
	})
	return sys, store
}

// TestStatSeriesAsPrometheus: a series' striped counts export what
// prometheus' own counter and histogram over latencyBuckets would, from
// whichever connections its requests came.
func TestStatSeriesAsPrometheus(t *testing.T) {
	m := newHTTPMetrics(nil)
	s := &statSeries{labels: [3]string{"op", "GET", "200"}}
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h", Buckets: latencyBuckets})
	lat := []time.Duration{0, 1, 49 * time.Microsecond, 50 * time.Microsecond, 51 * time.Microsecond, 99 * time.Microsecond,
		101 * time.Microsecond, time.Millisecond, 300 * time.Millisecond, 13 * time.Second, 14 * time.Second, time.Hour, -time.Second}
	var sum time.Duration
	for i, d := range lat {
		s.observe(uint64(i*7), d)
		h.Observe(max(d, 0).Seconds())
		sum += max(d, 0)
	}
	ch := make(chan prometheus.Metric, 2)
	s.collect(m, ch)
	var count, hist, want dto.Metric
	require.NoError(t, (<-ch).Write(&count))
	require.NoError(t, (<-ch).Write(&hist))
	require.NoError(t, h.Write(&want))
	require.Equal(t, float64(len(lat)), count.GetCounter().GetValue())
	require.Equal(t, want.GetHistogram().GetSampleCount(), hist.GetHistogram().GetSampleCount())
	require.InDelta(t, sum.Seconds(), hist.GetHistogram().GetSampleSum(), 1e-9)
	require.Len(t, hist.GetHistogram().GetBucket(), len(latencyBuckets))
	for i, b := range want.GetHistogram().GetBucket() {
		got := hist.GetHistogram().GetBucket()[i]
		require.Equal(t, b.GetUpperBound(), got.GetUpperBound())
		require.Equal(t, b.GetCumulativeCount(), got.GetCumulativeCount(), "le %g", b.GetUpperBound())
	}
}

// BenchmarkMetricsObserveParallel is one request's metrics from every
// core at once: prometheus' counter and histogram (what the series were)
// against a striped series, each goroutine a connection of its own.
func BenchmarkMetricsObserveParallel(b *testing.B) {
	b.Run("prometheus", func(b *testing.B) {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: "c"})
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h", Buckets: latencyBuckets})
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Inc()
				h.Observe((120 * time.Microsecond).Seconds())
			}
		})
	})
	b.Run("striped", func(b *testing.B) {
		s := &statSeries{}
		var conns atomic.Uint64
		b.RunParallel(func(pb *testing.PB) {
			conn := conns.Add(1)
			for pb.Next() {
				s.observe(conn, 120*time.Microsecond)
			}
		})
	})
}
