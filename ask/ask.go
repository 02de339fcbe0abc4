package ask

import (
	"context"
	"errors"
)

// ErrBusy is answered when an event already has as many requests on
// their way to its actor as its mailbox holds. It maps to 503 with
// Retry-After.
var ErrBusy = errors.New("actors: event busy")

// ErrUnavailable is answered when an actor cannot serve (storage failure,
// shutdown, timeout, an owner unreachable). It maps to 503. After a
// storage fault the error wraps persistence.ErrFailed too.
var ErrUnavailable = errors.New("actors: unavailable")

// Recorder is the Idempotency-Key of a write as the commit path sees it:
// the index entry the write commits beside its changes, made from its
// result (the record of the answer the result makes, see package http), so
// the key is exactly as durable as the write it answers and a crash can
// never keep one without the other.
//
// Value is called inside the actor, once per request that changed
// something, before the batch is handed to the log; a request that
// changed nothing (a read, a rejection, a repeat) calls it not. A nil
// value puts nothing. It must be fast and must not block: the actor's next
// commands wait for it.
//
// Before deciding a request with a Recorder, the event actor looks for
// the record (among the records of its batches not yet durable, then, for
// a key claimed before (Look), in the store): found, the write was made
// before (its answer was lost to a
// crash, a timeout or a failover, and the key was claimed again), and the
// request is answered Replayed with the record instead of being decided
// again. That check is what makes a write exactly once in cluster mode,
// where the request's node and the event's owner are two nodes.
//
// This is the one hook of the commit path for a request's own entries; the
// entries the core's changes owe (outbox, webhooks, the event index) are
// the actor's own (carryOut).
type Recorder struct {
	Key   []byte
	Value func(result any) []byte
	// Live, when set, says whether a record found still answers (an
	// expired one does not: the request is decided anew).
	Live func(value []byte) bool
	// Look: the key was claimed before by a request whose write may have
	// been made, so the actor looks for the record before deciding.
	// Without it (a key never claimed before, the common case) the actor
	// looks only among its batches in flight, a map lookup, and never
	// reads the store on its goroutine.
	Look bool
	// Portable, when set, is what another node remakes the Recorder from
	// (cluster mode forwards it with the request; see cluster/routing).
	Portable any
	// Release, when set, is called by a writer that took Value for a write
	// that was then refused whole, nothing committed (the directory's
	// shared log met another node's append): the write decided again calls
	// Value again, for its own result.
	Release func()
}

type recorderKey struct{}

// WithRecorder returns ctx carrying rec for the asks made with it (Ask,
// CreateEvent, CreateUnit, CreateKey, RevokeKey).
func WithRecorder(ctx context.Context, rec *Recorder) context.Context {
	if rec == nil {
		return ctx
	}
	return context.WithValue(ctx, recorderKey{}, rec)
}

// RecorderOf returns the Recorder ctx carries, nil when none.
func RecorderOf(ctx context.Context) *Recorder {
	rec, _ := ctx.Value(recorderKey{}).(*Recorder)
	return rec
}

// Replayed answers a request whose Recorder's record exists already: the
// write was made before, and Value is its record.
type Replayed struct{ Value []byte }

func (r *Replayed) Error() string { return "actors: the write was made before; its record answers" }

// IsReplayed returns the record of a Replayed answer.
func IsReplayed(err error) (*Replayed, bool) {
	switch e := err.(type) {
	case nil:
		return nil, false
	case *Replayed:
		return e, true
	case interface{ Unwrap() error }, interface{ Unwrap() []error }:
		return asReplayed(err)
	}
	// Nothing in its chain but itself (a refusal of the core): no walk,
	// and no target of errors.As on the heap.
	return nil, false
}

func asReplayed(err error) (*Replayed, bool) {
	var r *Replayed
	ok := errors.As(err, &r)
	return r, ok
}
