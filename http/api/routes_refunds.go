package api

import (
	"context"
	"errors"

	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/idempotency"
	"ticketd/ops"
	"ticketd/payments"
)

// The console's refund policy of an event and refunds of paid orders
// through the payment provider (the workflow is payments.Refunds).

func (a *api) refundRoutes() []thttp.Route {
	adm := func(r thttp.Route) thttp.Route { r.Surface, r.Tag = thttp.Admin, "Refunds"; return r }
	base := "/admin/v1/events/{eventId}"
	return []thttp.Route{
		adm(thttp.Route{Method: "GET", Path: base + "/refund-policy", OperationID: "getRefundPolicy",
			Summary: "Get the event's refund policy (refundable, no deadline and no fee until set)", Success: 200,
			Response: event.RefundPolicy{}, Errors: errsRead, Handle: adminEventCmd[event.GetRefundPolicy](a, nil)}),
		adm(thttp.Route{Method: "PUT", Path: base + "/refund-policy", OperationID: "setRefundPolicy",
			Summary: "Replace the event's refund policy: refundable, a deadline or hoursBeforeStart (not both), " +
				"feePercent kept of each order; it binds console refunds unless they set force",
			Body: event.SetRefundPolicy{}, Success: 200, Response: event.RefundPolicy{}, Errors: []int{400, 404, 412},
			Handle: adminEventCmd[event.SetRefundPolicy](a, nil)}),
		adm(thttp.Route{Method: "POST", Path: base + "/orders/{orderNumber}/refund", OperationID: "refundOrder",
			Summary: "Refund a paid order through the payment provider: amount (default all that is refundable), " +
				"reason, force (override the policy); a full refund cancels the registration and frees its place. " +
				"While a refund is pending (the provider was not reached), a repeat resumes it; the service also resumes " +
				"it at start and after a minute",
			Body: event.RequestRefund{}, Success: 200, Response: event.Order{}, Errors: []int{400, 404, 412, 503},
			Handle: a.refundOrder}),
	}
}

// viewRefundOrder names the answer a refund's start records: the order
// of its event.RefundStart. A name, not a function, so that in cluster
// mode the event's owner makes the same record (idempotency.RegisterView).
const viewRefundOrder = "refund.order"

func init() {
	idempotency.RegisterView(viewRefundOrder, func(r any) any { s, _ := r.(event.RefundStart); return s.Order })
}

// refundOrder starts a refund (or resumes a pending one) and settles it.
// A keyed request commits its Idempotency-Key record with the refund's
// start (the order, its refund pending) and replaces it with the
// outcome's answer in the outcome's batch (decisions §20): a retry whose
// answer was lost, at any point, replays what was made and never starts a
// second refund. Both records are portable (a named view, a fixed
// refusal), so in cluster mode the event's owner commits them with the
// writes when another node serves the request.
func (a *api) refundOrder(c *thttp.Ctx) (any, error) {
	eventID := c.Param("eventId")
	if _, ok := a.ops.EventUnit(eventID); !ok {
		return nil, errEventNotFound
	}
	cmd, err := bindCmd(c, func(c *thttp.Ctx, cmd *event.RequestRefund) { cmd.Ref = c.Param("orderNumber") })
	if err != nil {
		return nil, err
	}
	start, err := ops.Do(keyedNamed(c, viewRefundOrder), a.ops, eventID, cmd)
	if err != nil {
		return nil, keyedErr(c, err)
	}
	k := payments.Keyed{Outcome: keyedAgain(c, nil), Refused: func(perr error) context.Context {
		return keyedFixed(c, errRefused(perr))
	}}
	res, perr, err := a.refunds.SettleKeyed(k, eventID, start)
	if _, replayed := ops.Replayed(err); replayed {
		return nil, keyedErr(c, err) // made before: its record answers
	}
	err = keyedErr(c, err) // an outcome that may still commit holds the key
	if errors.Is(err, payments.ErrUnavailable) {
		return nil, thttp.NewError(503, "the refund stays pending and is finished when the payment provider answers").WithReason(event.ReasonPaymentProviderDown)
	}
	if err != nil {
		return nil, ops.MapErr(err)
	}
	// A refusal is recorded as a failed refund; the console may ask again.
	if perr != nil {
		return nil, errRefused(perr)
	}
	return res, nil
}

// errRefused is the answer to a refund the payment provider refused.
func errRefused(perr error) error {
	return thttp.NewError(503, "the payment provider refused the refund: "+perr.Error()).WithReason(event.ReasonPaymentProviderRefused)
}
