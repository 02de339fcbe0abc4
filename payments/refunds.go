package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ticketd/event"
)

// RefundTimeout bounds one provider call.
const RefundTimeout = 15 * time.Second

// Refunds carries out the refund workflow of the events in sys through a
// provider. A refund is three steps and the event actor is held by none of
// them across the provider call: the actor records RefundRequested
// (durable), Settle asks the provider, the actor records the outcome. A
// crash or a failed write between the steps leaves the refund pending;
// Resume finishes it with the same refund id, which the provider pays out
// once. Safe for concurrent use.
type Refunds struct {
	sys      System
	provider Provider
	// hosted are the hosted providers by name: an order paid through one
	// (event.Order.Provider) is refunded through it.
	hosted map[string]HostedRefunder
}

// NewRefunds returns the refund workflow of sys through provider.
func NewRefunds(sys System, provider Provider) *Refunds {
	return &Refunds{sys: sys, provider: provider}
}

// WithHosted has orders paid through the hosted provider name refunded
// through h. It is called once, before any refund.
func (r *Refunds) WithHosted(name string, h HostedRefunder) *Refunds {
	if r.hosted == nil {
		r.hosted = map[string]HostedRefunder{}
	}
	r.hosted[name] = h
	return r
}

// contextBG is the context of actor requests: their deadline is the
// actor system's ask timeout.
var contextBG = context.Background()

// Settle asks the provider and records its answer: perr is the
// provider's refusal (recorded as a failed refund), err a failure to
// record the outcome (the refund stays pending).
func (r *Refunds) Settle(eventID string, start event.RefundStart) (res event.Order, perr, err error) {
	return r.SettleKeyed(Keyed{}, eventID, start)
}

// Keyed is what a refund request with an Idempotency-Key gives
// SettleKeyed: the contexts of the outcome's ask, which carry the
// request's record (ops.WithRecorder) to commit in the outcome's batch,
// replacing the pending answer its request committed with the refund's
// start (decisions §20).
type Keyed struct {
	// Outcome carries the record of an answer that is the order as the
	// outcome leaves it (a succeeded refund, one the provider ended
	// otherwise without refusing).
	Outcome context.Context
	// Refused, when set, gives the context that carries the record of
	// the answer to the provider's refusal perr.
	Refused func(perr error) context.Context
}

// SettleKeyed is Settle for a request with an Idempotency-Key: k carries
// the request's record, which commits in the batch of the refund's
// outcome, succeeded or failed, so a retry whose answer was lost replays
// it instead of meeting a refunded order (412) or asking the provider
// again. A refund still pending (the provider could not be reached, or
// answered pending) records nothing more: the record its request
// committed with the refund's start answers a retry (the order, its
// refund pending), so a retry never starts a second refund, even after
// the pending one was settled by the resumer or the provider's webhook.
func (r *Refunds) SettleKeyed(k Keyed, eventID string, start event.RefundStart) (res event.Order, perr, err error) {
	o, rf := start.Order, start.Refund
	pay := Payment{OrderNumber: o.OrderNumber, Amount: rf.Amount.String(), Currency: o.Currency, RefundID: rf.ID}
	if o.PaymentID != nil {
		pay.ID = *o.PaymentID
	}
	if o.Provider != "" {
		return r.settleHosted(k, eventID, start, pay)
	}
	ctx, cancel := context.WithTimeout(context.Background(), RefundTimeout)
	perr = r.provider.Refund(ctx, pay)
	cancel()
	done := event.CompleteRefund{Ref: o.ID, RefundID: rf.ID, Outcome: event.RefundSucceeded}
	if perr != nil {
		done.Outcome, done.Error = event.RefundFailed, perr.Error()
	}
	res, err = ask(k.outcome(perr), r.sys, eventID, done)
	return res, perr, err
}

// settleHosted asks the order's hosted provider for the refund (the same
// refund id makes a retry the same refund) and records what it answered:
// succeeded or failed. A refund still pending at the provider stays
// pending (the order is answered as it is), and so does one the provider
// could not be asked about (err wraps ErrUnavailable): the provider's
// webhook or the resumer finishes them.
func (r *Refunds) settleHosted(k Keyed, eventID string, start event.RefundStart, pay Payment) (event.Order, error, error) {
	o, rf := start.Order, start.Refund
	h := r.hosted[o.Provider]
	if h == nil {
		return o, nil, fmt.Errorf("payments: refund %s: order %s was paid through %q, which is not configured", rf.ID, o.OrderNumber, o.Provider)
	}
	pay.ProviderRef = rf.ProviderRef
	if pay.ProviderRef == "" {
		pay.ProviderRef = o.ProviderRef
	}
	ctx, cancel := context.WithTimeout(context.Background(), RefundTimeout)
	state, perr := h.RefundPayment(ctx, pay)
	cancel()
	done := event.CompleteRefund{Ref: o.ID, RefundID: rf.ID, Outcome: event.RefundSucceeded}
	switch {
	case perr != nil && errors.Is(perr, ErrUnavailable):
		return o, nil, fmt.Errorf("payments: refund %s: %w", rf.ID, perr)
	case perr != nil:
		done.Outcome, done.Error = event.RefundFailed, perr.Error()
	case state == RefundStatePending:
		// Paid out later: the provider's webhook, or a later Resume, says.
		return o, nil, nil
	case state != RefundStateSucceeded:
		done.Outcome, done.Error = event.RefundFailed, "the payment provider answered "+state
	}
	res, err := ask(k.outcome(perr), r.sys, eventID, done)
	return res, perr, err
}

// outcome is the context of the ask recording an outcome: the one that
// records the refusal perr, or the order; without a record when k has
// none.
func (k Keyed) outcome(perr error) context.Context {
	switch {
	case perr != nil && k.Refused != nil:
		return k.Refused(perr)
	case perr == nil && k.Outcome != nil:
		return k.Outcome
	}
	return contextBG
}

// Complete records a hosted provider's report of a refund (a webhook):
// succeeded, or failed (failed and canceled at Stripe); pending changes
// nothing. A refund already settled changes nothing more.
func (r *Refunds) Complete(eventID, orderRef, refundID, state string) (event.Order, error) {
	done := event.CompleteRefund{Ref: orderRef, RefundID: refundID, Outcome: event.RefundSucceeded}
	switch state {
	case RefundStateSucceeded:
	case RefundStatePending:
		return ask(contextBG, r.sys, eventID, event.GetOrder{Ref: orderRef})
	default:
		done.Outcome, done.Error = event.RefundFailed, "the payment provider answered "+state
	}
	return ask(contextBG, r.sys, eventID, done)
}

// Resume finishes the refunds that have been pending for at least
// minAge: asks the provider (with the same refund id, which it pays out
// once) and records the answer. A crash between a refund's request and
// its outcome leaves one pending, and so does an outcome that could not be
// recorded; the pending-refund index (RefundPrefix) finds them
// without loading every event. It answers how many it settled (succeeded
// or failed at the provider); errors are those it could not settle.
func (r *Refunds) Resume(minAge time.Duration) (int, error) {
	pending, err := PendingRefunds(r.sys.Store())
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, p := range pending {
		if time.Since(p.RequestedAt) < minAge {
			continue
		}
		start, err := ask(contextBG, r.sys, p.EventID, event.RequestRefund{Ref: p.OrderID, ResumeID: p.RefundID})
		if err != nil {
			errs = append(errs, fmt.Errorf("refund %s of order %s: %w", p.RefundID, p.OrderID, err))
			continue
		}
		// A refusal by the provider is recorded as a failed refund: settled.
		res, _, err := r.Settle(p.EventID, start)
		if err != nil {
			errs = append(errs, fmt.Errorf("refund %s of order %s: %w", p.RefundID, p.OrderID, err))
			continue
		}
		if stillPending(res, p.RefundID) {
			continue // at the provider: its webhook, or a later pass
		}
		n++
	}
	return n, errors.Join(errs...)
}

// stillPending reports whether refund id of o is pending.
func stillPending(o event.Order, id string) bool {
	for _, r := range o.Refunds {
		if r.ID == id {
			return r.Status == event.RefundPending
		}
	}
	return false
}
