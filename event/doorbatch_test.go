package event

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFeedSpanLenBoundsTheSpan: the size the shell makes a batch's feed
// span at holds the span AppendFeedSpan writes, with at most a few bytes a
// check-in to spare (long and non-ASCII names and emails, two doors, online
// and offline times).
func TestFeedSpanLenBoundsTheSpan(t *testing.T) {
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	doorRun(t, m, now, CreateEvent{Name: "Conf", Timezone: "UTC"})
	venue := doorRun(t, m, now, CreateVenue{Name: "Hall"}).ID
	var scans []Scan
	for i := range 300 {
		name := strings.Repeat("Zoë ", i%40)
		r := doorRun(t, m, now, CreateRegistration{Email: fmt.Sprintf("%s%d@x.io", strings.Repeat("p", i%50), i), Name: name})
		door := DoorRef{SubjectType: "event"}
		if i%2 == 1 {
			door = DoorRef{SubjectType: "venue", SubjectID: venue}
		}
		scans = append(scans, Scan{ScanID: fmt.Sprintf("s%d", i), RegistrationID: r.ID, SubjectType: door.SubjectType,
			SubjectID: door.SubjectID, ScannedAt: At(now.Add(-time.Duration(i) * time.Minute)), Offline: i%3 == 0})
	}
	c := RecordScans{DeviceID: "dev_1", Doors: []DoorRef{{SubjectType: "event"}, {SubjectType: "venue", SubjectID: venue}}, Scans: scans}
	_, changes, err := DecideOp(m, now, c)
	require.NoError(t, err)
	require.NotEmpty(t, changes)
	ch := changes[0]
	m.Apply(ch)
	span, ok := m.AppendFeedSpan(nil, ch)
	require.True(t, ok)
	n := m.FeedSpanLen(ch)
	require.GreaterOrEqual(t, n, len(span))
	require.LessOrEqual(t, n, len(span)+10*len(ch.(ScansRecorded).Checkins))
	require.Zero(t, m.FeedSpanLen(ScansAnswered{}))
}

// TestScansRecordedEffectsAsExpanded: a batch owes what its expansion
// into the changes of older logs owes, in the same order.
func TestScansRecordedEffectsAsExpanded(t *testing.T) {
	at := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	c := ScansRecorded{At: at, DeviceID: "dev_1", Doors: []DoorRef{{SubjectType: "event"}, {SubjectType: "venue", SubjectID: "ven_1"}},
		Answers: []ScanAnswer{{ScanID: "x", Verdict: VerdictRefused, Reason: RefusedNotFound}}}
	for i := range 40 {
		k := ScanCheckin{ID: fmt.Sprintf("chk_%d", i), RegID: fmt.Sprintf("reg_%d", i), Reg: i, Door: i % 2, ScanID: fmt.Sprintf("s%d", i)}
		if i%3 == 0 {
			k.CheckedInAt = at.Add(-time.Duration(i) * time.Minute)
		}
		c.Checkins = append(c.Checkins, k)
	}
	var want []Effect
	for _, ch := range c.Expand() {
		want = AppendEffects(want, ch)
	}
	stale := make([]Effect, 3, 64) // a reused buffer: what it held must not show
	stale[2].Conflict.ID = "dcf_old"
	got := AppendEffects(stale[:1], c)
	require.Equal(t, want, got[1:])
	require.Len(t, got, 41)
}
