package apptest

import (
	"strings"
	"sync"
	"time"

	"ticketd/app"
	thttp "ticketd/http"
	"ticketd/idempotency"
)

// LoseAnswers is a crash hook between a keyed write and its answer: the
// pipeline's store of the answer of every request whose Idempotency-Key
// starts with prefix is dropped and its claim released, so only what the
// write itself committed with its change survives, as after a kill -9
// between the write and the answer (whose claim ends with the process on
// a single node, and goes stale in a cluster: a release is that state
// reached at once).
// The client still gets its answer, which a test keeps to compare the
// retry's with. lost, when set, counts the answers dropped.
func LoseAnswers(prefix string, lost *Lost) Option {
	return func(c *app.Config) {
		t := app.Tuning{}
		if c.Tune != nil {
			t = *c.Tune
		}
		prev := t.HTTP
		t.HTTP = func(hc *thttp.Config) {
			if prev != nil {
				prev(hc)
			}
			if rs, ok := hc.Idempotency.(idempotency.RecordingStore); ok {
				hc.Idempotency = &losingStore{RecordingStore: rs, prefix: prefix, lost: lost}
			}
		}
		c.Tune = &t
	}
}

// Lost counts the answers LoseAnswers dropped, by key.
type Lost struct {
	mu   sync.Mutex
	keys []string
}

// Keys returns the keys whose answers were dropped, in order.
func (l *Lost) Keys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.keys...)
}

func (l *Lost) add(key string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.keys = append(l.keys, key)
	l.mu.Unlock()
}

// losingStore is a RecordingStore whose Finish of a key starting with
// prefix releases the claim without storing the answer.
type losingStore struct {
	idempotency.RecordingStore
	prefix string
	lost   *Lost
}

func (s *losingStore) Finish(scope, key string, resp *idempotency.StoredResponse, now time.Time) {
	if resp != nil && strings.HasPrefix(key, s.prefix) {
		s.lost.add(key)
		resp = nil
	}
	s.RecordingStore.Finish(scope, key, resp, now)
}

// Origin keeps the inner store's origins (cluster mode: a keyed
// creation's id is made from its key's first claim).
func (s *losingStore) Origin(scope, key string) time.Time {
	if os, ok := s.RecordingStore.(idempotency.OriginStore); ok {
		return os.Origin(scope, key)
	}
	return time.Time{}
}
