package http

import (
	"bytes"
	"sync"
	"time"

	"ticketd/idempotency"
	"ticketd/persistence"
)

// DurableIdempotency is the IdempotencyStore of the running service: a
// completed answer is kept in the Pebble store, so a client that retries
// after a restart still gets the first answer instead of a second order.
// Claims of requests in flight are kept in memory only: a restart ends every
// request in flight, and its client sees a failed request it may retry.
//
// Key: "idem/" + scope (API key id; on the storefront the key id, "@" and
// the client address) + "/" + hex SHA-256 of the Idempotency-Key. Value:
// version byte 1, 32-byte request fingerprint, 8-byte big-endian expiry
// (unix seconds), 2-byte status, 2-byte length and the content type, then
// the body.
//
// Exactly once (decisions §20): it is a RecordingStore. A request that
// writes commits the key's record, its answer rendered from the write's
// result, in the batch of the write itself (the event's or the
// directory's actor puts Record's entry beside its changes: see
// actors.Recorder), so after a crash either both are on disk or neither
// is, and a retry replays the answer or runs a request that never
// happened. Finish then stores nothing more when the request's answer is
// the committed one; it stores the answer of a request that wrote nothing
// (a rejection, a repeat), and of a handler that made more of the result
// than the result itself, after it (overwriting the committed record; a
// crash between the two replays the committed one, which no client has
// seen). A request whose write may still commit while it answers 5xx (an
// ask that timed out) keeps its claim for a while (Hold), so a retry
// answers 409 rather than running the write a second time.
type DurableIdempotency struct {
	store *persistence.Store
	ttl   time.Duration
	log   func(msg string, args ...any)

	mu       sync.Mutex
	inflight map[string]idemFlight // claimed key -> its claim
}

// idemFlight is a claim: the request's fingerprint, and for a held claim
// (Hold) when it ends (zero: the request is running).
type idemFlight struct {
	fp      [32]byte
	until   time.Time
	retried bool // claimed after a hold ended (Retried)
}

const idemPrefix = persistence.PrefixIdempotency

// NewDurableIdempotency keeps answers in store for ttl.
func NewDurableIdempotency(store *persistence.Store, ttl time.Duration, log func(string, ...any)) *DurableIdempotency {
	if log == nil {
		log = func(string, ...any) {}
	}
	return &DurableIdempotency{store: store, ttl: ttl, log: log, inflight: map[string]idemFlight{}}
}

func durableKey(scope, key string) string { return idempotency.DurableKey(scope, key) }

// Begin implements IdempotencyStore. The store is read outside the lock
// (the key is reserved meanwhile, so a second request with it answers
// 409), so keyed requests do not queue behind each other's reads.
func (d *DurableIdempotency) Begin(scope, key string, fp [32]byte, now time.Time) (idempotency.State, *idempotency.StoredResponse) {
	k := durableKey(scope, key)
	d.mu.Lock()
	retried := false
	if f, ok := d.inflight[k]; ok {
		if f.until.IsZero() || now.Before(f.until) {
			d.mu.Unlock()
			return idempotency.InFlight, nil
		}
		retried = true // a hold that ended: the store tells, and the write's actor looks
	}
	d.inflight[k] = idemFlight{fp: fp, retried: retried}
	d.mu.Unlock()
	v, ok, err := d.store.Get([]byte(k))
	state, resp := idempotency.New, (*idempotency.StoredResponse)(nil)
	if err != nil {
		// Whether the key was used cannot be told: the request does not
		// run (503), its retry will.
		d.log("idempotency: read failed", "err", err)
		state = idempotency.Unavailable
	} else if ok {
		if gotFP, exp, r, err := decodeIdem(v); err == nil && now.Before(exp) {
			state, resp = idempotency.Replay, r
			if gotFP != fp {
				state, resp = idempotency.Mismatch, nil
			}
		}
	}
	if state != idempotency.New {
		d.mu.Lock()
		delete(d.inflight, k)
		d.mu.Unlock()
	}
	return state, resp
}

// Retried implements RecordingStore.
func (d *DurableIdempotency) Retried(scope, key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inflight[durableKey(scope, key)].retried
}

// TTL implements RecordingStore.
func (d *DurableIdempotency) TTL() time.Duration { return d.ttl }

// Hold implements RecordingStore.
func (d *DurableIdempotency) Hold(scope, key string, until time.Time) {
	k := durableKey(scope, key)
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.inflight[k]; ok {
		f.until = until
		d.inflight[k] = f
	}
}

// Finish implements IdempotencyStore: it stores a completed answer under
// the fingerprint its claim was made with.
func (d *DurableIdempotency) Finish(scope, key string, resp *idempotency.StoredResponse, now time.Time) {
	k := durableKey(scope, key)
	d.mu.Lock()
	f, claimed := d.inflight[k]
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.inflight, k)
		d.mu.Unlock()
	}()
	if resp == nil || resp.Durable || !claimed {
		return
	}
	b := d.store.NewBatch()
	defer b.Close()
	b.Put([]byte(k), encodeIdem(f.fp, now.Add(d.ttl), resp))
	if err := d.store.Commit(b); err != nil {
		d.log("idempotency: store failed", "err", err)
	}
}

// Sweep deletes expired answers and holds; the service calls it now and
// then.
func (d *DurableIdempotency) Sweep(now time.Time) (int, error) {
	d.mu.Lock()
	for k, f := range d.inflight {
		if !f.until.IsZero() && !now.Before(f.until) {
			delete(d.inflight, k)
		}
	}
	d.mu.Unlock()
	var dead [][]byte
	err := d.store.Scan([]byte(idemPrefix), func(k, v []byte) error {
		if _, exp, _, err := decodeIdem(v); err != nil || !now.Before(exp) {
			dead = append(dead, bytes.Clone(k))
		}
		return nil
	})
	if err != nil || len(dead) == 0 {
		return 0, err
	}
	b := d.store.NewBatch()
	defer b.Close()
	for _, k := range dead {
		b.Delete(k)
	}
	return len(dead), d.store.Commit(b)
}

func encodeIdem(fp [32]byte, exp time.Time, r *idempotency.StoredResponse) []byte {
	return idempotency.EncodeRecord(fp, exp, r)
}

func decodeIdem(v []byte) (fp [32]byte, exp time.Time, r *idempotency.StoredResponse, err error) {
	return idempotency.DecodeRecord(v)
}

var _ idempotency.RecordingStore = (*DurableIdempotency)(nil)
