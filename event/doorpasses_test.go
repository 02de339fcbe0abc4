package event

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// passIndexEvent is an event of n registrations with ULID-like ids and
// codes (benchIDs), and a door batch of 500 scans of spread passes, half
// by registration id and half by check-in code (one in five of those in
// lower case, as a keyboard wedge may type it).
func passIndexEvent(tb testing.TB, n int) (*Machine, []RecordScans) {
	tb.Helper()
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	m := NewMachine("evt_1", testConfig(), &benchIDs{})
	run := func(c Command) any {
		res, changes, err := m.Decide(now, c)
		if err != nil {
			tb.Fatal(err)
		}
		for _, ch := range changes {
			m.Apply(ch)
		}
		return res
	}
	run(CreateEvent{Name: "Conf", Timezone: "UTC"})
	regs := make([]RegistrationResult, n)
	for i := range regs {
		regs[i] = run(CreateRegistration{Email: fmt.Sprintf("p%d@x.io", i)}).(RegistrationResult)
	}
	batches := make([]RecordScans, 16)
	k := 0
	for b := range batches {
		c := RecordScans{DeviceID: "dev_1", Doors: []DoorRef{{SubjectType: "event"}}, Scans: make([]Scan, 500)}
		for j := range c.Scans {
			k = (k + 7919) % n
			sc := Scan{ScanID: fmt.Sprintf("s%d-%d", b, j), SubjectType: "event", ScannedAt: At(now)}
			switch {
			case j%2 == 0:
				sc.RegistrationID = regs[k].ID
			case j%10 == 1:
				sc.CheckinCode = strings.ToLower(regs[k].CheckinCode)
			default:
				sc.CheckinCode = regs[k].CheckinCode
			}
			c.Scans[j] = sc
		}
		batches[b] = c
	}
	return m, batches
}

// BenchmarkPassIndexResolve resolves batches of 500 scans against the
// index of an event of 100,000 registrations (20,000 under -short), as a
// door request's goroutine does before it asks the event's actor.
func BenchmarkPassIndexResolve(b *testing.B) {
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	m, batches := passIndexEvent(b, n)
	var x PassIndex
	l := m.PassList()
	x.TakeIn(l)
	c := x.Resolve(l, batches[0])
	if len(c.Passes) != len(batches[0].Scans) {
		b.Fatal("not resolved")
	}
	for i, p := range c.Passes {
		if p == nil {
			b.Fatalf("scan %d not resolved", i)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c = x.Resolve(l, batches[i%len(batches)])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/scan")
}

// BenchmarkPassIndexTakeIn builds the index of an event of 100,000
// registrations (20,000 under -short): the one-time cost a door pays once.
func BenchmarkPassIndexTakeIn(b *testing.B) {
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	m, _ := passIndexEvent(b, n)
	l := m.PassList()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var x PassIndex
		x.TakeIn(l)
	}
}

// TestPrepareDoor: PrepareDoor builds the tables a batch of scans reads
// (DoorReady) and changes nothing a snapshot or a replay holds; a loaded
// or replayed state has them unbuilt until prepared; prepared tables
// follow the registrations added after; and the verdicts are those of a
// machine never prepared.
func TestPrepareDoor(t *testing.T) {
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	var log [][]byte
	run := func(c Command) any {
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
	run(CreateEvent{Name: "Conf", Timezone: "UTC"})
	var regs []RegistrationResult
	for i := range 30 {
		regs = append(regs, run(CreateRegistration{Email: fmt.Sprintf("p%d@x.io", i)}).(RegistrationResult))
	}
	require.False(t, m.DoorReady())
	before, err := MarshalState(m.State())
	require.NoError(t, err)
	m.PrepareDoor()
	require.True(t, m.DoorReady())
	after, err := MarshalState(m.State())
	require.NoError(t, err)
	require.Equal(t, before, after, "preparing changes nothing a snapshot holds")

	loaded, err := UnmarshalState(before)
	require.NoError(t, err)
	fromSnap := NewMachine("evt_1", testConfig(), newSeqIDs(99))
	fromSnap.Restore(loaded)
	replayed := NewMachine("evt_1", testConfig(), newSeqIDs(99))
	for _, rec := range log {
		require.NoError(t, replayed.ApplyRecord(rec))
	}
	require.False(t, fromSnap.DoorReady(), "a snapshot load builds no door table")
	require.False(t, replayed.DoorReady(), "a replay builds no door table")
	fromSnap.PrepareDoor()
	require.True(t, fromSnap.DoorReady())
	again, err := MarshalState(fromSnap.State())
	require.NoError(t, err)
	require.Equal(t, before, again)

	// Registrations after the preparation, then a batch by code and by
	// id: the prepared machines answer as the unprepared replay does.
	mark := len(log)
	for i := range 3 {
		regs = append(regs, run(CreateRegistration{Email: fmt.Sprintf("q%d@x.io", i)}).(RegistrationResult))
	}
	for _, rec := range log[mark:] {
		require.NoError(t, fromSnap.ApplyRecord(rec))
		require.NoError(t, replayed.ApplyRecord(rec))
	}
	require.True(t, m.DoorReady())
	require.True(t, fromSnap.DoorReady())
	batch := RecordScans{DeviceID: "dev_1", Doors: []DoorRef{{SubjectType: "event"}}}
	for i, r := range regs[27:] {
		sc := Scan{ScanID: fmt.Sprintf("s%d", i), SubjectType: "event", ScannedAt: At(now)}
		if i%2 == 0 {
			sc.CheckinCode = r.CheckinCode
		} else {
			sc.RegistrationID = r.ID
		}
		batch.Scans = append(batch.Scans, sc)
		batch.CheckinIDs = append(batch.CheckinIDs, fmt.Sprintf("chk_%d", i))
	}
	batch.Scans = append(batch.Scans, Scan{ScanID: "none", CheckinCode: "CHK-NONE", SubjectType: "event", ScannedAt: At(now)})
	want, _, err := DecideOp(replayed, now, batch)
	require.NoError(t, err)
	require.Equal(t, VerdictAdmitted, want.Results[5].Verdict)
	require.Equal(t, VerdictRefused, want.Results[6].Verdict)
	for _, mm := range []*Machine{m, fromSnap} {
		got, _, err := DecideOp(mm, now, batch)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}

// TestPassTable: a hash maps to the registration put last for it, a hash
// never put to nil, through growth; and an index resolves an empty list
// (nothing taken in) to no passes.
func TestPassTable(t *testing.T) {
	var tb passTable
	require.Nil(t, tb.get(7))
	recs := make([]RegistrationRec, 5000)
	for i := range recs {
		// Hashes that share their low bits, so probes run long.
		tb.put(uint64(i)<<20|5, &recs[i])
	}
	tb.put(3<<20|5, &recs[0])
	require.Equal(t, len(recs), tb.n)
	require.LessOrEqual(t, 4*tb.n, 3*len(tb.slots))
	for i := range recs {
		want := &recs[i]
		if i == 3 {
			want = &recs[0]
		}
		require.Same(t, want, tb.get(uint64(i)<<20|5), "hash %d", i)
	}
	require.Nil(t, tb.get(uint64(len(recs))<<20|5))
	require.Nil(t, tb.get(0))

	var x PassIndex
	c := x.Resolve(PassList{}, RecordScans{Scans: []Scan{{RegistrationID: "reg_1"}}})
	require.Nil(t, c.Passes)
}

// TestPassIndexResolves: every pass resolves by id and by code (typed in
// lower case), an unknown id or code to nil, and registrations added
// later once the index takes them in.
func TestPassIndexResolves(t *testing.T) {
	m, batches := passIndexEvent(t, 3000)
	var x PassIndex
	l := m.PassList()
	for _, b := range batches {
		c := x.Resolve(l, b)
		require.Len(t, c.Passes, len(b.Scans))
		for i, p := range c.Passes {
			sc := b.Scans[i]
			require.NotNil(t, p)
			if sc.RegistrationID != "" {
				require.Equal(t, sc.RegistrationID, p.ID)
			} else {
				require.Equal(t, normCheckinCode(sc.CheckinCode), p.CheckinCode)
			}
		}
	}
	c := x.Resolve(l, RecordScans{Scans: []Scan{{RegistrationID: "reg_none"}, {CheckinCode: "CHK-NONE"}}})
	require.Equal(t, []*RegistrationRec{nil, nil}, c.Passes)
	res, changes, err := m.Decide(time.Now(), CreateRegistration{Email: "late@x.io"})
	require.NoError(t, err)
	for _, ch := range changes {
		m.Apply(ch)
	}
	late := res.(RegistrationResult)
	c = x.Resolve(m.PassList(), RecordScans{Scans: []Scan{{CheckinCode: late.CheckinCode}, {RegistrationID: late.ID}}})
	require.Equal(t, 3001, x.Len())
	for _, p := range c.Passes {
		require.NotNil(t, p)
		require.Equal(t, late.ID, p.ID)
	}
}
