package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"ticketd/actors"
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
	// maxActivate bounds the events activated at once per shard gained;
	// the rest wait for their first request.
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
func (r *Router) activate(sys *actors.System, shard int, gen uint64) {
	start := time.Now()
	r.activating[shard].Add(1)
	defer r.activating[shard].Add(-1)
	var ids []string
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		var err error
		if ids, err = r.shardEvents(shard); err == nil {
			break
		}
		if !r.still(shard, gen) || time.Since(start) > activateFor || r.stopped(wait) {
			r.n.cfg.Logger.Warn("cluster: list the events of a shard gained", "stream", streamName(shard), "err", err)
			return
		}
	}
	if len(ids) > maxActivate {
		r.n.cfg.Logger.Warn("cluster: shard gained with more events than are activated at once; the rest wait for a request",
			"stream", streamName(shard), "events", len(ids), "activated", maxActivate)
		ids = ids[:maxActivate]
	}
	next := make(chan string)
	var wg sync.WaitGroup
	var active, imported int64
	var mu sync.Mutex
	for range activateWorkers {
		wg.Go(func() {
			for id := range next {
				ok, n := r.activateOne(sys, shard, gen, id)
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
		r.n.cfg.Logger.Info("cluster: shard gained; events activated", "stream", streamName(shard),
			"events", len(ids), "activated", active, "entries_imported", imported, "ms", time.Since(start).Milliseconds())
	}
}

// activateOne activates one event (a read through the local actor system:
// the actor loads, claims and expires on its start) and imports what it
// owes; it says whether the event answered and how many entries came.
func (r *Router) activateOne(sys *actors.System, shard int, gen uint64, id string) (bool, int) {
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
			r.n.cfg.Logger.Warn("cluster: activate an event of a shard gained", "event", id, "err", err)
			return false, 0
		}
	}
	if r.owed == nil {
		return true, 0
	}
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		ctx, cancel := context.WithTimeout(r.ctx, activateFor)
		n, err := r.owed.take(ctx, id)
		cancel()
		if err == nil {
			return true, n
		}
		if !r.still(shard, gen) || time.Since(start) > activateFor || r.stopped(wait) {
			r.n.cfg.Logger.Warn("cluster: import what an event owes", "event", id, "err", err)
			return true, 0
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
		ids, err = r.owed.log.shardLog(shard).eventIDs()
	} else {
		ctx, cancel := context.WithTimeout(r.ctx, activateFor)
		ids, err = shardLogEvents(ctx, r.n, shard)
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
	err = sys.Store().Scan([]byte(evIndexPrefix), func(k, _ []byte) error {
		if id := string(k[len(evIndexPrefix):]); id != "" && !seen[id] && r.n.shard(id) == shard {
			ids = append(ids, id)
		}
		return nil
	})
	return ids, err
}

// evIndexPrefix is the event index's key prefix (actors' "ev/").
const evIndexPrefix = "ev/"
