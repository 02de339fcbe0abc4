package actors

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"ticketd/event"
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
	stats struct{ taken, built uint64 }
}

// Preload builds the state of event id ahead of its activation here, or
// catches up the one built before with the records written since. It
// does nothing for an event with an actor here. It answers the seq of the
// last record the state holds.
func (s *System) Preload(ctx context.Context, id string) (uint64, error) {
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
		last, gap, err := s.replayAfter(w.m, id, w.last, ^uint64(0), newPreloadPacer().yield)
		if err != nil || gap {
			w = nil // built anew below
		} else {
			w.last = last
		}
	}
	if w == nil {
		m := event.NewMachine(id, s.cfg.Event, s.cfg.IDs)
		exit := s.loadGC.enter(s.cfg.LoadGCPercent)
		pace := newPreloadPacer()
		var st restoreStats
		from, last, gap, err := s.restore(m, id, ^uint64(0), pace.yield, &st)
		exit()
		if err != nil {
			return 0, err
		}
		if st.read+st.decode+st.replay >= slowLoad {
			s.cfg.Logger.Info("event preloaded", "event", id, "snapshot_seq", from, "snapshot_bytes", st.snapBytes,
				"replayed", last-from, "read_ms", st.read.Milliseconds(), "decode_ms", st.decode.Milliseconds(),
				"replay_ms", st.replay.Milliseconds(), "pauses", pace.pauses)
		}
		if gap {
			// A gap is the load's to settle (it truncates what follows).
			return 0, fmt.Errorf("actors: preload of %s: the log has a gap after %d", id, last)
		}
		w = &preloaded{m: m, from: from, last: last}
		p.mu.Lock()
		p.stats.built++
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
// meanwhile, and in a cluster on few cores the owner, the taker and
// their replicas share them. Built at full speed (the snapshot's parts
// decoded on every core), the chaos run's hot event (a 100-230 MB
// snapshot read and decoded in 4-14 s) took the cores from the owner,
// whose writes then stopped for up to 1.2 s during a planned move's
// preload (bench/results/20261129-moves2.md). So a preload reads the
// snapshot, decodes it in order and replays the log paced by a duty
// cycle: preloadSlice of work, then preloadPause asleep, whoever else
// runs (the owner is another process: the snapshot worker's pacer, which
// pauses only for this process's own asks, cannot see it): at most half
// a core, where it took both. It takes about twice as long as on one
// core alone; a planned move waits for it (cluster/routing preloadBound,
// LeaveWait: the chaos run's 231 MB preload took 14-25 s at full speed).
const (
	preloadSlice = 2 * time.Millisecond
	preloadPause = 2 * time.Millisecond
)

// preloadPacer is the duty cycle of a preload; its yield is called every
// few hundred records and between the snapshot's chunks.
type preloadPacer struct {
	start  time.Time // of the current slice
	pauses int
}

func newPreloadPacer() *preloadPacer { return &preloadPacer{start: time.Now()} }

func (p *preloadPacer) yield() {
	runtime.Gosched()
	if time.Since(p.start) < preloadSlice {
		return
	}
	time.Sleep(preloadPause)
	p.pauses++
	p.start = time.Now()
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
