package event

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSaleViewAnswersAsTheMachine drives a machine with random storefront
// orders, cancellations, confirmations, lapses, box-office registrations
// and queue traffic, builds the sale view after every step as the shell
// does, and checks before every order and poll: whenever the view answers,
// the machine answers the same. It also checks the view answers the
// common cases (a new buyer of a sold-out type, a waiting entry), so it is
// not vacuous. Seeded; the seed is printed on failure.
func TestSaleViewAnswersAsTheMachine(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { saleViewSim(t, seed, 1500) })
	}
}

func saleViewSim(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	cfg := testConfig()
	cfg.OpenOrdersPerClient = 2
	m := NewMachine("evt_1", cfg, newSeqIDs(seed))
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	mustStep(t, m, now, CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &Time{Time: now.Add(240 * time.Hour)}})
	var types []string
	for _, c := range []int{3, 5} {
		tt := mustStep(t, m, now, CreateTicketType{Name: "T", Capacity: &c}).(TicketType)
		mustStep(t, m, now, UpdateTicketType{ID: tt.ID, Status: Some("open")})
		types = append(types, tt.ID)
	}
	onSale := now.Add(time.Hour)
	rate := 120
	mustStep(t, m, now, UpdateEvent{Status: Some(EventPublished)})
	room := seed%2 == 0
	if room {
		mustStep(t, m, now, UpdateEvent{WaitingRoom: &WaitingRoomConfig{OnSaleAt: &Time{Time: onSale}, AdmitPerMinute: &rate}})
	}
	var v *SaleView
	var orders, queue, tokens []string
	answeredOrders, answeredPolls := 0, 0
	emails := func() string { return fmt.Sprintf("p%d@example.com", rng.IntN(25)) }
	for i := range steps {
		v = m.SaleView(v)
		fail := func(format string, args ...any) {
			t.Fatalf("seed %d step %d: "+format, append([]any{seed, i}, args...)...)
		}
		switch k := rng.IntN(20); {
		case k < 9:
			c := PlaceOrder{Email: emails(), Storefront: true, Client: fmt.Sprintf("c%d", rng.IntN(8)),
				Items: []OrderItem{{ItemType: ItemRegistrationType, ItemID: types[rng.IntN(2)], Quantity: 1}}}
			switch rng.IntN(12) {
			case 0:
				c.Email = "bad"
			case 1:
				c.PromotionCode = "NOPE"
			case 2:
				c.Items = append(c.Items, c.Items[0])
			case 3:
				c.Items[0].ItemID = "tt_missing"
			}
			if room && len(tokens) > 0 && rng.IntN(2) == 0 {
				c.QueueToken = tokens[rng.IntN(len(tokens))]
			}
			fast := v.SoldOut(now, c)
			res, chs, err := m.Decide(now, Storefront{Cmd: c})
			if fast != nil {
				answeredOrders++
				if len(chs) > 0 || fmt.Sprint(err) != fmt.Sprint(fast) || !sameErr(err, fast) {
					fail("view %v, machine %v (%d changes)", fast, err, len(chs))
				}
			}
			for _, ch := range chs {
				m.Apply(ch)
			}
			if err == nil {
				orders = append(orders, res.(Order).OrderNumber)
			}
		case k < 11 && len(orders) > 0:
			_, _ = step(m, now, Storefront{Cmd: CancelOrder{Ref: orders[rng.IntN(len(orders))]}})
		case k < 13 && len(orders) > 0:
			_, _ = step(m, now, Storefront{Cmd: ConfirmOrder{Ref: orders[rng.IntN(len(orders))], Storefront: true}})
		case k < 14:
			_, _ = step(m, now, CreateRegistration{Email: emails(), RegistrationTypeID: types[rng.IntN(2)]})
		case k < 16:
			now = now.Add(time.Duration(rng.IntN(300)) * time.Second)
			_, _ = step(m, now, Expire{Now: now})
		case k < 18 && room:
			if n := rng.IntN(4); n > 1 {
				// A batch of joins (ops.JoinQueue's), as the shell sends them.
				res, err := step(m, now, Storefront{Cmd: JoinQueues{Clients: make([]string, n)}})
				if err == nil {
					for _, st := range res.(QueueJoins).Statuses {
						queue = append(queue, st.QueueID)
					}
				}
				continue
			}
			res, err := step(m, now, Storefront{Cmd: JoinQueue{Client: "c"}})
			if err == nil {
				queue = append(queue, res.(QueueStatus).QueueID)
			}
		case room && len(queue) > 0:
			id := queue[rng.IntN(len(queue))]
			if rng.IntN(20) == 0 {
				_, _ = step(m, now, ExpireWaiters{IDs: []string{id}})
				continue
			}
			fast, ok := v.QueueStatus(now, id)
			slow, err := step(m, now, Storefront{Cmd: GetQueueStatus{ID: id}})
			if err != nil {
				fail("poll: %v", err)
			}
			if st := slow.(QueueStatus); st.QueueToken != "" {
				tokens = append(tokens, st.QueueToken)
			}
			if ok {
				answeredPolls++
				a, _ := json.Marshal(fast)
				b, _ := json.Marshal(slow)
				if string(a) != string(b) {
					fail("poll of %s: view %s, machine %s", id, a, b)
				}
			}
		}
	}
	t.Logf("seed %d: the view answered %d orders and %d polls", seed, answeredOrders, answeredPolls)
	require.Positive(t, answeredOrders, "seed %d: the view never refused an order", seed)
	if room {
		require.Positive(t, answeredPolls, "seed %d: the view never answered a poll", seed)
	}
}

func sameErr(a, b error) bool {
	x, ok1 := a.(*Error)
	y, ok2 := b.(*Error)
	return ok1 && ok2 && x.Code == y.Code && x.Reason == y.Reason && x.Message == y.Message && len(x.Details) == 0 && len(y.Details) == 0
}

// TestSnapshotWithAQueueTakesJoins: a state with a waiting room restored
// from its snapshot (the binary encoding) has the room's lookups, so the
// joins, admissions and polls replayed or decided after it work (a join
// after a snapshot used to write to a nil map and crash the process).
func TestSnapshotWithAQueueTakesJoins(t *testing.T) {
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	mustStep(t, m, now, CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &Time{Time: now.Add(240 * time.Hour)}})
	c := 2
	tt := mustStep(t, m, now, CreateTicketType{Name: "T", Capacity: &c}).(TicketType)
	mustStep(t, m, now, UpdateTicketType{ID: tt.ID, Status: Some("open")})
	rate := 60
	onSale := now.Add(time.Minute)
	mustStep(t, m, now, UpdateEvent{Status: Some(EventPublished), WaitingRoom: &WaitingRoomConfig{OnSaleAt: &Time{Time: onSale}, AdmitPerMinute: &rate}})
	var ids []string
	for range 3 {
		ids = append(ids, mustStep(t, m, now, Storefront{Cmd: JoinQueue{}}).(QueueStatus).QueueID)
	}
	b, err := MarshalState(m.State())
	require.NoError(t, err)
	s, err := UnmarshalState(b)
	require.NoError(t, err)
	r := NewMachine("evt_1", testConfig(), newSeqIDs(2))
	r.Restore(s)
	ids = append(ids, mustStep(t, r, now, Storefront{Cmd: JoinQueue{}}).(QueueStatus).QueueID)
	mustStep(t, r, onSale, Expire{Now: onSale})
	mustStep(t, r, onSale.Add(time.Second), Expire{Now: onSale.Add(time.Second)})
	admitted := 0
	for _, id := range ids {
		st := mustStep(t, r, onSale.Add(time.Second), Storefront{Cmd: GetQueueStatus{ID: id}}).(QueueStatus)
		if st.State == QueueAdmitted {
			admitted++
			mustStep(t, r, onSale.Add(time.Second), Storefront{Cmd: PlaceOrder{Email: id + "@example.com", Storefront: true, QueueToken: st.QueueToken,
				Items: []OrderItem{{ItemType: ItemRegistrationType, ItemID: tt.ID, Quantity: 1}}}})
		}
	}
	require.Equal(t, 1, admitted, "one a second")
	require.Equal(t, 3, r.roomView().Waiting)
}

// A poll the sale view answers is noted on the entry's record, and the
// sweep's walk (QueueWaiters) reads it: across the table growing under
// joins (records kept) and the shuffle (new records take the stamps over),
// rounded up to the second, never back in time.
func TestSaleViewNotesPollsForTheSweep(t *testing.T) {
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	mustStep(t, m, now, CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &Time{Time: now.Add(240 * time.Hour)}})
	c := 2
	tt := mustStep(t, m, now, CreateTicketType{Name: "T", Capacity: &c}).(TicketType)
	mustStep(t, m, now, UpdateTicketType{ID: tt.ID, Status: Some("open")})
	onSale, paused := now.Add(time.Hour), true
	mustStep(t, m, now, UpdateEvent{Status: Some(EventPublished), WaitingRoom: &WaitingRoomConfig{OnSaleAt: &Time{Time: onSale}, Paused: &paused}})
	polled := func() map[string]time.Time {
		out := map[string]time.Time{}
		m.QueueWaiters(func(id string, _, p time.Time) bool { out[id] = p; return true })
		return out
	}
	var v *SaleView
	first := mustStep(t, m, now, Storefront{Cmd: JoinQueue{}}).(QueueStatus).QueueID
	v = m.SaleView(v)
	at := now.Add(90*time.Second + time.Millisecond)
	_, ok := v.QueueStatus(at, first)
	require.True(t, ok)
	require.Equal(t, now.Add(91*time.Second), polled()[first], "rounded up to the second")
	_, ok = v.QueueStatus(now.Add(30*time.Second), first) // an older reading never moves it back
	require.True(t, ok)
	require.Equal(t, now.Add(91*time.Second), polled()[first])

	// Joins past the table's first size: it is rebuilt, the stamp stays.
	for range 600 {
		mustStep(t, m, now, Storefront{Cmd: JoinQueue{}})
		v = m.SaleView(v)
	}
	p := polled()
	require.Len(t, p, 601)
	require.Equal(t, now.Add(91*time.Second), p[first])
	for id, t2 := range p {
		if id != first {
			require.True(t, t2.IsZero(), "entry %s was never polled", id)
		}
	}
	// The shuffle gives every entry a new record (its rank): stamps carry
	// over, and the new view notes on the new records.
	mustStep(t, m, onSale, Expire{Now: onSale})
	v = m.SaleView(v)
	require.Equal(t, now.Add(91*time.Second), polled()[first])
	st, ok := v.QueueStatus(onSale.Add(time.Second), first)
	require.True(t, ok)
	require.NotNil(t, st.Position)
	require.Equal(t, onSale.Add(time.Second), polled()[first])
}

// BenchmarkEntryTableGet is the sale view's lookup of a polled entry in
// a table of 100,000 (a drop's census polls them in join order; buyers
// at large, in any order).
func BenchmarkEntryTableGet(b *testing.B) {
	const n = 100_000
	ids := newSeqIDs(1)
	entries := make([]*QueueEntry, n)
	for i := range entries {
		entries[i] = &QueueEntry{ID: "q_" + ids.Code(26), Seq: i, Rank: i}
	}
	t := newEntryTable(entries)
	order := func(random bool) []int {
		o := make([]int, n)
		for i := range o {
			o[i] = i
		}
		if random {
			r := rand.New(rand.NewPCG(3, 4))
			r.Shuffle(n, func(i, j int) { o[i], o[j] = o[j], o[i] })
		}
		return o
	}
	for _, random := range []bool{false, true} {
		name := map[bool]string{false: "join-order", true: "any-order"}[random]
		// The polled ids, copied in the order polled: a request's id is
		// in its own (hot) buffer, not the entry's.
		keys := make([]string, n)
		for i, j := range order(random) {
			keys[i] = strings.Clone(entries[j].ID)
		}
		b.Run(name, func(b *testing.B) {
			for i := range b.N {
				if t.get(keys[i%n]) == nil {
					b.Fatal("missing")
				}
			}
		})
	}
}
