package routing

import (
	"context"
	"sync"
	"time"

	"ticketd/cluster/node"
	"ticketd/internal/pace"
)

// Preloading before a planned move. When the leaders' spreading moves a
// shard to this node (balance, then handOver), its events used to load
// here after the giver had stopped serving them: a big event's snapshot
// read, decode and replay (8-15 s for the chaos run's hot event, 86-115
// MB of snapshot) were a pause of its writes that nothing forced. Now the
// first handOver of a shard starts building its events' states here
// (actors.System.Preload) and is refused with errPreloading; the
// balancer asks again each round (balanceEvery) while its plan stands,
// and once the states are built
// (within preloadFresh) the handover catches them up with the records
// written since and asks the giver: the taker's actors start from those
// states and replay only the last records (the claim's fence still
// decides: a state built ahead is a prefix of the event's log). The
// events' change feeds are fetched with them (PrefetchFeed: the feed
// stream's entries and the log's so far), so the claim imports only the
// entries of the log's messages written since.
const (
	// preloadFresh is how long a shard's preload serves its handover.
	preloadFresh = 30 * time.Second
	// preloadBound bounds one shard's preload; what is not built by then
	// loads after the move, as before. A leaving node waits as long for
	// a taker that progresses.
	preloadBound = LeaveMax
	// catchUpBound bounds the catch-up a handover makes before it asks.
	catchUpBound = 5 * time.Second
	// preloadWorkers is how many of a shard's events build at a time.
	preloadWorkers = 2
)

type preloader struct {
	mu      sync.Mutex
	running map[int]bool
	done    map[int]time.Time
	// progress counts, per shard, the work of its preloads here (a
	// leaving node waits while it grows: leave.go).
	progress map[int]*pace.Progress
}

// progressOf is shard's progress counter.
func (p *preloader) progressOf(shard int) *pace.Progress {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.progress == nil {
		p.progress = map[int]*pace.Progress{}
	}
	pr := p.progress[shard]
	if pr == nil {
		pr = &pace.Progress{}
		p.progress[shard] = pr
	}
	return pr
}

// preloadFor readies shard's move to this node: nil once its events were
// built lately (caught up now), errPreloading while they are built (a
// build is started if none runs). A router not serving events has
// nothing to build.
func (r *Router) preloadFor(shard int) error {
	r.mu.Lock()
	sys := r.sys
	r.mu.Unlock()
	if sys == nil || r.ctx == nil {
		return nil
	}
	p := &r.pre
	p.mu.Lock()
	if p.running == nil {
		p.running, p.done = map[int]bool{}, map[int]time.Time{}
	}
	if p.running[shard] {
		p.mu.Unlock()
		return node.ErrPreloading
	}
	if at, ok := p.done[shard]; ok && time.Since(at) < preloadFresh {
		p.running[shard] = true // the catch-up, below
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(r.ctx, catchUpBound)
		r.preload(ctx, sys, shard)
		cancel()
		p.mu.Lock()
		delete(p.running, shard)
		delete(p.done, shard) // a refused move builds afresh next time
		p.mu.Unlock()
		return nil
	}
	p.running[shard] = true
	p.mu.Unlock()
	r.wg.Go(func() {
		ctx, cancel := context.WithTimeout(r.ctx, preloadBound)
		start := time.Now()
		n := r.preload(ctx, sys, shard)
		cancel()
		r.n.Config().Logger.Info("cluster: events preloaded ahead of a move", "stream", node.StreamName(shard), "events", n,
			"ms", time.Since(start).Milliseconds())
		p.mu.Lock()
		delete(p.running, shard)
		p.done[shard] = time.Now()
		p.mu.Unlock()
	})
	return node.ErrPreloading
}

// preload builds (or catches up) the states of shard's events here and
// answers how many it built; an event it fails stays to load after the
// move.
func (r *Router) preload(ctx context.Context, sys Actors, shard int) int {
	ids, err := r.shardEvents(shard)
	if err != nil {
		r.n.Config().Logger.Warn("cluster: list the events to preload", "stream", node.StreamName(shard), "err", err)
		return 0
	}
	progress := r.pre.progressOf(shard)
	next := make(chan string)
	var mu sync.Mutex
	built := 0
	var wg sync.WaitGroup
	for range preloadWorkers {
		wg.Go(func() {
			for id := range next {
				if _, err := sys.Preload(ctx, id, progress); err != nil {
					if ctx.Err() == nil {
						r.n.Config().Logger.Debug("cluster: preload", "event", id, "err", err)
					}
					continue
				}
				if r.PrefetchFeed != nil && ctx.Err() == nil {
					// Its claim imports what this leaves out.
					if err := r.PrefetchFeed(ctx, id, progress); err != nil {
						r.n.Config().Logger.Debug("cluster: prefetch the feed", "event", id, "err", err)
					}
				}
				mu.Lock()
				built++
				mu.Unlock()
			}
		})
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		next <- id
	}
	close(next)
	wg.Wait()
	return built
}

// dropPreloaded drops the states built for shard's move (it was refused).
func (r *Router) dropPreloaded(shard int) {
	r.mu.Lock()
	sys := r.sys
	r.mu.Unlock()
	if sys != nil {
		sys.DropPreloaded(func(id string) bool { return r.n.Shard(id) == shard })
	}
}
