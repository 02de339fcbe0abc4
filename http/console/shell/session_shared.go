package shell

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Shared session entries (cluster mode), put through the cluster's shared
// index and copied into every node's store:
//
//	csess/<hex SHA-256 of the cookie>  version byte 1, flags (1: operator),
//	                                   8-byte big-endian created unix ns,
//	                                   1-byte csrf length, csrf, member id;
//	                                   empty: signed out
//	csessseen/<hex SHA-256>            8-byte last-seen unix ns (touches)
//	csessend/admin, csessend/m/<id>    8-byte unix ns of a sign-out
//	                                   everywhere: sessions of that person
//	                                   created until then are ended
//
// Touches are separate entries, so one put late by a node that has not
// seen the sign-out yet cannot bring an ended session back.
//
// The prefixes are persistence.PrefixSession, PrefixSessionSeen and
// PrefixSessionEnd of the key schema (persistence.Schema), spelled out
// here because a front door imports no store package.
const (
	sessPrefix     = "csess/"
	sessSeenPrefix = "csessseen/"
	sessEndPrefix  = "csessend/"
	// sessTimeout bounds one shared write of a session.
	sessTimeout = 10 * time.Second
	// sessReadTimeout bounds the read of a session this node has no copy
	// of: a request with an unknown cookie waits for it, so it is short
	// (failing it only sends the browser to the sign-in page).
	sessReadTimeout = 2 * time.Second
	// maxTouched bounds the sessions whose last touch a node remembers.
	maxTouched = 10_000
	// maxUnknown bounds the cookies this node remembers the cluster does
	// not know (see sharedSessions.unknown).
	maxUnknown = 10_000
	// cookieLen is the length of a session cookie's value (randomToken:
	// 32 bytes, base64url without padding).
	cookieLen = 43
)

// SharedPut stores key = value on a majority of the nodes for ttl and
// returns once this node's store has it; SharedGet reads key as the
// cluster has it (for a node that has not copied it yet).
type (
	SharedPut func(ctx context.Context, key, value []byte, ttl time.Duration) error
	SharedGet func(ctx context.Context, key []byte) ([]byte, bool, error)
)

// ShareSessions makes the console's sessions the cluster's: a session
// started through one node is live on every node with the same cookie,
// and a sign-out (or sign-out everywhere) ends it on every node (at once
// where it was made, elsewhere as soon as that node copies the entry,
// within moments). A session's last use is shared at most every
// touchEvery (a 60th of SessionIdle, 1 s to 1 min), so the idle timeout
// holds across nodes to within that. The count bound (Config.Sessions)
// does not apply: sessions end by their timeouts. Call it before serving.
func (c *Console) ShareSessions(store LocalStore, put SharedPut, get SharedGet) {
	c.sess = &sharedSessions{store: store, put: put, read: get, idle: c.Config.SessionIdle, abs: c.Config.SessionMax,
		now: c.Config.Now, log: c.log, touched: map[string]time.Time{}}
}

// SweepSessions drops this node's copies of ended and expired session
// entries and answers how many (cluster mode; 0 on a single node, whose
// sessions are in memory).
func (c *Console) SweepSessions(now time.Time) (int, error) {
	if ss, ok := c.sess.(*sharedSessions); ok {
		return ss.sweep(now)
	}
	return 0, nil
}

// LocalStore is this node's store, which holds its copies of the
// cluster's session entries (the methods of persistence.Store the console
// uses, so that it imports no store, and a delete of keys in one batch).
type LocalStore interface {
	Get(key []byte) ([]byte, bool, error)
	Scan(prefix []byte, fn func(key, value []byte) error) error
	DeleteKeys(keys [][]byte) error
}

// sharedSessions is the sessionStore of cluster mode.
type sharedSessions struct {
	store     LocalStore
	put       SharedPut
	read      SharedGet
	idle, abs time.Duration
	now       func() time.Time
	log       *slog.Logger

	mu      sync.Mutex
	touched map[string]time.Time // session hash -> the last touch this node put
	// unknown are the session hashes the cluster answered it does not
	// know: a cookie's value is made, and its session put on a majority,
	// before any browser has it, so the cluster's "none" for one is for
	// good, and a request repeating a made-up cookie costs no read.
	unknown map[string]struct{}
}

// wellFormed reports whether id can be a session cookie this console
// made: anything else is no session, without a read of the cluster.
func wellFormed(id string) bool {
	if len(id) != cookieLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func sessHash(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])
}

func person(s session) string {
	if s.Operator {
		return "admin"
	}
	return "m/" + s.MemberID
}

func (ss *sharedSessions) touchEvery() time.Duration {
	return min(max(ss.idle/60, time.Second), time.Minute)
}

func encodeSession(s *session) []byte {
	out := []byte{1, 0}
	if s.Operator {
		out[1] = 1
	}
	out = binary.BigEndian.AppendUint64(out, uint64(s.created.UnixNano()))
	out = append(out, byte(len(s.csrf)))
	out = append(out, s.csrf...)
	return append(out, s.MemberID...)
}

var errBadSession = errors.New("console: bad shared session")

func decodeSession(v []byte) (session, error) {
	if len(v) < 11 || v[0] != 1 || len(v) < 11+int(v[10]) {
		return session{}, errBadSession
	}
	n := int(v[10])
	return session{Operator: v[1] == 1, created: unixNano(v[2:10]), csrf: string(v[11 : 11+n]),
		MemberID: string(v[11+n:])}, nil
}

func unixNano(b []byte) time.Time { return time.Unix(0, int64(binary.BigEndian.Uint64(b))) }

func stamp(t time.Time) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())) }

// localTime is the 8-byte time of key in this node's copy.
func (ss *sharedSessions) localTime(key string) (time.Time, bool) {
	v, ok, err := ss.store.Get([]byte(key))
	if err != nil || !ok || len(v) != 8 {
		return time.Time{}, false
	}
	return unixNano(v), true
}

func (ss *sharedSessions) start(s *session, now time.Time) (string, error) {
	id := randomToken()
	s.csrf = randomToken()
	s.created, s.seen = now, now
	ctx, cancel := context.WithTimeout(context.Background(), sessTimeout)
	defer cancel()
	if err := ss.put(ctx, []byte(sessPrefix+sessHash(id)), encodeSession(s), ss.abs); err != nil {
		return "", fmt.Errorf("console: start session: %w", err)
	}
	return id, nil
}

func (ss *sharedSessions) get(id string, now time.Time) (session, bool) {
	if !wellFormed(id) {
		return session{}, false
	}
	h := sessHash(id)
	v, ok, err := ss.store.Get([]byte(sessPrefix + h))
	if err == nil && !ok {
		ss.mu.Lock()
		_, none := ss.unknown[h]
		ss.mu.Unlock()
		if none {
			return session{}, false
		}
		// Started through another node moments ago, not copied here yet.
		ctx, cancel := context.WithTimeout(context.Background(), sessReadTimeout)
		v, ok, err = ss.read(ctx, []byte(sessPrefix+h))
		cancel()
		if err == nil && !ok {
			ss.mu.Lock()
			if ss.unknown == nil || len(ss.unknown) >= maxUnknown {
				ss.unknown = map[string]struct{}{}
			}
			ss.unknown[h] = struct{}{}
			ss.mu.Unlock()
		}
	}
	if err != nil {
		ss.log.Warn("console: shared session not read", "err", err)
		return session{}, false
	}
	if !ok || len(v) == 0 {
		return session{}, false
	}
	s, err := decodeSession(v)
	if err != nil || now.Sub(s.created) > ss.abs {
		return session{}, false
	}
	seen := s.created
	if t, ok := ss.localTime(sessSeenPrefix + h); ok && t.After(seen) {
		seen = t
	}
	ss.mu.Lock()
	if t, ok := ss.touched[h]; ok && t.After(seen) {
		seen = t
	}
	ss.mu.Unlock()
	if now.Sub(seen) > ss.idle {
		return session{}, false
	}
	if t, ok := ss.localTime(sessEndPrefix + person(s)); ok && !s.created.After(t) {
		return session{}, false
	}
	if now.Sub(seen) >= ss.touchEvery() {
		ss.touch(h, now)
	}
	s.seen = now
	return s, true
}

// touch shares a session's use at now, in the background: a request
// does not wait for it, and a lost touch costs at most touchEvery of idle
// time.
func (ss *sharedSessions) touch(h string, now time.Time) {
	ss.mu.Lock()
	if len(ss.touched) >= maxTouched {
		clear(ss.touched)
	}
	ss.touched[h] = now
	ss.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), sessTimeout)
		defer cancel()
		if err := ss.put(ctx, []byte(sessSeenPrefix+h), stamp(now), ss.idle+ss.touchEvery()+time.Second); err != nil {
			ss.log.Warn("console: session use not shared", "err", err)
		}
	}()
}

func (ss *sharedSessions) end(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), sessTimeout)
	defer cancel()
	if err := ss.put(ctx, []byte(sessPrefix+sessHash(id)), nil, ss.abs); err != nil {
		return fmt.Errorf("console: end session: %w", err)
	}
	return nil
}

func (ss *sharedSessions) endAll(s session) error {
	ctx, cancel := context.WithTimeout(context.Background(), sessTimeout)
	defer cancel()
	// A session started in the same nanosecond on another node survives;
	// a clock behind by more than that ends one started just after.
	if err := ss.put(ctx, []byte(sessEndPrefix+person(s)), stamp(ss.now()), ss.abs); err != nil {
		return fmt.Errorf("console: end sessions: %w", err)
	}
	return nil
}

// sweep deletes this node's copies of the entries that no longer matter:
// signed-out and expired sessions, touches older than the idle timeout,
// sign-outs everywhere older than the absolute one. A node that meets a
// swept session again reads it from the cluster, and finds it ended too.
func (ss *sharedSessions) sweep(now time.Time) (int, error) {
	var old [][]byte
	collect := func(prefix string, dead func(v []byte) bool) error {
		return ss.store.Scan([]byte(prefix), func(key, value []byte) error {
			if dead(value) {
				old = append(old, bytes.Clone(key))
			}
			return nil
		})
	}
	stale := func(limit time.Duration) func(v []byte) bool {
		return func(v []byte) bool { return len(v) != 8 || now.Sub(unixNano(v)) > limit }
	}
	err := errors.Join(
		collect(sessPrefix, func(v []byte) bool {
			s, err := decodeSession(v)
			return err != nil || now.Sub(s.created) > ss.abs
		}),
		collect(sessSeenPrefix, stale(ss.idle)),
		collect(sessEndPrefix, stale(ss.abs)))
	if err != nil || len(old) == 0 {
		return 0, err
	}
	if err := ss.store.DeleteKeys(old); err != nil {
		return 0, fmt.Errorf("console: sweep sessions: %w", err)
	}
	return len(old), nil
}
