package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/event"
)

// snapshotGrowthDiv sets the size rule of snapshots: an event is snapshotted
// once the changes since its last snapshot reach max(SnapshotEvery,
// covered/snapshotGrowthDiv), where covered is the seq of that snapshot.
// Building a snapshot costs about the size of the state, which grows at
// most with covered, so the background work per change stays O(1)
// amortised for huge events; recovery replays at most about half of an
// event's records. The build takes a core while it runs (a flash sale
// loses throughput meanwhile), so the interval doubles with the event
// rather than growing by half, which halves the background work (with
// covered/2, a drop of 400k orders lost up to a fifth of its throughput to
// snapshot builds).
const snapshotGrowthDiv = 1

// snapshotDue is the number of changes after a snapshot at seq covered
// that makes the next one due; tailMax, when above 0, bounds it (but
// never below every): see Config.SnapshotTailMax.
func snapshotDue(every, tailMax int, covered uint64) uint64 {
	due := max(uint64(every), covered/snapshotGrowthDiv)
	if tailMax > 0 {
		due = min(due, max(uint64(every), uint64(tailMax)))
	}
	return due
}

// snapshotQueueMax bounds the events waiting for a snapshot. A request
// beyond it is refused and the actor asks again on its next change.
const snapshotQueueMax = 64

// defaultLoadGCPercent is the GOGC in force while an actor loads a state
// (see loadGC). A load keeps nearly all it allocates, so collecting during
// it mostly marks what stays: a replay of 2,000,000 changes took 3.8 s at
// GOGC 100, 2.3 s at 400 and 1.5 s at 1600 in a fresh service. The heap a
// load can reach is what the load allocates (about two to three times the
// state it builds), whatever the percent; a snapshot load gained nothing.
const defaultLoadGCPercent = 1600

// snapshotter takes event snapshots off the actors. An actor only posts
// "snapshot wanted at seq S" once S is durable; one worker goroutine (at
// most one, started on demand, so a snapshot never takes both cores)
// rebuilds the state at S from the newest snapshot and the log records up
// to S in a machine of its own, encodes it and saves it with SaveAndTrim.
// Since the machine is deterministic, snapshot(S) = apply(snapshot(prev),
// log(prev..S]) is the state the actor had at S, and the actor's turn never
// holds an encode.
//
// The zero value is ready. Its methods are safe for concurrent use.
type snapshotter struct {
	mu      sync.Mutex
	queue   []string          // event ids in request order
	wanted  map[string]uint64 // event id -> newest seq wanted
	running bool              // the worker goroutine is live

	// beforeEncode, when set by a test, runs in the worker after the state
	// is rebuilt and before it is encoded: a slow encode.
	beforeEncode func(eventID string, seq uint64)
}

// want queues a snapshot of eventID at seq, which must be durable. It
// answers false when the queue is full or the System is closing. A request
// for an event already queued only moves its seq forward.
func (w *snapshotter) want(s *System, eventID string, seq uint64) bool {
	if s.isClosing() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wanted == nil {
		w.wanted = map[string]uint64{}
	}
	if old, ok := w.wanted[eventID]; ok {
		w.wanted[eventID] = max(old, seq)
		return true
	}
	if len(w.queue) >= snapshotQueueMax {
		return false
	}
	w.queue = append(w.queue, eventID)
	w.wanted[eventID] = seq
	s.metrics.SnapshotsPending.Add(1)
	if !w.running {
		w.running = true
		// System.Close waits for s.wg after every actor has stopped, that
		// is after the last want.
		s.wg.Add(1)
		go w.run(s)
	}
	return true
}

// SnapshotRequester is a SnapshotStore that asks for snapshots on its own:
// cluster mode's, whose trimmer asks for one of an event that holds its
// shard's log back (it changes too little to be snapshotted at the
// actor's pace). Open hands it WantSnapshot.
type SnapshotRequester interface {
	RequestSnapshotsWith(want func(eventID string, seq uint64) bool)
}

// WantSnapshot queues a snapshot of eventID at seq, which must be durable
// (the event's actor need not be active: the snapshotter rebuilds the
// state from the store). It answers false when the queue is full or the
// System is closing; a snapshot at seq or newer that exists already is
// not taken again.
func (s *System) WantSnapshot(eventID string, seq uint64) bool {
	return s.snapper.want(s, eventID, seq)
}

// run takes the queued snapshots one at a time and ends when none is
// left. Once the System is closing it ends after the snapshot it is
// building and drops the rest: snapshots only bound recovery, and Close
// should not wait for a queue of big states.
func (w *snapshotter) run(s *System) {
	defer s.wg.Done()
	for {
		closing := s.isClosing()
		w.mu.Lock()
		if len(w.queue) == 0 || closing {
			if n := len(w.queue); n > 0 {
				s.cfg.Logger.Info("snapshots dropped at close", "events", n)
				s.metrics.SnapshotsPending.Add(-int64(n))
			}
			w.queue, w.wanted = nil, nil
			w.running = false
			w.mu.Unlock()
			return
		}
		id := w.queue[0]
		w.queue[0] = ""
		w.queue = w.queue[1:]
		seq := w.wanted[id]
		delete(w.wanted, id)
		hook := w.beforeEncode
		w.mu.Unlock()

		saved, err := w.take(s, id, seq, hook)
		s.metrics.SnapshotsPending.Add(-1)
		switch {
		case err != nil:
			// Nothing is lost: the log still holds every record after the
			// older snapshot. The actor asks again after more changes.
			s.cfg.Logger.Error("snapshot failed", "event", id, "seq", seq, "err", err)
		case saved:
			s.metrics.Snapshots.Add(1)
		}
	}
}

// take builds the state of eventID at seq and saves it as a snapshot. It
// answers false without saving when a snapshot at seq or newer exists.
func (w *snapshotter) take(s *System, id string, seq uint64, hook func(string, uint64)) (bool, error) {
	// No loadGC section here: it showed no gain in the latency of the
	// actors meanwhile (BenchmarkAskLatencyDuringSnapshot), and a rebuild
	// runs long, beside live traffic whose garbage would pile up too.
	m := event.NewMachine(id, s.cfg.Event, s.cfg.IDs)
	// In order: the worker must never take both cores from the actors.
	bg := newPacer(s)
	var st restoreStats
	t0 := time.Now()
	from, last, gap, err := s.restore(m, id, seq, bg.yield, &st)
	if err != nil {
		return false, err
	}
	if from >= seq {
		return false, nil
	}
	if gap || last != seq {
		// seq was durable when it was asked for and the log is trimmed only
		// through a snapshot, so this is a broken store, not a race.
		return false, fmt.Errorf("actors: snapshot %s at %d: the log ends at %d", id, seq, last)
	}
	if hook != nil {
		hook(id, seq)
	}
	t1 := time.Now()
	state, err := event.EncodeState(m.State(), bg.yield)
	if err != nil {
		return false, fmt.Errorf("actors: snapshot %s at %d: encode: %w", id, seq, err)
	}
	m = nil // the state is garbage from here: let a GC during the save take it
	// The log is trimmed only through the older snapshot kept, so an
	// unreadable newest snapshot still has an older one and the records
	// after it; header, retention and trim share one atomic batch.
	t2 := time.Now()
	if _, err := s.snap.SaveAndTrim(id, seq, state); err != nil {
		return false, err
	}
	t3 := time.Now()
	level := slog.LevelDebug
	if t3.Sub(t0) >= 100*time.Millisecond {
		level = slog.LevelInfo
	}
	s.cfg.Logger.Log(context.Background(), level, "snapshot saved", "event", id, "seq", seq, "from", from, "bytes", len(state),
		"ms", t3.Sub(t0).Milliseconds(), "read_ms", st.read.Milliseconds(), "decode_ms", st.decode.Milliseconds(),
		"replay_ms", st.replay.Milliseconds(), "encode_ms", t2.Sub(t1).Milliseconds(), "save_ms", t3.Sub(t2).Milliseconds(),
		"pauses", bg.pauses)
	return true, nil
}

// isClosing reports whether Close has begun.
func (s *System) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// restore loads the newest snapshot of id into m and applies the log
// records after it, through seq through at most. It answers the seq of the
// snapshot (0 without one), the seq of the last record applied, and whether
// replay stopped at a gap in the log (a record missing before the end).
// It does not change the store. parallel reads the snapshot and decodes it
// on all cores (an actor's load: the event answers nothing until it is
// done). With a yield hook (the snapshot worker's, see pacer) it
// restores on one core in the background instead, calling yield every few
// hundred records.
func (s *System) restore(m *event.Machine, id string, through uint64, yield func(), st *restoreStats) (from, last uint64, gap bool, err error) {
	run, readers := event.Runner(runParallel), runtime.GOMAXPROCS(0)
	if yield != nil {
		run, readers = event.RunInOrder, 1
	}
	if st == nil {
		st = &restoreStats{}
	}
	t0 := time.Now()
	var snap []byte
	var ok bool
	if ps, paced := s.snap.(PacedSnapshotStore); paced && yield != nil {
		from, snap, ok, err = ps.LoadNewestPaced(id, yield)
	} else {
		from, snap, ok, err = s.snap.LoadNewestWith(id, readers)
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("actors: load snapshot of %s: %w", id, err)
	}
	t1 := time.Now()
	st.read, st.snapBytes = t1.Sub(t0), len(snap)
	if ok {
		// LoadNewest hands over a fresh buffer: decode it in place.
		state, err := event.DecodeState(snap, event.DecodeOptions{Owned: true, Run: run, Yield: yield})
		if err != nil {
			return 0, 0, false, fmt.Errorf("actors: decode snapshot %d of %s: %w", from, id, err)
		}
		m.Restore(state)
	}
	t2 := time.Now()
	st.decode = t2.Sub(t1)
	defer func() { st.replay = time.Since(t2) }()
	if from >= through {
		return from, from, false, nil
	}
	// The log must continue right after the snapshot: a gap would be
	// silent data loss, so it is an error instead.
	if first, err := s.log.FirstSeq(id); err != nil {
		return 0, 0, false, fmt.Errorf("actors: first seq of %s: %w", id, err)
	} else if first != 0 && first > from+1 {
		return 0, 0, false, fmt.Errorf("actors: log of %s starts at %d, after snapshot %d: records are missing", id, first, from)
	}
	// Room for the records to come, so a long replay does not rehash.
	if end, err := s.log.LastSeq(id); err == nil && end > from {
		m.Reserve(int(min(end, through) - from))
	}
	last, gap, err = s.replayAfter(m, id, from, through, yield)
	if err != nil {
		return 0, 0, false, err
	}
	return from, last, gap, nil
}

// replayAfter applies to m the records of id after seq from, through
// through at most: the seq of the last one applied, and whether the log
// skipped a seq (it stops there).
func (s *System) replayAfter(m *event.Machine, id string, from, through uint64, yield func()) (last uint64, gap bool, err error) {
	last = from
	err = s.log.Replay(id, from, func(seq uint64, rec []byte) error {
		if yield != nil && seq%backgroundEvery == 0 {
			yield()
		}
		if seq != last+1 {
			gap = true
			return errStopReplay
		}
		// ApplyRecord is Apply(UnmarshalChange(rec)) without the Change.
		if err := m.ApplyRecord(rec); err != nil {
			return fmt.Errorf("record %d: %w", seq, err)
		}
		last = seq
		if last == through {
			return errStopReplay
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopReplay) {
		return 0, false, fmt.Errorf("actors: replay %s: %w", id, err)
	}
	return last, gap, nil
}

// pacer keeps the snapshot worker's rebuild (decode, replay, encode) in
// the background; its yield is called every few hundred records.
//
// Every call puts the worker at the back of the global run queue
// (Gosched). A busy P looks there only when its own queue is empty or
// once in 61 turns, so the goroutines answering requests run first, and
// the rebuild holds a P for some hundred microseconds at a time instead
// of the 10 ms of Go's preemption (beside a saturating drop, the p99 of
// unrelated Developer API reads fell from about 25 to about 12 ms).
//
// That orders the work inside the process, not against the other
// processes on the cores, and the cores are the limit: on 2 cores a
// rebuild of a few seconds took ~0.5 core from a drop running at half its
// maximum, whose queue then grew to a p99 of 150-320 ms. So while
// requests are being served, the worker also pauses pacerPause after
// every pacerSlice of work: a rebuild takes at most a quarter of a core
// from live traffic, and takes four times as long. An idle service
// (no Ask during the slice) rebuilds at full speed.
type pacer struct {
	sys    *System
	start  time.Time // of the current slice
	asks   uint64    // sys.asks at its start
	pauses int
	// now and sleep are the clock (time.Now and time.Sleep; tests step
	// their own).
	now   func() time.Time
	sleep func(time.Duration)
}

const (
	pacerSlice = 2 * time.Millisecond
	pacerPause = 6 * time.Millisecond
)

func newPacer(s *System) *pacer {
	return &pacer{sys: s, start: time.Now(), asks: s.asks.Load(), now: time.Now, sleep: time.Sleep}
}

func (p *pacer) yield() {
	runtime.Gosched()
	if p.now().Sub(p.start) < pacerSlice {
		return
	}
	if p.sys.asks.Load() != p.asks {
		p.sleep(pacerPause)
		p.pauses++
	}
	p.start, p.asks = p.now(), p.sys.asks.Load()
}

// backgroundEvery is how many replayed records pass between two yields
// (as event's paceEvery).
const backgroundEvery = 256

// restoreStats is how long the parts of a restore took, for the log.
type restoreStats struct {
	read, decode, replay time.Duration
	snapBytes            int
}

// loadGC raises the garbage collector's target (GOGC) while actors load
// their states: a load allocates a whole state at once, all of it live, so
// collections during it find little to free and only slow it down
// (BenchmarkLoad). GOGC is process-wide, so this is a reference-counted
// section: the first to enter raises it, the last to leave restores it.
type loadGC struct {
	mu     sync.Mutex
	n      int
	prev   int // GOGC before the section
	raised int // GOGC set by the section; 0 when left alone
}

// enter starts a loading section with GOGC percent (0: the default, below
// 0: leave GOGC alone) and returns the function that ends it.
func (g *loadGC) enter(percent int) (exit func()) {
	if percent < 0 {
		return func() {}
	}
	if percent == 0 {
		percent = defaultLoadGCPercent
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		g.prev = debug.SetGCPercent(percent)
		g.raised = percent
		if g.prev < 0 || g.prev >= percent {
			// GC off or already laxer (GOGC in the environment): keep it.
			debug.SetGCPercent(g.prev)
			g.raised = 0
		}
	}
	g.n++
	return g.exit
}

func (g *loadGC) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n > 0 || g.raised == 0 {
		return
	}
	// Another System in the process may have changed GOGC since (tests
	// open several): restore only what this section set.
	if cur := debug.SetGCPercent(g.prev); cur != g.raised {
		debug.SetGCPercent(cur)
	}
	g.raised = 0
}

// runParallel is the event.Runner of actor loads: it runs the tasks on up
// to GOMAXPROCS goroutines, taking them in order (the event package lists
// the largest first). An event that is loading answers nothing, so its
// load may take every core for the moment it lasts.
func runParallel(tasks ...func()) {
	workers := min(runtime.GOMAXPROCS(0), len(tasks))
	if workers <= 1 {
		event.RunInOrder(tasks...)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(tasks)); i = next.Add(1) - 1 {
				tasks[i]()
			}
		})
	}
	wg.Wait()
}
