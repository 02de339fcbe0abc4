package http

import (
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
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
	key string     // the API key id
	ip  netip.Addr // zero for the per-key budget
}

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
func (s *Server) limit(c *Ctx) bool {
	var res limitResult
	limited := false
	switch c.route.Surface {
	case Developer:
		if n := s.cfg.RateLimitPerMinute; n > 0 {
			res, limited = s.limiter.take(limitKey{key: c.principal.KeyID}, n, c.now), true
		}
	case Storefront:
		if n := s.cfg.StorefrontKeyLimitPerMinute; n > 0 {
			res, limited = s.limiter.take(limitKey{key: c.principal.KeyID}, n, c.now), true
		}
		if n := s.cfg.StorefrontIPLimitPerMinute; n > 0 && c.route.IPLimited && (!limited || res.ok) {
			ipRes := s.limiter.take(limitKey{key: c.principal.KeyID, ip: c.ip}, n, c.now)
			// Report the tighter of the two budgets.
			if !limited || !ipRes.ok || ipRes.remaining < res.remaining {
				res = ipRes
			}
			limited = true
		}
	}
	if !limited {
		return true
	}
	setRateHeaders(c.rc, res)
	if !res.ok {
		s.writeError(c.rc, httpError(429, "rate limit exceeded, retry after "+strconv.Itoa(res.reset)+" seconds"))
		return false
	}
	return true
}
