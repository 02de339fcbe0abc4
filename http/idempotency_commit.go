package http

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/oklog/ulid/v2"

	"ticketd/event"
	"ticketd/idempotency"
)

// keyedAnswer is the answer w records for a handler's result out; an
// error out is the answer the pipeline writes for it (its envelope and
// status: a refusal that a write recorded, see RecorderAgain).
func keyedAnswer(w *idempotency.KeyedWrite, out any) (*idempotency.StoredResponse, bool) {
	if e, ok := out.(error); ok {
		status, env, _ := errorResponse(e)
		if status == 500 || isSoldOut(e) { // a failure of the service's own is never kept
			return nil, false
		}
		return &idempotency.StoredResponse{Status: status, ContentType: "application/json",
			Body: appendErrorJSON(nil, env.Error), Durable: true}, true
	}
	body, ok := encodeAnswer(out)
	if !ok {
		return nil, false
	}
	return w.Answer(body), true
}

// KeyedValue is the record w makes of a handler's result; nil when the
// result cannot be encoded (then nothing is recorded).
func KeyedValue(w *idempotency.KeyedWrite, result any) []byte {
	r, ok := keyedAnswer(w, result)
	if !ok {
		return nil
	}
	return encodeIdem(w.FP, w.Expires, r)
}

// EncodeAnswer is the body the pipeline writes for a handler's result out:
// what a keyed write's record holds (the cluster's owner remakes the
// record of a forwarded write with it).
func EncodeAnswer(out any) ([]byte, bool) { return encodeAnswer(out) }

// KeyedRecorder is what Ctx.Recorder gives the handler to pass to its
// write (as an actors.Recorder): the record's key, its maker, its
// liveness, whether to look for it first (Retried), and, for an answer
// that is the result itself, its portable form.
type KeyedRecorder struct {
	Key      []byte
	Value    func(result any) []byte
	Live     func(value []byte) bool
	Retried  bool
	Portable *idempotency.KeyedWrite
	// Release undoes Value for a write refused whole (see ask.Recorder).
	Release func()
}

// idemClaim is a keyed POST that owns its key (IdemNew) on a
// RecordingStore. It is allocated per request, never pooled: a write
// whose ask timed out may still call its recorder after the request ended.
type idemClaim struct {
	store      idempotency.RecordingStore
	scope, key string
	fp         [32]byte
	now        time.Time
	status     int
	unknown    atomic.Bool                                // a write's outcome is unknown (OutcomeUnknown)
	used       atomic.Bool                                // a write took the recorder
	committed  atomic.Pointer[idempotency.StoredResponse] // the answer a write committed
	replayed   *idempotency.StoredResponse                // the answer of a write made before (Replay)
	mismatch   bool                                       // Replay met the key used with another request
}

// idemUnknownHold is how long a key stays claimed after its request
// answered 5xx while the write it asked for may still commit: longer than
// an actor's ask and a forwarded one's (10 s each), so that the write has
// landed, or never will, when the key is claimed again.
const idemUnknownHold = 15 * time.Second

// Recorder returns, for a POST that owns its Idempotency-Key on a
// RecordingStore, what its write needs to commit the key's record (see
// actors.Recorder); nil otherwise. The record holds the answer view(result)
// makes (view nil: the result itself) as this route's success answer,
// encoded as the pipeline encodes it. Only the first write of a request
// records: a handler that writes twice commits the key with its first
// write, and its final answer, when it differs, is stored after it as
// before (see serveIdempotent).
func (c *Ctx) Recorder(view func(any) any) *KeyedRecorder { return c.recorder(view, false) }

// RecorderAgain is Recorder for a request's later write whose answer
// replaces the record an earlier write of the same request committed (a
// refund's outcome after its request: the request committed the pending
// answer, the outcome commits the final one, so that a crash at any
// point leaves the answer of what was made). It never looks for the
// record first: the request's own write made it.
func (c *Ctx) RecorderAgain(view func(any) any) *KeyedRecorder { return c.recorder(view, true) }

// RecorderNamed is Recorder whose answer is the view registered as name
// (idempotency.RegisterView) of the result. Unlike a view function, a
// name travels: in cluster mode the event's owner, which commits the
// record with the write, remakes the same answer (a refund's start).
func (c *Ctx) RecorderNamed(name string) *KeyedRecorder {
	view := idempotency.ViewOf(name)
	if view == nil {
		return nil
	}
	return c.recorderOf(view, false, func(w *idempotency.KeyedWrite) { w.View = name })
}

// RecorderFixed is RecorderAgain whose answer is out whatever the write's
// result (an error: the envelope and status the pipeline answers for
// it), known before the write, so that it travels to the event's owner
// as it is (a refund's refusal, recorded with its failed outcome).
func (c *Ctx) RecorderFixed(out any) *KeyedRecorder {
	view := func(any) any { return out }
	if _, ok := keyedAnswer(&idempotency.KeyedWrite{}, out); !ok {
		// Never recorded (a failure of the service's own): nothing travels.
		return c.recorderOf(view, true, nil)
	}
	return c.recorderOf(view, true, func(w *idempotency.KeyedWrite) { w.Fixed, _ = keyedAnswer(w, out) })
}

func (c *Ctx) recorder(view func(any) any, again bool) *KeyedRecorder {
	if view != nil {
		return c.recorderOf(view, again, nil)
	}
	return c.recorderOf(nil, again, func(*idempotency.KeyedWrite) {})
}

// recorderOf makes the recorder of view (nil: the result itself);
// portable, when set, completes the portable form (nil: the recorder has
// none, as a view function cannot travel).
func (c *Ctx) recorderOf(view func(any) any, again bool, portable func(w *idempotency.KeyedWrite)) *KeyedRecorder {
	cl := c.idem
	if cl == nil {
		return nil
	}
	w := &idempotency.KeyedWrite{Key: idempotency.RecordKey(cl.scope, cl.key), FP: cl.fp, Expires: cl.now.Add(cl.store.TTL()), Status: cl.status,
		Retried: !again && cl.store.Retried(cl.scope, cl.key)}
	kr := &KeyedRecorder{Key: w.Key, Live: idempotency.Live, Retried: w.Retried}
	if portable != nil {
		portable(w)
		kr.Portable = w
	}
	kr.Value = func(res any) []byte {
		if !cl.used.CompareAndSwap(false, true) && !again {
			return nil
		}
		out := res
		if view != nil {
			out = view(res)
		}
		r, ok := keyedAnswer(w, out)
		if !ok {
			return nil
		}
		cl.committed.Store(r)
		return encodeIdem(w.FP, w.Expires, r)
	}
	kr.Release = func() {
		cl.committed.Store(nil)
		cl.used.Store(false)
	}
	return kr
}

// OutcomeUnknown says that a write this request asked for with its
// Recorder may still commit although the request fails (an ask that timed
// out): its Idempotency-Key then stays claimed for idemUnknownHold instead
// of being released, so a retry cannot run the write a second time while
// the first may still land.
func (c *Ctx) OutcomeUnknown() {
	if c.idem != nil {
		c.idem.unknown.Store(true)
	}
}

// errReplayed is the handler's error once Replay took the answer: the
// pipeline answers the record instead (serveIdempotent).
var errReplayed = NewError(409, "the write was made before").WithReason(event.ReasonIdempotencyKeyInProgress)

// Replay takes record, the record of this request's key that a write
// made before (its answer lost to a crash, a timeout or a failover),
// as the request's answer, and returns the error the handler returns: the
// pipeline then answers the record's answer (Idempotent-Replayed), or 422
// when the key was used with another request.
func (c *Ctx) Replay(record []byte) error {
	cl := c.idem
	if cl == nil {
		return NewError(503, "temporarily unavailable; retry")
	}
	fp, _, resp, err := decodeIdem(record)
	switch {
	case err != nil:
		return NewError(503, "temporarily unavailable; retry")
	case fp != cl.fp:
		cl.mismatch = true
	default:
		cl.replayed = resp
	}
	return errReplayed
}

// encodeAnswer is the body run writes for a handler's result out.
func encodeAnswer(out any) ([]byte, bool) {
	if out == nil {
		return nil, false
	}
	if b, ok := AppendJSON(nil, out); ok {
		return b, true
	}
	b, err := gojson.Marshal(out)
	return b, err == nil
}

// sameAnswer reports whether the answer a write committed is the one the
// request gives.
func sameAnswer(a, b *idempotency.StoredResponse) bool {
	return a != nil && b != nil && a.Status == b.Status && a.ContentType == b.ContentType && bytes.Equal(a.Body, b.Body)
}

// KeyedID returns, for a POST that owns its Idempotency-Key on a
// RecordingStore, an id made from the key: the same request sent again
// gets the same id, so that a retry of a creation whose answer was lost
// reaches the record it made (in cluster mode the record lives with the
// created event, whose id the retry must know). It is prefix and a ULID
// whose time is the key's first claim and whose randomness is the
// request's; "" when there is no such key.
func (c *Ctx) KeyedID(prefix string) string {
	cl := c.idem
	if cl == nil {
		return ""
	}
	at := cl.now
	if os, ok := cl.store.(idempotency.OriginStore); ok {
		if o := os.Origin(cl.scope, cl.key); !o.IsZero() {
			at = o
		}
	}
	h := sha256.New()
	h.Write([]byte(cl.scope))
	h.Write([]byte{0})
	h.Write([]byte(cl.key))
	h.Write(cl.fp[:])
	id, err := ulid.New(ulid.Timestamp(at), bytes.NewReader(h.Sum(nil)))
	if err != nil {
		return ""
	}
	return prefix + strings.ToLower(id.String())
}
