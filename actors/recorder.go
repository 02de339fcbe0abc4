package actors

import (
	"context"

	"ticketd/ask"
)

// The Recorder and the answers of an ask live in package ask, which the
// cluster's forwarding shares; these names stay for the actors' callers.
type (
	// Recorder is ask.Recorder.
	//
	// Deprecated: moved to ask.Recorder.
	Recorder = ask.Recorder
	// Replayed is ask.Replayed.
	//
	// Deprecated: moved to ask.Replayed.
	Replayed = ask.Replayed
)

// WithRecorder is ask.WithRecorder.
//
// Deprecated: moved to ask.WithRecorder.
func WithRecorder(ctx context.Context, rec *Recorder) context.Context {
	return ask.WithRecorder(ctx, rec)
}

// RecorderOf is ask.RecorderOf.
//
// Deprecated: moved to ask.RecorderOf.
func RecorderOf(ctx context.Context) *Recorder { return ask.RecorderOf(ctx) }

// IsReplayed is ask.IsReplayed.
//
// Deprecated: moved to ask.IsReplayed.
func IsReplayed(err error) (*Replayed, bool) { return ask.IsReplayed(err) }

// record puts rec's entry for result into the open batch and returns it.
func (c *committer) record(rec *Recorder, result any) (key, value []byte) {
	if rec == nil || rec.Value == nil || rec.Key == nil {
		return nil, nil
	}
	v := rec.Value(result)
	if v == nil {
		return nil, nil
	}
	c.put(rec.Key, v)
	return rec.Key, v
}
