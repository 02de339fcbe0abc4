package persistence_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/persistence"
)

// writeRegistrationLog writes the log of an event with n registrations the
// way the shell does (bench/seed.go): event, ticket type, then a
// registration.created and a ticket.issued per registration.
func writeRegistrationLog(tb testing.TB, s *persistence.Store, stream string, n int) int {
	tb.Helper()
	at := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	id := func(i int) string { return fmt.Sprintf("01jd3k7m2q%016s", strconv.FormatInt(int64(i), 32)) }
	typ := "tt_" + id(1)
	capacity := 10 * n
	changes := []event.Change{
		event.EventCreated{At: at, Name: "Bench", Timezone: "UTC", Currency: "USD"},
		event.EventUpdated{At: at, Name: "Bench", Timezone: "UTC", Status: event.EventPublished, Currency: "USD"},
		event.TicketTypeCreated{At: at, ID: typ, TicketTypeSpec: event.TicketTypeSpec{Name: "GA", Capacity: &capacity, IsPublic: true, Status: event.SellOpen}},
	}
	seq := uint64(0)
	b := s.NewBatch()
	flush := func(force bool) {
		if b.Count() >= 1000 || (force && !b.Empty()) {
			require.NoError(tb, s.Commit(b))
			b.Close()
			b = s.NewBatch()
		}
	}
	add := func(ch event.Change) {
		rec, err := event.MarshalChange(ch)
		require.NoError(tb, err)
		seq++
		b.Append(stream, seq, rec)
		flush(false)
	}
	for _, ch := range changes {
		add(ch)
	}
	for i := range n {
		at := at.Add(time.Duration(i) * time.Millisecond)
		reg, code := "reg_"+id(i+2), id(i)[10:]
		add(event.RegistrationCreated{At: at, ID: reg, Email: "p" + strconv.Itoa(i) + "@bench.example", Name: "Bench", TypeID: typ,
			Status: event.RegConfirmed, CheckinCode: "CHK-" + code, PassToken: stream + "." + code + code})
		add(event.TicketIssued{At: at, RegistrationIDs: []string{reg}})
	}
	flush(true)
	b.Close()
	return int(seq)
}

// BenchmarkRecoverEvent measures recovery without a snapshot end to end,
// as the event actor can do it: Store.Replay over a freshly opened store,
// Machine.Reserve and Machine.ApplyRecord, for 100k and 1M changes
// (target: >= 500,000 changes/s; ns/change should not grow with size).
// -short leaves out the larger size.
func BenchmarkRecoverEvent(b *testing.B) {
	sizes := []int{50_000, 500_000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, regs := range sizes {
		dir := b.TempDir()
		s, err := persistence.Open(persistence.Options{Dir: dir, NoSync: true})
		require.NoError(b, err)
		const stream = "evt_01jd3k7m2q0000000000000000"
		records := writeRegistrationLog(b, s, stream, regs)
		require.NoError(b, s.Close())
		for _, mode := range []string{"ApplyRecord", "UnmarshalChange+Apply", "scan-only"} {
			b.Run(fmt.Sprintf("changes=%d/%s", records, mode), func(b *testing.B) { recoverEvent(b, dir, stream, records, mode) })
		}
	}
}

// recoverEvent opens the store in dir and replays stream into a fresh
// machine, reporting the cost per change. Modes: "ApplyRecord" (with
// Reserve), "UnmarshalChange+Apply" (the shell's calls before Reserve and
// ApplyRecord existed), "scan-only" (Pebble alone).
func recoverEvent(b *testing.B, dir, stream string, records int, mode string) {
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s, err := persistence.Open(persistence.Options{Dir: dir})
		require.NoError(b, err)
		b.StartTimer()
		m := event.NewMachine(stream, event.Config{}, nil)
		last, err := s.LastSeq(stream)
		require.NoError(b, err)
		if mode == "ApplyRecord" {
			m.Reserve(int(last))
		}
		n := 0
		err = s.Replay(stream, 0, func(_ uint64, rec []byte) error {
			n++
			switch mode {
			case "ApplyRecord":
				return m.ApplyRecord(rec)
			case "UnmarshalChange+Apply":
				ch, err := event.UnmarshalChange(rec)
				if err != nil {
					return err
				}
				m.Apply(ch)
			}
			return nil
		})
		require.NoError(b, err)
		require.Equal(b, records, n)
		b.StopTimer()
		require.NoError(b, s.Close())
		b.StartTimer()
	}
	per := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(records)
	b.ReportMetric(per, "ns/change")
	b.ReportMetric(1e9/per, "changes/s")
}
