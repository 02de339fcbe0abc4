package doorwatch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSeenCell: a device's cell moves at most once a SeenGrain when noted
// through Note (its requests), never backwards; NoteDeviceSeen sets it
// exactly; a cell handed out but never noted is not a sighting.
func TestSeenCell(t *testing.T) {
	var w Watch
	t0 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	c := w.DeviceSeenCell("dev_1")
	require.Same(t, c, w.DeviceSeenCell("dev_1"), "one cell per device")
	_, ok := w.DeviceSeen("dev_1")
	require.False(t, ok, "handed out, not seen")

	c.Note(t0)
	at, ok := w.DeviceSeen("dev_1")
	require.True(t, ok)
	require.Equal(t, t0, at)

	c.Note(t0.Add(SeenGrain - time.Millisecond))
	at, _ = w.DeviceSeen("dev_1")
	require.Equal(t, t0, at, "within the grain: not moved")

	c.Note(t0.Add(SeenGrain))
	at, _ = w.DeviceSeen("dev_1")
	require.Equal(t, t0.Add(SeenGrain), at, "a grain later: moved")

	c.Note(t0)
	at, _ = w.DeviceSeen("dev_1")
	require.Equal(t, t0.Add(SeenGrain), at, "never backwards")

	w.NoteDeviceSeen("dev_1", t0.Add(time.Millisecond))
	at, _ = w.DeviceSeen("dev_1")
	require.Equal(t, t0.Add(time.Millisecond), at, "NoteDeviceSeen is exact")

	w.NoteDeviceSeen("dev_2", t0)
	at, ok = w.DeviceSeen("dev_2")
	require.True(t, ok)
	require.Equal(t, t0, at)
	_, ok = w.DeviceSeen("dev_3")
	require.False(t, ok)
}
