package pace

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Next: full speed while nothing waits, a growing pause while goroutines
// wait for a core, kept in between.
func TestNext(t *testing.T) {
	idle := Load{Wait: 20 * time.Microsecond, Procs: 2}
	busy := Load{Wait: 3 * time.Millisecond, Procs: 2}
	queued := Load{Wait: 50 * time.Microsecond, Runnable: 2, Procs: 2}
	between := Load{Wait: 500 * time.Microsecond, Procs: 2}
	for _, c := range []struct {
		name        string
		pause, want time.Duration
		l           Load
	}{
		{"idle stays at full speed", 0, 0, idle},
		{"nothing scheduled is idle", 0, 0, Load{Procs: 2}},
		{"contended starts pausing", 0, pauseMin, busy},
		{"a runnable goroutine per P is contended", 0, pauseMin, queued},
		{"one runnable goroutine is not", pauseMax, pauseMax, Load{Wait: 50 * time.Microsecond, Runnable: 1, Procs: 2}},
		{"contention doubles the pause", pauseMin, 2 * pauseMin, busy},
		{"up to pauseMax", pauseMax, pauseMax, busy},
		{"idle halves it", pauseMax, pauseMax / 2, idle},
		{"to nothing below pauseMin", pauseMin, 0, idle},
		{"in between keeps it", pauseMax, pauseMax, between},
		{"in between keeps full speed", 0, 0, between},
	} {
		require.Equal(t, c.want, Next(c.pause, c.l), c.name)
	}
}

// quantile reads the histogram's delta since the last read.
func TestQuantile(t *testing.T) {
	buckets := []float64{0, 1e-6, 1e-4, 1e-3, 1e-2, 1}
	prev := []uint64{5, 5, 5, 5, 5}
	require.Zero(t, quantile(prev, prev, buckets, 0.9), "nothing new")
	now := []uint64{5 + 90, 5 + 5, 5, 5 + 5, 5} // 100 new: 90 under 1 µs
	require.Equal(t, time.Duration(0), quantile(now, prev, buckets, 0.9))
	require.Equal(t, time.Millisecond, quantile(now, prev, buckets, 0.99))
	now = []uint64{5 + 10, 5, 5, 5 + 80, 5 + 10}
	require.Equal(t, time.Millisecond, quantile(now, prev, buckets, 0.9))
}

// The pacer with a stepped clock: no pause while the load reads idle,
// growing pauses while it reads contended, back to full speed after; a
// wait between two yields (the caller's I/O) is no work and never paused.
func TestPacerFollowsTheLoad(t *testing.T) {
	now := time.Unix(0, 0)
	var slept []time.Duration
	load := Load{Procs: 2}
	p := &Pacer{now: func() time.Time { return now }, sleep: func(d time.Duration) { slept = append(slept, d); now = now.Add(d) },
		load: func() Load { return load }, start: now, read: now, last: now}
	work := func(d time.Duration) { // d of work, a yield every 500 µs
		for end := now.Add(d); now.Before(end); {
			now = now.Add(500 * time.Microsecond)
			p.Yield()
		}
	}
	work(100 * time.Millisecond)
	require.Empty(t, slept, "idle: full speed")
	load.Wait = 5 * time.Millisecond
	work(100 * time.Millisecond)
	require.NotEmpty(t, slept)
	require.Equal(t, pauseMin, slept[0])
	require.Equal(t, pauseMax, slept[len(slept)-1], "contended: the pause grew to its bound")
	n := len(slept)
	for range 20 { // contended, but the caller waits 3 ms between yields
		now = now.Add(3 * time.Millisecond)
		p.Yield()
	}
	require.Equal(t, n, len(slept), "waiting is not work: no pause")
	load.Wait = 0
	work(100 * time.Millisecond)
	k, asleep := p.Pauses()
	require.Equal(t, len(slept), k)
	require.Positive(t, asleep)
	n = len(slept)
	work(100 * time.Millisecond)
	require.Equal(t, n, len(slept), "idle again: full speed")
}

// The load read from the runtime: a process whose cores are all taken by
// spinning goroutines reads contended, an idle one does not.
func TestLoadReadsTheRuntime(t *testing.T) {
	var lr loadReader
	lr.read()
	time.Sleep(50 * time.Millisecond)
	idle := lr.read()
	require.Less(t, idle.Wait, waitBusy, "an idle process: %+v", idle)

	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for !stop.Load() {
				for i := 0; i < 1000; i++ {
				}
			}
		})
	}
	// Goroutines woken meanwhile (timers) wait for a P behind the spinners.
	var ticks sync.WaitGroup
	for range 50 {
		ticks.Go(func() { time.Sleep(time.Millisecond) })
	}
	time.Sleep(200 * time.Millisecond)
	busy := lr.read()
	stop.Store(true)
	wg.Wait()
	ticks.Wait()
	require.Equal(t, pauseMin, Next(0, busy), "a process with every core taken: %+v", busy)
}

// Progress counts, and a nil one counts nothing.
func TestProgress(t *testing.T) {
	var p *Progress
	p.Step(1)
	p.Entries(2)
	s, e := p.Done()
	require.Zero(t, s+e)
	p = &Progress{}
	p.Step(3)
	p.Entries(4)
	s, e = p.Done()
	require.Equal(t, [2]int64{3, 4}, [2]int64{s, e})
}
