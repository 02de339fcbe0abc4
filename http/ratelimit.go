package http

import (
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/event"
)

// The budgets are token buckets refilled continuously (decisions §22), kept
// in the form of the generic cell rate algorithm: per key one time, the
// moment its bucket is full again (tat). A request costs interval (a
// minute over the per-minute rate); it is admitted while tat, moved on by
// that cost, stays within the bucket's depth of now. Nothing is counted in
// windows, so no burst at a window's edge can spend twice a minute's
// budget, and a spent budget comes back a request at a time rather than at
// the next minute.

// burstOf is the depth of a rate budget's bucket, in requests: half a
// minute's. A burst, at a window's edge or anywhere else, spends at most
// that, and the other half of the minute's budget is refilled while the
// burst is refused, a request every interval.
func burstOf(perMinute int) int { return (perMinute + 1) / 2 }

// gcraTable is a bounded table of token buckets, one int64 each: the unix
// nanos at which the bucket is full again. A bucket that is full is as if
// absent, so the table holds only the keys that spent something lately;
// past maxKeys it forgets full buckets, then others at random: it never
// refuses a newcomer for want of room (a forgotten bucket is a full one).
// Safe for concurrent use: one mutex held for a few map operations.
type gcraTable[K comparable] struct {
	mu      sync.Mutex
	tat     map[K]int64
	maxKeys int
	swept   int64 // unix nanos of the last sweep of full buckets
	// lastTake is the latest now any take was called with (written under
	// mu, read without it by spent): no bucket can be spent an interval
	// after it, so spent answers most requests without the lock.
	lastTake atomic.Int64
}

func newGCRATable[K comparable](maxKeys int) *gcraTable[K] {
	return &gcraTable[K]{tat: map[K]int64{}, maxKeys: max(1, maxKeys)}
}

// gcraResult is the outcome of one take.
type gcraResult struct {
	ok bool
	// remaining is the requests the bucket still holds after this one;
	// full the nanos until it is full again; retry (when !ok) the nanos
	// until one request is admitted.
	remaining   int
	full, retry int64
}

// take spends one request of k's bucket, depth burst requests, refilled one
// every interval nanos, at now.
func (g *gcraTable[K]) take(k K, burst int, interval, now int64) gcraResult {
	depth := int64(burst) * interval
	g.mu.Lock()
	if now > g.lastTake.Load() {
		g.lastTake.Store(now)
	}
	tat, present := g.tat[k]
	tat = max(tat, now)
	next := tat + interval
	if next-now > depth {
		g.mu.Unlock()
		return gcraResult{remaining: 0, full: tat - now, retry: next - now - depth}
	}
	if !present {
		g.makeRoom(now)
	}
	g.tat[k] = next
	g.mu.Unlock()
	return gcraResult{ok: true, remaining: int((depth - (next - now)) / interval), full: next - now}
}

// spent reports whether k's bucket cannot admit a request at now.
//
// A bucket is spent only within an interval of the last take that
// admitted a request to it: that take left tat at most depth past its
// time, and spent needs tat past now by more than depth less an interval.
// So an interval after the latest take of all (lastTake) none is spent,
// and every request of a service nobody fails to authenticate with is
// answered by one atomic load, not the table's lock, which both cores
// would take in turn.
func (g *gcraTable[K]) spent(k K, burst int, interval, now int64) bool {
	if now-g.lastTake.Load() >= interval {
		return false
	}
	g.mu.Lock()
	tat, ok := g.tat[k]
	g.mu.Unlock()
	return ok && max(tat, now)+interval-now > int64(burst)*interval
}

// refund gives back one request taken by take: it was refused by another
// budget and did not happen.
func (g *gcraTable[K]) refund(k K, interval, now int64) {
	g.mu.Lock()
	if tat, ok := g.tat[k]; ok {
		if tat -= interval; tat <= now {
			delete(g.tat, k)
		} else {
			g.tat[k] = tat
		}
	}
	g.mu.Unlock()
}

// makeRoom keeps the table within maxKeys before a key is added, and now
// and then forgets the full buckets (keys that never came back). Called
// with g.mu held.
func (g *gcraTable[K]) makeRoom(now int64) {
	n := len(g.tat)
	if n < g.maxKeys && (n < 1024 || now-g.swept < int64(time.Minute)) {
		return
	}
	g.swept = now
	for k, tat := range g.tat {
		if tat <= now {
			delete(g.tat, k)
		}
	}
	// Still full: forget a sixteenth at random (map order), so the sweep
	// is paid once per many newcomers.
	for k := range g.tat {
		if len(g.tat) < g.maxKeys-g.maxKeys/16 {
			break
		}
		delete(g.tat, k)
	}
}

// size is the number of buckets held (tests).
func (g *gcraTable[K]) size() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.tat)
}

// rateLimiter holds the request budgets: per secret key, per publishable
// key and per (publishable key, client IP, class).
type rateLimiter struct {
	table *gcraTable[limitKey]
}

// limitKey is comparable so that map lookups need no string building.
type limitKey struct {
	key   string     // the API key id
	ip    netip.Addr // zero for the per-key budget
	class uint8      // which per-IP budget: budgetOrders or budgetCatalog
}

// The per (key, client IP) budgets of the storefront, counted apart so that
// browsing does not spend the budget of placing an order.
const (
	budgetOrders uint8 = iota
	budgetCatalog
)

func newRateLimiter(maxKeys int) *rateLimiter {
	return &rateLimiter{table: newGCRATable[limitKey](maxKeys)}
}

// limitResult is the outcome of one take, in the units of the headers.
type limitResult struct {
	limit, remaining int
	reset, retry     int // seconds until the bucket is full; until a request is admitted
	ok               bool
}

// take counts one request against k's budget of perMinute, a bucket of
// burstOf(perMinute).
func (l *rateLimiter) take(k limitKey, perMinute int, now time.Time) limitResult {
	burst := burstOf(perMinute)
	r := l.table.take(k, burst, int64(time.Minute)/int64(perMinute), now.UnixNano())
	return limitResult{limit: burst, remaining: r.remaining, reset: ceilSeconds(r.full), retry: max(1, ceilSeconds(r.retry)), ok: r.ok}
}

// refund gives back one request counted by take: the request was refused
// by another budget and did not happen.
func (l *rateLimiter) refund(k limitKey, perMinute int, now time.Time) {
	l.table.refund(k, int64(time.Minute)/int64(perMinute), now.UnixNano())
}

// ceilSeconds is ns in whole seconds, rounded up.
func ceilSeconds(ns int64) int {
	return int((max(0, ns) + int64(time.Second) - 1) / int64(time.Second))
}

// setRateHeaders writes the RateLimit-* headers (and Retry-After on 429).
func setRateHeaders(rc *fasthttp.RequestCtx, r limitResult) {
	h := &rc.Response.Header
	var buf [20]byte
	h.SetBytesV("RateLimit-Limit", strconv.AppendInt(buf[:0], int64(r.limit), 10))
	h.SetBytesV("RateLimit-Remaining", strconv.AppendInt(buf[:0], int64(r.remaining), 10))
	h.SetBytesV("RateLimit-Reset", strconv.AppendInt(buf[:0], int64(r.reset), 10))
	if !r.ok {
		h.SetBytesV("Retry-After", strconv.AppendInt(buf[:0], int64(r.retry), 10))
	}
}

// limit applies the budgets of the route's surface to principal p. It
// returns false after writing a 429.
//
// On the storefront the per (key, client IP) budget is taken first, and a
// request it refuses never reaches the key's budget: one visitor cannot
// spend the budget every visitor of the key shares. A request the key's
// budget refuses is given back to the IP's budget.
func (s *Server) limit(c *Ctx) bool {
	var res limitResult
	limited := false
	switch c.route.Surface {
	case Door:
		// Per device; a batch of scans is one request, so it counts once.
		if n := s.cfg.DeviceLimitPerMinute; n > 0 {
			res, limited = s.limiter.take(limitKey{key: c.principal.KeyID}, n, c.now), true
		}
	case Developer:
		if n := s.cfg.RateLimitPerMinute; n > 0 {
			res, limited = s.limiter.take(limitKey{key: c.principal.KeyID}, n, c.now), true
		}
	case Storefront:
		ipLimit, ipk := s.cfg.StorefrontCatalogIPLimitPerMinute, limitKey{key: c.principal.KeyID, ip: ipKey(c.ip), class: budgetCatalog}
		if c.route.IPLimited {
			ipLimit, ipk.class = s.cfg.StorefrontIPLimitPerMinute, budgetOrders
		}
		var ipRes limitResult
		if ipLimit > 0 {
			ipRes = s.limiter.take(ipk, ipLimit, c.now)
			res, limited = ipRes, true
		}
		if n := s.cfg.StorefrontKeyLimitPerMinute; n > 0 && (!limited || ipRes.ok) {
			keyRes := s.limiter.take(limitKey{key: c.principal.KeyID}, n, c.now)
			switch {
			case !keyRes.ok:
				if limited {
					s.limiter.refund(ipk, ipLimit, c.now)
				}
				res = keyRes
			case !limited || keyRes.remaining < ipRes.remaining:
				// Report the tighter of the two budgets.
				res = keyRes
			}
			limited = true
		}
	}
	if !limited {
		return true
	}
	setRateHeaders(c.rc, res)
	if !res.ok {
		s.WriteError(c.rc, NewError(429, "rate limit exceeded, retry after "+strconv.Itoa(res.retry)+" seconds").WithReason(event.ReasonRateLimited))
		return false
	}
	return true
}

// failLimiter throttles failed authentications per client IP (IPv6 per
// /64): a token bucket of perMinute failures refilled over a minute. Only
// failures touch it: a valid credential is served whatever its IP spent.
// Its table is bounded by maxIPs, by forgetting (see gcraTable), never by
// refusing an address it has no room for.
type failLimiter struct {
	perMinute int
	interval  int64 // nanos per token
	table     *gcraTable[netip.Addr]
}

// newFailLimiter returns nil (every method then lets all through) when
// perMinute is 0.
func newFailLimiter(perMinute, maxIPs int) *failLimiter {
	if perMinute <= 0 {
		return nil
	}
	return &failLimiter{perMinute: perMinute, interval: int64(time.Minute) / int64(perMinute),
		table: newGCRATable[netip.Addr](maxIPs)}
}

// take spends one failure of ip's budget. When none is left it answers
// false and the seconds until one is.
func (l *failLimiter) take(ip netip.Addr, now time.Time) (bool, int) {
	if l == nil {
		return true, 0
	}
	r := l.table.take(ipKey(ip), l.perMinute, l.interval, now.UnixNano())
	if r.ok {
		return true, 0
	}
	return false, max(1, ceilSeconds(r.retry))
}

// spent reports whether ip has no failure left in its budget.
func (l *failLimiter) spent(ip netip.Addr, now time.Time) bool {
	return l != nil && l.table.spent(ipKey(ip), l.perMinute, l.interval, now.UnixNano())
}

// TakeIPBudget counts one creation by rc's client against key's per
// (key, client IP) budget of storefront creations
// (Config.StorefrontIPLimitPerMinute; 0: unlimited), for a handler outside
// the route table that creates what a storefront route would (the
// console's checkout link creates a checkout session). It sets the
// RateLimit headers; when the budget is spent it answers false and the
// seconds until the next creation is allowed.
func (s *Server) TakeIPBudget(rc *fasthttp.RequestCtx, key string) (ok bool, retryAfter int) {
	n := s.cfg.StorefrontIPLimitPerMinute
	if n <= 0 {
		return true, 0
	}
	res := s.limiter.take(limitKey{key: key, ip: ipKey(ClientIP(rc, s.cfg.TrustedProxies)), class: budgetOrders}, n, s.cfg.Now())
	setRateHeaders(rc, res)
	return res.ok, res.retry
}
