package persistence

import "errors"

// Cursor reads a queue kept under a key prefix (an outbox, a webhook queue)
// in rounds, each round going on after the key where the previous one
// stopped and wrapping to the start of the prefix once it reaches the end.
//
// A consumer deletes the entries it has handled, and a deleted key stays in
// the LSM as a tombstone until a compaction drops it. Scanning from the
// start of the prefix every round steps over every tombstone of the rounds
// before, so draining a backlog of n entries in batches of b costs
// O(n*n/b); with a cursor each tombstone is stepped over about once per
// pass over the queue.
//
// Entries added behind the cursor (a queue keyed by stream, then sequence,
// grows in many places) are read when the cursor wraps; entries of one
// stream are still read in key order. The zero value starts at the start.
// A Cursor is not safe for concurrent use.
type Cursor struct {
	after []byte // the last key read; nil at the start of a pass
}

var errCursorFull = errors.New("persistence: cursor batch full")

// Next calls fn for up to max entries under prefix in queue order, starting
// after the last key the previous round read and wrapping once, so no key
// is read twice in one round. full reports that max entries were read (the
// queue may hold more). An error from fn stops the round and is returned;
// the cursor then stays where it was, so the round's entries come again.
func (c *Cursor) Next(s *Store, prefix []byte, max int, fn func(key, value []byte) error) (full bool, err error) {
	if max <= 0 {
		return false, nil
	}
	n := 0
	var last []byte
	read := func(key, value []byte) error {
		if n == max {
			return errCursorFull
		}
		if err := fn(key, value); err != nil {
			return err
		}
		n++
		last = append(last[:0], key...)
		return nil
	}
	start := c.after
	err = s.ScanRange(prefix, start, nil, read)
	if err == nil && start != nil {
		// The end of the queue: wrap, and stop where this round started.
		err = s.ScanRange(prefix, nil, start, read)
	}
	full = errors.Is(err, errCursorFull)
	if err != nil && !full {
		return false, err
	}
	if full {
		c.after = last
	} else {
		c.after = nil // a whole pass: the next round starts at the start
	}
	return full, nil
}

// Reset makes the next round start at the start of the prefix.
func (c *Cursor) Reset() { c.after = nil }
