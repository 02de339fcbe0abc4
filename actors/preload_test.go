package actors

import (
	"fmt"
	"testing"

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
