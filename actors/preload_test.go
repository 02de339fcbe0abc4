package actors

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/internal/pace"
)

// register makes n registrations of evt's type tt.
func register(t *testing.T, e *env, evt, tt string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		_, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: fmt.Sprintf("p%d@example.com", i), RegistrationTypeID: tt})
		require.NoError(t, err)
	}
}

// A state built ahead (Preload) is the one the event's actor starts from,
// equal to the state a load builds; a second Preload catches it up.
func TestPreloadedStateIsTheLoadedState(t *testing.T) {
	// Snapshots every 20 changes: the preload starts from one and replays.
	e := newEnv(t, func(c *Config) { c.SnapshotEvery = 20 })
	evt, tt := e.newEvent("bu_1", nil)
	register(t, e, evt, tt, 0, 45)
	e.reopen() // no actor: its state is on disk only

	last, err := e.sys.Preload(bg, evt, nil)
	require.NoError(t, err)
	require.Positive(t, last)
	again, err := e.sys.Preload(bg, evt, nil) // a catch-up: nothing new
	require.NoError(t, err)
	require.Equal(t, last, again)
	built, taken := e.sys.PreloadStats()
	require.Equal(t, [2]uint64{1, 0}, [2]uint64{built, taken})

	regs := e.registrations(evt) // the actor starts from the preloaded state
	built, taken = e.sys.PreloadStats()
	require.Equal(t, [2]uint64{1, 1}, [2]uint64{built, taken})
	require.Len(t, regs, 45)
	register(t, e, evt, tt, 45, 5) // and goes on from it
	require.Len(t, e.registrations(evt), 50)

	// An event with an actor here is not preloaded.
	_, err = e.sys.Preload(bg, evt, nil)
	require.NoError(t, err)
	built, _ = e.sys.PreloadStats()
	require.Equal(t, uint64(1), built)

	// The same through a load that did not preload.
	e.reopen()
	require.Len(t, e.registrations(evt), 50)
}

// A preloaded state dropped (its move refused) is not used: the actor
// loads as before.
func TestDroppedPreloadIsNotUsed(t *testing.T) {
	e := newEnv(t, nil)
	evt, tt := e.newEvent("bu_1", nil)
	register(t, e, evt, tt, 0, 3)
	e.reopen()
	_, err := e.sys.Preload(bg, evt, nil)
	require.NoError(t, err)
	e.sys.DropPreloaded(func(id string) bool { return id == evt })
	require.Len(t, e.registrations(evt), 3)
	built, taken := e.sys.PreloadStats()
	require.Equal(t, [2]uint64{1, 0}, [2]uint64{built, taken})
}

// pacedStore is a SnapshotStore that says whether a read was paced.
type pacedStore struct {
	SnapshotStore
	paced, whole int
}

func (p *pacedStore) LoadNewestWith(stream string, readers int) (uint64, []byte, bool, error) {
	p.whole++
	return p.SnapshotStore.LoadNewestWith(stream, readers)
}

func (p *pacedStore) LoadNewestPaced(stream string, pace func()) (uint64, []byte, bool, error) {
	p.paced++
	pace()
	return p.SnapshotStore.LoadNewestWith(stream, 1)
}

// A preload reads its snapshot as background work (through the store's
// paced read, when it has one), while an actor's load reads it at once:
// both build the same state.
func TestPreloadReadsPaced(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SnapshotEvery = 20 })
	evt, tt := e.newEvent("bu_1", nil)
	register(t, e, evt, tt, 0, 45)
	e.reopen()
	store := &pacedStore{SnapshotStore: e.sys.snap}
	e.sys.snap = store

	_, err := e.sys.Preload(bg, evt, nil)
	require.NoError(t, err)
	require.Equal(t, [2]int{1, 0}, [2]int{store.paced, store.whole}, "the preload's read is paced")
	require.Len(t, e.registrations(evt), 45)

	e.reopen()
	store = &pacedStore{SnapshotStore: e.sys.snap}
	e.sys.snap = store
	require.Len(t, e.registrations(evt), 45)
	require.Equal(t, [2]int{0, 1}, [2]int{store.paced, store.whole}, "an actor's load reads at once")
}

// A preload is paced by this process's own load: measured idle and with
// every core taken by goroutines of the process (as a taker's own events'
// requests would), it pauses under load, more than idle, and counts its
// steps for the leaving owner that waits on it.
func TestPreloadPacedByLoad(t *testing.T) {
	regs := 60_000
	if testing.Short() {
		regs = 10_000
	}
	dir := t.TempDir()
	e := openBench(t, dir, nil)
	s := newLogSeeder(t, e.store, e.cfg.Event)
	s.register(regs / 2)
	require.NoError(t, e.sys.snaps.Save(s.evt, s.last, s.state()))
	s.register(regs / 2) // replayed after the snapshot
	evt := s.evt
	e.close()
	e = openBench(t, dir, nil)
	defer e.close()

	build := func(what string) (time.Duration, time.Duration, int64) {
		e.sys.DropPreloaded(func(string) bool { return true })
		e.sys.preloads.mu.Lock()
		e.sys.preloads.stats.asleep = 0
		e.sys.preloads.mu.Unlock()
		var progress pace.Progress
		start := time.Now()
		last, err := e.sys.Preload(bg, evt, &progress)
		took := time.Since(start)
		require.NoError(t, err)
		require.Equal(t, s.last, last)
		e.sys.preloads.mu.Lock()
		asleep := e.sys.preloads.stats.asleep
		e.sys.preloads.mu.Unlock()
		steps, _ := progress.Done()
		t.Logf("preload %s: %d registrations in %s, asleep %s, %d steps (load %s)", what, regs, took.Round(time.Millisecond),
			asleep.Round(time.Millisecond), steps, loadAvg())
		return took, asleep, steps
	}
	_, idleAsleep, steps := build("idle")
	require.Positive(t, steps, "progress counted")

	// The machine may be busy with other work (CI runs packages side by
	// side), so the idle build can pause too: compare up to three pairs.
	var loadedAsleep time.Duration
	for try := 0; try < 3; try++ {
		if try > 0 {
			_, idleAsleep, _ = build("idle")
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		for range 2 * runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for !stop.Load() {
					for i := 0; i < 10_000; i++ {
					}
					time.Sleep(50 * time.Microsecond) // wakes: waits for a core
				}
			})
		}
		_, loadedAsleep, _ = build("loaded")
		stop.Store(true)
		wg.Wait()
		if loadedAsleep > idleAsleep {
			break
		}
	}
	require.Positive(t, loadedAsleep, "under load it paused")
	require.Greater(t, loadedAsleep, idleAsleep, "it paused more under load than idle")
}

// loadAvg is the machine's load (/proc/loadavg's first field), for the log.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f, _, _ := strings.Cut(string(b), " ")
	return f
}
