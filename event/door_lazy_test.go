package event

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDoorKeepsCheckinTableLazy: a door's traffic (batches, a repeated
// batch, a conflict with its first check-in, a single check-in's feed
// object, the conflicts' list) never builds the table of every check-in
// by id, and answers exactly what it answers once that table is built.
func TestDoorKeepsCheckinTableLazy(t *testing.T) {
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	doorRun(t, m, now, CreateEvent{Name: "Conf", Timezone: "UTC"})
	var regs []string
	for i := range 40 {
		regs = append(regs, doorRun(t, m, now, CreateRegistration{Email: fmt.Sprintf("p%d@x.io", i), Name: "P"}).ID)
	}
	require.True(t, m.s.idx.checkinsLazy, "a new event leaves the table to its first use")
	doors := []DoorRef{{SubjectType: "event"}}
	batch := func(dev, prefix string, from, to int, admitted bool) RecordScans {
		c := RecordScans{DeviceID: dev, Doors: doors}
		for i := from; i < to; i++ {
			c.Scans = append(c.Scans, Scan{ScanID: fmt.Sprintf("%s%d", prefix, i), RegistrationID: regs[i], SubjectType: "event",
				ScannedAt: At(now), Offline: true, AdmittedOffline: admitted})
		}
		return c
	}
	first := batch("dev_1", "a", 0, 20, false)
	type answers struct {
		first, repeat, conflicts ScanResults
		list                     List[DoorConflict]
		feed                     []any
	}
	run := func(m *Machine) answers {
		var a answers
		a.first = doorRun(t, m, now, first)
		a.repeat = doorRun(t, m, now.Add(time.Minute), first)
		// Another device admitted ten of them offline: conflicts naming
		// dev_1's check-ins; and ten new passes.
		res, changes, err := DecideOp(m, now.Add(2*time.Minute), batch("dev_2", "b", 10, 30, true))
		require.NoError(t, err)
		a.conflicts = res
		for _, ch := range changes {
			m.Apply(ch)
			for _, e := range AppendFeed(nil, ch) {
				if e.Type == FeedCheckinConflict {
					obj, ok := m.FeedObject(e)
					require.True(t, ok)
					a.feed = append(a.feed, obj)
				}
			}
		}
		a.list = doorRun(t, m, now, ListDoorConflicts{})
		_, changes, err = DecideOp(m, now.Add(3*time.Minute), RecordCheckin{RegistrationID: regs[35], SubjectType: "event"})
		require.NoError(t, err)
		for _, ch := range changes {
			m.Apply(ch)
			for _, e := range AppendFeed(nil, ch) {
				obj, ok := m.FeedObject(e)
				require.True(t, ok)
				a.feed = append(a.feed, obj)
			}
		}
		return a
	}
	// The same traffic on a machine whose table is built from the start.
	built := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	doorRun(t, built, now, CreateEvent{Name: "Conf", Timezone: "UTC"})
	for i := range 40 {
		doorRun(t, built, now, CreateRegistration{Email: fmt.Sprintf("p%d@x.io", i), Name: "P"})
	}
	built.s.checkins()
	require.False(t, built.s.idx.checkinsLazy)
	want := run(built)

	got := run(m)
	require.True(t, m.s.idx.checkinsLazy, "door traffic built the table of every check-in")
	require.Len(t, got.list.Data, 10)
	for _, c := range got.list.Data {
		require.NotNil(t, c.FirstCheckin, "a conflict names dev_1's check-in")
	}
	require.Len(t, got.feed, 11, "ten conflicts and a check-in")
	require.Equal(t, want, got)
}
