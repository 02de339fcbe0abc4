package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/stretchr/testify/require"

	"ticketd/event"
)

// TestSnapshotBytesPerOrder measures what an order costs in a snapshot
// (issue 31, finding 10: the chaos run's 1.2M-order event had a 321 MB
// snapshot, 267 bytes an order, which its taker reads, decodes and holds
// before a move): orders placed as the chaos run places them (a buyer's
// own email, one ticket of a free type, never confirmed) and then with
// their holds lapsed, the snapshot's bytes an order, and what S2 would
// make of them. A measurement: it logs, and asserts only that the state
// reads back.
func TestSnapshotBytesPerOrder(t *testing.T) {
	const n = 20_000
	cfg := event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour}
	ids := randomIDs{}
	m := event.NewMachine(ids.New("evt_"), cfg, ids)
	now := time.Now()
	do := func(c event.Command) any {
		res, chs, err := m.Decide(now, c)
		require.NoError(t, err)
		for _, ch := range chs {
			m.Apply(ch)
		}
		return res
	}
	starts := event.Time{Time: now.Add(30 * 24 * time.Hour).UTC()}
	do(event.CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &starts})
	capacity := 5_000_000
	tt := do(event.CreateTicketType{Name: "GA", Capacity: &capacity}).(event.TicketType).ID
	do(event.UpdateTicketType{ID: tt, Status: event.Some("open")})
	do(event.UpdateEvent{Status: event.Some("published")})
	base, err := event.MarshalState(m.State())
	require.NoError(t, err)
	for i := range n {
		do(event.PlaceOrder{Email: fmt.Sprintf("c%d-%d-%d@example.com", i%16, i/16, i),
			Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: tt, Quantity: 1}}})
	}
	measure := func(what string) {
		b, err := event.MarshalState(m.State())
		require.NoError(t, err)
		z := s2.Encode(nil, b)
		per := float64(len(b)-len(base)) / n
		t.Logf("%s: %d orders, snapshot %d bytes (%.0f an order), S2 %d bytes (%.0f an order, %.1fx smaller)",
			what, n, len(b), per, len(z), float64(len(z))/n, float64(len(b))/float64(len(z)))
		st, err := event.UnmarshalState(b)
		require.NoError(t, err)
		require.Len(t, st.OrderOrder, n)
	}
	measure("orders held")
	var one event.Order
	list := do(event.ListOrders{Limit: 1}).(event.List[event.Order])
	one = list.Data[0]
	t.Logf("an order's own strings: id %d, number %d, email %d, ticket type id %d (x3: line, hold, admission type)",
		len(one.ID), len(one.OrderNumber), len(one.Email), len(tt))
	now = now.Add(16 * time.Minute)
	do(event.Expire{Now: now})
	measure("holds lapsed")
}
