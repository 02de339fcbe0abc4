package event

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// ulidish returns a 26-character id like the shell's lower-case ULIDs, so
// benchmark records have production sizes.
func ulidish(i int) string {
	s := strconv.FormatInt(int64(i), 32)
	return "01jd3k7m2q" + fmt.Sprintf("%016s", s)
}

// registrationLog builds the log of an event with n registrations the way
// the shell writes it (bench/seed.go): event, ticket type, then per
// registration a registration.created and a ticket.issued, each encoded
// by MarshalChange. It returns the records.
func registrationLog(tb testing.TB, n int) [][]byte {
	tb.Helper()
	at := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	evt := "evt_" + ulidish(0)
	typ := "tt_" + ulidish(1)
	capacity := 10 * n
	head := []Change{
		EventCreated{At: at, Name: "Bench", Timezone: "UTC", Currency: "USD"},
		EventUpdated{At: at, Name: "Bench", Timezone: "UTC", Status: EventPublished, Currency: "USD"},
		TicketTypeCreated{At: at, ID: typ, TicketTypeSpec: TicketTypeSpec{Name: "GA", Capacity: &capacity, Status: SellOpen}},
	}
	log := make([][]byte, 0, len(head)+2*n)
	for _, ch := range head {
		b, err := MarshalChange(ch)
		if err != nil {
			tb.Fatal(err)
		}
		log = append(log, b)
	}
	for i := range n {
		at := at.Add(time.Duration(i) * time.Millisecond)
		id := "reg_" + ulidish(i+2)
		code := ulidish(i)[10:]
		for _, ch := range []Change{
			RegistrationCreated{At: at, ID: id, Email: "p" + strconv.Itoa(i) + "@bench.example", Name: "Bench", TypeID: typ,
				Status: RegConfirmed, CheckinCode: "CHK-" + code, PassToken: evt + "." + code + code},
			TicketIssued{At: at, RegistrationIDs: []string{id}},
		} {
			b, err := MarshalChange(ch)
			if err != nil {
				tb.Fatal(err)
			}
			log = append(log, b)
		}
	}
	return log
}

// orderLog builds the log of a flash sale: event, ticket type, then n
// open orders of one ticket each (order.placed), encoded by MarshalChange.
func orderLog(tb testing.TB, n int) [][]byte {
	tb.Helper()
	at := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	typ := "tt_" + ulidish(1)
	capacity := 10 * n
	log := make([][]byte, 0, 3+n)
	add := func(ch Change) {
		b, err := MarshalChange(ch)
		if err != nil {
			tb.Fatal(err)
		}
		log = append(log, b)
	}
	add(EventCreated{At: at, Name: "Bench", Timezone: "UTC", Currency: "USD"})
	add(EventUpdated{At: at, Name: "Bench", Timezone: "UTC", Status: EventPublished, Currency: "USD"})
	add(TicketTypeCreated{At: at, ID: typ, TicketTypeSpec: TicketTypeSpec{Name: "GA", Capacity: &capacity, Price: 1000, Status: SellOpen}})
	for i := range n {
		at := at.Add(time.Duration(i) * time.Millisecond)
		add(OrderPlaced{At: at, ID: "ord_" + ulidish(i+2), Number: ulidish(0)[10:] + "-" + ulidish(i)[18:], Email: "p" + strconv.Itoa(i) + "@bench.example",
			Lines: []OrderLine{{ItemType: ItemRegistrationType, ItemID: typ, Name: "GA", Quantity: 1, UnitPrice: 1000, Amount: 1000}},
			Holds: []Hold{{Kind: ItemRegistrationType, ID: typ, Qty: 1}},
			Total: 1000, Currency: "USD", HoldUntil: at.Add(15 * time.Minute), Status: OrderStatusOpen, AdmissionTypeID: typ})
	}
	return log
}

// BenchmarkReplayOrders replays a flash sale of 100k open orders (each one
// change, holding places and queued by deadline); 20k under -short.
func BenchmarkReplayOrders(b *testing.B) {
	orders := 100_000
	if testing.Short() {
		orders = 20_000
	}
	log := orderLog(b, orders)
	for _, values := range []bool{false, true} {
		path := "ApplyRecord"
		if values {
			path = "UnmarshalChange+Apply"
		}
		b.Run(fmt.Sprintf("changes=%d/%s", len(log), path), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				runtime.KeepAlive(replayLog(b, log, values))
			}
			per := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(len(log))
			b.ReportMetric(per, "ns/change")
		})
	}
}

// replayLog applies every record to a fresh machine, the way the shell
// recovers: Reserve with the record count, then ApplyRecord, or (values)
// UnmarshalChange and Apply.
func replayLog(tb testing.TB, log [][]byte, values bool) *Machine {
	m := NewMachine("evt_"+ulidish(0), testConfig(), nil)
	m.Reserve(len(log))
	for _, rec := range log {
		if !values {
			if err := m.ApplyRecord(rec); err != nil {
				tb.Fatal(err)
			}
			continue
		}
		ch, err := UnmarshalChange(rec)
		if err != nil {
			tb.Fatal(err)
		}
		m.Apply(ch)
	}
	return m
}

// BenchmarkReplayLog measures recovery without a snapshot: decoding and
// applying the log of an event with 50k and 500k registrations (100k and
// 1M changes). Flat ns/change across sizes means no growth costs (target:
// >= 500k changes/s, that is <= 2000 ns/change, with the Pebble scan).
// -short leaves out the larger size.
func BenchmarkReplayLog(b *testing.B) {
	sizes := []int{50_000, 500_000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, regs := range sizes {
		log := registrationLog(b, regs)
		for _, values := range []bool{false, true} {
			path := "ApplyRecord"
			if values {
				path = "UnmarshalChange+Apply"
			}
			b.Run(fmt.Sprintf("changes=%d/%s", len(log), path), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					m := replayLog(b, log, values)
					runtime.KeepAlive(m)
				}
				per := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(len(log))
				b.ReportMetric(per, "ns/change")
				b.ReportMetric(1e9/per, "changes/s")
			})
		}
	}
}

// BenchmarkSnapshot1M measures encoding and decoding the snapshot of an
// event with 1,000,000 registrations (targets: decode well under 0.4 s,
// encode well under 1 s). Building the event takes most of a minute on
// two cores, so -short skips it; BenchmarkSnapshot100k runs the same code.
func BenchmarkSnapshot1M(b *testing.B) {
	if testing.Short() {
		b.Skip("1,000,000 registrations: run without -short (make bench)")
	}
	const n = 1_000_000
	m := replayLog(b, registrationLog(b, n), false)
	snap, err := MarshalState(m.State())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("MarshalState", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := MarshalState(m.State()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("UnmarshalState", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(snap)))
		for b.Loop() {
			if _, err := UnmarshalState(snap); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("UnmarshalStateOwned", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(snap)))
		for b.Loop() {
			// The buffer is handed over, as LoadNewest's is; the copy
			// stands for the read from the store.
			b.StopTimer()
			own := append([]byte(nil), snap...)
			b.StartTimer()
			if _, err := UnmarshalStateOwned(own); err != nil {
				b.Fatal(err)
			}
		}
	})
}
