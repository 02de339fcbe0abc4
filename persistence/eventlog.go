package persistence

import (
	"errors"
	"fmt"
)

// Log is the event log as the actor shell uses it: ordered streams of
// opaque records, numbered by the caller from 1, whose appends commit
// atomically with the index entries they owe. The Pebble Store is one
// implementation (Store.Log); package cluster has one on a replicated
// NATS JetStream stream.
//
// A Log is safe for concurrent use; a LogBatch belongs to one goroutine.
type Log interface {
	// NewBatch returns an empty batch for one stream's appends and the
	// index entries they owe.
	NewBatch() LogBatch
	// CommitAsync starts b's commit and returns without waiting for it to
	// be durable; wait blocks until it is and must be called exactly once,
	// before b.Close. Batches of one stream committed one after another
	// become durable in that order.
	CommitAsync(b LogBatch) (wait func() error, err error)
	// MaxInFlight is how many batches of one stream may wait for
	// durability at once.
	MaxInFlight() int
	// Claim makes the caller, which has replayed the stream through record
	// last, its only writer from now on: every later commit of an earlier
	// claimant fails with ErrFenced, and so does the claim when records
	// were appended after last. The caller appends through the returned
	// Log. It is called after a replay, before the first append.
	Claim(stream string, last uint64) (Log, error)
	// Replay calls fn for every record of stream with seq > after, in order.
	Replay(stream string, after uint64, fn func(seq uint64, record []byte) error) error
	// FirstSeq and LastSeq are the seqs of the first and last records
	// present, 0 when there is none.
	FirstSeq(stream string) (uint64, error)
	LastSeq(stream string) (uint64, error)
	// TruncateAfter drops the records of stream after seq after.
	TruncateAfter(stream string, after uint64) error
}

// LogBatch collects one stream's records and index updates that commit
// atomically.
type LogBatch interface {
	Append(stream string, seq uint64, record []byte)
	Put(key, value []byte)
	Delete(key []byte)
	Close()
}

// IndexEntry is an index entry (a key and its value) that records owe,
// written with them: what a replicated log's append carries beside its
// records (actors.SharedLog, cluster/shared.Directory).
type IndexEntry struct{ Key, Value []byte }

// ErrFenced is returned by a commit of a writer that another one has
// claimed the stream from: nothing of that batch was written, and the
// writer must stop.
var ErrFenced = errors.New("persistence: fenced: the stream has a newer writer")

// Log returns the Store as a Log. Its batches are *Batch, so the hot path
// pays no conversion; Claim is a no-op, since one process owns the
// database (Pebble's directory lock).
func (s *Store) Log() Log { return pebbleLog{s} }

type pebbleLog struct{ *Store }

func (l pebbleLog) NewBatch() LogBatch { return l.Store.NewBatch() }

func (l pebbleLog) CommitAsync(b LogBatch) (func() error, error) {
	pb, ok := b.(*Batch)
	if !ok {
		return nil, fmt.Errorf("persistence: commit: batch of another log (%T)", b)
	}
	return l.Store.CommitAsync(pb)
}

// MaxInFlight is 4: Pebble groups the fsyncs of the batches in flight, and
// more than a few only lengthens the queue behind the disk.
func (pebbleLog) MaxInFlight() int { return 4 }

func (l pebbleLog) Claim(string, uint64) (Log, error) { return l, nil }

// KeyWriter puts and deletes index entries in an open batch (a LogBatch,
// a *Batch): what a producer of owed work writes into the batch of the
// change that owes it.
type KeyWriter interface {
	Put(key, value []byte)
	Delete(key []byte)
}
