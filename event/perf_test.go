package event

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStateRecordLengths round-trips records whose length prefix takes
// one, two and three bytes (record moves the body for the first and last).
func TestStateRecordLengths(t *testing.T) {
	at := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	m := NewMachine("evt_1", testConfig(), nil)
	m.Apply(EventCreated{At: at, Name: "E", Timezone: "UTC", Currency: "USD"})
	for i, name := range []string{"", "short", strings.Repeat("n", 200), strings.Repeat("l", 20000)} {
		m.Apply(RegistrationCreated{At: at, ID: "reg_" + string(rune('a'+i)), Email: string(rune('a'+i)) + "@x.io", Name: name,
			Status: RegConfirmed, CheckinCode: "CHK-" + string(rune('A'+i)), PassToken: "evt_1." + string(rune('A'+i))})
	}
	b, err := MarshalState(m.State())
	require.NoError(t, err)
	got, err := UnmarshalState(b)
	require.NoError(t, err)
	for _, id := range m.State().RegOrder {
		require.Equal(t, *m.State().regs()[id], *got.regs()[id])
	}
	again, err := MarshalState(got)
	require.NoError(t, err)
	require.Equal(t, b, again)
}

// TestReserveChangesNothing replays one log with and without a capacity
// hint (too small, right, too large) and gets the same state.
func TestReserveChangesNothing(t *testing.T) {
	log := registrationLog(t, 300)
	want, err := MarshalState(replayLog(t, log, true).State())
	require.NoError(t, err)
	for _, hint := range []int{0, 10, len(log), 100 * len(log), -5, 1 << 40} {
		m := NewMachine("evt_"+ulidish(0), testConfig(), nil)
		m.Reserve(hint)
		for _, rec := range log {
			require.NoError(t, m.ApplyRecord(rec))
		}
		got, err := MarshalState(m.State())
		require.NoError(t, err)
		require.Equal(t, want, got, "hint %d", hint)
		require.Equal(t, max(min(hint, maxReserve)-len(log), 0), m.State().mem.reserve, "hint %d counts down per change", hint)
	}
}

// benchIDs is an IDs that allocates only the strings it returns, like the
// shell's (ULIDs and random codes), so benchmarks count the core's own
// allocations.
type benchIDs struct{ n int }

func (b *benchIDs) New(prefix string) string {
	return prefix + b.Code(26)
}

func (b *benchIDs) Code(n int) string {
	b.n++
	const digits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	var sb strings.Builder
	sb.Grow(n)
	for i, x := 0, b.n; i < n; i++ {
		sb.WriteByte(digits[x%32])
		x = x/32 + i
	}
	return sb.String()
}

// hotMachine is a published event with an open ticket type of the given
// capacity (0: unlimited) and an add-on, on benchIDs.
func hotMachine(tb testing.TB, capacity int) (*Machine, time.Time) {
	tb.Helper()
	m := NewMachine("evt_"+ulidish(0), testConfig(), &benchIDs{})
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	start := Time{now.Add(720 * time.Hour)}
	tt := CreateTicketType{Name: "GA", PriceAmount: 1000}
	if capacity > 0 {
		tt.Capacity = &capacity
	}
	for _, c := range []Command{CreateEvent{Name: "B", Timezone: "UTC", StartsAt: &start}, UpdateEvent{Status: Some(EventPublished)}, tt} {
		if _, _, err := shellStep(m, now, c); err != nil {
			tb.Fatal(err)
		}
	}
	if _, _, err := shellStep(m, now, UpdateTicketType{ID: m.State().TypeOrder[0], Status: Some(SellOpen)}); err != nil {
		tb.Fatal(err)
	}
	return m, now
}

// BenchmarkHotPath measures the shell's work per command in the core
// (Decide, MarshalChange, Apply) on the hot paths of a drop, with the
// allocations it makes. Every 4096 commands the benchmark starts over on a
// fresh machine (timer stopped), so each command meets the same state
// whatever b.N is.
func BenchmarkHotPath(b *testing.B) {
	const n = 4096
	emails := make([]string, n)
	for i := range emails {
		emails[i] = "buyer" + strconv.Itoa(i) + "@bench.example"
	}
	// run calls setup for a fresh machine every n commands and sends
	// cmd(m, i) for i = 0..n-1.
	run := func(b *testing.B, setup func() *Machine, cmd func(m *Machine, i int) Command) {
		now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
		var m *Machine
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if i%n == 0 {
				b.StopTimer()
				m = setup()
				b.StartTimer()
			}
			if _, _, err := shellStep(m, now, cmd(m, i%n)); err != nil {
				var e *Error
				if !errors.As(err, &e) {
					b.Fatal(err)
				}
			}
		}
	}
	fresh := func(capacity int) func() *Machine {
		return func() *Machine { m, _ := hotMachine(b, capacity); return m }
	}
	ticket := func(m *Machine) []OrderItem {
		return []OrderItem{{ItemType: ItemRegistrationType, ItemID: m.State().TypeOrder[0], Quantity: 1}}
	}
	b.Run("storefront-order", func(b *testing.B) {
		run(b, fresh(0), func(m *Machine, i int) Command {
			return Storefront{Cmd: PlaceOrder{Email: emails[i], Items: ticket(m), Storefront: true}}
		})
	})
	b.Run("sold-out", func(b *testing.B) {
		run(b, func() *Machine {
			m, now := hotMachine(b, 1)
			if _, _, err := shellStep(m, now, PlaceOrder{Email: "first@x.io", Items: ticket(m)}); err != nil {
				b.Fatal(err)
			}
			return m
		}, func(m *Machine, i int) Command {
			return Storefront{Cmd: PlaceOrder{Email: emails[i], Items: ticket(m), Storefront: true}}
		})
	})
	b.Run("confirm-order", func(b *testing.B) {
		run(b, func() *Machine {
			m, now := hotMachine(b, 0)
			for i := range n {
				if _, _, err := shellStep(m, now, PlaceOrder{Email: emails[i], Items: ticket(m)}); err != nil {
					b.Fatal(err)
				}
			}
			return m
		}, func(m *Machine, i int) Command {
			return Storefront{Cmd: ConfirmOrder{Ref: m.State().OrderOrder[i], Storefront: true}}
		})
	})
	b.Run("create-registration", func(b *testing.B) {
		run(b, fresh(0), func(m *Machine, i int) Command {
			return CreateRegistration{Email: emails[i], Name: "Some Body", RegistrationTypeID: m.State().TypeOrder[0]}
		})
	})
	registered := func() *Machine {
		m, now := hotMachine(b, 0)
		for i := range n {
			if _, _, err := shellStep(m, now, CreateRegistration{Email: emails[i], RegistrationTypeID: m.State().TypeOrder[0]}); err != nil {
				b.Fatal(err)
			}
		}
		return m
	}
	scan := func(m *Machine, i int) Command {
		return RecordCheckin{CheckinCode: m.State().regs()[m.State().RegOrder[i]].CheckinCode, SubjectType: "event"}
	}
	b.Run("checkin", func(b *testing.B) { run(b, registered, scan) })
	b.Run("checkin-duplicate", func(b *testing.B) {
		run(b, func() *Machine {
			m := registered()
			now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
			for i := range n {
				if _, _, err := shellStep(m, now, scan(m, i)); err != nil {
					b.Fatal(err)
				}
			}
			return m
		}, scan)
	})
}

// shellStep does what the actor shell does with a command: Decide, encode
// every change for the log into the actor's one reused buffer
// (AppendChange, as actors.eventActor.handle does), Apply it.
func shellStep(m *Machine, now time.Time, c Command) (any, int, error) {
	res, chs, err := m.Decide(now, c)
	if err != nil {
		return nil, 0, err
	}
	n := 0
	for _, ch := range chs {
		rec, err := AppendChange(shellEnc[:0], ch)
		if err != nil {
			return nil, 0, err
		}
		shellEnc = rec
		n += len(rec)
		m.Apply(ch)
	}
	return res, n, nil
}

// shellEnc is shellStep's encode buffer, the actor's enc (benchmarks and
// tests of this package do not call shellStep in parallel).
var shellEnc []byte

// TestApplyRecordRefusesLikeUnmarshalChange cuts every record of the fast
// paths at every length and checks that ApplyRecord refuses exactly what
// UnmarshalChange refuses, with the same error, and then leaves the state
// alone.
func TestApplyRecordRefusesLikeUnmarshalChange(t *testing.T) {
	log := append(registrationLog(t, 2), orderLog(t, 2)[3:]...)
	at := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	chk, err := MarshalChange(CheckedIn{At: at, ID: "chk_1", RegID: "reg_" + ulidish(2), SubjectType: "event", Method: "scan"})
	require.NoError(t, err)
	log = append(log, chk)
	m := replayLog(t, log[:3], false)
	before, err := MarshalState(m.State())
	require.NoError(t, err)
	for _, rec := range log[3:] {
		for n := 0; n < len(rec); n++ {
			cut := append([]byte(nil), rec[:n]...)
			_, uerr := UnmarshalChange(cut)
			if uerr == nil {
				continue // a shorter record can be a valid older one
			}
			aerr := m.ApplyRecord(cut)
			require.Error(t, aerr, "record cut at %d", n)
			require.Equal(t, uerr.Error(), aerr.Error(), "record cut at %d", n)
		}
		trailing := append(append([]byte(nil), rec...), 0)
		_, uerr := UnmarshalChange(trailing)
		require.Error(t, uerr)
		require.EqualError(t, m.ApplyRecord(trailing), uerr.Error())
	}
	after, err := MarshalState(m.State())
	require.NoError(t, err)
	require.Equal(t, before, after, "a refused record changed the state")
}
