package actors

import "context"

// Recorder makes the index entry a write commits beside its changes, from
// the write's result: the record of an Idempotency-Key (the answer the
// result makes, see package http), so the key is exactly as durable as the
// write it answers and a crash can never keep one without the other. It is
// called inside the actor, once per request that changed something, before
// the batch is handed to the log; a request that changed nothing (a read,
// a rejection, a repeat) calls it not. A nil key puts nothing. It must be
// fast and must not block: the actor's next commands wait for it.
//
// This is the one hook of the commit path for a request's own entries; the
// entries the core's changes owe (outbox, webhooks, the event index) are
// the actor's own (carryOut).
type Recorder func(result any) (key, value []byte)

type recorderKey struct{}

// WithRecorder returns ctx carrying rec for the asks made with it (Ask,
// CreateEvent, CreateUnit, CreateKey, RevokeKey). An ask forwarded to
// another node (cluster mode) does not carry it.
func WithRecorder(ctx context.Context, rec Recorder) context.Context {
	if rec == nil {
		return ctx
	}
	return context.WithValue(ctx, recorderKey{}, rec)
}

func recorderOf(ctx context.Context) Recorder {
	rec, _ := ctx.Value(recorderKey{}).(Recorder)
	return rec
}

// record puts rec's entry for result into the open batch.
func (c *committer) record(rec Recorder, result any) {
	if rec == nil {
		return
	}
	if k, v := rec(result); k != nil {
		c.put(k, v)
	}
}
