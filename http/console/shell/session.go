package shell

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
	Operator bool   // signed in with the admin token
	MemberID string // else the member
	csrf     string // the synchronizer token of every form of the session
	created  time.Time
	seen     time.Time
	// ip is the client address (IPv6: its /64) that signed in, for the
	// per-address bound of the in-memory table.
	ip string
}

// person names whose session s is: the operator, or a member.
func (s *session) person() string {
	if s.Operator {
		return "operator"
	}
	return "m:" + s.MemberID
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
// Three bounds hold it, so that nobody's sign-ins push out somebody
// else's live session: a person keeps at most perPerson sessions and an
// address perIP (their own least recently used goes first); at the whole
// table's bound sessions past their timeouts go first, then the least
// recently used one of whoever holds the most.
type sessions struct {
	mu        sync.Mutex
	byID      map[[32]byte]*session
	persons   map[string]int // sessions per person()
	ips       map[string]int // sessions per ip
	idle      time.Duration
	abs       time.Duration
	max       int
	perPerson int
	perIP     int
}

func newSessions(idle, abs time.Duration, max, perPerson, perIP int) *sessions {
	return &sessions{byID: map[[32]byte]*session{}, persons: map[string]int{}, ips: map[string]int{},
		idle: idle, abs: abs, max: max, perPerson: perPerson, perIP: perIP}
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("console: no entropy: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// start opens a session and returns its cookie value, making room as the
// type's comment says.
func (ss *sessions) start(s *session, now time.Time) (string, error) {
	id := randomToken()
	s.csrf = randomToken()
	s.created, s.seen = now, now
	ss.mu.Lock()
	defer ss.mu.Unlock()
	who := s.person()
	if ss.persons[who] >= ss.perPerson {
		ss.evictLocked(func(v *session) bool { return v.person() == who })
	}
	if s.ip != "" && ss.ips[s.ip] >= ss.perIP {
		ss.evictLocked(func(v *session) bool { return v.ip == s.ip })
	}
	if len(ss.byID) >= ss.max {
		for k, v := range ss.byID {
			if ss.lapsed(v, now) {
				ss.deleteLocked(k)
			}
		}
	}
	if len(ss.byID) >= ss.max {
		most, n := "", 0
		for p, c := range ss.persons {
			if c > n || (c == n && p < most) {
				most, n = p, c
			}
		}
		ss.evictLocked(func(v *session) bool { return v.person() == most })
	}
	ss.byID[sha256.Sum256([]byte(id))] = s
	ss.persons[who]++
	if s.ip != "" {
		ss.ips[s.ip]++
	}
	return id, nil
}

func (ss *sessions) lapsed(s *session, now time.Time) bool {
	return now.Sub(s.seen) > ss.idle || now.Sub(s.created) > ss.abs
}

// evictLocked ends the least recently used session match selects.
func (ss *sessions) evictLocked(match func(*session) bool) {
	var oldest [32]byte
	var at time.Time
	found := false
	for k, v := range ss.byID {
		if match(v) && (!found || v.seen.Before(at)) {
			oldest, at, found = k, v.seen, true
		}
	}
	if found {
		ss.deleteLocked(oldest)
	}
}

func (ss *sessions) deleteLocked(k [32]byte) {
	s, ok := ss.byID[k]
	if !ok {
		return
	}
	delete(ss.byID, k)
	if ss.persons[s.person()]--; ss.persons[s.person()] <= 0 {
		delete(ss.persons, s.person())
	}
	if s.ip != "" {
		if ss.ips[s.ip]--; ss.ips[s.ip] <= 0 {
			delete(ss.ips, s.ip)
		}
	}
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
	if ss.lapsed(s, now) {
		ss.deleteLocked(k)
		return session{}, false
	}
	s.seen = now
	return *s, true
}

func (ss *sessions) end(id string) error {
	ss.mu.Lock()
	ss.deleteLocked(sha256.Sum256([]byte(id)))
	ss.mu.Unlock()
	return nil
}

// endAll ends every session of the same person as s (sign-out
// everywhere): the operator's, or the member's.
func (ss *sessions) endAll(s session) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, v := range ss.byID {
		if v.Operator == s.Operator && v.MemberID == s.MemberID {
			ss.deleteLocked(k)
		}
	}
	return nil
}

// sameToken compares a submitted token with the expected one in constant
// time.
func sameToken(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
