package shell

import (
	"container/list"
	"crypto/sha256"
	"net/netip"
	"sync"
	"time"
)

// throttle slows down failed sign-ins per key (an account, a client
// address): the first free failures cost nothing, each further one makes
// the key wait before its next try, twice as long as the last, up to
// delayMax; a key's count is forgotten forget after its last failure, and
// at a sign-in that succeeds. Nobody is locked out outright: a person who
// waits the delay may try again.
//
// The table is bounded by eviction, never by refusing newcomers: at max
// keys, a new key takes the place of the key with the fewest failures
// among the evictScan least recently failed ones. A flood of random
// emails, each failing once, so only evicts its own kind, and neither
// locks out the accounts outside the table nor frees an account under
// attack of its count. Keys are kept as SHA-256 sums, whatever was typed.
type throttle struct {
	mu       sync.Mutex
	free     int
	delayMax time.Duration
	forget   time.Duration
	max      int
	m        map[[32]byte]*list.Element
	lru      *list.List // of *failCount, most recent first
}

type failCount struct {
	key  [32]byte
	n    int
	last time.Time
}

// Bounds of a throttle's delay and eviction.
const (
	// signInDelayFirst is the wait after the first failure beyond the free
	// ones; each further failure doubles it.
	signInDelayFirst = time.Second
	// evictScan bounds the entries one eviction looks at.
	evictScan = 64
)

func newThrottle(free int, delayMax, forget time.Duration, max int) *throttle {
	return &throttle{free: free, delayMax: delayMax, forget: forget, max: max, m: map[[32]byte]*list.Element{}, lru: list.New()}
}

// delay is the wait after n failures.
func (t *throttle) delay(n int) time.Duration {
	if n < t.free {
		return 0
	}
	d := signInDelayFirst
	for i := t.free; i < n && d < t.delayMax; i++ {
		d *= 2
	}
	return min(d, t.delayMax)
}

// wait answers how long key must still wait before its next try (0: it
// may try now).
func (t *throttle) wait(key string, now time.Time) time.Duration {
	k := sha256.Sum256([]byte(key))
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[k]
	if !ok {
		return 0
	}
	f := e.Value.(*failCount)
	if now.Sub(f.last) >= t.forget {
		t.lru.Remove(e)
		delete(t.m, k)
		return 0
	}
	if w := f.last.Add(t.delay(f.n)).Sub(now); w > 0 {
		return w
	}
	return 0
}

// fail counts a failure of key at now.
func (t *throttle) fail(key string, now time.Time) {
	k := sha256.Sum256([]byte(key))
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[k]; ok {
		f := e.Value.(*failCount)
		if now.Sub(f.last) >= t.forget {
			f.n = 0
		}
		f.n++
		f.last = now
		t.lru.MoveToFront(e)
		return
	}
	if len(t.m) >= t.max {
		t.evictLocked(now)
	}
	t.m[k] = t.lru.PushFront(&failCount{key: k, n: 1, last: now})
}

// evictLocked makes room for one key: a forgotten one if the scan meets
// one, else the one with the fewest failures (the least recent of them).
func (t *throttle) evictLocked(now time.Time) {
	var victim *list.Element
	i := 0
	for e := t.lru.Back(); e != nil && i < evictScan; e, i = e.Prev(), i+1 {
		f := e.Value.(*failCount)
		if now.Sub(f.last) >= t.forget {
			victim = e
			break
		}
		if victim == nil || f.n < victim.Value.(*failCount).n {
			victim = e
		}
	}
	if victim != nil {
		t.lru.Remove(victim)
		delete(t.m, victim.Value.(*failCount).key)
	}
}

// clear forgets key's failures (a successful sign-in of the account).
func (t *throttle) clear(key string) {
	k := sha256.Sum256([]byte(key))
	t.mu.Lock()
	if e, ok := t.m[k]; ok {
		t.lru.Remove(e)
		delete(t.m, k)
	}
	t.mu.Unlock()
}

// size is the number of keys held.
func (t *throttle) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// addrKey is the throttle key of a client address: an IPv4 address
// itself, an IPv6 address its /64 (one subscriber's whole prefix, which
// hands out more addresses than any table could count one by one).
func addrKey(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		p, err := a.Prefix(64)
		if err == nil {
			return "ip:" + p.String()
		}
	}
	return "ip:" + a.String()
}
