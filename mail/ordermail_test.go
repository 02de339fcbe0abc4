package mail

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	"ticketd/outbox"
)

// An order's mail is listed from the index by order that the event actor
// writes with each entry: queued while it is owed, then sent
// (with when, the attempts, and a preview rendered from the bytes the
// index kept) once the mailer delivered it; a refund adds its mail.
func TestOrderMailListsQueuedThenSent(t *testing.T) {
	m, sys, store, got := mailerWithEvents(t)

	ctx := context.Background()
	evt := sys.NewEventID()
	starts := event.Time{Time: time.Now().Add(30 * 24 * time.Hour).UTC()}
	_, err := sys.CreateEvent(ctx, "bu_1", evt, event.CreateEvent{Name: "Gopher Night", Timezone: "UTC", Currency: "EUR", StartsAt: &starts})
	require.NoError(t, err)
	tt, err := actors.Ask(ctx, sys, evt, event.CreateTicketType{Name: "Standing", PriceAmount: 2500})
	require.NoError(t, err)
	_, err = actors.Ask(ctx, sys, evt, event.UpdateTicketType{ID: tt.ID, Status: event.Some("open")})
	require.NoError(t, err)
	_, err = actors.Ask(ctx, sys, evt, event.UpdateEvent{Status: event.Some("published")})
	require.NoError(t, err)
	// A registration without an order owes mail the index does not list.
	_, err = actors.Ask(ctx, sys, evt, event.CreateRegistration{Email: "free@example.com", RegistrationTypeID: tt.ID})
	require.NoError(t, err)
	o, err := actors.Ask(ctx, sys, evt, event.PlaceOrder{Email: "bea@example.com", Name: "Bea",
		Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: tt.ID, Quantity: 1}}})
	require.NoError(t, err)
	o, err = actors.Ask(ctx, sys, evt, event.ConfirmOrder{Ref: o.ID, SuccessURL: "https://shop.example.com/ok", CancelURL: "https://shop.example.com/no"})
	require.NoError(t, err)
	o, err = actors.Ask(ctx, sys, evt, event.SettlePayment{PaymentID: *o.PaymentID, Amount: o.TotalAmount, Currency: o.Currency,
		DeliveryID: "d1", Outcome: "succeeded"})
	require.NoError(t, err)

	// Not started yet: the ticket mail waits in the inbox.
	list, err := m.OrderMail(evt, o.ID, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	ticket := list[0]
	require.Equal(t, MailTicket, ticket.Kind)
	require.Equal(t, "bea@example.com", ticket.Email)
	require.Equal(t, outbox.Pending, ticket.State)
	require.Equal(t, o.OrderNumber, ticket.OrderNumber)
	_, raw, err := m.PreviewOrderMail(evt, o.ID, ticket.ID)
	require.NoError(t, err)
	require.Contains(t, string(raw), "bea@example.com")
	// Only that order's mail, of that event.
	_, _, err = m.PreviewOrderMail(evt, "ord_other", ticket.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	_, _, err = m.PreviewOrderMail("evt_other", o.ID, ticket.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound)

	m.Start()
	for range 2 {
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			t.Fatal("the ticket emails did not arrive")
		}
	}
	waitPending(t, m, 0)
	list, err = m.OrderMail(evt, o.ID, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, Sent, list[0].State)
	require.Equal(t, 1, list[0].Attempts)
	require.False(t, list[0].SentAt.IsZero())
	require.Equal(t, o.OrderNumber, list[0].OrderNumber)
	// The inbox no longer has it; the order's preview renders it still.
	_, _, err = m.Preview(ticket.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	e, raw, err := m.PreviewOrderMail(evt, o.ID, ticket.ID)
	require.NoError(t, err)
	require.Equal(t, Sent, e.State)
	msg, err := ParseMessage(raw)
	require.NoError(t, err)
	require.Contains(t, msg.Text, o.OrderNumber)

	start, err := actors.Ask(ctx, sys, evt, event.RequestRefund{Ref: o.ID})
	require.NoError(t, err)
	_, err = actors.Ask(ctx, sys, evt, event.CompleteRefund{Ref: o.ID, RefundID: start.Refund.ID, Outcome: event.RefundSucceeded})
	require.NoError(t, err)
	select {
	case r := <-got:
		require.Equal(t, []string{"bea@example.com"}, r.to)
	case <-time.After(5 * time.Second):
		t.Fatal("the refund email did not arrive")
	}
	require.Eventually(t, func() bool {
		list, err = m.OrderMail(evt, o.ID, 10)
		return err == nil && len(list) == 2 && list[1].State == Sent
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, MailRefund, list[1].Kind)
	require.Equal(t, ticket.ID, list[0].ID)
	list, err = m.OrderMail(evt, o.ID, 1)
	require.NoError(t, err)
	require.Len(t, list, 1, "the limit bounds the list")
	n := 0
	require.NoError(t, store.Scan([]byte(OrderMailPrefix), func(_, _ []byte) error { n++; return nil }))
	require.Equal(t, 2, n, "mail about no order is not indexed")
}
