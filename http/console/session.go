package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// session is one signed-in browser. On a single node sessions live in
// memory only: a restart signs everyone out (documented; the console is
// not on the hot path and a sign-in costs one form). In cluster mode they
// are shared (ShareSessions).
type session struct {
	operator bool   // signed in with the admin token
	memberID string // else the member
	csrf     string // the synchronizer token of every form of the session
	created  time.Time
	seen     time.Time
}

// sessionStore keeps the signed-in browsers: this node's memory on a
// single node (sessions), the cluster's shared index in cluster mode
// (sharedSessions). get answers a copy of the live session of a cookie
// value, touching it; start, end and endAll fail only when the change
// could not be made durable where the store keeps it.
type sessionStore interface {
	start(s *session, now time.Time) (string, error)
	get(id string, now time.Time) (session, bool)
	end(id string) error
	endAll(s session) error
}

// sessions is the bounded in-memory session table, keyed by the SHA-256 of
// the cookie value (a leaked dump of the table does not sign anyone in).
type sessions struct {
	mu   sync.Mutex
	byID map[[32]byte]*session
	idle time.Duration
	abs  time.Duration
	max  int
}

func newSessions(idle, abs time.Duration, max int) *sessions {
	return &sessions{byID: map[[32]byte]*session{}, idle: idle, abs: abs, max: max}
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("console: no entropy: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// start opens a session and returns its cookie value. At the bound the
// least recently used session gives way.
func (ss *sessions) start(s *session, now time.Time) (string, error) {
	id := randomToken()
	s.csrf = randomToken()
	s.created, s.seen = now, now
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.byID) >= ss.max {
		var oldest [32]byte
		var at time.Time
		for k, v := range ss.byID {
			if at.IsZero() || v.seen.Before(at) {
				oldest, at = k, v.seen
			}
		}
		delete(ss.byID, oldest)
	}
	ss.byID[sha256.Sum256([]byte(id))] = s
	return id, nil
}

// get returns a copy of the live session of cookie value id, touching it;
// a session past its idle or absolute timeout is ended.
func (ss *sessions) get(id string, now time.Time) (session, bool) {
	if id == "" {
		return session{}, false
	}
	k := sha256.Sum256([]byte(id))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.byID[k]
	if !ok {
		return session{}, false
	}
	if now.Sub(s.seen) > ss.idle || now.Sub(s.created) > ss.abs {
		delete(ss.byID, k)
		return session{}, false
	}
	s.seen = now
	return *s, true
}

func (ss *sessions) end(id string) error {
	ss.mu.Lock()
	delete(ss.byID, sha256.Sum256([]byte(id)))
	ss.mu.Unlock()
	return nil
}

// endAll ends every session of the same person as s (sign-out
// everywhere): the operator's, or the member's.
func (ss *sessions) endAll(s session) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, v := range ss.byID {
		if v.operator == s.operator && v.memberID == s.memberID {
			delete(ss.byID, k)
		}
	}
	return nil
}

// sameToken compares a submitted token with the expected one in constant
// time.
func sameToken(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// throttle counts failed sign-ins per key (an account, a client IP) in a
// fixed window; at limit failures the key is refused until its window
// ends. The table is bounded: when full, lapsed windows are dropped, and
// if none lapsed new keys are refused (a flood of addresses cannot evict
// the count of an account under attack).
type throttle struct {
	mu     sync.Mutex
	limit  int
	window time.Duration
	max    int
	m      map[string]*failures
}

type failures struct {
	n     int
	since time.Time
}

func newThrottle(limit int, window time.Duration, max int) *throttle {
	return &throttle{limit: limit, window: window, max: max, m: map[string]*failures{}}
}

// blocked reports whether key may not try now.
func (t *throttle) blocked(key string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.m[key]
	if !ok {
		return len(t.m) >= t.max && !t.sweepLocked(now)
	}
	if now.Sub(f.since) >= t.window {
		delete(t.m, key)
		return false
	}
	return f.n >= t.limit
}

// fail counts a failure of key.
func (t *throttle) fail(key string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.m[key]
	if !ok || now.Sub(f.since) >= t.window {
		if !ok && len(t.m) >= t.max && !t.sweepLocked(now) {
			return
		}
		f = &failures{since: now}
		t.m[key] = f
	}
	f.n++
}

// clear forgets key's failures (a successful sign-in of the account).
func (t *throttle) clear(key string) {
	t.mu.Lock()
	delete(t.m, key)
	t.mu.Unlock()
}

// sweepLocked drops lapsed windows and reports whether there is room.
func (t *throttle) sweepLocked(now time.Time) bool {
	for k, f := range t.m {
		if now.Sub(f.since) >= t.window {
			delete(t.m, k)
		}
	}
	return len(t.m) < t.max
}
