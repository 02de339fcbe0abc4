package actors

import (
	"context"
	"fmt"
	"sync"
	"time"

	"ticketd/event"
	"ticketd/internal/pace"
)

// Preloaded states. A node about to take events over in a planned move
// (cluster mode: the leaders' spreading hands a shard to a node) builds
// their states first, while the giver still serves them: the snapshot's
// read and decode and the replay, seconds for a big event, happen before
// the move instead of during the pause of its writes. The actor that
// starts on the event then takes the state, replays only the records
// written since, and claims the event as any load does (the claim's fence
// refuses it if another node claimed the event meanwhile: a preloaded
// state is a prefix of the event's log, never a state of its own). A
// preloaded state no actor takes within preloadTTL is dropped.
const preloadTTL = time.Minute

type preloaded struct {
	m          *event.Machine
	from, last uint64 // the snapshot it started from, the last record applied
	timer      *time.Timer
}

// preloads holds the states built ahead (System.preloads).
type preloads struct {
	mu    sync.Mutex
	warm  map[string]*preloaded
	busy  map[string]bool // being built or caught up
	stats struct {
		taken, built uint64
		asleep       time.Duration // the builds' pauses (tests)
	}
}

// Preload builds the state of event id ahead of its activation here, or
// catches up the one built before with the records written since, as
// background work (see preloadPacer), counting its steps in progress
// (nil: not counted). It does nothing for an event with an actor here.
// It answers the seq of the last record the state holds.
func (s *System) Preload(ctx context.Context, id string, progress *pace.Progress) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	_, active := s.slots[id]
	s.mu.Unlock()
	if active {
		return 0, nil
	}
	p := &s.preloads
	p.mu.Lock()
	if p.busy[id] {
		p.mu.Unlock()
		return 0, fmt.Errorf("actors: preload of %s under way", id)
	}
	if p.busy == nil {
		p.busy, p.warm = map[string]bool{}, map[string]*preloaded{}
	}
	w := p.warm[id]
	delete(p.warm, id)
	p.busy[id] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.busy, id)
		p.mu.Unlock()
	}()
	if w != nil {
		w.timer.Stop()
		last, gap, err := s.replayAfter(w.m, id, w.last, ^uint64(0), newPreloadPacer(progress).yield)
		if err != nil || gap {
			w = nil // built anew below
		} else {
			w.last = last
		}
	}
	if w == nil {
		m := event.NewMachine(id, s.cfg.Event, s.cfg.IDs)
		exit := s.loadGC.enter(s.cfg.LoadGCPercent)
		pacer := newPreloadPacer(progress)
		var st restoreStats
		from, last, gap, err := s.restore(m, id, ^uint64(0), pacer.yield, &st)
		exit()
		if err != nil {
			return 0, err
		}
		if st.read+st.decode+st.replay >= slowLoad {
			pauses, asleep := pacer.Pauses()
			s.cfg.Logger.Info("event preloaded", "event", id, "snapshot_seq", from, "snapshot_bytes", st.snapBytes,
				"replayed", last-from, "read_ms", st.read.Milliseconds(), "decode_ms", st.decode.Milliseconds(),
				"replay_ms", st.replay.Milliseconds(), "pauses", pauses, "asleep_ms", asleep.Milliseconds())
		}
		if gap {
			// A gap is the load's to settle (it truncates what follows).
			return 0, fmt.Errorf("actors: preload of %s: the log has a gap after %d", id, last)
		}
		w = &preloaded{m: m, from: from, last: last}
		_, asleep := pacer.Pauses()
		p.mu.Lock()
		p.stats.built++
		p.stats.asleep += asleep
		p.mu.Unlock()
	}
	p.mu.Lock()
	p.warm[id] = w
	w.timer = time.AfterFunc(preloadTTL, func() {
		p.mu.Lock()
		if p.warm[id] == w {
			delete(p.warm, id)
		}
		p.mu.Unlock()
	})
	p.mu.Unlock()
	return w.last, nil
}

// A preload is background work by design: the event's owner serves it
// meanwhile, and the taker serves events of its own. Built at full speed
// (the snapshot's parts decoded on every core), the chaos run's hot event
// (a 100-230 MB snapshot read and decoded in 4-14 s) took the cores from
// the owner beside it on a 2-core machine, whose writes then stopped for
// up to 1.2 s during a planned move's preload; paced by a fixed duty
// cycle (2 ms of work, 2 ms asleep) it took half a core even with the
// other idle, and a 1.2M-order event's preload (321 MB) and feed
// prefetch outlasted the leaving owner's wait (126 s:
// bench/results/20261129-moves2.md, run 9). So a preload reads the
// snapshot, decodes it in order (one core at most) and replays the log
// paced by this process's own load (package pace): at full speed while
// none of its goroutines waits for a core, pausing while they do (the
// taker's own events' requests, or a core taken by another process).
type preloadPacer struct {
	*pace.Pacer
	progress *pace.Progress
}

func newPreloadPacer(progress *pace.Progress) *preloadPacer {
	return &preloadPacer{Pacer: pace.New(), progress: progress}
}

// yield is called between the snapshot's chunks, every decode step and
// every backgroundEvery records replayed: each is a step of progress.
func (p *preloadPacer) yield() {
	p.progress.Step(1)
	p.Yield()
}

// takePreloaded hands the state preloaded for id, if any, to its actor.
func (s *System) takePreloaded(id string) *preloaded {
	p := &s.preloads
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.warm[id]
	if w == nil {
		return nil
	}
	w.timer.Stop()
	delete(p.warm, id)
	p.stats.taken++
	return w
}

// DropPreloaded drops the preloaded states of the events match accepts
// (a planned move refused: they would only hold memory until preloadTTL).
func (s *System) DropPreloaded(match func(eventID string) bool) {
	p := &s.preloads
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, w := range p.warm {
		if match(id) {
			w.timer.Stop()
			delete(p.warm, id)
		}
	}
}

// PreloadStats counts the states preloaded and those an actor took.
func (s *System) PreloadStats() (built, taken uint64) {
	p := &s.preloads
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.built, p.stats.taken
}
