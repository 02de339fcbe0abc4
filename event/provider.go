package event

import (
	"fmt"
	"time"
)

// Hosted payment providers: a provider such as Stripe makes the payment
// page itself (a Checkout Session) and names the order, not the service's
// payment id, in its webhook. The core never calls it; the shell does,
// around two commands, so the actor is never held across the call:
//
//   - ConfirmOrder with Prepare checks a confirm exactly as ConfirmOrder
//     does; its answer's holdExpiresAt is the hold's end the confirm would
//     set, and PreparedAt the instant the provider's limits count from.
//     The first prepare of an order keeps both (OrderConfirmPrepared) and
//     every later one answers them again, so a confirm retried minutes
//     later, or after a restart, sends the provider the same parameters
//     and hence the same idempotency key: a page made by a try whose
//     answer was lost is answered again, never made twice. Renew drops the
//     kept ones for new ones: the shell asks it only when the provider
//     refused the kept parameters as out of its window, which proves no
//     page was made with them. The shell then creates the page.
//   - ConfirmOrder with Provider records the page (OrderPaymentStarted
//     carries its id and URL, and paymentUrl answers the URL). The hold
//     while the buyer pays ends when the page expires (Provider.HoldUntil),
//     which a provider may set later than the service's own hold: Stripe
//     accepts no Checkout Session shorter than 30 minutes, and a page that
//     outlived its hold would take money for places that lapsed.
//   - When the order stops holding (cancelled, or its hold lapsed) while a
//     page is open, OrderReleased names the page and owes
//     EffectCheckoutClose: the shell closes it at the provider, retrying.
//
// Settling (SettlePayment with OrderRef and ProviderRef): the provider's
// payment that paid the order is remembered (ProviderRef). A success of
// another payment of an order that is already paid is money taken twice:
// it is refunded in full (a RefundRequested naming that payment, which
// the shell asks of the provider and its resumer finishes), never dropped
// as a repeat; only a success of the same payment is a repeat. Such a
// refund does not count against what the console may refund.

// ProviderCheckout is a hosted provider's payment page, made by the shell
// before it confirms (ConfirmOrder.Provider).
type ProviderCheckout struct {
	Provider  string    // the provider's name, e.g. "stripe"
	Ref       string    // the page's id at the provider (cs_...)
	URL       string    // where the buyer pays: the order's paymentUrl
	HoldUntil time.Time // when the page expires: the hold's new end
}

// OrderConfirmPrepared keeps the first prepare of a hosted provider's
// confirm of an open order: At, the instant the provider's window is
// counted from, and HoldUntil, the hold's end the confirm asks for. It
// changes nothing the API shows, so it makes no feed entry.
type OrderConfirmPrepared struct {
	At        time.Time `json:"at"`
	ID        string    `json:"id"`
	HoldUntil time.Time `json:"until"`
}

// ChangeKind names the change in the log (its binary tag).
func (OrderConfirmPrepared) ChangeKind() string { return "order.confirm_prepared" }

func decodeOrderConfirmPrepared(d *dec) OrderConfirmPrepared {
	return OrderConfirmPrepared{At: d.time(), ID: d.str(), HoldUntil: d.time()}
}

func (c OrderConfirmPrepared) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).time(c.HoldUntil)
}

func (c OrderConfirmPrepared) apply(s *State) {
	o := s.mustOrder(c.ID)
	o.PreparedAt, o.PreparedHold = c.At, c.HoldUntil
}

// prepareConfirm answers the prepared confirm of the open order o at now:
// the kept one, or (the first time, when renewing, or when the kept hold
// end passed) a new one, kept by the change it answers.
func (m *Machine) prepareConfirm(now time.Time, o *OrderRec, renew bool) (any, []Change, error) {
	if !o.PreparedAt.IsZero() && !renew && o.PreparedHold.After(now) {
		return m.prepareView(o), nil, nil
	}
	ch := OrderConfirmPrepared{At: now, ID: o.ID, HoldUntil: now.Add(m.orderHold())}
	rec := *o
	rec.PreparedAt, rec.PreparedHold = ch.At, ch.HoldUntil
	return m.prepareView(&rec), []Change{ch}, nil
}

// Bounds of what the shell records of a provider.
const (
	maxProviderName = 32
	maxProviderRef  = 255
	maxProviderURL  = 4000
)

// reasonSecondCharge is the reason recorded on the refund of a second
// payment of a paid order.
const reasonSecondCharge = "a second payment of an order that was already paid"

// StorefrontInner answers the command a storefront wrapper (Storefront,
// OnStorefront) carries, and whether c was one; else c itself.
func StorefrontInner(c Command) (Command, bool) {
	if s, ok := c.(storefronter); ok {
		return s.storefront().Cmd, true
	}
	return c, false
}

// withProvider puts the provider's page p, if any, on ch.
func withProvider(now time.Time, ch *OrderPaymentStarted, p *ProviderCheckout) error {
	if p == nil {
		return nil
	}
	switch {
	case p.Provider == "" || len(p.Provider) > maxProviderName, p.Ref == "" || len(p.Ref) > maxProviderRef,
		p.URL == "" || len(p.URL) > maxProviderURL:
		return Errorf(InvalidArgument, "payment page without provider, id or url, or over their bounds")
	case !p.HoldUntil.After(now):
		return Reasonf(FailedPrecondition, ReasonPaymentPageExpired, "the payment page expires before now")
	}
	ch.HoldUntil, ch.Provider, ch.ProviderRef, ch.ProviderURL = p.HoldUntil.UTC(), p.Provider, p.Ref, p.URL
	return nil
}

// prepareView is what the prepared confirm of o answers, before the
// provider's page exists: the hold's end the confirm asks for, and the
// instant the prepare was kept at.
func (m *Machine) prepareView(o *OrderRec) Order {
	rec := *o
	rec.HoldUntil = o.PreparedHold
	v := m.orderView(&rec)
	v.PreparedAt = o.PreparedAt
	return v
}

// paymentOrder finds the order a payment settles: by the service's payment
// id, or (hosted providers) by the order number of an order that started a
// payment.
func (m *Machine) paymentOrder(c SettlePayment) (*OrderRec, error) {
	if c.PaymentID != "" {
		id, ok := m.s.idx.orderByPayment[c.PaymentID]
		if !ok {
			return nil, Errorf(NotFound, "payment not found")
		}
		return m.s.Orders[id], nil
	}
	o, err := m.order(c.OrderRef)
	if err != nil || o.PaymentID == "" {
		return nil, Errorf(NotFound, "payment not found")
	}
	return o, nil
}

// secondCharge reports whether c is the success of another provider
// payment than the one that paid o.
func (m *Machine) secondCharge(o *OrderRec, c SettlePayment) bool {
	return c.Outcome == "succeeded" && c.ProviderRef != "" && o.ProviderRef != "" && c.ProviderRef != o.ProviderRef &&
		(o.Status == OrderStatusPaid || refundedOrder(o.Status))
}

// refundSecondCharge refunds all of a second payment of a paid order, as
// much as it took, once: a refund of that payment that has not failed
// makes a later delivery a repeat.
func (m *Machine) refundSecondCharge(now time.Time, o *OrderRec, c SettlePayment) (any, []Change, error) {
	for i := range o.Refunds {
		if r := &o.Refunds[i]; r.ProviderRef == c.ProviderRef && r.Status != RefundFailed {
			return m.orderView(o), nil, nil
		}
	}
	if c.Amount <= 0 {
		return nil, nil, Errorf(InvalidArgument, "a payment of %s %s", c.Amount, c.Currency)
	}
	if len(o.Refunds) >= maxRefundsPerOrder {
		return nil, nil, Reasonf(FailedPrecondition, ReasonRefundLimitReached, "order has %d refunds, the most allowed", maxRefundsPerOrder)
	}
	ch := RefundRequested{
		At: now, OrderID: o.ID, RefundID: m.newID("rf_"), Amount: c.Amount, Reason: reasonSecondCharge, Force: true,
		ProviderRef: c.ProviderRef,
	}
	rec := *o
	rec.Refunds = append(append([]RefundRec{}, o.Refunds...), refundOf(ch))
	rec.UpdatedAt = now
	return m.orderView(&rec), []Change{ch}, nil
}

// otherPayment is c's provider payment when it is not the one o recorded
// (the refund of a late payment then names it), else "".
func otherPayment(o *OrderRec, c SettlePayment) string {
	if c.ProviderRef != "" && c.ProviderRef != o.ProviderRef {
		return c.ProviderRef
	}
	return ""
}

// refundTarget is the provider payment refund r returns.
func refundTarget(o *OrderRec, r *RefundRec) string {
	if r.ProviderRef != "" {
		return r.ProviderRef
	}
	return o.ProviderRef
}

// paidWith records on the OrderPaid among changes the provider payment
// that paid the order.
func paidWith(changes []Change, ref string) []Change {
	if ref == "" {
		return changes
	}
	for i, ch := range changes {
		if p, ok := ch.(OrderPaid); ok {
			p.ProviderRef = ref
			changes[i] = p
		}
	}
	return changes
}

// refundRefs lists the refunds' ProviderRef for the snapshot (nil when
// none has one); setRefundRefs puts them back.
func refundRefs(rs []RefundRec) []string {
	var out []string
	for i := range rs {
		if rs[i].ProviderRef != "" {
			out = make([]string, len(rs))
			for j := range rs {
				out[j] = rs[j].ProviderRef
			}
			return out
		}
	}
	return nil
}

func setRefundRefs(rs []RefundRec, refs []string) {
	for i := range refs {
		if i < len(rs) {
			rs[i].ProviderRef = refs[i]
		}
	}
}

// String makes a ProviderCheckout readable in test failures.
func (p ProviderCheckout) String() string {
	return fmt.Sprintf("%s %s until %s", p.Provider, p.Ref, p.HoldUntil.UTC().Format(time.RFC3339))
}
