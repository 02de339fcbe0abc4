package event

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

func benchMachine(b *testing.B) (*Machine, time.Time) {
	b.Helper()
	m := NewMachine("evt_bench", testConfig(), newSeqIDs(1))
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	start := Time{now.Add(720 * time.Hour)}
	for _, c := range []Command{
		CreateEvent{Name: "B", Timezone: "UTC", StartsAt: &start},
		UpdateEvent{Status: Some(EventPublished)},
		CreateTicketType{Name: "GA", PriceAmount: 1000},
		UpdateTicketType{ID: "tt_1", Status: Some(SellOpen)},
		CreateAddon{Name: "Shirt", PriceAmount: 100},
		UpdateAddon{ID: "ao_1", Status: Some(SellOpen)},
	} {
		_, chs, err := m.Decide(now, c)
		if err != nil {
			b.Fatal(err)
		}
		for _, ch := range chs {
			m.Apply(ch)
		}
	}
	return m, now
}

func decideApply(b *testing.B, m *Machine, now time.Time, c Command) {
	_, chs, err := m.Decide(now, c)
	if err != nil {
		b.Fatal(err)
	}
	for _, ch := range chs {
		m.Apply(ch)
	}
}

func BenchmarkDecideApplyPlaceOrder(b *testing.B) {
	m, now := benchMachine(b)
	items := []OrderItem{{ItemType: ItemRegistrationType, ItemID: "tt_1", Quantity: 1}, {ItemType: ItemAddon, ItemID: "ao_1", Quantity: 2}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		decideApply(b, m, now, PlaceOrder{Email: fmt.Sprintf("p%d@x.io", i), Items: items})
	}
}

func BenchmarkDecideApplyRegistration(b *testing.B) {
	m, now := benchMachine(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		decideApply(b, m, now, CreateRegistration{Email: fmt.Sprintf("p%d@x.io", i), RegistrationTypeID: "tt_1"})
	}
}

func BenchmarkDecideApplyCheckin(b *testing.B) {
	m, now := benchMachine(b)
	const n = 10000
	for i := range n {
		decideApply(b, m, now, CreateRegistration{Email: fmt.Sprintf("p%d@x.io", i), RegistrationTypeID: "tt_1"})
	}
	ids := m.State().RegOrder
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// The first pass records, later passes are repeat scans.
		decideApply(b, m, now, RecordCheckin{RegistrationID: ids[i%n], SubjectType: "event"})
	}
}

// BenchmarkReplay measures decoding and applying logged changes, the
// recovery path (target: >= 500k changes/s).
func BenchmarkReplay(b *testing.B) {
	m, now := benchMachine(b)
	var log [][]byte
	items := []OrderItem{{ItemType: ItemRegistrationType, ItemID: "tt_1", Quantity: 1}}
	for i := range 2000 {
		_, chs, err := m.Decide(now, PlaceOrder{Email: fmt.Sprintf("p%d@x.io", i), Items: items})
		if err != nil {
			b.Fatal(err)
		}
		for _, ch := range chs {
			m.Apply(ch)
			enc, _ := MarshalChange(ch)
			log = append(log, enc)
		}
		_, chs, err = m.Decide(now, ConfirmOrder{Ref: m.State().OrderOrder[i], SuccessURL: "https://a.io", CancelURL: "https://a.io"})
		if err != nil {
			b.Fatal(err)
		}
		for _, ch := range chs {
			m.Apply(ch)
			enc, _ := MarshalChange(ch)
			log = append(log, enc)
		}
	}
	setup, _ := benchMachine(b)
	base, _ := MarshalState(setup.State())
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		s, err := UnmarshalState(base)
		if err != nil {
			b.Fatal(err)
		}
		r := NewMachine("evt_bench", testConfig(), nil)
		r.Restore(s)
		for _, enc := range log {
			ch, err := UnmarshalChange(enc)
			if err != nil {
				b.Fatal(err)
			}
			r.Apply(ch)
			n++
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "changes/s")
}

func BenchmarkMarshalChange(b *testing.B) {
	ch := OrderPlaced{At: time.Now(), ID: "ord_1", Number: "X-ABCDEFGH", Email: "a@x.io", Lines: []OrderLine{{ItemType: ItemRegistrationType, ItemID: "tt_1", Name: "GA", Quantity: 1, UnitPrice: 1000, Amount: 1000}}, Holds: []Hold{{Kind: ItemRegistrationType, ID: "tt_1", Qty: 1}}, Total: 1000, Currency: "USD", Status: OrderStatusOpen}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MarshalChange(ch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendChange encodes a change the way the actor does: a Change
// value (as Decide returns it) into one reused buffer.
func BenchmarkAppendChange(b *testing.B) {
	var ch Change = OrderPlaced{At: time.Now(), ID: "ord_1", Number: "X-ABCDEFGH", Email: "a@x.io", Lines: []OrderLine{{ItemType: ItemRegistrationType, ItemID: "tt_1", Name: "GA", Quantity: 1, UnitPrice: 1000, Amount: 1000}}, Holds: []Hold{{Kind: ItemRegistrationType, ID: "tt_1", Qty: 1}}, Total: 1000, Currency: "USD", Status: OrderStatusOpen}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendChange(buf[:0], ch); err != nil {
			b.Fatal(err)
		}
	}
}

// bigState builds an event with n confirmed registrations.
func bigState(b *testing.B, n int) *Machine {
	m, now := benchMachine(b)
	for i := range n {
		decideApply(b, m, now, CreateRegistration{Email: fmt.Sprintf("person%07d@example.com", i), Name: "Some Body", RegistrationTypeID: "tt_1"})
	}
	return m
}

// BenchmarkSnapshot100k measures encoding and decoding a snapshot of an
// event with 100,000 registrations (recovery: decode time bounds the first
// accepted order after a restart).
func BenchmarkSnapshot100k(b *testing.B) {
	const n = 100_000
	m := bigState(b, n)
	snap, err := MarshalState(m.State())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := MarshalState(m.State()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(snap)))
		for b.Loop() {
			if _, err := UnmarshalState(snap); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/registration")
	})
}

// BenchmarkHeapPerRegistration reports the live heap one registration costs
// (target: at most 1 KiB).
func BenchmarkHeapPerRegistration(b *testing.B) {
	const n = 50_000
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m := bigState(b, n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heapB/registration")
		runtime.KeepAlive(m)
	}
}
