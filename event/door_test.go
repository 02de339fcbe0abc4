package event

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// doorRun decides and applies c on m, failing the test on an error.
func doorRun[R any](t *testing.T, m *Machine, now time.Time, c Op[R]) R {
	t.Helper()
	res, changes, err := DecideOp(m, now, c)
	require.NoError(t, err)
	for _, ch := range changes {
		m.Apply(ch)
	}
	return res
}

// TestDoorSurvivesSnapshotAndReplay: the pass stamps, the scans' recorded
// answers and the conflicts come back from a snapshot and from a replay of
// the log, so a repeated scan id answers the same after a restart and a
// cursor taken before it still skips nothing.
func TestDoorSurvivesSnapshotAndReplay(t *testing.T) {
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	var log [][]byte
	apply := func(c Command) any {
		res, changes, err := m.Decide(now, c)
		require.NoError(t, err)
		for _, ch := range changes {
			m.Apply(ch)
			rec, err := AppendChange(nil, ch)
			require.NoError(t, err)
			log = append(log, rec)
		}
		return res
	}
	apply(CreateEvent{Name: "Conf", Timezone: "UTC"})
	var regs []string
	for i := range 5 {
		r := apply(CreateRegistration{Email: fmt.Sprintf("p%d@x.io", i)}).(RegistrationResult)
		regs = append(regs, r.ID)
	}
	doors := []DoorRef{{SubjectType: "event"}}
	cursor := doorRun(t, m, now, ListPasses{}).NextCursor
	batch := RecordScans{DeviceID: "dev_1", Doors: doors, Scans: []Scan{
		{ScanID: "a", RegistrationID: regs[0], SubjectType: "event", ScannedAt: At(now)},
		{ScanID: "b", CheckinCode: "CHK-NONE", SubjectType: "event", ScannedAt: At(now)},
	}}
	first := apply(batch).(ScanResults)
	apply(RecordScans{DeviceID: "dev_2", Doors: doors, Scans: []Scan{
		{ScanID: "c", RegistrationID: regs[0], SubjectType: "event", ScannedAt: At(now), Offline: true, AdmittedOffline: true}}})
	apply(CancelRegistration{ID: regs[3]})

	snap, err := MarshalState(m.State())
	require.NoError(t, err)
	loaded, err := UnmarshalState(snap)
	require.NoError(t, err)
	replayed := NewMachine("evt_1", testConfig(), newSeqIDs(99))
	for _, rec := range log {
		require.NoError(t, replayed.ApplyRecord(rec))
	}
	again, err := MarshalState(replayed.State())
	require.NoError(t, err)
	require.Equal(t, snap, again, "replay and live state encode alike")
	fromSnap := NewMachine("evt_1", testConfig(), newSeqIDs(99))
	fromSnap.Restore(loaded)
	reenc, err := MarshalState(fromSnap.State())
	require.NoError(t, err)
	require.Equal(t, snap, reenc, "a snapshot round-trips")

	for _, mm := range []*Machine{replayed, fromSnap} {
		res, changes, err := DecideOp(mm, now.Add(time.Hour), batch)
		require.NoError(t, err)
		require.Empty(t, changes, "a repeat records nothing")
		require.Equal(t, first, res, "a repeat answers the first result unchanged")
		delta, _, err := DecideOp(mm, now, ListPasses{Cursor: cursor})
		require.NoError(t, err)
		var got []string
		for _, p := range delta.Data {
			got = append(got, p.RegistrationID)
		}
		require.Equal(t, []string{regs[0], regs[3]}, got, "the check-in and the cancellation, nothing else")
		conflicts, _, err := DecideOp(mm, now, ListDoorConflicts{})
		require.NoError(t, err)
		require.Len(t, conflicts.Data, 1)
		require.Equal(t, ConflictAlreadyCheckedIn, conflicts.Data[0].Reason)
	}
}

// BenchmarkRecordScans500 decides and applies one batch of 500 fresh
// scans on an event of 100,000 registrations: the core's share of a
// door device's batch.
func BenchmarkRecordScans500(b *testing.B) {
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	run := func(c Command) any {
		res, changes, err := m.Decide(now, c)
		if err != nil {
			b.Fatal(err)
		}
		for _, ch := range changes {
			m.Apply(ch)
		}
		return res
	}
	run(CreateEvent{Name: "Conf", Timezone: "UTC"})
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	regs := make([]string, n)
	for i := range regs {
		regs[i] = run(CreateRegistration{Email: fmt.Sprintf("p%d@x.io", i)}).(RegistrationResult).ID
	}
	doors := []DoorRef{{SubjectType: "event"}}
	next := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if next+500 > len(regs) {
			b.StopTimer()
			next = 0
			doors = []DoorRef{{SubjectType: "event"}}
			m = NewMachine("evt_1", testConfig(), newSeqIDs(uint64(i)+2))
			run(CreateEvent{Name: "Conf", Timezone: "UTC"})
			for j := range regs {
				regs[j] = run(CreateRegistration{Email: fmt.Sprintf("p%d@x.io", j)}).(RegistrationResult).ID
			}
			b.StartTimer()
		}
		c := RecordScans{DeviceID: "dev_1", Doors: doors, Scans: make([]Scan, 500)}
		for j := range c.Scans {
			c.Scans[j] = Scan{ScanID: fmt.Sprintf("s%d-%d", i, j), RegistrationID: regs[next], SubjectType: "event", ScannedAt: At(now)}
			next++
		}
		run(c)
	}
}
