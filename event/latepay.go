package event

import (
	"fmt"
	"time"
)

// Late payments: a payment provider may report a payment that succeeded
// after the order stopped holding its places (its hold lapsed, or the
// buyer cancelled it). The buyer's money has moved, so the payment is
// never dropped:
//
//   - an expired order whose places can still be taken (the event is still
//     published, every held unit fits again, its redemption code and
//     promotion code can still be spent, and the buyer holds no other
//     registration) takes them back (OrderRetaken) and is paid and
//     fulfilled as usual, in the same batch;
//   - otherwise (also a cancelled order: the buyer said no) the whole
//     payment is refunded: a RefundRequested of the order's total, which
//     the shell asks of the provider at once and its resumer finishes after
//     a crash. The order keeps its status and its refunds show the refund.
//     A later delivery of the same payment changes nothing while that
//     refund is pending or succeeded, and asks again once it failed.
//
// Either way the provider's webhook is acknowledged.

// The reasons recorded on the refund of a late payment.
const (
	lateRefundExpired   = "payment arrived after the order's hold lapsed and its places could not be taken again"
	lateRefundCancelled = "payment arrived after the order was cancelled"
)

// settleLate decides a succeeded payment of a cancelled or expired order
// whose amount matches.
func (m *Machine) settleLate(now time.Time, o *OrderRec, c SettlePayment) (any, []Change, error) {
	for i := range o.Refunds {
		if r := &o.Refunds[i]; r.Status != RefundFailed && (c.ProviderRef == "" || refundTarget(o, r) == c.ProviderRef) {
			// Already refunded (or being refunded): a repeated delivery.
			return m.orderView(o), nil, nil
		}
	}
	if o.Status == OrderStatusExpired && m.canRetake(now, o) {
		rec, changes := m.fulfil(now, o, c.DeliveryID)
		return m.orderView(&rec), append([]Change{OrderRetaken{At: now, ID: o.ID}}, paidWith(changes, c.ProviderRef)...), nil
	}
	if len(o.Refunds) >= maxRefundsPerOrder {
		return nil, nil, Reasonf(FailedPrecondition, ReasonRefundLimitReached, "order has %d refunds, the most allowed", maxRefundsPerOrder)
	}
	reason := lateRefundExpired
	if o.Status == OrderStatusCancelled {
		reason = lateRefundCancelled
	}
	ch := RefundRequested{
		At: now, OrderID: o.ID, RefundID: m.newID("rf_"), Amount: o.Total, Reason: reason, Force: true, Full: true,
		ProviderRef: otherPayment(o, c),
	}
	rec := *o
	rec.Refunds = append(append([]RefundRec{}, o.Refunds...), refundOf(ch))
	rec.UpdatedAt = now
	return m.orderView(&rec), []Change{ch}, nil
}

// canRetake reports whether an expired order can hold its places again.
func (m *Machine) canRetake(now time.Time, o *OrderRec) bool {
	if m.s.Event.Status != EventPublished {
		return false
	}
	if o.AdmissionTypeID != "" {
		if _, taken := m.s.idx.emailReg(normEmail(o.Email)); taken {
			// Fulfilling would sell no place (the buyer is registered
			// already): the money goes back instead.
			return false
		}
	}
	if m.checkRoom(o.Holds) != nil {
		return false
	}
	if o.CodeHeld && m.s.Codes[o.CodeID].status(now) != CodeStatusActive {
		return false
	}
	if o.PromoID != "" && m.s.Content.Promos[o.PromoID].status(now) != PromoActive {
		return false
	}
	return true
}

// OrderRetaken puts an expired order's holds back (places, its code's and
// promotion code's reservations) for a payment that arrived after the hold
// lapsed; an OrderPaid of the same batch turns them into sales.
type OrderRetaken struct {
	At time.Time `json:"at"`
	ID string    `json:"id"`
}

// ChangeKind names the change in the log (its binary tag).
func (OrderRetaken) ChangeKind() string { return "order.retaken" }

func decodeOrderRetaken(d *dec) OrderRetaken { return OrderRetaken{At: d.time(), ID: d.str()} }

func (c OrderRetaken) appendBody(e enc) enc { return e.time(c.At).str(c.ID) }

func (c OrderRetaken) apply(s *State) {
	o := s.mustOrder(c.ID)
	if o.Status != OrderStatusExpired {
		panic(fmt.Sprintf("event: retake of order %s in status %s", o.ID, o.Status))
	}
	s.moveHolds(o, func(n *int, q int) { *n += q }, nil)
	if o.CodeHeld {
		s.mustCode(o.CodeID).Held++
	}
	s.promoHeld(o, 1, false)
	// Not queued for expiry: the OrderPaid of the same batch ends the hold.
	o.Status, o.UpdatedAt = OrderStatusAwaitingPayment, c.At
}

// paidOrLate reports whether a refund may be recorded on o: a paid order
// (the console's refunds) or one that stopped holding after its payment
// started (a late payment's refund).
func paidOrLate(o *OrderRec) bool {
	return o.Status == OrderStatusPaid ||
		(o.PaymentID != "" && (o.Status == OrderStatusExpired || o.Status == OrderStatusCancelled))
}
