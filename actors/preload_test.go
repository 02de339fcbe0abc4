package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
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

	last, err := e.sys.Preload(bg, evt)
	require.NoError(t, err)
	require.Positive(t, last)
	again, err := e.sys.Preload(bg, evt) // a catch-up: nothing new
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
	_, err = e.sys.Preload(bg, evt)
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
	_, err := e.sys.Preload(bg, evt)
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

	_, err := e.sys.Preload(bg, evt)
	require.NoError(t, err)
	require.Equal(t, [2]int{1, 0}, [2]int{store.paced, store.whole}, "the preload's read is paced")
	require.Len(t, e.registrations(evt), 45)

	e.reopen()
	store = &pacedStore{SnapshotStore: e.sys.snap}
	e.sys.snap = store
	require.Len(t, e.registrations(evt), 45)
	require.Equal(t, [2]int{0, 1}, [2]int{store.paced, store.whole}, "an actor's load reads at once")
}

// The preload's duty cycle: work called back for longer than a slice
// sleeps a pause before going on, whatever else runs.
func TestPreloadPacerPauses(t *testing.T) {
	p := newPreloadPacer()
	start := time.Now()
	for time.Since(start) < 10*preloadSlice {
		for busy := time.Now(); time.Since(busy) < 50*time.Microsecond; {
		}
		p.yield()
	}
	require.Positive(t, p.pauses, "it paused")
	// Each pause is a sleep of preloadPause at least.
	require.GreaterOrEqual(t, time.Since(start), time.Duration(p.pauses)*preloadPause)
}
