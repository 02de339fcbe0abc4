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

// download pages through the event's passes as a door does first.
func (e *env) download(eventID string) int {
	n, cursor := 0, ""
	for {
		res, err := e.sys.Ask(bg, eventID, event.ListPasses{Cursor: cursor, Limit: 40})
		require.NoError(e.t, err)
		page := res.(event.PassPage)
		n += len(page.Data)
		if !page.HasMore {
			return n
		}
		cursor = page.NextCursor
	}
}

// indexed waits until the event's index has taken in its list whole.
func (e *env) indexed(eventID string) *passSlot {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if x, ok := e.sys.passes.Load(eventID); ok {
			sl := x.(*passSlot)
			if l := sl.list.Load(); l != nil && sl.idx.Len() >= l.Len() {
				return sl
			}
		}
		require.True(e.t, time.Now().Before(deadline), "the index never took the list in")
		time.Sleep(time.Millisecond)
	}
}

// TestDoorReadyAfterDownload: a door downloads its passes before it scans
// (decisions §18), and the download gets the door ready: the actor builds
// the tables a batch reads then, and the list is handed out and taken in
// off the scans' path, so the first batch builds nothing in the actor and
// finds every pass resolved. Also for registrations added after the
// download, and after a restart (a snapshot load) and a new download;
// without the download, the first batch is the one that builds.
func TestDoorReadyAfterDownload(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SnapshotEvery = 50 })
	id, tt := e.newEvent("unit_1", nil)
	regs := e.register(id, tt, 120, "p")
	require.Equal(t, 120, e.download(id))
	sl := e.indexed(id)
	require.Equal(t, 120, sl.idx.Len(), "taken in by the download, before any scan")

	// scan resolves a batch on the asker's side, asks it, and checks
	// every pass was resolved there and every verdict is want.
	scan := func(dev, prefix string, passes []event.RegistrationResult, byCode bool, want string) {
		t.Helper()
		req := e.sys.resolvePasses(id, &request{cmd: scanAll(dev, prefix, passes, byCode)})
		c := req.cmd.(event.RecordScans)
		require.Len(t, c.Passes, len(passes), "resolved outside the actor")
		for i, p := range c.Passes {
			require.NotNil(t, p, "pass %d", i)
		}
		require.Len(t, c.CheckinIDs, len(passes))
		res, err := Ask(bg, e.sys, id, c)
		require.NoError(t, err)
		for i, r := range res.Results {
			require.Equal(t, want, r.Verdict, "pass %d", i)
			require.Equal(t, passes[i].ID, *r.RegistrationID)
			if want == event.VerdictAdmitted {
				require.Equal(t, c.CheckinIDs[i], r.Checkin.ID)
			}
		}
	}
	scan("dev_a", "a", regs[:60], false, event.VerdictAdmitted)
	require.Zero(t, e.sys.door.cold.Load(), "the first batch built no table in the actor")
	require.Zero(t, e.sys.door.unresolved.Load())

	// Registrations after the download: the actor keeps its tables
	// current, and the askers take the few new ones in themselves.
	more := e.register(id, tt, 7, "q")
	scan("dev_b", "b", more, true, event.VerdictAdmitted)
	scan("dev_b", "b2", regs[:60], true, event.VerdictAlreadyCheckedIn)
	require.Zero(t, e.sys.door.cold.Load())
	require.Zero(t, e.sys.door.unresolved.Load())

	// A restart: the event loads from a snapshot (and the log after it),
	// with its lazy tables unbuilt; the door downloads again (as the
	// scanner page does on load), and its next batch finds them built.
	waitSnapshots(t, e, 1)
	_, _, ok, err := e.sys.snaps.LoadNewest(id)
	require.NoError(t, err)
	require.True(t, ok, "the event has a snapshot to load")
	e.reopen()
	require.Equal(t, 127, e.download(id))
	e.indexed(id)
	scan("dev_a", "c", regs[60:], true, event.VerdictAdmitted)
	scan("dev_c", "d", append(regs[:3:3], more[:3]...), false, event.VerdictAlreadyCheckedIn)
	require.Zero(t, e.sys.door.cold.Load(), "after a restart too")
	require.Zero(t, e.sys.door.unresolved.Load())

	// Without a download, the first batch of a loaded event builds the
	// tables itself: what the download spares the door.
	e.reopen()
	res, err := Ask(bg, e.sys, id, scanAll("dev_d", "e", regs[:5], false))
	require.NoError(t, err)
	for _, r := range res.Results {
		require.Equal(t, event.VerdictAlreadyCheckedIn, r.Verdict)
	}
	require.Equal(t, int64(1), e.sys.door.cold.Load())
}
