package app_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/app"
	"ticketd/event"
)

// TestTuningAskTimeoutReachesTheActors: Tuning.AskTimeout (a setting
// without an actors type, for callers that must not import actors: the
// bench seeder) is the actors' AskTimeout; zero keeps their default. An
// open Main's Store holds what its layer wrote.
func TestTuningAskTimeoutReachesTheActors(t *testing.T) {
	for _, want := range []time.Duration{0, 7 * time.Minute} {
		var got time.Duration
		cfg := testConfig(t.TempDir())
		cfg.Tune = &app.Tuning{AskTimeout: want, Actors: func(c *actors.Config) { got = c.AskTimeout }}
		m := app.NewMain(cfg, io.Discard)
		require.NoError(t, m.Open())
		assert.Equal(t, want, got, "0: the actors fill their default in")
		id := m.Ops().NewEventID()
		_, err := m.Ops().CreateEvent(context.Background(), m.Bootstrap.UnitID, id, event.CreateEvent{Name: "Tuned", Timezone: "UTC"})
		require.NoError(t, err)
		last, err := m.Store().LastSeq(id)
		require.NoError(t, err)
		assert.Positive(t, last, "the event's records are in the store Main serves from")
		require.NoError(t, m.Close())
	}
}
