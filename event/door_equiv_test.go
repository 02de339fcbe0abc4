package event

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// oracleRecordScans is the batch decision as first written (one map
// lookup per fact, a view per scan), kept as the reference the faster
// decision must answer exactly as (TestRecordScansAnswersAsTheReference).
func oracleRecordScans(m *Machine, now time.Time, c RecordScans) (any, []Change, error) {
	if c.DeviceID == "" {
		return nil, nil, FieldError("deviceId", "required")
	}
	if err := checkScans(c); err != nil {
		return nil, nil, err
	}
	s := m.s
	di := s.doorIdx()
	s.ensureTokens()
	out := ScanResults{Results: make([]ScanResult, len(c.Scans))}
	var changes []Change
	var answered *ScansAnswered
	var conflicts []Change
	batchDoors := map[string]*CheckinRec{}
	batchScans := map[string]int{}
	for i, sc := range c.Scans {
		if j, ok := batchScans[sc.ScanID]; ok {
			out.Results[i] = out.Results[j]
			continue
		}
		batchScans[sc.ScanID] = i
		if ref, ok := di.scans.get(m.s, scanDevHash(c.DeviceID), c.DeviceID, sc.ScanID); ok {
			out.Results[i] = m.recordedResult(sc.ScanID, ref)
			continue
		}
		res, chk := oracleScanVerdict(m, now, c, sc, batchDoors)
		out.Results[i] = res
		if chk != nil {
			changes = append(changes, *chk)
			continue
		}
		if answered == nil {
			answered = &ScansAnswered{At: now, DeviceID: c.DeviceID}
		}
		a := ScanAnswer{ScanID: sc.ScanID, Verdict: res.Verdict}
		if res.Reason != nil {
			a.Reason = *res.Reason
		}
		if res.RegistrationID != nil {
			a.RegID = *res.RegistrationID
		}
		if res.FirstCheckin != nil {
			a.CheckinID = res.FirstCheckin.ID
		}
		answered.Answers = append(answered.Answers, a)
		if !sc.AdmittedOffline {
			continue
		}
		conflict := CheckinConflict{At: now, ID: m.newID("dcf_"), DeviceID: c.DeviceID, ScanID: sc.ScanID, RegID: a.RegID,
			Reason: a.Reason, ScannedAt: sc.ScannedAt.UTC(), CheckinID: a.CheckinID}
		switch {
		case res.Verdict == VerdictRefused:
		case res.FirstCheckin.DeviceID == nil || *res.FirstCheckin.DeviceID != c.DeviceID:
			conflict.Reason = ConflictAlreadyCheckedIn
		default:
			continue
		}
		conflicts = append(conflicts, conflict)
	}
	if answered != nil {
		changes = append(changes, *answered)
	}
	return out, append(changes, conflicts...), nil
}

func oracleScanVerdict(m *Machine, now time.Time, c RecordScans, sc Scan, batchDoors map[string]*CheckinRec) (ScanResult, *CheckedIn) {
	res := ScanResult{ScanID: sc.ScanID}
	refuse := func(reason string) (ScanResult, *CheckedIn) {
		res.Verdict, res.Reason = VerdictRefused, &reason
		return res, nil
	}
	var r *RegistrationRec
	if sc.RegistrationID != "" {
		r = m.s.regs()[sc.RegistrationID]
	} else if id, ok := m.s.idx.regByCheckin[strings.ToUpper(strings.TrimSpace(sc.CheckinCode))]; ok {
		r = m.s.regs()[id]
	}
	if r == nil {
		return refuse(RefusedNotFound)
	}
	res.RegistrationID = &r.ID
	subjectID := strings.TrimSpace(sc.SubjectID)
	if sc.SubjectType == "event" {
		subjectID = ""
	}
	if !slices.Contains(c.Doors, DoorRef{SubjectType: sc.SubjectType, SubjectID: subjectID}) || m.checkDoor(sc.SubjectType, subjectID) != nil {
		return refuse(RefusedDoorNotAllowed)
	}
	k := r.ID + "|" + sc.SubjectType + ":" + subjectID
	first := batchDoors[k]
	if c := m.s.doorIdx().doorCheckin(r, sc.SubjectType, subjectID); c != nil {
		first = c
	}
	if first != nil {
		res.Verdict, res.FirstCheckin = VerdictAlreadyCheckedIn, firstCheckinView(first)
		return res, nil
	}
	if r.Status != RegConfirmed {
		return refuse(RefusedNotConfirmed)
	}
	at := now
	if t := sc.ScannedAt.UTC(); sc.Offline && !t.Before(now.Add(-offlinePastMax)) && !t.After(now.Add(offlineFutureMax)) {
		at = t
	}
	ch := CheckedIn{At: now, ID: m.newID("chk_"), RegID: r.ID, SubjectType: sc.SubjectType, SubjectID: subjectID, Method: "scan",
		DeviceID: c.DeviceID, ScanID: sc.ScanID, CheckedInAt: at}
	rec := &CheckinRec{ID: ch.ID, RegID: r.ID, SubjectType: sc.SubjectType, SubjectID: subjectID, Method: "scan", At: at,
		DeviceID: c.DeviceID, ScanID: sc.ScanID}
	batchDoors[k] = rec
	v := m.checkinView(rec)
	res.Verdict, res.Checkin = VerdictAdmitted, &v
	return res, &ch
}

// expandScans is changes with each ScansRecorded as the changes a batch
// recorded before it (ScansRecorded.Expand).
func expandScans(changes []Change) []Change {
	var out []Change
	for _, ch := range changes {
		if r, ok := ch.(ScansRecorded); ok {
			out = append(out, r.Expand()...)
			continue
		}
		out = append(out, ch)
	}
	return out
}

// TestRecordScansAnswersAsTheReference runs random door traffic on two
// machines in lockstep: one decides batches with RecordScans, the other
// with the reference decision above. Batches repeat scan ids (within a
// batch, across batches, across devices), name passes by id and by code
// (in any case, with spaces), unknown codes, doors a device may not use,
// deleted doors, pending and cancelled passes, with and without offline
// admissions; between them the Developer API checks passes in, passes
// are cancelled and a venue is deleted. The fast machine's batches carry
// pass hints resolved outside it, right, stale, foreign or wrong. Every
// answer and every change must be the same, and the states must encode
// alike.
func TestRecordScansAnswersAsTheReference(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { scansAgainstReference(t, seed) })
	}
}

func scansAgainstReference(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 18))
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	fast := NewMachine("evt_1", testConfig(), newSeqIDs(seed))
	ref := NewMachine("evt_1", testConfig(), newSeqIDs(seed))
	seen := map[string]int{}
	// The fast machine's batches carry passes resolved outside it
	// (PassIndex), current or not: none, from its list now, from a list
	// taken earlier (registrations added since are unknown), from the
	// other machine (records of another incarnation) or shuffled (wrong
	// passes). None may change an answer.
	hr := rand.New(rand.NewPCG(seed, 33))
	var oldList PassList
	var index, oldIndex, foreign PassIndex
	hint := func(c RecordScans) RecordScans {
		switch hr.IntN(5) {
		case 1:
			return index.Resolve(fast.PassList(), c)
		case 2:
			if oldList.Len() == 0 || hr.IntN(8) == 0 {
				oldList = fast.PassList()
			}
			return oldIndex.Resolve(oldList, c)
		case 3:
			var x PassIndex
			return x.Resolve(ref.PassList(), c)
		case 4:
			c = foreign.Resolve(fast.PassList(), c)
			hr.Shuffle(len(c.Passes), func(i, j int) { c.Passes[i], c.Passes[j] = c.Passes[j], c.Passes[i] })
			return c
		}
		return c
	}
	both := func(c Command) any {
		t.Helper()
		var results [2]any
		var changes [2][]Change
		var errs [2]error
		for i, m := range []*Machine{fast, ref} {
			if rs, ok := c.(RecordScans); ok && i == 1 {
				results[i], changes[i], errs[i] = oracleRecordScans(m, now, rs)
			} else if ok && i == 0 {
				var alt *Machine
				if hr.IntN(3) == 0 {
					alt = cloneMachine(t, m, seed)
				}
				results[i], changes[i], errs[i] = m.Decide(now, hint(rs))
				if alt != nil {
					sameButCheckinIDs(t, alt, now, rs, results[i], changes[i], errs[i])
				}
			} else {
				results[i], changes[i], errs[i] = m.Decide(now, c)
			}
			for _, ch := range changes[i] {
				m.Apply(ch)
			}
		}
		require.Equal(t, errs[1], errs[0], "seed %d: %T", seed, c)
		require.Equal(t, results[1], results[0], "seed %d: %T", seed, c)
		require.Equal(t, changes[1], expandScans(changes[0]), "seed %d: %T", seed, c)
		require.Equal(t, ref.FeedSeq(), fast.FeedSeq(), "seed %d: feed seq", seed)
		// The batch's feed span renders each check-in's object as the
		// per-check-in feed entries of the reference.
		var want, got [][]byte
		if _, ok := c.(RecordScans); !ok {
			return results[0]
		}
		for _, ch := range changes[1] {
			for _, e := range AppendFeed(nil, ch) {
				if e.Type != FeedCheckinCreated {
					continue
				}
				obj, ok := ref.FeedObject(e)
				require.True(t, ok)
				b, err := json.Marshal(obj)
				require.NoError(t, err)
				want = append(want, b)
			}
		}
		for _, ch := range changes[0] {
			if span, ok := fast.AppendFeedSpan(nil, ch); ok {
				objs, err := ExpandFeedSpan(FeedCheckinCreated, span)
				require.NoError(t, err)
				got = append(got, objs...)
			} else if _, ok := ch.(ScansRecorded); ok {
				require.Empty(t, ch.(ScansRecorded).Checkins, "a batch with check-ins has a span")
			}
		}
		require.Equal(t, want, got, "seed %d: the feed's check-in objects", seed)
		if rs, ok := results[0].(ScanResults); ok {
			for _, x := range rs.Results {
				seen[x.Verdict]++
				if x.Reason != nil {
					seen[*x.Reason]++
				}
			}
			for _, ch := range changes[0] {
				if _, ok := ch.(CheckinConflict); ok {
					seen["conflict"]++
				}
			}
		}
		return results[0]
	}
	both(CreateEvent{Name: "Conf", Timezone: "UTC"})
	venues := []string{both(CreateVenue{Name: "Hall"}).(Venue).ID, both(CreateVenue{Name: "Yard"}).(Venue).ID}
	type pass struct{ id, code string }
	var passes []pass
	for i := range 40 {
		p := both(CreateRegistration{Email: fmt.Sprintf("p%d@x.io", i), Name: []string{"", "Zoë"}[i%2]}).(RegistrationResult)
		passes = append(passes, pass{p.ID, p.CheckinCode})
	}
	all := []DoorRef{{SubjectType: "event"}, {SubjectType: "venue", SubjectID: venues[0]}, {SubjectType: "venue", SubjectID: venues[1]}}
	devices := map[string][]DoorRef{"dev_a": all, "dev_b": all[:1], "dev_c": all[1:]}
	devIDs := []string{"dev_a", "dev_b", "dev_c"}
	scanIDs := 0
	for step := range 300 {
		now = now.Add(time.Duration(r.IntN(90)) * time.Second)
		switch r.IntN(10) {
		case 0:
			p := passes[r.IntN(len(passes))]
			d := all[r.IntN(len(all))]
			both(RecordCheckin{RegistrationID: p.id, SubjectType: d.SubjectType, SubjectID: d.SubjectID})
			continue
		case 1:
			both(CancelRegistration{ID: passes[r.IntN(len(passes))].id}) // a second cancel is refused alike
			continue
		}
		if step == 200 {
			both(DeleteVenue{ID: venues[1]})
		}
		dev := devIDs[r.IntN(len(devIDs))]
		c := RecordScans{DeviceID: dev, Doors: devices[dev], Scans: make([]Scan, 1+r.IntN(30))}
		for i := range c.Scans {
			sc := Scan{SubjectType: "event", ScannedAt: At(now.Add(-time.Duration(r.IntN(400)) * time.Minute)),
				Offline: r.IntN(2) == 0, AdmittedOffline: r.IntN(4) == 0}
			if r.IntN(6) == 0 && scanIDs > 0 {
				sc.ScanID = fmt.Sprintf("s%d", r.IntN(scanIDs)) // a repeat, maybe of another device's id
			} else {
				scanIDs++
				sc.ScanID = fmt.Sprintf("s%d", scanIDs)
			}
			p := passes[r.IntN(len(passes))]
			switch r.IntN(8) {
			case 0:
				sc.CheckinCode = " " + strings.ToLower(p.code) + " "
			case 1:
				sc.CheckinCode = "CHK-NOPE"
			case 2:
				sc.RegistrationID = "reg_nope"
			case 3, 4:
				sc.CheckinCode = p.code
			default:
				sc.RegistrationID = p.id
			}
			switch r.IntN(4) {
			case 0:
				sc.SubjectType, sc.SubjectID = "venue", venues[r.IntN(2)]
			case 1:
				sc.SubjectType, sc.SubjectID = "venue", " "+venues[0]
			case 2:
				sc.SubjectType, sc.SubjectID = "session", "ses_nope"
			}
			c.Scans[i] = sc
		}
		both(c)
	}
	for _, k := range []string{VerdictAdmitted, VerdictAlreadyCheckedIn, RefusedNotFound, RefusedDoorNotAllowed, RefusedNotConfirmed, "conflict"} {
		require.Positive(t, seen[k], "seed %d: the traffic reaches %s (%v)", seed, k, seen)
	}
	a, err := MarshalState(fast.State())
	require.NoError(t, err)
	b, err := MarshalState(ref.State())
	require.NoError(t, err)
	require.Equal(t, b, a, "seed %d: the states encode alike", seed)
}

// cloneMachine is a machine with m's state (through its encoding) and ids
// of its own.
func cloneMachine(t *testing.T, m *Machine, seed uint64) *Machine {
	b, err := MarshalState(m.State())
	require.NoError(t, err)
	st, err := UnmarshalState(b)
	require.NoError(t, err)
	alt := NewMachine("evt_1", testConfig(), newSeqIDs(seed+1000))
	alt.Restore(st)
	return alt
}

// sameButCheckinIDs decides c on alt (a clone of the machine that decided
// it without them) with check-in ids made outside (RecordScans.CheckinIDs,
// sometimes fewer than its check-ins): the answer and the changes are the
// ones given, but for the ids of the check-ins (the given ones in order,
// then the machine's) and of the conflicts (alt's own).
func sameButCheckinIDs(t *testing.T, alt *Machine, now time.Time, c RecordScans, res any, changes []Change, err error) {
	t.Helper()
	c.CheckinIDs = make([]string, len(c.Scans)/2+1)
	for i := range c.CheckinIDs {
		c.CheckinIDs[i] = fmt.Sprintf("out_%d", i)
	}
	res2, changes2, err2 := alt.Decide(now, c)
	require.Equal(t, err, err2)
	if err != nil {
		return
	}
	// Each id of alt's answer, as the one of the same place in the given.
	var from, to []string
	for j, ch := range changes2 {
		switch x := ch.(type) {
		case ScansRecorded:
			want := changes[j].(ScansRecorded)
			for i, ci := range x.Checkins {
				if i < len(c.CheckinIDs) {
					require.Equal(t, c.CheckinIDs[i], ci.ID, "the batch's check-in %d takes the id made outside", i)
				}
				from, to = append(from, ci.ID), append(to, want.Checkins[i].ID)
			}
		case CheckinConflict:
			from, to = append(from, x.ID), append(to, changes[j].(CheckinConflict).ID)
		}
	}
	require.Len(t, changes2, len(changes))
	rename := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		s := string(b)
		for i, id := range from {
			s = strings.ReplaceAll(s, `"`+id+`"`, fmt.Sprintf(`"\u0000%d"`, i))
		}
		for i, id := range to {
			s = strings.ReplaceAll(s, fmt.Sprintf(`"\u0000%d"`, i), `"`+id+`"`)
		}
		return s
	}
	want, err := json.Marshal([]any{res, changes})
	require.NoError(t, err)
	require.Equal(t, string(want), rename([]any{res2, changes2}))
}
