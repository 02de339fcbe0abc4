package routing

import (
	"context"
	"errors"
	"sync"
	"time"

	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"
	"ticketd/persistence"

	"ticketd/event"
)

// Proactive activation: a node that comes to lead a shard (a node was
// lost, or the leaders were spread) activates the shard's events at once,
// rather than on their first request: each loads (snapshot and replay),
// claims the event (the previous owner is fenced from then on) and expires
// the holds that lapsed meanwhile (an actor's first act); then the entries
// its log still owes are imported (owed.take). The events of a shard are
// the event index's entries that hash to it (shardEvents).
const (
	// maxActivate bounds the events activated at once per shard gained
	// (Config.ActivateMax); the rest wait for their first request, whose
	// claim imports what they owe (see claimed).
	maxActivate = 10_000
	// activateWorkers is how many of a shard's events load at a time.
	activateWorkers = 4
	// activateFor bounds the tries of one event (its log or snapshot store
	// may still be electing a leader).
	activateFor = time.Minute
)

// still says whether this node leads shard since its gen-th change.
func (r *Router) still(shard int, gen uint64) bool {
	return r.gen[shard].Load() == gen && r.leads(shard)
}

// activate activates the events of shard while this node leads it, since
// its gen-th leadership change (a later change has its own activation).
func (r *Router) activate(sys Actors, shard int, gen uint64) {
	start := time.Now()
	r.activating[shard].Add(1)
	defer r.activating[shard].Add(-1)
	defer r.activated[shard].Store(gen)
	var ids []string
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		var err error
		if ids, err = r.shardEvents(shard); err == nil {
			break
		}
		if !r.still(shard, gen) || time.Since(start) > activateFor || r.stopped(wait) {
			r.n.Config().Logger.Warn("cluster: list the events of a shard gained", "stream", node.StreamName(shard), "err", err)
			r.listed(shard, gen, nil, true)
			return
		}
	}
	limit := maxActivate
	if r.n.Config().ActivateMax != 0 {
		limit = max(r.n.Config().ActivateMax, 0)
	}
	var rest []string
	if len(ids) > limit {
		r.n.Config().Logger.Warn("cluster: shard gained with more events than are activated at once; the rest wait for a request",
			"stream", node.StreamName(shard), "events", len(ids), "activated", limit)
		ids, rest = ids[:limit], ids[limit:]
	}
	if !r.listed(shard, gen, rest, false) {
		return
	}
	next := make(chan string)
	var wg sync.WaitGroup
	var active, imported int64
	var mu sync.Mutex
	for range activateWorkers {
		wg.Go(func() {
			for id := range next {
				ok, n := r.activateOne(sys, shard, gen, id)
				if !ok {
					r.deferTake(id, gen)
				}
				mu.Lock()
				if ok {
					active++
				}
				imported += int64(n)
				mu.Unlock()
			}
		})
	}
	for _, id := range ids {
		if !r.still(shard, gen) || r.stopped(0) {
			break
		}
		next <- id
	}
	close(next)
	wg.Wait()
	if len(ids) > 0 {
		r.n.Config().Logger.Info("cluster: shard gained; events activated", "stream", node.StreamName(shard),
			"events", len(ids), "activated", active, "entries_imported", imported, "ms", time.Since(start).Milliseconds())
	}
}

// activateOne activates one event (a read through the local actor system:
// the actor loads, claims and expires on its start) and imports what it
// owes; it says whether the event answered and how many entries came.
func (r *Router) activateOne(sys Actors, shard int, gen uint64, id string) (bool, int) {
	start := time.Now()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		ctx, cancel := context.WithTimeout(r.ctx, forwardTimeout)
		_, err := sys.Serve(ctx, id, event.GetEvent{}, "")
		cancel()
		var ee *event.Error
		if err == nil || errors.As(err, &ee) {
			break
		}
		if !r.still(shard, gen) || time.Since(start) > activateFor || r.stopped(wait) {
			r.n.Config().Logger.Warn("cluster: activate an event of a shard gained", "event", id, "err", err)
			return false, 0
		}
	}
	if r.owed == nil {
		return true, 0
	}
	return true, r.take(shard, gen, id, start)
}

// take imports what id owes (owed.take), trying again while this node
// still leads its shard since its gen-th change, for activateFor from
// start; it answers how many entries came.
func (r *Router) take(shard int, gen uint64, id string, start time.Time) int {
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		ctx, cancel := context.WithTimeout(r.ctx, activateFor)
		n, err := r.owed.Take(ctx, id)
		cancel()
		if err == nil {
			if r.still(shard, gen) {
				r.keysImported(id, gen) // the records too (keys.go)
			}
			return n
		}
		if !r.still(shard, gen) || time.Since(start) > activateFor || r.stopped(wait) {
			r.n.Config().Logger.Warn("cluster: import what an event owes", "event", id, "err", err)
			return 0
		}
	}
}

// Events a gain does not activate. What an event owes is imported once per
// gain of its shard (a second import could bring back an entry delivered
// since and not yet settled): by its activation, or, for an event beyond
// the activation's limit or whose activation failed, by its first claim
// here since (claimed). The claims are told by the log, which may claim
// before watchLeaders has seen the gain (JetStream names the leader first),
// so until the gain's activation has listed the shard's events, the claims
// are only noted (early) and the activation imports for those it does not
// activate itself.
type deferrals struct {
	mu sync.Mutex
	// deferred: event -> the gain (its shard's gen) after which its next
	// claim imports what it owes.
	deferred map[string]uint64
	// early: the events claimed while their shard's listing was pending.
	early map[string]struct{}
	// listed: per shard, whether the current gain's events were listed.
	listed []bool
	// every: per shard, the gain whose listing failed: each event's first
	// claim since imports (took: those that did).
	every []uint64
	took  map[string]struct{}
	// closed: the router is closing (no import starts).
	closed bool
}

// listed records the listing of shard's events after its gen-th change:
// the events activated import on their own; those of rest (not
// activated) already claimed import now, the others on their claim. When
// the listing failed (failed), every event claimed so far imports now,
// and every other on its first claim. It says whether the gain is still
// current.
func (r *Router) listed(shard int, gen uint64, rest []string, failed bool) bool {
	d := &r.defer_
	d.mu.Lock()
	if !r.still(shard, gen) {
		d.mu.Unlock()
		return false
	}
	d.listed[shard] = true
	var now []string
	if failed {
		d.every[shard] = gen
		for id := range d.early {
			if r.n.Shard(id) == shard {
				now = append(now, id)
				if d.took == nil {
					d.took = map[string]struct{}{}
				}
				d.took[id] = struct{}{}
			}
		}
	}
	for _, id := range rest {
		if _, ok := d.early[id]; ok {
			now = append(now, id)
			continue
		}
		if r.owed != nil {
			if d.deferred == nil {
				d.deferred = map[string]uint64{}
			}
			d.deferred[id] = gen
		}
	}
	for id := range d.early {
		if r.n.Shard(id) == shard {
			delete(d.early, id)
		}
	}
	d.mu.Unlock()
	if r.owed != nil && len(now) > 0 {
		r.wg.Go(func() {
			start := time.Now()
			for _, id := range now {
				r.take(shard, gen, id, start)
			}
		})
	}
	return true
}

// deferTake leaves what id owes to its next claim: its activation since
// its shard's gen-th change failed.
func (r *Router) deferTake(id string, gen uint64) {
	if r.owed == nil {
		return
	}
	d := &r.defer_
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.gen[r.n.Shard(id)].Load() != gen {
		return
	}
	if d.deferred == nil {
		d.deferred = map[string]uint64{}
	}
	d.deferred[id] = gen
}

// claimed is told of every claim this node makes (Log.onClaim): see
// deferrals.
func (r *Router) claimed(id string) {
	shard := r.n.Shard(id)
	if r.owed == nil || !r.leads(shard) {
		return
	}
	d := &r.defer_
	d.mu.Lock()
	gen := r.gen[shard].Load()
	if !d.listed[shard] {
		if d.early == nil {
			d.early = map[string]struct{}{}
		}
		d.early[id] = struct{}{}
		d.mu.Unlock()
		return
	}
	g, ok := d.deferred[id]
	if _, did := d.took[id]; !ok && d.every[shard] == gen && !did {
		if d.took == nil {
			d.took = map[string]struct{}{}
		}
		d.took[id] = struct{}{}
		g, ok = gen, true
	}
	if !ok || d.closed {
		d.mu.Unlock()
		return
	}
	delete(d.deferred, id)
	if g == gen {
		r.wg.Go(func() { r.take(shard, gen, id, time.Now()) })
	}
	d.mu.Unlock()
}

// closeDeferrals ends the imports started by claims: none starts after.
func (r *Router) closeDeferrals() {
	r.defer_.mu.Lock()
	r.defer_.closed = true
	r.defer_.mu.Unlock()
}

// lost forgets the deferrals of a shard this node no longer leads: its
// next gain lists its events again.
func (r *Router) lost(shard int) {
	d := &r.defer_
	d.mu.Lock()
	defer d.mu.Unlock()
	d.listed[shard] = false
	d.every[shard] = 0
	for id := range d.took {
		if r.n.Shard(id) == shard {
			delete(d.took, id)
		}
	}
	for id := range d.deferred {
		if r.n.Shard(id) == shard {
			delete(d.deferred, id)
		}
	}
	for id := range d.early {
		if r.n.Shard(id) == shard {
			delete(d.early, id)
		}
	}
}

// stopped waits d and says whether the router was closed meanwhile.
func (r *Router) stopped(d time.Duration) bool {
	if d == 0 {
		select {
		case <-r.stop:
			return true
		default:
			return false
		}
	}
	select {
	case <-r.stop:
		return true
	case <-time.After(d):
		return false
	}
}

// shardEvents lists the events of shard: those its log names, and the
// event index's "ev/" entries in the local store (every node keeps a copy)
// whose id hashes to it (an event whose records were all trimmed).
func (r *Router) shardEvents(shard int) ([]string, error) {
	var ids []string
	var err error
	if r.owed != nil {
		// The log's view of the shard: the read the replays then start from.
		ids, err = r.owed.Log.ShardLog(shard).EventIDs()
	} else {
		ctx, cancel := context.WithTimeout(r.ctx, activateFor)
		ids, err = eventlog.ShardLogEvents(ctx, r.n, shard)
		cancel()
	}
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	sys := r.sys
	r.mu.Unlock()
	if sys == nil {
		return ids, nil
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
	}
	err = sys.Store().Scan([]byte(persistence.PrefixEventIndex), func(k, _ []byte) error {
		if id := string(k[len(persistence.PrefixEventIndex):]); id != "" && !seen[id] && r.n.Shard(id) == shard {
			ids = append(ids, id)
		}
		return nil
	})
	return ids, err
}
