package actors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	json "github.com/goccy/go-json"

	"ticketd/event"
	"ticketd/persistence"
)

// FeedPrefix is the key prefix of the change feed (decisions §20): one
// entry per feed seq of an event, written in the batch of the change it
// describes (so it can never disagree with the state) and kept apart from
// the log, whose records a snapshot lets the log trim: an entry is
// deleted only by the retention trim (TrimFeeds), event.FeedRetention
// after it happened.
//
// Key: "feed/" + event id + "/" + 16 lower-case hex digits of the feed
// seq (byte order is seq order). Value, version 1:
//
//	byte 0     version (1)
//	byte 1     type (event.FeedTypeCode)
//	bytes 2-9  when the change happened, Unix nanoseconds, big-endian int64
//	rest       the record as its GET answered it just after the change
//	           (JSON, in the current API version)
const FeedPrefix = persistence.PrefixFeed

// feedVersion is the version byte of a feed entry's value.
const feedVersion = 1

// feedHeaderLen is the bytes of a feed entry's value before its object.
const feedHeaderLen = 10

// FeedKey is the key of an event's feed entry seq.
func FeedKey(eventID string, seq uint64) []byte {
	k := make([]byte, 0, len(FeedPrefix)+len(eventID)+1+16)
	k = append(k, FeedPrefix...)
	k = append(k, eventID...)
	k = append(k, '/')
	return appendHex16(k, seq)
}

func appendHex16(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		b = append(b, digits[(v>>(uint(i)*4))&0xf])
	}
	return b
}

// feedPrefixOf is the prefix of every feed key of an event.
func feedPrefixOf(eventID string) []byte { return []byte(FeedPrefix + eventID + "/") }

// decodeFeed reads a feed entry's key (after the event's prefix) and value.
func decodeFeed(rest, v []byte) (event.FeedItem, error) {
	seq, err := strconv.ParseUint(string(rest), 16, 64)
	if err != nil || len(rest) != 16 {
		return event.FeedItem{}, fmt.Errorf("actors: feed key %q", rest)
	}
	if len(v) < feedHeaderLen || v[0] != feedVersion {
		return event.FeedItem{}, fmt.Errorf("actors: feed entry %d: unknown format", seq)
	}
	typ := event.FeedTypeOf(v[1])
	if typ == "" {
		return event.FeedItem{}, fmt.Errorf("actors: feed entry %d: unknown type %d", seq, v[1])
	}
	at := time.Unix(0, int64(binary.BigEndian.Uint64(v[2:10]))).UTC()
	return event.FeedItem{Seq: seq, Type: typ, At: at, Object: v[feedHeaderLen:]}, nil
}

// writeFeed puts the feed entries fes of the change just applied into the
// open batch: they are the last len(fes) seqs of the machine's feed.
func (a *eventActor) writeFeed(fes []event.FeedEntry) {
	first := a.m.FeedSeq() - uint64(len(fes)) + 1
	for i, e := range fes {
		obj, ok := a.m.FeedObject(e)
		if !ok {
			// The core produced an entry about no record: a bug.
			panic(fmt.Sprintf("actors: feed entry %s %s of %s names no record", e.Type, e.ID, a.id))
		}
		v := a.feedBuf[:0]
		v = append(v, feedVersion, event.FeedTypeCode(e.Type))
		v = binary.BigEndian.AppendUint64(v, uint64(e.At.UnixNano()))
		b, err := json.Marshal(obj)
		if err != nil {
			panic(fmt.Sprintf("actors: encode feed object of %s: %v", a.id, err))
		}
		v = append(v, b...)
		a.feedBuf = v
		a.com.put(FeedKey(a.id, first+uint64(i)), v) // the batch copies it
		a.ring.put(first+uint64(i), v)
	}
	pos := a.m.FeedSeq()
	a.com.afterDurable(func() { a.feedDurable(pos) })
}

// FeedLinger is the least time a long poll (a ReadFeed that waits) is
// held before it is answered with fewer entries than its limit: a
// follower parked on an idle feed has waited longer and is answered at
// the first commit, while one that comes back at once on a busy feed gets
// a page of everything committed meanwhile at most every FeedLinger,
// instead of a request per commit (twenty followers of a drop cost the
// sale more than a tenth of its throughput that way). A read that does
// not wait is answered at once.
const FeedLinger = 100 * time.Millisecond

// feedWaiter is a ReadFeed waiting for the feed to pass its position.
type feedWaiter struct {
	id    uint64
	to    *actor.PID
	cmd   event.ReadFeed
	after uint64
	ready time.Time // when it has lingered enough (see FeedLinger)
	armed bool      // its feedReady tick is scheduled
}

// feedTimeout ends a waiter's long poll.
type feedTimeout struct{ id uint64 }

// feedReady tells a waiter it has lingered enough.
type feedReady struct{ id uint64 }

// full reports whether the feed's durable end gives w a whole page.
func (w *feedWaiter) full(end uint64) bool {
	limit := w.cmd.Limit
	if limit <= 0 {
		limit = event.FeedLimitDefault
	}
	return end-w.after >= uint64(limit)
}

// feedDurable moves the durable end of the feed to pos and answers the
// waiters it passes: a long poll answers as soon as a change commits.
func (a *eventActor) feedDurable(pos uint64) {
	if pos <= a.feedEnd {
		return
	}
	a.feedEnd = pos
	now := time.Now()
	kept := a.feedWaits[:0]
	for _, w := range a.feedWaits {
		if w.after < pos && (!now.Before(w.ready) || w.full(pos)) {
			a.answerFeed(w.to, w.cmd, pos)
			continue
		}
		if w.after < pos && !w.armed {
			w.armed = true
			a.timers.SendOnce(w.ready.Sub(now), a.self, &feedReady{id: w.id})
		}
		kept = append(kept, w)
	}
	clear(a.feedWaits[len(kept):])
	a.feedWaits = kept
}

// readFeed handles a ReadFeed: at once when the durable feed has entries
// after its position (or it does not wait), else once it has or its wait
// ends. Only durable entries are read: a long poll never shows a change a
// crash could take back.
func (a *eventActor) readFeed(ctx actor.Context, c event.ReadFeed, to *actor.PID) {
	after := c.After
	if !c.From {
		after = 0
	}
	if c.Wait <= 0 || to == nil || !c.From {
		a.answerFeed(to, c, a.feedEnd)
		return
	}
	a.feedWaitID++
	w := feedWaiter{id: a.feedWaitID, to: to, cmd: c, after: after, ready: time.Now().Add(FeedLinger)}
	if w.after < a.feedEnd && w.full(a.feedEnd) {
		a.answerFeed(to, c, a.feedEnd)
		return
	}
	if w.after < a.feedEnd {
		w.armed = true
		a.timers.SendOnce(FeedLinger, ctx.Self(), &feedReady{id: w.id})
	}
	a.feedWaits = append(a.feedWaits, w)
	a.timers.SendOnce(c.Wait, ctx.Self(), &feedTimeout{id: w.id})
}

// feedLingered answers a waiter that has lingered enough, when the feed
// has passed its position.
func (a *eventActor) feedLingered(id uint64) {
	for i, w := range a.feedWaits {
		if w.id == id {
			if w.after < a.feedEnd {
				a.feedWaits = append(a.feedWaits[:i], a.feedWaits[i+1:]...)
				a.answerFeed(w.to, w.cmd, a.feedEnd)
			}
			return
		}
	}
}

// feedTimedOut answers a waiter whose wait ended with what there is.
func (a *eventActor) feedTimedOut(id uint64) {
	for i, w := range a.feedWaits {
		if w.id == id {
			a.feedWaits = append(a.feedWaits[:i], a.feedWaits[i+1:]...)
			a.answerFeed(w.to, w.cmd, a.feedEnd)
			return
		}
	}
}

// releaseFeedWaits answers every waiter with what there is (the actor
// stops: its waiters would otherwise wait out their timeouts for nothing).
func (a *eventActor) releaseFeedWaits() {
	for _, w := range a.feedWaits {
		a.answerFeed(w.to, w.cmd, a.feedEnd)
	}
	a.feedWaits = nil
}

// answerFeed reads the page of c through the durable end last off the
// actor (a store read must not hold up the event's writes) and sends it.
func (a *eventActor) answerFeed(to *actor.PID, c event.ReadFeed, last uint64) {
	if to == nil {
		return
	}
	s, id, ring := a.sys, a.id, a.ring
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		page, ok := ring.page(c, last, s.cfg.Now().Add(-event.FeedRetention))
		var err error
		if !ok {
			page, err = s.readFeedPage(id, c, last)
		}
		s.as.Root.Send(to, &response{result: page, err: err})
	}()
}

// feedRingLen is how many of its newest feed entries an event actor
// keeps in memory (feedRing), about 3 MiB for orders.
const feedRingLen = 4096

// feedRing holds an event's newest feed entries (their stored values,
// never changed once put) for its followers: a drop's followers read what
// was just written, and twenty of them reading it from Pebble, each
// decoding and copying every entry, doubled the service's CPU per order.
// The actor puts; the readers' goroutines read under the lock.
type feedRing struct {
	mu     sync.RWMutex
	vals   [feedRingLen][]byte
	lo, hi uint64 // the ring holds seqs lo+1..hi
}

// put keeps the value of seq (the next seq; any other restarts the ring).
func (r *feedRing) put(seq uint64, v []byte) {
	c := append([]byte(nil), v...)
	r.mu.Lock()
	if seq != r.hi+1 {
		r.lo = seq - 1
	}
	r.hi = seq
	r.vals[seq%feedRingLen] = c
	if r.hi-r.lo > feedRingLen {
		r.lo = r.hi - feedRingLen
	}
	r.mu.Unlock()
}

// page answers c through last from the ring when the ring holds every
// entry it needs (a read from a position, its next entry in the ring);
// false sends the read to the store.
func (r *feedRing) page(c event.ReadFeed, last uint64, horizon time.Time) (event.FeedPage, bool) {
	page := event.FeedPage{Last: last, Next: c.After}
	if !c.From || c.After >= last {
		return page, c.From
	}
	limit := c.Limit
	if limit <= 0 {
		limit = event.FeedLimitDefault
	}
	// The values are copied out (their headers: the bytes never change)
	// and the lock let go before they are read: the actor's put waits
	// for the readers.
	n := last - c.After
	if n > feedRingLen {
		return page, false // older than the ring holds
	}
	if len(c.Types) == 0 {
		n = min(n, uint64(limit))
	}
	vals := make([][]byte, n)
	r.mu.RLock()
	if c.After < r.lo || last > r.hi {
		r.mu.RUnlock()
		return page, false
	}
	for i := range vals {
		vals[i] = r.vals[(c.After+1+uint64(i))%feedRingLen]
	}
	r.mu.RUnlock()
	page.Entries = make([]event.FeedItem, 0, min(len(vals), limit))
	for i, v := range vals {
		seq := c.After + 1 + uint64(i)
		if len(v) < feedHeaderLen || v[0] != feedVersion {
			return event.FeedPage{Last: last, Next: c.After}, false
		}
		at := time.Unix(0, int64(binary.BigEndian.Uint64(v[2:10]))).UTC()
		if i == 0 && at.Before(horizon) {
			return event.FeedPage{Last: last, Next: c.After, Expired: true}, true
		}
		page.Next = seq
		typ := event.FeedTypeOf(v[1])
		if len(c.Types) > 0 && !slices.Contains(c.Types, typ) {
			continue
		}
		page.Entries = append(page.Entries, event.FeedItem{Seq: seq, Type: typ, At: at, Object: v[feedHeaderLen:]})
		if len(page.Entries) == limit {
			page.HasMore = seq < last
			break
		}
	}
	return page, true
}

// ErrFeedGap reports a feed entry missing below the durable end: this
// node's store lacks entries its log has (see the package doc).
var ErrFeedGap = errors.New("actors: feed entry missing")

// readFeedPage reads the page c asks for, through the durable end last,
// from the store. Entries older than event.FeedRetention count as gone
// whether or not the trim has deleted them yet.
func (s *System) readFeedPage(eventID string, c event.ReadFeed, last uint64) (event.FeedPage, error) {
	page := event.FeedPage{Last: last, Next: c.After}
	horizon := s.cfg.Now().Add(-event.FeedRetention)
	prefix := feedPrefixOf(eventID)
	start := c.After
	if !c.From {
		// From the oldest entry kept.
		start = last
		err := s.store.ScanRange(prefix, nil, FeedKey(eventID, last), func(key, v []byte) error {
			it, err := decodeFeed(key[len(prefix):], v)
			if err != nil {
				return err
			}
			if !it.At.Before(horizon) {
				start = it.Seq - 1
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
	err := s.store.ScanRange(prefix, FeedKey(eventID, start), FeedKey(eventID, last), func(key, v []byte) error {
		it, err := decodeFeed(key[len(prefix):], v)
		if err != nil {
			return err
		}
		if seen == 0 && (it.Seq != expect || it.At.Before(horizon)) {
			// The entry after the position is gone (or as good as
			// gone): the reader missed what the trim took.
			expired = true
			return errStopScan
		}
		if it.Seq != expect {
			return fmt.Errorf("%w: %s seq %d (next is %d)", ErrFeedGap, eventID, expect, it.Seq)
		}
		seen++
		expect++
		page.Next = it.Seq
		if want(it.Type) {
			it.Object = append([]byte(nil), it.Object...)
			page.Entries = append(page.Entries, it)
			if len(page.Entries) == limit {
				full = true
				page.HasMore = it.Seq < last
				return errStopScan
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return page, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if expired || seen == 0 {
		return event.FeedPage{Last: last, Next: c.After, Expired: true}, nil
	}
	if !full && expect != last+1 {
		return page, fmt.Errorf("%w: %w: %s seq %d", ErrUnavailable, ErrFeedGap, eventID, expect)
	}
	return page, nil
}

// feedTrimBatch bounds the deletions of one commit of TrimFeeds.
const feedTrimBatch = 10_000

// TrimFeeds deletes the feed entries older than event.FeedRetention of
// every event this node knows, and answers how many. Entries of an event
// are in time order, so each event's scan stops at its first entry kept.
func (s *System) TrimFeeds() (int, error) {
	// Close waits for s.wg: a trim it did not wait for would write to a
	// closed store.
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return 0, nil
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	horizon := s.cfg.Now().Add(-event.FeedRetention)
	s.idx.mu.RLock()
	ids := make([]string, 0, len(s.idx.unit))
	for id := range s.idx.unit {
		ids = append(ids, id)
	}
	s.idx.mu.RUnlock()
	n := 0
	for _, id := range ids {
		for {
			prefix := feedPrefixOf(id)
			var keys [][]byte
			err := s.store.Scan(prefix, func(key, v []byte) error {
				if len(v) >= feedHeaderLen && !time.Unix(0, int64(binary.BigEndian.Uint64(v[2:10]))).Before(horizon) {
					return errStopScan
				}
				keys = append(keys, append([]byte(nil), key...))
				if len(keys) == feedTrimBatch {
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
			b := s.store.NewBatch()
			for _, k := range keys {
				b.Delete(k)
			}
			err = s.store.Commit(b)
			b.Close()
			if err != nil {
				return n, fmt.Errorf("actors: trim feed of %s: %w", id, err)
			}
			n += len(keys)
			if len(keys) < feedTrimBatch {
				break
			}
		}
	}
	return n, nil
}

// errStopScan ends a bounded scan early.
var errStopScan = errors.New("actors: scan bound reached")
