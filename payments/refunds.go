package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ticketd/actors"
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
	sys      *actors.System
	provider Provider
}

// NewRefunds returns the refund workflow of sys through provider.
func NewRefunds(sys *actors.System, provider Provider) *Refunds {
	return &Refunds{sys: sys, provider: provider}
}

// contextBG is the context of actor requests: their deadline is the
// actor system's ask timeout.
var contextBG = context.Background()

// Settle asks the provider and records its answer: perr is the
// provider's refusal (recorded as a failed refund), err a failure to
// record the outcome (the refund stays pending).
func (r *Refunds) Settle(eventID string, start event.RefundStart) (res event.Order, perr, err error) {
	o, rf := start.Order, start.Refund
	pay := Payment{OrderNumber: o.OrderNumber, Amount: rf.Amount.String(), Currency: o.Currency, RefundID: rf.ID}
	if o.PaymentID != nil {
		pay.ID = *o.PaymentID
	}
	ctx, cancel := context.WithTimeout(context.Background(), RefundTimeout)
	perr = r.provider.Refund(ctx, pay)
	cancel()
	done := event.CompleteRefund{Ref: o.ID, RefundID: rf.ID, Outcome: event.RefundSucceeded}
	if perr != nil {
		done.Outcome, done.Error = event.RefundFailed, perr.Error()
	}
	res, err = actors.Ask(contextBG, r.sys, eventID, done)
	return res, perr, err
}

// Resume finishes the refunds that have been pending for at least
// minAge: asks the provider (with the same refund id, which it pays out
// once) and records the answer. A crash between a refund's request and
// its outcome leaves one pending, and so does an outcome that could not be
// recorded; the pending-refund index (actors.RefundPrefix) finds them
// without loading every event. It answers how many it settled (succeeded
// or failed at the provider); errors are those it could not settle.
func (r *Refunds) Resume(minAge time.Duration) (int, error) {
	pending, err := r.sys.PendingRefunds()
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, p := range pending {
		if time.Since(p.RequestedAt) < minAge {
			continue
		}
		start, err := actors.Ask(contextBG, r.sys, p.EventID, event.RequestRefund{Ref: p.OrderID, ResumeID: p.RefundID})
		if err != nil {
			errs = append(errs, fmt.Errorf("refund %s of order %s: %w", p.RefundID, p.OrderID, err))
			continue
		}
		// A refusal by the provider is recorded as a failed refund: settled.
		if _, _, err := r.Settle(p.EventID, start); err != nil {
			errs = append(errs, fmt.Errorf("refund %s of order %s: %w", p.RefundID, p.OrderID, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
