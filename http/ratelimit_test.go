package http

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// fakeClock is a Config.Now that tests move by hand.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(t.UnixNano())
	return c
}
func (c *fakeClock) Now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) Add(d time.Duration) { c.ns.Add(int64(d)) }

func TestRateLimitDeveloper(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 8, 22, 10, 0, 15, 0, time.UTC))
	// 6 a minute: a bucket of 3, one request back every 10 s.
	h := newHarness(t, func(c *Config) { c.RateLimitPerMinute = 6; c.Now = clock.Now })
	for i := 0; i < 3; i++ {
		r := h.do("GET", "/v1/events", skLive, "")
		require.Equal(t, 200, r.status)
		require.Equal(t, "3", r.header.Get("RateLimit-Limit"))
		require.Equal(t, strconv.Itoa(2-i), r.header.Get("RateLimit-Remaining"))
		require.Equal(t, strconv.Itoa(10*(i+1)), r.header.Get("RateLimit-Reset"), "seconds until the bucket is full")
		require.Empty(t, r.header.Get("Retry-After"))
	}
	r := h.do("GET", "/v1/events", skLive, "")
	require.Equal(t, 429, r.status)
	require.Equal(t, "RESOURCE_EXHAUSTED", r.envelope(t).Status)
	require.Equal(t, "10", r.header.Get("Retry-After"), "one request comes back in 10 s")
	require.Equal(t, "0", r.header.Get("RateLimit-Remaining"))
	require.Equal(t, CurrentVersion, r.header.Get("service-version"))

	require.Equal(t, 200, h.do("GET", "/v1/events", skOld, "").status, "budgets are per key")
	require.Equal(t, 201, h.do("POST", "/admin/v1/business-units", adminTok, "").status, "the console is not limited")

	clock.Add(10 * time.Second)
	r = h.do("GET", "/v1/events", skLive, "")
	require.Equal(t, 200, r.status, "one request refilled")
	require.Equal(t, "0", r.header.Get("RateLimit-Remaining"))
	require.Equal(t, 429, h.do("GET", "/v1/events", skLive, "").status, "and only one")
	clock.Add(time.Minute)
	r = h.do("GET", "/v1/events", skLive, "")
	require.Equal(t, 200, r.status)
	require.Equal(t, "2", r.header.Get("RateLimit-Remaining"), "full again, never more than the bucket")
}

// TestRateLimitWindowEdge: a burst at a minute's edge (where fixed windows
// let through two minutes' budgets) spends half a minute's at most, and the
// budget comes back continuously, not at the next minute.
func TestRateLimitWindowEdge(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 8, 22, 10, 0, 59, 900_000_000, time.UTC))
	h := newHarness(t, func(c *Config) {
		c.StorefrontKeyLimitPerMinute = 600 // 10 a second, a bucket of 300
		c.StorefrontIPLimitPerMinute, c.StorefrontCatalogIPLimitPerMinute = 0, 0
		c.Now = clock.Now
	})
	burst := func(n int) (ok int) {
		for i := 0; i < n; i++ {
			if h.do("GET", "/storefront/v1/events/evt_1", pkLive, "").status == 200 {
				ok++
			}
		}
		return ok
	}
	require.Equal(t, 300, burst(400), "before the edge: half the minute's 600")
	clock.Add(200 * time.Millisecond) // past the minute's edge
	require.Equal(t, 2, burst(400), "after it: only what 0.2 s refilled")
	r := h.do("GET", "/storefront/v1/events/evt_1", pkLive, "")
	require.Equal(t, 429, r.status)
	require.Equal(t, "1", r.header.Get("Retry-After"))
	clock.Add(time.Second)
	require.Equal(t, 10, burst(20), "a second later, a second's budget")
	clock.Add(time.Minute)
	require.Equal(t, 300, burst(400), "a minute later, the bucket is full: never more")
}

func TestRateLimitOff(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RateLimitPerMinute = 0 })
	for i := 0; i < 5; i++ {
		r := h.do("GET", "/v1/events", skLive, "")
		require.Equal(t, 200, r.status)
		require.Empty(t, r.header.Get("RateLimit-Limit"))
	}
}

func TestRateLimitStorefrontPerIPBehindTrustedProxy(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 8, 22, 10, 0, 0, 0, time.UTC))
	h := newHarness(t, func(c *Config) {
		c.StorefrontKeyLimitPerMinute = 10 // a bucket of 5
		c.StorefrontIPLimitPerMinute = 4   // a bucket of 2
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}
		c.Now = clock.Now
	})
	place := func(xff string) resp {
		return h.do("POST", "/storefront/v1/events/evt_1/orders", pkLive, goodOrder, "X-Forwarded-For", xff)
	}
	// The client spoofs a left-most hop; the proxy chain 10.0.0.9 is trusted.
	r := place("6.6.6.6, 203.0.113.7, 10.0.0.9")
	require.Equal(t, 201, r.status, "%s", r.body)
	require.Equal(t, "203.0.113.7", r.result(t).IP)
	require.Equal(t, "2", r.header.Get("RateLimit-Limit"), "the tighter budget is reported")
	require.Equal(t, "1", r.header.Get("RateLimit-Remaining"))
	require.Equal(t, 201, place("1.1.1.1, 203.0.113.7").status)
	r = place("203.0.113.7")
	require.Equal(t, 429, r.status)
	require.Equal(t, "15", r.header.Get("Retry-After"), "one order back in 15 s")

	r = place("198.51.100.1")
	require.Equal(t, 201, r.status, "another visitor has its own budget")
	// The refused request cost the key nothing, so a read (whose own per-IP
	// budget is wider) spends the key's fourth of five.
	r = h.do("GET", "/storefront/v1/events/evt_1", pkLive, "")
	require.Equal(t, 200, r.status)
	require.Equal(t, "5", r.header.Get("RateLimit-Limit"))
	require.Equal(t, "1", r.header.Get("RateLimit-Remaining"))
	require.Equal(t, 200, h.do("GET", "/storefront/v1/events/evt_1", pkLive, "").status)
	require.Equal(t, 429, h.do("GET", "/storefront/v1/events/evt_1", pkLive, "").status, "the key budget is spent")
}

func TestRateLimiterBoundedKeys(t *testing.T) {
	l := newRateLimiter(32)
	now := time.Unix(600, 0)
	require.True(t, l.take(limitKey{key: "a"}, 2, now).ok)
	require.False(t, l.take(limitKey{key: "a"}, 2, now).ok)
	for i := 0; i < 1000; i++ {
		require.True(t, l.take(limitKey{key: "n" + strconv.Itoa(i)}, 2, now).ok, "a newcomer is never refused for want of room")
		require.LessOrEqual(t, l.table.size(), 32)
	}
	require.True(t, l.take(limitKey{key: "b"}, 2, now.Add(time.Minute)).ok)
	require.Equal(t, 1, l.table.size(), "full buckets are forgotten when room is made")
}

func TestFailLimiterBucket(t *testing.T) {
	l := newFailLimiter(6, 100) // 6 per minute: one token per 10 s
	now := time.Unix(1_000_000, 0)
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	for i := 0; i < 6; i++ {
		require.False(t, l.spent(a, now), "failure %d", i)
		ok, _ := l.take(a, now)
		require.True(t, ok, "failure %d", i)
	}
	require.True(t, l.spent(a, now))
	ok, retry := l.take(a, now)
	require.False(t, ok)
	require.Equal(t, 10, retry, "one token back in 10 s")
	require.False(t, l.spent(a, now.Add(10*time.Second)), "a token came back")
	ok, _ = l.take(a, now.Add(10*time.Second))
	require.True(t, ok)
	require.True(t, l.spent(a, now.Add(10*time.Second)))
	require.False(t, l.spent(a, now.Add(2*time.Minute)))

	// IPv6 addresses of one /64 share a bucket.
	for i := 0; i < 6; i++ {
		l.take(b, now)
	}
	require.True(t, l.spent(netip.MustParseAddr("2001:db8::ffff:1"), now), "same /64")
	require.False(t, l.spent(netip.MustParseAddr("2001:db8:0:1::1"), now), "another /64")

	// Bounded by forgetting, never by refusing a newcomer.
	for i := 0; i < 300; i++ {
		ok, _ := l.take(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), now)
		require.True(t, ok)
		require.LessOrEqual(t, l.table.size(), 100)
	}
	require.Nil(t, newFailLimiter(0, 100), "off")
	ok, _ = (*failLimiter)(nil).take(a, now)
	require.True(t, ok)
}

// TestDefaultKeyBudgetServesTenThousandVisitors: with the default budgets,
// 10,000 distinct visitors of one publishable key, arriving at once, each
// spending the whole of both its per-IP buckets (orders and catalog), are
// all served: the key's budget never makes a drop impossible (decisions
// §22). Then each visitor's next request is refused by its own budget.
func TestDefaultKeyBudgetServesTenThousandVisitors(t *testing.T) {
	cfg := DefaultConfig()
	require.GreaterOrEqual(t, cfg.StorefrontKeyLimitPerMinute,
		StorefrontKeyVisitors*(cfg.StorefrontIPLimitPerMinute+cfg.StorefrontCatalogIPLimitPerMinute))
	at := time.Date(2026, 8, 22, 10, 0, 59, 0, time.UTC)
	cfg.Now = func() time.Time { return at }
	srv, err := NewServer(cfg, newFakeAuth(), nil)
	require.NoError(t, err)
	orders, catalog := &Route{Surface: Storefront, IPLimited: true}, &Route{Surface: Storefront}
	p := &Principal{KeyID: "key_drop", Type: KeyPublishable}
	var rc fasthttp.RequestCtx
	refused := 0
	take := func(r *Route, ip netip.Addr) bool {
		rc.Response.Reset()
		return srv.limit(&Ctx{rc: &rc, srv: srv, route: r, principal: p, now: at, ip: ip})
	}
	visitor := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}) }
	for i := 0; i < StorefrontKeyVisitors; i++ {
		ip := visitor(i)
		for n := 0; n < burstOf(cfg.StorefrontIPLimitPerMinute); n++ {
			if !take(orders, ip) {
				refused++
			}
		}
		for n := 0; n < burstOf(cfg.StorefrontCatalogIPLimitPerMinute); n++ {
			if !take(catalog, ip) {
				refused++
			}
		}
	}
	require.Zero(t, refused, "every visitor within its per-IP budgets is served")
	require.False(t, take(orders, visitor(7)))
	require.Contains(t, string(rc.Response.Body()), "RATE_LIMITED")
	require.Equal(t, strconv.Itoa(burstOf(cfg.StorefrontIPLimitPerMinute)), string(rc.Response.Header.Peek("RateLimit-Limit")), "refused by its own budget")
}

func TestFastLoggerRedactsQuotedRequestBytes(t *testing.T) {
	msg := fmt.Sprintf("error when serving connection %q<->%q: error when reading request headers: invalid header value %q: buffer size=9",
		"127.0.0.1:8080", "[::1]:5555", "Bearer abc\x01secretpart")
	got := redactQuoted(msg)
	require.NotContains(t, got, "secretpart")
	require.Contains(t, got, `"127.0.0.1:8080"<->"[::1]:5555"`, "addresses stay")
	require.Contains(t, got, `invalid header value "[redacted]"`)
}

// TestGCRASpentWithoutLock: spent's answer without the lock (an interval
// after the latest take) is the one the table gives, whatever the order
// of takes and clock readings.
func TestGCRASpentWithoutLock(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const interval = int64(3 * time.Second)
	for _, burst := range []int{1, 2, 20} {
		g := newGCRATable[int](64)
		now := int64(1_000_000 * time.Second)
		for i := range 20_000 {
			// Mostly forward, sometimes a step back (a wall clock).
			now += rng.Int64N(2*interval) - interval/4
			k := rng.IntN(4)
			if rng.IntN(3) == 0 {
				g.take(k, burst, interval, now)
				continue
			}
			g.mu.Lock()
			tat, ok := g.tat[k]
			g.mu.Unlock()
			want := ok && max(tat, now)+interval-now > int64(burst)*interval
			require.Equal(t, want, g.spent(k, burst, interval, now), "step %d, burst %d", i, burst)
		}
	}
}

// BenchmarkFailLimiterSpentParallel is the failed-authentication check
// every authenticated request makes, from every core at once: quiet (no
// failure within an interval: one atomic load) and failing (a failure a
// moment ago: the table's lock, as every request took before).
func BenchmarkFailLimiterSpentParallel(b *testing.B) {
	for _, mode := range []string{"quiet", "failing"} {
		b.Run(mode, func(b *testing.B) {
			l := newFailLimiter(DefaultAuthFailuresPerMinute, 1<<20)
			now := time.Now()
			if mode == "failing" {
				l.take(netip.MustParseAddr("192.0.2.1"), now)
			} else {
				l.take(netip.MustParseAddr("192.0.2.1"), now.Add(-time.Minute))
			}
			ip := netip.MustParseAddr("127.0.0.1")
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if l.spent(ip, now) {
						b.Error("spent")
						return
					}
				}
			})
		})
	}
}
