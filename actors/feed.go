package actors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	json "github.com/goccy/go-json"

	"ticketd/actors/feed"
	"ticketd/ask"
	"ticketd/event"
)

// feedSpanHeaderMax bounds the header feed.AppendSpan writes before a
// span, in bytes (version, type, time, a uvarint count).
const feedSpanHeaderMax = 2 + 8 + binary.MaxVarintLen64

// writeFeed puts the feed entries fes of the change ch just applied into
// the open batch: they are the last len(fes) seqs of the machine's feed.
// A change with a feed span (a batch of door scans: event.AppendFeedSpan)
// writes one record for all its entries, rendered by their readers.
func (a *eventActor) writeFeed(ch event.Change, fes []event.FeedEntry) {
	first := a.m.FeedSeq() - uint64(len(fes)) + 1
	if event.HasFeedSpan(ch) {
		e := fes[0]
		// A value of its own: the ring keeps it (the batch copies it).
		// Made at its size (the span's, and its header's at most
		// feedSpanHeaderMax): never grown by a copy.
		v := feed.AppendSpan(make([]byte, 0, feedSpanHeaderMax+a.m.FeedSpanLen(ch)), event.FeedTypeCode(e.Type), e.At, len(fes), nil)
		v, ok := a.m.AppendFeedSpan(v, ch)
		if !ok {
			panic(fmt.Sprintf("actors: %s of %s has no feed span", ch.ChangeKind(), a.id))
		}
		a.com.put(feed.Key(a.id, a.m.FeedSeq()), v)
		a.ring.PutSpan(first, len(fes), v)
		a.com.afterDurable(func() { a.feedDurable(first + uint64(len(fes)) - 1) })
		return
	}
	for i, e := range fes {
		obj, ok := a.m.FeedObject(e)
		if !ok {
			// The core produced an entry about no record: a bug.
			panic(fmt.Sprintf("actors: feed entry %s %s of %s names no record", e.Type, e.ID, a.id))
		}
		b, err := json.Marshal(obj)
		if err != nil {
			panic(fmt.Sprintf("actors: encode feed object of %s: %v", a.id, err))
		}
		// A value of its own: the ring keeps it (the batch copies it).
		v := feed.AppendValue(make([]byte, 0, feed.ValueLen(len(b))), event.FeedTypeCode(e.Type), e.At, b)
		a.com.put(feed.Key(a.id, first+uint64(i)), v)
		a.ring.Put(first+uint64(i), v)
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
//
// The lingering ends on a tick shared by every follower (feedTick: the
// next multiple of FeedLinger of the clock), not FeedLinger after each
// one came: the followers of an event are answered together, through the
// same durable end, so they come back at the same position and the next
// tick answers them one page, read and made into its wire form once
// (answerFeeds), where each lingering on its own clock asked for a page
// of its own.
const FeedLinger = 100 * time.Millisecond

// feedTick is when a long poll that came at now has lingered enough: the
// next tick of FeedLinger (within FeedLinger of now).
func feedTick(now time.Time) time.Time { return now.Truncate(FeedLinger).Add(FeedLinger) }

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
	var answer []feedWaiter
	for _, w := range a.feedWaits {
		if w.after < pos && (!now.Before(w.ready) || w.full(pos)) {
			answer = append(answer, w)
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
	a.answerFeeds(answer, pos)
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
	now := time.Now()
	w := feedWaiter{id: a.feedWaitID, to: to, cmd: c, after: after, ready: feedTick(now)}
	if w.after < a.feedEnd && w.full(a.feedEnd) {
		a.answerFeed(to, c, a.feedEnd)
		return
	}
	if w.after < a.feedEnd {
		w.armed = true
		a.timers.SendOnce(w.ready.Sub(now), ctx.Self(), &feedReady{id: w.id})
	}
	a.feedWaits = append(a.feedWaits, w)
	a.timers.SendOnce(c.Wait, ctx.Self(), &feedTimeout{id: w.id})
}

// feedLingered answers a waiter that has lingered enough, when the feed
// has passed its position, and with it every other waiter the feed has
// passed whose tick has come (feedTick): one answerFeeds for all, their
// later feedReady finding nothing to do.
func (a *eventActor) feedLingered(id uint64) {
	now := time.Now()
	kept := a.feedWaits[:0]
	var answer []feedWaiter
	for _, w := range a.feedWaits {
		if w.after < a.feedEnd && (w.id == id || !now.Before(w.ready)) {
			answer = append(answer, w)
			continue
		}
		kept = append(kept, w)
	}
	clear(a.feedWaits[len(kept):])
	a.feedWaits = kept
	a.answerFeeds(answer, a.feedEnd)
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
	a.answerFeeds(a.feedWaits, a.feedEnd)
	a.feedWaits = nil
}

// answerFeed reads the page of c through the durable end last off the
// actor (a store read must not hold up the event's writes) and sends it.
func (a *eventActor) answerFeed(to *actor.PID, c event.ReadFeed, last uint64) {
	if to == nil {
		return
	}
	a.answerFeeds([]feedWaiter{{to: to, cmd: c}}, last)
}

// answerFeeds answers the waiters ws a commit passed, through the durable
// end last: one goroutine reads their pages, one after another (a
// commit wakes every follower parked on the event; a goroutine each is
// churn for nothing, the pages come from the same ring).
func (a *eventActor) answerFeeds(ws []feedWaiter, last uint64) {
	if len(ws) == 0 {
		return
	}
	s, id, ring := a.sys, a.id, a.ring
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		horizon := s.cfg.Now().Add(-event.FeedRetention)
		// The pages made, one per distinct read (few: followers come
		// back where the last answer left them).
		type made struct {
			cmd  event.ReadFeed
			page event.FeedPage
			err  error
		}
		var pages []made
		for _, w := range ws {
			if w.to == nil {
				continue
			}
			// Followers that read from the same position get the same
			// page (it is never changed once made): made once.
			k := slices.IndexFunc(pages, func(m made) bool { return sameFeedRead(m.cmd, w.cmd) })
			if k < 0 {
				page, ok := ring.Page(w.cmd, last, horizon)
				var err error
				if !ok {
					page, err = feed.ReadPage(s.store, id, w.cmd, last, horizon, ask.ErrUnavailable)
				} else if len(ws) > 1 && page.Memo() == nil {
					// Other followers may get it too: their
					// answers' wire form is made once (the entries
					// from the ring carry their renderings).
					page = page.WithMemo(new(event.FeedPageMemo))
				}
				k = len(pages)
				pages = append(pages, made{w.cmd, page, err})
			}
			s.as.Root.Send(w.to, &response{result: pages[k].page, err: pages[k].err})
		}
	}()
}

// sameFeedRead reports whether a and b read the same page (their waits
// aside); a types filter is never taken as the same.
func sameFeedRead(a, b event.ReadFeed) bool {
	return a.After == b.After && a.From == b.From && a.Limit == b.Limit && len(a.Types) == 0 && len(b.Types) == 0
}

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
	ids := s.idx.All()
	return feed.Trim(s.store, ids, horizon)
}

// errStopScan ends a bounded scan early.
var errStopScan = errors.New("actors: scan bound reached")
