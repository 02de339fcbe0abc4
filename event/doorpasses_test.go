package event

import (
	"fmt"
	"testing"
	"time"
)

// passIndexEvent is an event of n registrations with ULID-like ids and
// codes (benchIDs), and a door batch of 500 scans of spread passes, half
// by registration id and half by check-in code (lower case, as a
// keyboard wedge may type it).
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
			if j%2 == 0 {
				sc.RegistrationID = regs[k].ID
			} else {
				sc.CheckinCode = "chk-" + regs[k].CheckinCode[len("CHK-"):]
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
	c := x.Resolve(l, batches[0])
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
		x.Resolve(l, RecordScans{})
	}
}
