package event

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDoorViewAnswersAsTheMachine runs random door traffic in lockstep on
// two machines: the reference decides every batch whole; the other
// answers what its door view (built after each step, as the actor
// publishes it after a commit) answers and decides only the rest, as
// ops.RecordScans does. Every answer must be the same: repeats of durable
// check-ins, re-sent scan ids (with the same or other content: the first
// answer wins, also when it was a refusal or an admission the view must
// not override), admittedOffline scans (conflicts stay the machine's),
// cancellations racing scans, a venue deleted, passes created after the
// view, a view a commit or more behind, and a restart (a machine
// restored from the log builds its view anew).
func TestDoorViewAnswersAsTheMachine(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { doorViewLockstep(t, seed) })
	}
}

func doorViewLockstep(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	ref := NewMachine("evt_1", testConfig(), newSeqIDs(seed))
	vids := newSeqIDs(seed)
	vm := NewMachine("evt_1", testConfig(), vids)
	var log [][]byte
	vmRun := func(c Command) any {
		t.Helper()
		res, changes, err := vm.Decide(now, c)
		require.NoError(t, err)
		for _, ch := range changes {
			vm.Apply(ch)
			rec, err := AppendChange(nil, ch)
			require.NoError(t, err)
			log = append(log, rec)
		}
		return res
	}
	both := func(c Command) (any, any) {
		t.Helper()
		r1, ch1, err1 := ref.Decide(now, c)
		r2, ch2, err2 := vm.Decide(now, c)
		require.Equal(t, err1, err2)
		for _, ch := range ch1 {
			ref.Apply(ch)
		}
		for _, ch := range ch2 {
			vm.Apply(ch)
			rec, err := AppendChange(nil, ch)
			require.NoError(t, err)
			log = append(log, rec)
		}
		return r1, r2
	}
	both(CreateEvent{Name: "Conf", Timezone: "UTC"})
	r, _ := both(CreateVenue{Name: "Hall"})
	venue := r.(Venue).ID
	var regs []string
	newReg := func() {
		r, _ := both(CreateRegistration{Email: fmt.Sprintf("p%d@x.io", len(regs))})
		regs = append(regs, r.(RegistrationResult).ID)
	}
	for range 30 {
		newReg()
	}
	codes := func(id string) string { return vm.State().regs()[id].CheckinCode }
	devices := []string{"dev_1", "dev_2", "dev_3"}
	doors := []DoorRef{{SubjectType: "event"}, {SubjectType: "venue", SubjectID: venue}}
	var view *DoorView
	answered := 0
	for step := range 120 {
		if rng.IntN(3) > 0 {
			view = vm.DoorView(view) // published after the last commit
		} // else a request still reads the view of a commit before
		switch k := rng.IntN(20); {
		case k == 0:
			both(CancelRegistration{ID: regs[rng.IntN(len(regs))]})
			continue
		case k == 1:
			newReg()
			continue
		case k == 2 && step > 80:
			both(DeleteVenue{ID: venue})
			continue
		case k == 3:
			// A restart: the machine comes back from its log and builds
			// its view anew.
			vm = NewMachine("evt_1", testConfig(), vids)
			for _, rec := range log {
				require.NoError(t, vm.ApplyRecord(rec))
			}
			view = vm.DoorView(nil)
		}
		dev := devices[rng.IntN(len(devices))]
		c := RecordScans{DeviceID: dev, Doors: doors}
		for range 1 + rng.IntN(12) {
			sc := Scan{ScanID: fmt.Sprintf("s%d", rng.IntN(60)), SubjectType: "event", ScannedAt: At(now), Offline: rng.IntN(2) == 0,
				AdmittedOffline: rng.IntN(4) == 0}
			reg := regs[rng.IntN(len(regs))]
			switch rng.IntN(6) {
			case 0:
				sc.CheckinCode = codes(reg)
			case 1:
				sc.CheckinCode = "CHK-NONE"
			default:
				sc.RegistrationID = reg
			}
			if rng.IntN(3) == 0 {
				sc.SubjectType, sc.SubjectID = "venue", venue
			}
			c.Scans = append(c.Scans, sc)
		}
		res, changes, err := ref.Decide(now, c)
		require.NoError(t, err)
		for _, ch := range changes {
			ref.Apply(ch)
		}
		want := res.(ScanResults)
		known, n := view.Known(c)
		answered += n
		c.Known = known
		got := vmRun(c).(ScanResults)
		require.Equal(t, want, got, "step %d: %+v", step, c)
	}
	require.Positive(t, answered, "the view answered some scans")
}
