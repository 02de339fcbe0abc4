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

// TestPassVerCell: the cell of an event's pass stamp is there once a read
// noted the stamp, follows later notes, and is never handed out on a
// cluster node (Forwarded), where no stamp is taken as the latest.
func TestPassVerCell(t *testing.T) {
	var w Watch
	require.Nil(t, w.PassVerCell("evt_1"), "not noted yet")
	w.NotePassVer("evt_1", 7)
	c := w.PassVerCell("evt_1")
	require.NotNil(t, c)
	require.Equal(t, int64(7), c.Load())
	require.True(t, w.PassVerCaughtUp("evt_1", 7))
	w.NotePassVer("evt_1", 9)
	require.Equal(t, int64(9), c.Load(), "the same cell moves")
	require.False(t, w.PassVerCaughtUp("evt_1", 7))

	f := Watch{Forwarded: true}
	f.NotePassVer("evt_1", 7)
	require.Nil(t, f.PassVerCell("evt_1"))
	require.False(t, f.PassVerCaughtUp("evt_1", 7))
}
