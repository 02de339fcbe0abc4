package actors

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/mail"
	"ticketd/payments"
	"ticketd/webhooks"
)

// TestEffectsCarriedOut runs a paid order through payment, check-in and a
// full refund on a real store, and checks that the actor wrote exactly
// what the core's effects say, in the batches of their changes: ticket
// mail, the webhooks in the core's order, and the pending-refund index
// entry that lives from RefundRequested to RefundSettled. It uses the typed
// Ask throughout.
func TestEffectsCarriedOut(t *testing.T) {
	e := newEnv(t, nil)
	evt := e.sys.NewEventID()
	starts := event.Time{Time: time.Now().Add(30 * 24 * time.Hour).UTC()}
	_, err := e.sys.CreateEvent(bg, "bu_1", evt, event.CreateEvent{Name: "Conf", Timezone: "UTC", StartsAt: &starts})
	require.NoError(t, err)
	tt, err := Ask(bg, e.sys, evt, event.CreateTicketType{Name: "GA", PriceAmount: 100})
	require.NoError(t, err)
	_, err = Ask(bg, e.sys, evt, event.UpdateTicketType{ID: tt.ID, Status: event.Some("open")})
	require.NoError(t, err)
	_, err = Ask(bg, e.sys, evt, event.UpdateEvent{Status: event.Some("published")})
	require.NoError(t, err)
	o, err := Ask(bg, e.sys, evt, event.OnStorefront(event.PlaceOrder{Email: "p@x.io", Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: tt.ID, Quantity: 1}}, Storefront: true}))
	require.NoError(t, err)
	o, err = Ask(bg, e.sys, evt, event.OnStorefront(event.ConfirmOrder{Ref: o.ID, Storefront: true}))
	require.NoError(t, err)
	require.NotNil(t, o.PaymentID)
	o, err = Ask(bg, e.sys, evt, event.SettlePayment{PaymentID: *o.PaymentID, Amount: o.TotalAmount, Currency: o.Currency, DeliveryID: "d1", Outcome: "succeeded"})
	require.NoError(t, err)
	require.Equal(t, event.OrderStatusPaid, o.Status)
	reg := *o.RegistrationID
	_, err = Ask(bg, e.sys, evt, event.RecordCheckin{RegistrationID: reg, SubjectType: "event"})
	require.NoError(t, err)

	start, err := Ask(bg, e.sys, evt, event.RequestRefund{Ref: o.ID})
	require.NoError(t, err)
	pending, err := payments.PendingRefunds(e.store)
	require.NoError(t, err)
	require.Equal(t, []payments.PendingRefund{{EventID: evt, OrderID: o.ID, RefundID: start.Refund.ID, RequestedAt: pending[0].RequestedAt}}, pending)
	_, err = Ask(bg, e.sys, evt, event.CompleteRefund{Ref: o.ID, RefundID: start.Refund.ID, Outcome: event.RefundSucceeded})
	require.NoError(t, err)
	e.reopen()
	pending, err = payments.PendingRefunds(e.store)
	require.NoError(t, err)
	require.Empty(t, pending)

	var hooks []string
	require.NoError(t, e.store.Scan([]byte(webhooks.InboxPrefix), func(k, v []byte) error {
		var h webhooks.HookEvent
		require.NoError(t, json.Unmarshal(v, &h))
		hooks = append(hooks, h.Type)
		return nil
	}))
	require.Equal(t, []string{webhooks.HookOrderPaid, webhooks.HookRegistrationCreated, webhooks.HookRegistrationConfirmed, webhooks.HookCheckinCreated,
		webhooks.HookOrderRefunded, webhooks.HookRegistrationCancelled}, hooks)
	var mails []mail.TicketMail
	require.NoError(t, e.store.Scan([]byte(mail.InboxPrefix), func(k, v []byte) error {
		var m mail.TicketMail
		require.NoError(t, json.Unmarshal(v, &m))
		mails = append(mails, m)
		return nil
	}))
	// One mail per change that owes one, though the actor replayed the
	// whole log on reopening: replay carries nothing out.
	require.Len(t, mails, 2)
	tm, rf := mails[0], mails[1]
	require.Equal(t, mail.MailTicket, tm.Kind)
	require.Equal(t, reg, tm.RegistrationID)
	require.Equal(t, "GA", tm.TicketName)
	require.Equal(t, "Conf", tm.EventName)
	require.Equal(t, []mail.ReceiptLine{{Name: "GA", Quantity: 1, UnitPrice: 100}}, tm.Lines)
	require.Equal(t, event.Money(100), tm.Total)
	require.Equal(t, "USD", tm.Currency)
	require.Equal(t, o.OrderNumber, tm.OrderNumber)
	require.False(t, tm.PaidAt.IsZero())
	require.Equal(t, starts.Time, tm.StartsAt.UTC())
	require.Equal(t, mail.MailRefund, rf.Kind)
	require.Equal(t, "p@x.io", rf.Email)
	require.Equal(t, start.Refund.ID, rf.RefundID)
	require.Equal(t, event.Money(100), rf.RefundAmount)
	require.True(t, rf.RefundFull)
	require.Equal(t, reg, rf.RegistrationID, "a full refund says the ticket went with it")
}
