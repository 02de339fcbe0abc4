package http

import (
	"bytes"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"
)

// RecordingStore is an IdempotencyStore whose answers a write can commit
// in its own batch (DurableIdempotency): Record returns the index entry
// (key and value) that Begin reads back as the answer resp of (scope,
// key) with fingerprint fp. The pipeline hands it to the handler through
// Ctx.Recorder; the actor that makes the write puts it beside the write's
// changes, so the key and the write are durable together or not at all.
type RecordingStore interface {
	IdempotencyStore
	Record(scope, key string, fp [32]byte, resp *StoredResponse, now time.Time) (k, v []byte)
	// Hold keeps (scope, key) claimed until until: the request answered
	// 5xx while a write it asked for may still commit (an ask that timed
	// out); a retry meanwhile answers 409, after it the durable record
	// tells.
	Hold(scope, key string, until time.Time)
}

// idemClaim is a keyed POST that owns its key (IdemNew) on a
// RecordingStore. It is allocated per request, never pooled: a write
// whose ask timed out may still call its recorder after the request ended.
type idemClaim struct {
	store      RecordingStore
	scope, key string
	fp         [32]byte
	now        time.Time
	status     int
	unknown    atomic.Bool                    // a write's outcome is unknown (OutcomeUnknown)
	used       atomic.Bool                    // a write took the recorder
	committed  atomic.Pointer[StoredResponse] // the answer a write committed
}

// idemUnknownHold is how long a key stays claimed after its request
// answered 5xx while the write it asked for may still commit: longer than
// an actor's ask (10 s) so that the write lands, or never will, first.
const idemUnknownHold = time.Minute

// Recorder returns, for a POST that owns its Idempotency-Key on a
// RecordingStore, the function a write calls with its result to get the
// key's record (see actors.Recorder); nil otherwise. The record holds the
// answer view(result) makes (view nil: the result itself) as this
// route's success answer, encoded as the pipeline encodes it. Only the
// first write of a request takes it: a handler that writes twice commits
// the key with its first write, and its final answer, when it differs,
// is stored after it as before (see serveIdempotent).
func (c *Ctx) Recorder(view func(any) any) func(result any) (key, value []byte) {
	cl := c.idem
	if cl == nil {
		return nil
	}
	return func(res any) ([]byte, []byte) {
		if !cl.used.CompareAndSwap(false, true) {
			return nil, nil
		}
		out := res
		if view != nil {
			out = view(res)
		}
		body, ok := encodeAnswer(out)
		if !ok {
			return nil, nil
		}
		r := &StoredResponse{Status: cl.status, ContentType: "application/json", Body: body, Durable: true}
		cl.committed.Store(r)
		return cl.store.Record(cl.scope, cl.key, cl.fp, r, cl.now)
	}
}

// OutcomeUnknown says that a write this request asked for with its
// Recorder may still commit although the request fails (an ask that timed
// out): its Idempotency-Key then stays claimed for idemUnknownHold instead
// of being released, so a retry cannot run the write a second time while
// the first may still land; after that the durable record tells.
func (c *Ctx) OutcomeUnknown() {
	if c.idem != nil {
		c.idem.unknown.Store(true)
	}
}

// encodeAnswer is the body run writes for a handler's result out.
func encodeAnswer(out any) ([]byte, bool) {
	if out == nil {
		return nil, false
	}
	if b, ok := appendFastJSON(nil, out); ok {
		return b, true
	}
	b, err := gojson.Marshal(out)
	return b, err == nil
}

// sameAnswer reports whether the answer a write committed is the one the
// request gives.
func sameAnswer(a, b *StoredResponse) bool {
	return a != nil && b != nil && a.Status == b.Status && a.ContentType == b.ContentType && bytes.Equal(a.Body, b.Body)
}
