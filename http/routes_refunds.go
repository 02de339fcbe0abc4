package http

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ticketd/event"
	"ticketd/payments"
)

// Refunds (issue 8 part 4): the console's refund policy of an event and
// refunds of paid orders through the payment provider. A refund is three
// steps and the event actor is held by none of them across the provider
// call: the actor records RefundRequested (durable), this handler asks the
// provider, the actor records the outcome.

// refundTimeout bounds one provider call.
const refundTimeout = 15 * time.Second

func (a *api) refundRoutes() []Route {
	adm := func(r Route) Route { r.Surface, r.Tag = Admin, "Refunds"; return r }
	base := "/admin/v1/events/{eventId}"
	return []Route{
		adm(Route{Method: "GET", Path: base + "/refund-policy", OperationID: "getRefundPolicy",
			Summary: "Get the event's refund policy (refundable, no deadline and no fee until set)", Success: 200,
			Response: event.RefundPolicy{}, Errors: errsRead, Handle: adminEventCmd[event.GetRefundPolicy](a, nil)}),
		adm(Route{Method: "PUT", Path: base + "/refund-policy", OperationID: "setRefundPolicy",
			Summary: "Replace the event's refund policy: refundable, a deadline or hoursBeforeStart (not both), " +
				"feePercent kept of each order; it binds console refunds unless they set force",
			Body: event.SetRefundPolicy{}, Success: 200, Response: event.RefundPolicy{}, Errors: []int{400, 404, 412},
			Handle: adminEventCmd[event.SetRefundPolicy](a, nil)}),
		adm(Route{Method: "POST", Path: base + "/orders/{orderNumber}/refund", OperationID: "refundOrder",
			Summary: "Refund a paid order through the payment provider: amount (default all that is refundable), " +
				"reason, force (override the policy); a full refund cancels the registration and frees its place. " +
				"While a refund is pending (the provider was not reached), a repeat resumes it; the service also resumes " +
				"it at start and after a minute",
			Body: event.RequestRefund{}, Success: 200, Response: event.Order{}, Errors: []int{400, 404, 412, 503},
			Handle: a.refundOrder}),
	}
}

// refundOrder runs the three steps of a refund.
func (a *api) refundOrder(c *Ctx) (any, error) {
	eventID := c.Param("eventId")
	if _, ok := a.sys.EventUnit(eventID); !ok {
		return nil, errEventNotFound
	}
	cmd, err := bindCmd(c, func(c *Ctx, cmd *event.RequestRefund) { cmd.Ref = c.Param("orderNumber") })
	if err != nil {
		return nil, err
	}
	start, err := askOp(a, eventID, cmd)
	if err != nil {
		return nil, err
	}
	return a.finishRefund(eventID, start, a.sandbox)
}

// finishRefund asks the provider for a pending refund and records its
// answer. A provider error is recorded as a failed refund and answered
// 503 (the console may ask again: a new refund). When the outcome cannot
// be recorded (the actor is busy or down) the refund stays pending and a
// repeat of the request resumes it with the same refund id, which the
// provider pays out once.
func (a *api) finishRefund(eventID string, start event.RefundStart, p payments.Provider) (any, error) {
	res, perr, err := a.settleRefund(eventID, start, p)
	if err != nil {
		return nil, err
	}
	if perr != nil {
		return nil, httpError(503, "the payment provider refused the refund: "+perr.Error())
	}
	return res, nil
}

// settleRefund asks the provider and records its answer: perr is the
// provider's refusal (recorded as a failed refund), err a failure to
// record the outcome (the refund stays pending).
func (a *api) settleRefund(eventID string, start event.RefundStart, p payments.Provider) (res any, perr, err error) {
	o, r := start.Order, start.Refund
	pay := payments.Payment{OrderNumber: o.OrderNumber, Amount: r.Amount.String(), Currency: o.Currency, RefundID: r.ID}
	if o.PaymentID != nil {
		pay.ID = *o.PaymentID
	}
	ctx, cancel := context.WithTimeout(context.Background(), refundTimeout)
	perr = p.Refund(ctx, pay)
	cancel()
	done := event.CompleteRefund{Ref: o.ID, RefundID: r.ID, Outcome: event.RefundSucceeded}
	if perr != nil {
		done.Outcome, done.Error = event.RefundFailed, perr.Error()
	}
	res, err = a.ask(eventID, done)
	return res, perr, err
}

// ResumeRefunds finishes the refunds that have been pending for at least
// minAge: asks the provider (with the same refund id, which it pays out
// once) and records the answer. A crash between a refund's request and
// its outcome leaves one pending, and so does an outcome that could not be
// recorded; the pending-refund index (actors.RefundPrefix) finds them
// without loading every event. It answers how many it settled (succeeded
// or failed at the provider); errors are those it could not settle.
func (s *Server) ResumeRefunds(minAge time.Duration) (int, error) {
	if s.resumeRefunds == nil {
		return 0, nil
	}
	return s.resumeRefunds(minAge)
}

func (a *api) resumeRefunds(minAge time.Duration) (int, error) {
	pending, err := a.sys.PendingRefunds()
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, p := range pending {
		if time.Since(p.RequestedAt) < minAge {
			continue
		}
		start, err := askOp(a, p.EventID, event.RequestRefund{Ref: p.OrderID, ResumeID: p.RefundID})
		if err != nil {
			errs = append(errs, fmt.Errorf("refund %s of order %s: %w", p.RefundID, p.OrderID, err))
			continue
		}
		// A refusal by the provider is recorded as a failed refund: settled.
		if _, _, err := a.settleRefund(p.EventID, start, a.sandbox); err != nil {
			errs = append(errs, fmt.Errorf("refund %s of order %s: %w", p.RefundID, p.OrderID, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
