package actors

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
)

// scanAll is a batch of device dev scanning every pass in regs at the
// event's door, by registration id, or by check-in code when byCode.
func scanAll(dev, prefix string, regs []event.RegistrationResult, byCode bool) event.RecordScans {
	c := event.RecordScans{DeviceID: dev, Doors: []event.DoorRef{{SubjectType: "event"}}, Scans: make([]event.Scan, len(regs))}
	for i, r := range regs {
		sc := event.Scan{ScanID: fmt.Sprintf("%s-%d", prefix, i), SubjectType: "event", ScannedAt: event.At(time.Now())}
		if byCode {
			sc.CheckinCode = r.CheckinCode
		} else {
			sc.RegistrationID = r.ID
		}
		c.Scans[i] = sc
	}
	return c
}

func (e *env) register(eventID, typeID string, n int, prefix string) []event.RegistrationResult {
	out := make([]event.RegistrationResult, n)
	for i := range out {
		res, err := e.sys.Ask(bg, eventID, event.CreateRegistration{Email: fmt.Sprintf("%s%d@x.io", prefix, i), RegistrationTypeID: typeID})
		require.NoError(e.t, err)
		out[i] = res.(event.RegistrationResult)
	}
	return out
}

// TestDoorPassesResolvedOutsideTheActor: the passes of a door batch are
// resolved on the asker's goroutine from the list the event's actor hands
// out, and the actor's verdicts are the ones it would give alone, whatever
// happened between the resolution and the decision: two devices scanning
// the same passes at once, a cancellation, registrations added, a new
// incarnation of the actor.
func TestDoorPassesResolvedOutsideTheActor(t *testing.T) {
	e := newEnv(t, nil)
	id, tt := e.newEvent("unit_1", nil)
	regs := e.register(id, tt, 60, "p")
	first := regs[:10]
	res, err := Ask(bg, e.sys, id, scanAll("dev_a", "a0", first, false))
	require.NoError(t, err)
	for _, r := range res.Results {
		require.Equal(t, event.VerdictAdmitted, r.Verdict)
	}
	// The first batch made the actor hand out its list.
	x, ok := e.sys.passes.Load(id)
	require.True(t, ok)
	require.Equal(t, 60, x.(*passSlot).list.Load().Len())

	// Two devices scan the same passes at once, by id and by code: one
	// check-in each, the other device told already_checked_in by the first.
	for round := range 5 {
		batch := regs[10+round*10 : 20+round*10]
		var wg sync.WaitGroup
		answers := make([]event.ScanResults, 2)
		for d, dev := range []string{"dev_a", "dev_b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := scanAll(dev, fmt.Sprintf("r%d", round), batch, d == 1)
				// A busy index (the other device's ask taking in the
				// list) resolves nothing by design: ask again, bounded.
				req := e.sys.resolvePasses(id, &request{cmd: cmd})
				for try := 0; len(req.cmd.(event.RecordScans).Passes) == 0 && try < 1000; try++ {
					time.Sleep(time.Millisecond)
					req = e.sys.resolvePasses(id, &request{cmd: cmd})
				}
				require.Len(t, req.cmd.(event.RecordScans).Passes, len(batch), "resolved outside the actor")
				res, err := Ask(bg, e.sys, id, req.cmd.(event.RecordScans))
				require.NoError(t, err)
				answers[d] = res
			}()
		}
		wg.Wait()
		for i := range batch {
			a, b := answers[0].Results[i], answers[1].Results[i]
			verdicts := []string{a.Verdict, b.Verdict}
			require.ElementsMatch(t, []string{event.VerdictAdmitted, event.VerdictAlreadyCheckedIn}, verdicts, "round %d pass %d", round, i)
			if a.Verdict == event.VerdictAlreadyCheckedIn {
				a, b = b, a
			}
			require.Equal(t, a.Checkin.ID, b.FirstCheckin.ID)
			require.Equal(t, batch[i].ID, *b.RegistrationID)
		}
	}

	// Resolved, then cancelled, then decided: the actor reads the pass's
	// status at the decision.
	cancelled := e.register(id, tt, 1, "x")[0]
	req := e.sys.resolvePasses(id, &request{cmd: scanAll("dev_c", "c", []event.RegistrationResult{cancelled}, true)})
	require.NotNil(t, req.cmd.(event.RecordScans).Passes[0], "the pass is known to the index")
	_, err = e.sys.Ask(bg, id, event.CancelRegistration{ID: cancelled.ID})
	require.NoError(t, err)
	res, err = Ask(bg, e.sys, id, req.cmd.(event.RecordScans))
	require.NoError(t, err)
	require.Equal(t, event.VerdictRefused, res.Results[0].Verdict)
	require.Equal(t, event.RefusedNotConfirmed, *res.Results[0].Reason)

	// Registrations added after the list was handed out: the next list
	// has them, and a batch resolves them by code.
	more := e.register(id, tt, 5, "q")
	res, err = Ask(bg, e.sys, id, scanAll("dev_a", "q", more, true))
	require.NoError(t, err)
	for _, r := range res.Results {
		require.Equal(t, event.VerdictAdmitted, r.Verdict)
	}
	require.Equal(t, 66, x.(*passSlot).list.Load().Len())

	// A batch resolved against an incarnation that stopped since: its
	// hints are records of a state that is gone, and the new actor looks
	// the passes up itself.
	fresh := e.register(id, tt, 8, "s")
	stale := e.sys.resolvePasses(id, &request{cmd: scanAll("dev_d", "d", fresh, false)}).cmd.(event.RecordScans)
	require.NotNil(t, stale.Passes[0])
	e.reopen()
	res, err = Ask(bg, e.sys, id, stale)
	require.NoError(t, err)
	for i, r := range res.Results {
		require.Equal(t, event.VerdictAdmitted, r.Verdict, "pass %d", i)
		require.Equal(t, fresh[i].ID, r.Checkin.RegistrationID)
	}
	res, err = Ask(bg, e.sys, id, scanAll("dev_e", "e", fresh[:2], false))
	require.NoError(t, err)
	for _, r := range res.Results {
		require.Equal(t, event.VerdictAlreadyCheckedIn, r.Verdict)
		require.Equal(t, "dev_d", *r.FirstCheckin.DeviceID)
	}
}
