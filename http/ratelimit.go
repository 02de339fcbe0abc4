package http

import (
	"math"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/event"
)

// rateLimiter counts requests in fixed one-minute windows aligned to the
// clock's minutes. Only the current window is kept, so memory is bounded by
// the keys seen in one minute, and by maxKeys beyond that.
type rateLimiter struct {
	mu      sync.Mutex
	window  int64 // unix minute of counts
	counts  map[limitKey]int32
	maxKeys int
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
	return &rateLimiter{counts: map[limitKey]int32{}, maxKeys: maxKeys}
}

// limitResult is the outcome of one take.
type limitResult struct {
	limit, remaining, reset int // reset: seconds until the window ends
	ok                      bool
}

// take counts one request against k's budget of limit per minute.
func (l *rateLimiter) take(k limitKey, limit int, now time.Time) limitResult {
	sec := now.Unix()
	w := sec / 60
	res := limitResult{limit: limit, reset: int(60 - sec%60), ok: true}
	l.mu.Lock()
	if w > l.window {
		l.window = w
		if len(l.counts) > 4096 {
			l.counts = map[limitKey]int32{} // give a burst's memory back
		} else {
			clear(l.counts)
		}
	}
	n, present := l.counts[k]
	switch {
	case !present && len(l.counts) >= l.maxKeys:
		// Full: fail open rather than refuse clients we cannot track.
		res.remaining = limit
	case int(n) >= limit:
		res.ok = false
	default:
		n++
		l.counts[k] = n
		res.remaining = limit - int(n)
	}
	l.mu.Unlock()
	return res
}

// refund gives back one request counted by take in the same window: the
// request was refused by another budget and did not happen.
func (l *rateLimiter) refund(k limitKey, now time.Time) {
	l.mu.Lock()
	if l.window == now.Unix()/60 {
		if n := l.counts[k]; n > 1 {
			l.counts[k] = n - 1
		} else if n == 1 {
			delete(l.counts, k)
		}
	}
	l.mu.Unlock()
}

// setRateHeaders writes the RateLimit-* headers (and Retry-After on 429).
func setRateHeaders(rc *fasthttp.RequestCtx, r limitResult) {
	h := &rc.Response.Header
	var buf [20]byte
	h.SetBytesV("RateLimit-Limit", strconv.AppendInt(buf[:0], int64(r.limit), 10))
	h.SetBytesV("RateLimit-Remaining", strconv.AppendInt(buf[:0], int64(r.remaining), 10))
	h.SetBytesV("RateLimit-Reset", strconv.AppendInt(buf[:0], int64(r.reset), 10))
	if !r.ok {
		h.SetBytesV("Retry-After", strconv.AppendInt(buf[:0], int64(r.reset), 10))
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
					s.limiter.refund(ipk, c.now)
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
		s.writeError(c.rc, httpError(429, "rate limit exceeded, retry after "+strconv.Itoa(res.reset)+" seconds").WithReason(event.ReasonRateLimited))
		return false
	}
	return true
}

// failLimiter throttles failed authentications per client IP (IPv6 per
// /64) with a token bucket of perMinute tokens refilled over a minute. It
// keeps what each IP has spent, so a bucket back to full is forgotten;
// memory is bounded by maxIPs. Safe for concurrent use; successes never
// touch it.
type failLimiter struct {
	perMinute int
	rate      float64 // tokens per nanosecond
	maxIPs    int

	// tracked mirrors len(spent), so that blocked, which every keyed
	// request calls, takes no lock while no address has failed.
	tracked atomic.Int64

	mu    sync.RWMutex
	spent map[netip.Addr]failBucket
	swept int64 // unix nanos of the last sweep
}

type failBucket struct {
	spent float64 // tokens spent as of at
	at    int64   // unix nanos
}

// newFailLimiter returns nil (every method then lets all through) when
// perMinute is 0.
func newFailLimiter(perMinute, maxIPs int) *failLimiter {
	if perMinute <= 0 {
		return nil
	}
	return &failLimiter{perMinute: perMinute, rate: float64(perMinute) / float64(time.Minute), maxIPs: maxIPs,
		spent: map[netip.Addr]failBucket{}}
}

// spentAt is b's spent tokens at now, after the refill.
func (l *failLimiter) spentAt(b failBucket, now int64) float64 {
	return max(0, b.spent-float64(now-b.at)*l.rate)
}

// blocked reports whether ip has no token left, and in how many seconds
// it will have one.
func (l *failLimiter) blocked(ip netip.Addr, now time.Time) (bool, int) {
	if l == nil || l.tracked.Load() == 0 {
		return false, 0
	}
	ip = ipKey(ip)
	t := now.UnixNano()
	l.mu.RLock()
	b, ok := l.spent[ip]
	l.mu.RUnlock()
	if !ok {
		return false, 0
	}
	if l.spentAt(b, t) == 0 {
		// Back to full: forget it, so that the lock-free path returns.
		l.mu.Lock()
		if b, ok := l.spent[ip]; ok && l.spentAt(b, t) == 0 {
			delete(l.spent, ip)
			l.tracked.Store(int64(len(l.spent)))
		}
		l.mu.Unlock()
		return false, 0
	}
	over := l.spentAt(b, t) - float64(l.perMinute-1)
	if over <= 0 {
		return false, 0
	}
	return true, max(1, int(math.Ceil(over/l.rate/float64(time.Second))))
}

// fail spends one of ip's tokens.
func (l *failLimiter) fail(ip netip.Addr, now time.Time) {
	if l == nil {
		return
	}
	ip = ipKey(ip)
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.spent[ip]
	if !ok && len(l.spent) >= 1024 && t-l.swept > int64(time.Minute) {
		// Now and then forget the addresses that never came back.
		l.swept = t
		for k, v := range l.spent {
			if l.spentAt(v, t) == 0 {
				delete(l.spent, k)
			}
		}
	}
	if !ok && len(l.spent) >= l.maxIPs {
		// Full: forget the buckets back to full, and else a sixteenth at
		// random (so the sweep is paid once per many new IPs), rather
		// than grow without bound.
		for k, v := range l.spent {
			if l.spentAt(v, t) == 0 {
				delete(l.spent, k)
			}
		}
		for k := range l.spent {
			if len(l.spent) < l.maxIPs-l.maxIPs/16 {
				break
			}
			delete(l.spent, k)
		}
	}
	l.spent[ip] = failBucket{spent: min(l.spentAt(b, t)+1, float64(l.perMinute)), at: t}
	l.tracked.Store(int64(len(l.spent)))
}

// TakeIPBudget counts one creation by rc's client against key's per
// (key, client IP) budget of storefront creations
// (Config.StorefrontIPLimitPerMinute; 0: unlimited), for a handler outside
// the route table that creates what a storefront route would (the
// console's checkout link creates a checkout session). It sets the
// RateLimit headers; when the budget is spent it answers false and the
// seconds until it refills.
func (s *Server) TakeIPBudget(rc *fasthttp.RequestCtx, key string) (ok bool, retryAfter int) {
	n := s.cfg.StorefrontIPLimitPerMinute
	if n <= 0 {
		return true, 0
	}
	res := s.limiter.take(limitKey{key: key, ip: ipKey(clientIP(rc, s.cfg.TrustedProxies)), class: budgetOrders}, n, s.cfg.Now())
	setRateHeaders(rc, res)
	return res.ok, res.reset
}
