package feed

import (
	"errors"
	"fmt"
	"time"

	"ticketd/event"
	"ticketd/persistence"
)

// ErrGap reports a feed entry missing below the durable end: this
// node's store lacks entries its log has (see actors' package doc).
var ErrGap = errors.New("actors: feed entry missing")

// errStopScan ends a bounded scan early.
var errStopScan = errors.New("feed: scan bound reached")

// ReadPage reads the page c asks for, through the durable end last, from
// store. Entries before horizon (event.FeedRetention ago) count as gone
// whether or not the trim has deleted them yet. A failed read of the page
// is wrapped in unavailable (the caller's sentinel for a retryable
// failure).
func ReadPage(store *persistence.Store, eventID string, c event.ReadFeed, last uint64, horizon time.Time, unavailable error) (event.FeedPage, error) {
	page := event.FeedPage{Last: last, Next: c.After}
	prefix := prefixOf(eventID)
	start := c.After
	if !c.From {
		// From the oldest entry kept.
		start = last
		err := store.ScanRange(prefix, nil, Key(eventID, last), func(key, v []byte) error {
			its, err := decode(key[len(prefix):], v)
			if err != nil {
				return err
			}
			if !its[0].At.Before(horizon) {
				start = its[0].Seq - 1
				return errStopScan
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopScan) {
			return page, err
		}
		page.Next = start
	}
	if start >= last {
		return page, nil
	}
	limit := c.Limit
	if limit <= 0 {
		limit = event.FeedLimitDefault
	}
	want := func(t string) bool {
		if len(c.Types) == 0 {
			return true
		}
		for _, x := range c.Types {
			if x == t {
				return true
			}
		}
		return false
	}
	expect, seen, full, expired := start+1, 0, false, false
	// The first record after start's key holds entry start+1: its own,
	// or a span's (keyed by its last seq) that may begin before it.
	err := store.ScanRange(prefix, Key(eventID, start), Key(eventID, last), func(key, v []byte) error {
		its, err := decode(key[len(prefix):], v)
		if err != nil {
			return err
		}
		for _, it := range its {
			if it.Seq < expect && seen == 0 {
				continue // a span's entries before the position
			}
			if seen == 0 && (it.Seq != expect || it.At.Before(horizon)) {
				// The entry after the position is gone (or as good as
				// gone): the reader missed what the trim took.
				expired = true
				return errStopScan
			}
			if it.Seq != expect {
				return fmt.Errorf("%w: %s seq %d (next is %d)", ErrGap, eventID, expect, it.Seq)
			}
			seen++
			expect++
			page.Next = it.Seq
			if want(it.Type) {
				if len(its) == 1 {
					it.Object = append([]byte(nil), it.Object...)
				}
				page.Entries = append(page.Entries, it)
				if len(page.Entries) == limit {
					full = true
					page.HasMore = it.Seq < last
					return errStopScan
				}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return page, fmt.Errorf("%w: %w", unavailable, err)
	}
	if expired || seen == 0 {
		return event.FeedPage{Last: last, Next: c.After, Expired: true}, nil
	}
	if !full && expect != last+1 {
		return page, fmt.Errorf("%w: %w: %s seq %d", unavailable, ErrGap, eventID, expect)
	}
	return page, nil
}

// trimBatch bounds the deletions of one commit of Trim.
const trimBatch = 10_000

// Trim deletes the feed entries of events eventIDs that happened before
// horizon, and answers how many. Entries of an event are in time order,
// so each event's scan stops at its first entry kept.
func Trim(store *persistence.Store, eventIDs []string, horizon time.Time) (int, error) {
	n := 0
	for _, id := range eventIDs {
		for {
			prefix := prefixOf(id)
			var keys [][]byte
			err := store.Scan(prefix, func(key, v []byte) error {
				if len(v) >= headerLen && !at(v).Before(horizon) {
					return errStopScan
				}
				keys = append(keys, append([]byte(nil), key...))
				if len(keys) == trimBatch {
					return errStopScan
				}
				return nil
			})
			if err != nil && !errors.Is(err, errStopScan) {
				return n, err
			}
			if len(keys) == 0 {
				break
			}
			b := store.NewBatch()
			for _, k := range keys {
				b.Delete(k)
			}
			err = store.Commit(b)
			b.Close()
			if err != nil {
				return n, fmt.Errorf("actors: trim feed of %s: %w", id, err)
			}
			n += len(keys)
			if len(keys) < trimBatch {
				break
			}
		}
	}
	return n, nil
}
