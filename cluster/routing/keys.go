package routing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"ticketd/ask"
	"ticketd/event"
	"ticketd/idempotency"
)

// Keyed retries at a new owner. A keyed write commits its Idempotency-Key's
// record in the shard message of its records; its owner puts it in its
// local store, and a new owner imports the records of an event's log after
// its activation (settle.Owed.Take). An event actor looks for a retried
// key's record in the local store before deciding it again
// (ask.Recorder.Look). A retry that reached a new owner before that import
// (its first request activates the event on demand, before the gain's
// activation reaches it, or the import is still reading the log) met no
// record and was decided again: a second order, or for a keyed event
// creation (whose id is made from the key) 409 ALREADY_EXISTS, which the
// key then kept as its answer for good (TestClusterKeyedWritesExactlyOnce,
// round 1, on 588961c).
//
// So a retried keyed request (Look) is decided only once the records its
// event's log holds from before this node's claim are in the store: the
// owner activates the event (its claim: every earlier message of the
// shard is then stored, and no other node writes after it) and reads the
// Idempotency-Key records of the event's messages before the claim, once
// per event and gain of its shard (the gain's own import counts: see
// take). A first request (not Look) needs none: no write of its key can
// have been made before.
type keyImports struct {
	mu sync.Mutex
	// done: event -> the gain (its shard's gen) whose records are in the
	// local store.
	done map[string]uint64
	// running: the imports under way, closed when each ends.
	running map[string]chan struct{}
}

// keysImported notes that the records of id's log before this node's
// claim are in the local store since its shard's gen-th change.
func (r *Router) keysImported(id string, gen uint64) {
	k := &r.keys
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done == nil {
		k.done = map[string]uint64{}
	}
	k.done[id] = gen
}

// keysLost forgets the imports of shard's events: a node that no longer
// leads it imports again on its next gain.
func (r *Router) keysLost(shard int) {
	k := &r.keys
	k.mu.Lock()
	defer k.mu.Unlock()
	for id := range k.done {
		if r.n.Shard(id) == shard {
			delete(k.done, id)
		}
	}
}

// keysFor makes sure the Idempotency-Key records of eventID's log from
// before this node's claim are in the local store before a retried keyed
// request is decided here (see keyImports). It blocks for the event's
// activation and one read of its log (shared by the retries of the event
// waiting at the same time), at most until ctx ends; an error means the
// request must not be decided now (answered unavailable: its retry comes
// back).
func (r *Router) keysFor(ctx context.Context, sys Actors, eventID string) error {
	if r.owed == nil {
		return nil // single writer of its events, ever: the store has them
	}
	shard := r.n.Shard(eventID)
	for {
		gen := r.gen[shard].Load()
		k := &r.keys
		k.mu.Lock()
		if g, ok := k.done[eventID]; ok && g == gen {
			k.mu.Unlock()
			return nil
		}
		if wait, ok := k.running[eventID]; ok {
			k.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return fmt.Errorf("%w: event %s: idempotency records: %w", ask.ErrUnavailable, eventID, ctx.Err())
			}
		}
		if k.running == nil {
			k.running = map[string]chan struct{}{}
		}
		end := make(chan struct{})
		k.running[eventID] = end
		k.mu.Unlock()
		err := r.importKeys(ctx, sys, eventID)
		k.mu.Lock()
		delete(k.running, eventID)
		close(end)
		k.mu.Unlock()
		if err != nil {
			return fmt.Errorf("%w: event %s: idempotency records: %w", ask.ErrUnavailable, eventID, err)
		}
		if r.gen[shard].Load() == gen && r.leads(shard) {
			r.keysImported(eventID, gen)
		}
		return nil
	}
}

// errNoClaim: the event's actor answered, but this node holds no claim of
// it (fenced meanwhile): another node may have written since.
var errNoClaim = errors.New("cluster: no claim of the event here")

// importKeys activates eventID here (load and claim) and copies the
// Idempotency-Key records of its messages before the claim into the local
// store.
func (r *Router) importKeys(ctx context.Context, sys Actors, eventID string) error {
	if _, err := sys.Serve(ctx, eventID, event.GetEvent{}, ""); err != nil {
		var ee *event.Error
		if !errors.As(err, &ee) { // an event not made yet answers not found, claimed all the same
			return err
		}
	}
	epoch := r.owed.Log.Epoch(eventID)
	if epoch == 0 {
		return errNoClaim
	}
	records := map[string][]byte{}
	err := r.owed.Log.ReadOwed(eventID, epoch, func(op byte, key, value []byte) {
		if op == 'p' && bytes.HasPrefix(key, idemRecordPrefix) {
			records[string(key)] = bytes.Clone(value)
		}
	})
	if err != nil || len(records) == 0 {
		return err
	}
	b := r.owed.Store.NewBatch()
	defer b.Close()
	for key, v := range records {
		b.Put([]byte(key), v)
	}
	return r.owed.Store.Commit(b)
}

// idemRecordPrefix starts the index key of an Idempotency-Key's record.
var idemRecordPrefix = []byte(idempotency.Prefix)

// retried reports whether rec is a retried keyed request's (see keyImports).
func retried(rec *ask.Recorder) bool { return rec != nil && rec.Look && rec.Key != nil }
