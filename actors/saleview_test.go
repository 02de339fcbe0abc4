package actors

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/event"
)

func sfOrder(email, tt string) event.PlaceOrder {
	return event.PlaceOrder{Email: email, Name: "Buyer", Storefront: true, Client: "pk|127.0.0.1",
		Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: tt, Quantity: 1}}}
}

// A sold-out refusal comes from the published view, the same error the
// actor gives; a cancellation's freed place is in the view before the
// cancellation is answered, so the very next order gets it; a buyer with an
// open order gets the actor's answer (ORDER_ALREADY_OPEN), never the
// view's.
func TestSaleViewRefusesSoldOutAndSeesACancellationAtOnce(t *testing.T) {
	e := newEnv(t, nil)
	id, tt := e.newEvent("bu_1", intp(3))
	_, err := e.sys.Ask(bg, id, event.UpdateEvent{Status: event.Some(event.EventPublished), StartsAt: event.Some(event.Time{Time: time.Now().Add(time.Hour)})})
	require.NoError(t, err)
	assert.NoError(t, e.sys.SoldOut(id, sfOrder("x@example.com", tt)), "places left: the view does not answer")

	var orders []event.Order
	for i := range 3 {
		res, err := e.sys.Ask(bg, id, event.Storefront{Cmd: sfOrder(fmt.Sprintf("b%d@example.com", i), tt)})
		require.NoError(t, err)
		orders = append(orders, res.(event.Order))
	}
	for round := range 3 {
		fast := e.sys.SoldOut(id, sfOrder("late@example.com", tt))
		require.Error(t, fast, "round %d: sold out, the view answers", round)
		_, slow := e.sys.Ask(bg, id, event.Storefront{Cmd: sfOrder("late@example.com", tt)})
		assert.Equal(t, slow, fast, "the view's refusal is the actor's")
		var ee *event.Error
		require.ErrorAs(t, fast, &ee)
		assert.Equal(t, event.ReasonSoldOut, ee.Reason)

		// Who has an open order is answered by the actor.
		assert.NoError(t, e.sys.SoldOut(id, sfOrder(orders[0].Email, tt)))
		_, slow = e.sys.Ask(bg, id, event.Storefront{Cmd: sfOrder(orders[0].Email, tt)})
		require.ErrorAs(t, slow, &ee)
		assert.Equal(t, event.ReasonOrderAlreadyOpen, ee.Reason)
		// Requests the view cannot be certain of.
		c := sfOrder("late@example.com", tt)
		c.PromotionCode = "X"
		assert.NoError(t, e.sys.SoldOut(id, c))
		c = sfOrder("not an email", tt)
		assert.NoError(t, e.sys.SoldOut(id, c))
		c = sfOrder("late@example.com", "tt_unknown")
		assert.NoError(t, e.sys.SoldOut(id, c))

		// A cancellation: answered only once its freed place is in the
		// view, so the very next request buys it.
		o := orders[round]
		_, err := e.sys.Ask(bg, id, event.Storefront{Cmd: event.CancelOrder{Ref: o.OrderNumber}})
		require.NoError(t, err)
		next := sfOrder(fmt.Sprintf("next%d@example.com", round), tt)
		assert.NoError(t, e.sys.SoldOut(id, next), "round %d: the freed place is visible", round)
		res, err := e.sys.Ask(bg, id, event.Storefront{Cmd: next})
		require.NoError(t, err, "round %d: the very next order gets the freed place", round)
		orders[round] = res.(event.Order)
	}

	// A confirmed buyer is registered: the actor answers for them too.
	_, err = e.sys.Ask(bg, id, event.Storefront{Cmd: event.ConfirmOrder{Ref: orders[0].OrderNumber, Storefront: true}})
	require.NoError(t, err)
	assert.NoError(t, e.sys.SoldOut(id, sfOrder(orders[0].Email, tt)))
	assert.Error(t, e.sys.SoldOut(id, sfOrder("late@example.com", tt)))

	// The view goes with its actor (passivation, a restart).
	e.reopen()
	assert.NoError(t, e.sys.SoldOut(id, sfOrder("late@example.com", tt)), "no actor, no view")
	_, err = e.sys.Ask(bg, id, event.GetEvent{})
	require.NoError(t, err)
	assert.Error(t, e.sys.SoldOut(id, sfOrder("late@example.com", tt)), "the loaded state is published")
}

// Polls of waiting entries are answered from the view, as the actor
// answers them, before and after the shuffle; an admitted entry is the
// actor's to answer (its token); polls answered by the view count as polls.
func TestSaleViewAnswersWaitingPolls(t *testing.T) {
	now := time.Date(2027, 1, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e := newEnv(t, func(c *Config) { c.Now = clock })
	id, _ := e.newEvent("bu_1", intp(2))
	onSale := now.Add(time.Minute)
	rate := 60
	_, err := e.sys.Ask(bg, id, event.UpdateEvent{Status: event.Some(event.EventPublished), StartsAt: event.Some(event.Time{Time: now.Add(time.Hour)}),
		WaitingRoom: &event.WaitingRoomConfig{OnSaleAt: &event.Time{Time: onSale}, AdmitPerMinute: &rate}})
	require.NoError(t, err)
	var ids []string
	for range 5 {
		res, err := e.sys.Ask(bg, id, event.Storefront{Cmd: event.JoinQueue{Client: "c"}})
		require.NoError(t, err)
		ids = append(ids, res.(event.QueueStatus).QueueID)
	}
	same := func(q string) (event.QueueStatus, bool) {
		fast, ok := e.sys.QueueStatus(id, q)
		slow, err := e.sys.Ask(bg, id, event.Storefront{Cmd: event.GetQueueStatus{ID: q}})
		require.NoError(t, err)
		if ok {
			assert.Equal(t, jsonOf(t, slow), jsonOf(t, fast), "entry %s", q)
		}
		return fast, ok
	}
	for _, q := range ids {
		st, ok := same(q)
		require.True(t, ok, "a waiting entry before the shuffle")
		assert.Nil(t, st.Position)
	}
	_, ok := e.sys.QueueStatus(id, "q_unknown")
	assert.False(t, ok)

	// onSaleAt: the shuffle, then admission of one a second (rate 60).
	now = onSale
	_, err = e.sys.Ask(bg, id, event.Expire{Now: now})
	require.NoError(t, err)
	for _, q := range ids {
		st, ok := same(q)
		require.True(t, ok)
		require.NotNil(t, st.Position)
	}
	now = now.Add(time.Second)
	_, err = e.sys.Ask(bg, id, event.Expire{Now: now})
	require.NoError(t, err)
	admitted := 0
	for _, q := range ids {
		st, ok := same(q)
		if !ok {
			slow, err := e.sys.Ask(bg, id, event.Storefront{Cmd: event.GetQueueStatus{ID: q}})
			require.NoError(t, err)
			assert.Equal(t, event.QueueAdmitted, slow.(event.QueueStatus).State)
			admitted++
			continue
		}
		assert.Equal(t, event.QueueWaiting, st.State)
	}
	assert.Equal(t, 1, admitted, "one admitted, answered by the actor")

	// A later join is in the view at once, behind the pre-queue.
	res, err := e.sys.Ask(bg, id, event.Storefront{Cmd: event.JoinQueue{Client: "c"}})
	require.NoError(t, err)
	st, ok := same(res.(event.QueueStatus).QueueID)
	require.True(t, ok)
	assert.Equal(t, 5, *st.Position)

}

// A poll the sale view answered keeps its entry from expiring: the
// actor's sweep reads it from the view's record of the entry, while an
// entry nobody polled expires after event.QueuePollTimeout.
func TestSaleViewPollsKeepEntriesFromExpiring(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2027, 1, 1, 10, 0, 0, 0, time.UTC)
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	t0 := clock()
	e := newEnv(t, func(c *Config) { c.Now = clock })
	id, _ := e.newEvent("bu_1", intp(2))
	// onSaleAt a second away: the actor's timer for it waits that long.
	onSale, paused := t0.Add(time.Second), true
	_, err := e.sys.Ask(bg, id, event.UpdateEvent{Status: event.Some(event.EventPublished), StartsAt: event.Some(event.Time{Time: t0.Add(time.Hour)}),
		WaitingRoom: &event.WaitingRoomConfig{OnSaleAt: &event.Time{Time: onSale}, Paused: &paused}})
	require.NoError(t, err)
	var ids []string
	for range 2 {
		res, err := e.sys.Ask(bg, id, event.Storefront{Cmd: event.JoinQueue{Client: "c"}})
		require.NoError(t, err)
		ids = append(ids, res.(event.QueueStatus).QueueID)
	}
	polled, idle := ids[0], ids[1]
	// Read through the event, not a poll (a poll is noted).
	room := func() event.WaitingRoom {
		res, err := e.sys.Ask(bg, id, event.GetEvent{})
		require.NoError(t, err)
		return *res.(event.Event).WaitingRoom
	}
	// The shuffle at onSaleAt; the room's timer ticks every second from
	// then (admission paused: everyone waits), and its first sweep takes
	// the actor's start.
	set(onSale)
	_, err = e.sys.Ask(bg, id, event.Expire{Now: onSale})
	require.NoError(t, err)
	time.Sleep(1500 * time.Millisecond)

	set(onSale.Add(8 * time.Minute))
	_, ok := e.sys.QueueStatus(id, polled)
	require.True(t, ok, "the view answers a waiting entry")

	// Past the timeout for the idle entry, not for the polled one: the
	// next ticks sweep.
	set(onSale.Add(event.QueuePollTimeout + time.Minute))
	require.Eventually(t, func() bool { return room().Expired == 1 }, 10*time.Second, 50*time.Millisecond,
		"the entry nobody polled expires")
	assert.Equal(t, 1, room().Waiting, "the entry the view answered a poll of waits on")
	for q, want := range map[string]string{idle: event.QueueExpired, polled: event.QueueWaiting} {
		res, err := e.sys.Ask(bg, id, event.GetQueueStatus{ID: q})
		require.NoError(t, err)
		assert.Equal(t, want, res.(event.QueueStatus).State, "entry %s", q)
	}
}
