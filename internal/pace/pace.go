package pace

import (
	"math"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

const (
	// sliceTime is the work done between two yields that may pause.
	sliceTime = 2 * time.Millisecond
	// readEvery is how often the load is read (a histogram's read: a few
	// microseconds).
	readEvery = 10 * time.Millisecond
	// waitBusy: runnable goroutines waiting this long for a core, at the
	// waitQuantile, say the process's own work waits behind the
	// background work (or behind other processes on the cores).
	waitBusy     = time.Millisecond
	waitQuantile = 0.9
	// waitIdle: below this, nothing waits: the pause shrinks.
	waitIdle = 200 * time.Microsecond
	// pauseMin is the first pause of a contended process (with
	// sliceTime: half a core), doubled while the contention lasts up to
	// pauseMax (a third of a core). Not less: on the shared 2-core
	// machine of the chaos run contention never ends, and a preload at a
	// sixteenth of a core would outlast the leaving owner's bound
	// (routing.LeaveMax) where it took 44 s at half a core.
	pauseMin = 2 * time.Millisecond
	pauseMax = 4 * time.Millisecond
)

// Load is what a Pacer read of its process since its last read.
type Load struct {
	// Wait is how long runnable goroutines waited for a core before
	// running, at the waitQuantile of those scheduled since the last
	// read (0: none was).
	Wait time.Duration
	// Runnable is the goroutines ready to run but not running, now;
	// Procs is GOMAXPROCS.
	Runnable, Procs int
}

// Next is the pause after each slice of background work, given the pause
// so far and the load just read: doubled (from pauseMin, up to pauseMax)
// while goroutines wait for a core (Wait at waitBusy or more, or a
// runnable goroutine for every P), halved (to none below pauseMin) while
// none does (Wait under waitIdle, nothing runnable), else kept.
func Next(pause time.Duration, l Load) time.Duration {
	busy := l.Wait >= waitBusy || (l.Procs > 0 && l.Runnable >= l.Procs)
	switch {
	case busy:
		return min(max(2*pause, pauseMin), pauseMax)
	case l.Wait < waitIdle && l.Runnable == 0:
		if pause/2 < pauseMin {
			return 0
		}
		return pause / 2
	default:
		return pause
	}
}

// Pacer paces one goroutine's background work: call Yield every few
// hundred microseconds of work (a chunk read, a few hundred records
// replayed, a feed entry). See the package doc.
type Pacer struct {
	start, read time.Time
	last        time.Time // the last Yield
	pause       time.Duration
	pauses      int
	asleep      time.Duration
	lr          loadReader
	// now, sleep and load are the clock and the load's read (tests
	// step their own).
	now   func() time.Time
	sleep func(time.Duration)
	load  func() Load
}

// New returns a pacer that starts at full speed.
func New() *Pacer {
	p := &Pacer{now: time.Now, sleep: time.Sleep}
	p.load = p.lr.read
	p.load() // the baseline the first read's delta starts from
	p.start, p.read, p.last = p.now(), p.now(), p.now()
	return p
}

// Yield lets the goroutines of the process that wait run, and after each
// slice of work pauses as long as the load says (Next).
func (p *Pacer) Yield() {
	now := p.now()
	if now.Sub(p.last) > sliceTime {
		// The caller waited since its last call (a read over the network:
		// a feed prefetch's), it did not work: the slice starts now.
		p.start = now
	}
	p.last = now
	if now.Sub(p.start) < sliceTime {
		return
	}
	// Behind the goroutines that wait (requests of this node's own
	// events) for a moment whatever the pause.
	runtime.Gosched()
	if now.Sub(p.read) >= readEvery {
		p.pause = Next(p.pause, p.load())
		p.read = now
	}
	if p.pause > 0 {
		p.sleep(p.pause)
		p.pauses++
		p.asleep += p.pause
	}
	p.start = p.now()
	p.last = p.start
}

// Pauses is how many times Yield paused, and for how long in all.
func (p *Pacer) Pauses() (int, time.Duration) { return p.pauses, p.asleep }

// loadReader reads Load from runtime/metrics, the scheduler latencies'
// histogram as a delta from its last read.
type loadReader struct {
	samples []metrics.Sample
	prev    []uint64
}

const (
	schedLatencies = "/sched/latencies:seconds"
	runnableNow    = "/sched/goroutines/runnable:goroutines"
)

func (r *loadReader) read() Load {
	if r.samples == nil {
		r.samples = []metrics.Sample{{Name: schedLatencies}, {Name: runnableNow}}
	}
	metrics.Read(r.samples)
	l := Load{Procs: runtime.GOMAXPROCS(0)}
	if r.samples[1].Value.Kind() == metrics.KindUint64 {
		l.Runnable = int(r.samples[1].Value.Uint64())
	}
	if r.samples[0].Value.Kind() != metrics.KindFloat64Histogram {
		return l
	}
	h := r.samples[0].Value.Float64Histogram()
	if len(r.prev) != len(h.Counts) {
		r.prev = make([]uint64, len(h.Counts))
		copy(r.prev, h.Counts)
		return l
	}
	l.Wait = quantile(h.Counts, r.prev, h.Buckets, waitQuantile)
	copy(r.prev, h.Counts)
	return l
}

// quantile is the lower bound of the bucket holding the q-quantile of the
// counts added since prev (buckets: the histogram's boundaries, one more
// than counts), 0 when none was added.
func quantile(counts, prev []uint64, buckets []float64, q float64) time.Duration {
	var total uint64
	for i, c := range counts {
		total += c - prev[i]
	}
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range counts {
		seen += c - prev[i]
		if seen >= want {
			lo := buckets[i]
			if math.IsInf(lo, -1) || lo < 0 {
				return 0
			}
			return time.Duration(lo * float64(time.Second))
		}
	}
	return 0
}

// Progress counts the work a piece of background work has done (see the
// package doc). Its methods are safe on a nil *Progress (nobody counts).
type Progress struct {
	steps, entries atomic.Int64
}

// Step counts n steps of a state's build: snapshot chunks read, decode
// steps, batches of log records replayed.
func (p *Progress) Step(n int64) {
	if p != nil {
		p.steps.Add(n)
	}
}

// Entries counts n feed entries read.
func (p *Progress) Entries(n int64) {
	if p != nil {
		p.entries.Add(n)
	}
}

// Done is the steps and entries counted so far.
func (p *Progress) Done() (steps, entries int64) {
	if p == nil {
		return 0, 0
	}
	return p.steps.Load(), p.entries.Load()
}
