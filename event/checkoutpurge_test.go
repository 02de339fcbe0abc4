package event

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCheckoutPurgeFlood: a flood of unused sessions from many clients is
// purged in batches of maxCheckoutPurgeBatch once due, the snapshot
// shrinks back, the limits index forgets them, and a replay of the log and
// a snapshot load reach the same state and the same next deadline.
func TestCheckoutPurgeFlood(t *testing.T) {
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	var log []Change
	do := func(c Command) any {
		t.Helper()
		res, chs, err := m.Decide(now, c)
		require.NoError(t, err)
		for _, ch := range chs {
			m.Apply(ch)
		}
		log = append(log, chs...)
		return res
	}
	start := Time{now.Add(720 * time.Hour)}
	do(CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &start})
	do(UpdateEvent{Status: Some(EventPublished)})
	do(CreateTicketType{Name: "GA", PriceAmount: 1000})
	do(UpdateTicketType{ID: "tt_1", Status: Some(SellOpen)})
	empty, err := MarshalState(m.State())
	require.NoError(t, err)

	items := []OrderItem{{ItemType: ItemRegistrationType, ItemID: "tt_1", Quantity: 1}}
	const flood = maxCheckoutPurgeBatch*2 + 500
	var first string
	for i := range flood {
		cs := do(CreateCheckoutSession{Items: items, Storefront: true, Client: fmt.Sprintf("c%d", i%200),
			Email: fmt.Sprintf("b%d@x.io", i), Responses: []byte(`{"note":"` + fmt.Sprint(i) + `"}`)}).(CheckoutSession)
		if i == 0 {
			first = cs.ID
		}
	}
	// One session places an order: it stays.
	used := do(CreateCheckoutSession{Items: items}).(CheckoutSession).ID
	do(PlaceOrder{CheckoutSessionID: used, Email: "u@x.io", Items: items})
	full, err := MarshalState(m.State())
	require.NoError(t, err)
	require.Len(t, m.State().Checkouts, flood+1)

	// Due a day after expiry: the hold lapses first, then the purge.
	now = now.Add(47 * time.Hour)
	do(Expire{Now: now})
	require.Len(t, m.State().Checkouts, flood+1)
	d, ok := m.NextDeadline()
	require.True(t, ok)
	require.Equal(t, now.Add(time.Hour), d)

	now = d
	batches := 0
	for {
		_, chs, err := m.Decide(now, Expire{Now: now})
		require.NoError(t, err)
		if len(chs) == 0 {
			break
		}
		for _, ch := range chs {
			p, ok := ch.(CheckoutSessionsPurged)
			require.True(t, ok, "%T", ch)
			require.LessOrEqual(t, len(p.IDs), maxCheckoutPurgeBatch)
			m.Apply(ch)
		}
		log = append(log, chs...)
		batches++
	}
	require.Equal(t, 3, batches)
	require.Len(t, m.State().Checkouts, 1)
	require.Contains(t, m.State().Checkouts, used)
	require.Empty(t, m.State().idx.limits.sessions)
	_, _, err = m.Decide(now, GetCheckoutSession{ID: first})
	require.ErrorContains(t, err, "checkout session not found")
	_, ok = m.NextDeadline()
	require.False(t, ok, "nothing left to purge or lapse")

	after, err := MarshalState(m.State())
	require.NoError(t, err)
	t.Logf("snapshot: %d bytes empty, %d with %d sessions, %d after the purge", len(empty), len(full), flood, len(after))
	require.Less(t, len(after), len(empty)+2000, "the purge gives the space back")

	// Replay from the log, and a snapshot load, reach the same state.
	re := NewMachine("evt_1", testConfig(), newSeqIDs(99))
	for _, ch := range log {
		b, err := MarshalChange(ch)
		require.NoError(t, err)
		back, err := UnmarshalChange(b)
		require.NoError(t, err)
		re.Apply(back)
	}
	replayed, err := MarshalState(re.State())
	require.NoError(t, err)
	require.Equal(t, string(after), string(replayed))
	snap, err := UnmarshalState(after)
	require.NoError(t, err)
	again, err := MarshalState(snap)
	require.NoError(t, err)
	require.Equal(t, string(after), string(again))
}

// TestCheckoutPurgeIndexAfterLoad: a snapshot taken with sessions pending
// purge rebuilds the purge queue, so the loaded machine purges at the
// same instant and with the same change as the live one.
func TestCheckoutPurgeIndexAfterLoad(t *testing.T) {
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	step := func(m *Machine, c Command) []Change {
		_, chs, err := m.Decide(now, c)
		require.NoError(t, err)
		for _, ch := range chs {
			m.Apply(ch)
		}
		return chs
	}
	start := Time{now.Add(720 * time.Hour)}
	step(m, CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &start})
	step(m, UpdateEvent{Status: Some(EventPublished)})
	step(m, CreateTicketType{Name: "GA", PriceAmount: 1000})
	step(m, UpdateTicketType{ID: "tt_1", Status: Some(SellOpen)})
	items := []OrderItem{{ItemType: ItemRegistrationType, ItemID: "tt_1", Quantity: 1}}
	for range 3 {
		step(m, CreateCheckoutSession{Items: items})
		now = now.Add(time.Hour)
	}
	b, err := MarshalState(m.State())
	require.NoError(t, err)
	s, err := UnmarshalState(b)
	require.NoError(t, err)
	loaded := NewMachine("evt_1", testConfig(), newSeqIDs(2))
	loaded.Restore(s)
	d1, ok1 := m.NextDeadline()
	d2, ok2 := loaded.NextDeadline()
	require.True(t, ok1)
	require.Equal(t, d1, d2)
	require.Equal(t, ok1, ok2)
	now = d1.Add(90 * time.Minute)
	live := step(m, Expire{Now: now})
	again := step(loaded, Expire{Now: now})
	require.Equal(t, live, again)
	require.Len(t, live, 1)
	require.Len(t, live[0].(CheckoutSessionsPurged).IDs, 2)
}
