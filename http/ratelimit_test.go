package http

import (
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	h := newHarness(t, func(c *Config) { c.RateLimitPerMinute = 3; c.Now = clock.Now })
	for i := 0; i < 3; i++ {
		r := h.do("GET", "/v1/events", skLive, "")
		require.Equal(t, 200, r.status)
		require.Equal(t, "3", r.header.Get("RateLimit-Limit"))
		require.Equal(t, strconv.Itoa(2-i), r.header.Get("RateLimit-Remaining"))
		require.Equal(t, "45", r.header.Get("RateLimit-Reset"))
		require.Empty(t, r.header.Get("Retry-After"))
	}
	r := h.do("GET", "/v1/events", skLive, "")
	require.Equal(t, 429, r.status)
	require.Equal(t, "RESOURCE_EXHAUSTED", r.envelope(t).Status)
	require.Equal(t, "45", r.header.Get("Retry-After"))
	require.Equal(t, "0", r.header.Get("RateLimit-Remaining"))
	require.Equal(t, CurrentVersion, r.header.Get("service-version"))

	require.Equal(t, 200, h.do("GET", "/v1/events", skOld, "").status, "budgets are per key")
	require.Equal(t, 201, h.do("POST", "/admin/v1/business-units", adminTok, "").status, "the console is not limited")

	clock.Add(45 * time.Second)
	r = h.do("GET", "/v1/events", skLive, "")
	require.Equal(t, 200, r.status, "a new window")
	require.Equal(t, "2", r.header.Get("RateLimit-Remaining"))
	require.Equal(t, "60", r.header.Get("RateLimit-Reset"))
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
		c.StorefrontKeyLimitPerMinute = 5
		c.StorefrontIPLimitPerMinute = 2
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
	require.Equal(t, "60", r.header.Get("Retry-After"))

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
	l := newRateLimiter(2)
	now := time.Unix(600, 0)
	require.True(t, l.take(limitKey{key: "a"}, 1, now).ok)
	require.True(t, l.take(limitKey{key: "b"}, 1, now).ok)
	require.False(t, l.take(limitKey{key: "a"}, 1, now).ok)
	require.True(t, l.take(limitKey{key: "c"}, 1, now).ok, "full: fail open")
	require.Len(t, l.counts, 2)
	require.True(t, l.take(limitKey{key: "a"}, 1, now.Add(time.Minute)).ok)
	require.Len(t, l.counts, 1, "old windows are dropped")
}

func TestFailLimiterBucket(t *testing.T) {
	l := newFailLimiter(6, 100) // 6 per minute: one token per 10 s
	now := time.Unix(1_000_000, 0)
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	for i := 0; i < 6; i++ {
		blocked, _ := l.blocked(a, now)
		require.False(t, blocked, "failure %d", i)
		l.fail(a, now)
	}
	blocked, retry := l.blocked(a, now)
	require.True(t, blocked)
	require.Equal(t, 10, retry, "one token back in 10 s")
	blocked, _ = l.blocked(a, now.Add(10*time.Second))
	require.False(t, blocked, "a token came back")
	l.fail(a, now.Add(10*time.Second))
	blocked, _ = l.blocked(a, now.Add(10*time.Second))
	require.True(t, blocked)
	blocked, _ = l.blocked(a, now.Add(2*time.Minute))
	require.False(t, blocked)
	require.Zero(t, l.tracked.Load(), "a full bucket is forgotten")

	// IPv6 addresses of one /64 share a bucket.
	for i := 0; i < 6; i++ {
		l.fail(b, now)
	}
	blocked, _ = l.blocked(netip.MustParseAddr("2001:db8::ffff:1"), now)
	require.True(t, blocked, "same /64")
	blocked, _ = l.blocked(netip.MustParseAddr("2001:db8:0:1::1"), now)
	require.False(t, blocked, "another /64")

	// Bounded: past maxIPs, old buckets give way.
	for i := 0; i < 300; i++ {
		l.fail(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), now)
	}
	require.LessOrEqual(t, len(l.spent), 100)
	require.Nil(t, newFailLimiter(0, 100), "off")
	blocked, _ = (*failLimiter)(nil).blocked(a, now)
	require.False(t, blocked)
}
