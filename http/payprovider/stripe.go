package payprovider

import (
	"encoding/json"
	"errors"

	"github.com/valyala/fasthttp"

	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/ops"
	"ticketd/payments/stripe"
)

// Stripe as the payment provider (TICKETD_PAYMENT_PROVIDER=stripe): the
// confirm of a paid order creates its Checkout Session (the
// hosted-payment saga, payments.HostedCheckout, which the application
// layer runs for every door), and Stripe's webhook
// (POST /webhooks/payments/stripe) settles it.

// stripeWebhook receives Stripe's events. A missing, forged, wrong-secret
// or stale signature answers 400 and changes nothing. An event id acted on
// before answers 200 and changes nothing more (payments.Seen). Otherwise
// the event is acted on, its id recorded, and only then, both durable, is
// 200 answered; a failure to make either durable answers 503, and Stripe
// delivers again.
func (h *Handlers) stripeWebhook(rc *fasthttp.RequestCtx) {
	body := rc.PostBody()
	ev, err := h.stripe.ParseWebhook(body, string(rc.Request.Header.Peek(stripe.SignatureHeader)), h.now())
	if err != nil {
		e := thttp.NewError(400, "webhook refused: "+err.Error())
		e.Reason = event.ReasonWebhookSignatureInvalid
		if errors.Is(err, stripe.ErrPayload) {
			e.Reason = event.ReasonWebhookPayloadInvalid
		}
		h.srv.WriteError(rc, e)
		return
	}
	seen, err := h.seen.Has(ev.ID)
	if err != nil {
		h.srv.WriteError(rc, ops.MapErr(err))
		return
	}
	out := map[string]any{"received": true, "id": ev.ID}
	if seen {
		out["duplicate"] = true
		writeJSON(rc, out)
		return
	}
	if err := h.actOnStripe(ev, out); err != nil {
		h.srv.Logger().Error("stripe webhook not acted on; stripe delivers it again", "event", ev.ID, "type", ev.Type, "err", err)
		h.srv.WriteError(rc, err)
		return
	}
	if err := h.seen.Mark(ev.ID, h.now()); err != nil {
		h.srv.WriteError(rc, thttp.NewError(503, "temporarily unavailable; retry"))
		return
	}
	writeJSON(rc, out)
}

func writeJSON(rc *fasthttp.RequestCtx, v any) {
	rc.SetContentType("application/json")
	b, _ := json.Marshal(v)
	rc.SetBody(b)
}

// stripeEventOf is the event of an order number that this service made;
// false for anything else (another integration on the same account).
func (h *Handlers) stripeEventOf(number string) (string, bool) {
	id, ok := event.EventIDFromOrderNumber(number)
	if !ok {
		return "", false
	}
	_, known := h.ops.EventUnit(id)
	return id, known
}

// actOnStripe carries out what event ev means, durably, and notes the
// outcome in out. A nil error means the outcome is durable, or that there
// is none to have (an event of no order of ours, a pending payment).
func (h *Handlers) actOnStripe(ev stripe.Event, out map[string]any) error {
	eventID, ours := h.stripeEventOf(ev.OrderNumber)
	if !ours || ev.Kind == stripe.KindIgnored {
		out["outcome"] = "ignored"
		return nil
	}
	log := h.srv.Logger()
	switch ev.Kind {
	case stripe.KindPaid:
		return h.settleStripe(eventID, ev, out)
	case stripe.KindRefundUpdated:
		if ev.RefundID == "" {
			out["outcome"] = "ignored" // a refund made outside the service
			return nil
		}
		o, err := h.refunds.Complete(eventID, ev.OrderNumber, ev.RefundID, stripe.RefundState(ev.RefundStatus))
		if isNotFound(err) {
			out["outcome"] = "ignored"
			return nil
		}
		if err != nil {
			return ops.MapErr(err)
		}
		out["orderNumber"], out["status"], out["outcome"] = o.OrderNumber, o.Status, "refund "+ev.RefundStatus
		return nil
	case stripe.KindRefunded:
		// The charge's refunds moved: finish the service's refunds of the
		// order that are still pending (asking Stripe again with the same
		// refund id answers the same refund).
		o, err := do(h, eventID, event.GetOrder{Ref: ev.OrderNumber})
		if isNotFound(err) {
			out["outcome"] = "ignored"
			return nil
		}
		if err != nil {
			return err
		}
		h.settlePendingRefunds(eventID, o)
		out["outcome"] = "refunds checked"
		return nil
	case stripe.KindFailed:
		// The order keeps waiting until its hold lapses: the buyer may pay
		// another way on the same page.
		log.Info("stripe payment failed", "order", ev.OrderNumber, "session", ev.SessionID)
	}
	out["outcome"] = string(ev.Kind)
	return nil
}

// settleStripe settles an order paid through Stripe: paid, a late payment
// fulfilled or refunded (decisions §12), a second charge refunded. A
// payment whose amount or currency is not its order's never settles: it is
// kept for review (logged) and acknowledged, as Stripe's redeliveries
// would not change it.
func (h *Handlers) settleStripe(eventID string, ev stripe.Event, out map[string]any) error {
	log := h.srv.Logger()
	amount, err := event.ParseMoney(ev.Amount)
	if err != nil {
		log.Error("stripe payment with an amount no order can have; kept for review", "order", ev.OrderNumber, "session", ev.SessionID, "amount", ev.Amount, "currency", ev.Currency)
		out["outcome"] = "mismatch"
		return nil
	}
	o, err := do(h, eventID, event.SettlePayment{
		OrderRef: ev.OrderNumber, ProviderRef: ev.SessionID, Amount: amount, Currency: ev.Currency, DeliveryID: ev.ID, Outcome: "succeeded",
	})
	var ee *event.Error
	switch {
	case errors.As(err, &ee) && ee.Reason == event.ReasonPaymentAmountMismatch:
		log.Error("stripe payment does not match its order; not settled, kept for review", "order", ev.OrderNumber, "session", ev.SessionID, "err", err)
		out["outcome"] = "mismatch"
		return nil
	case isNotFound(err):
		log.Error("stripe payment of an order that started no payment; kept for review", "order", ev.OrderNumber, "session", ev.SessionID)
		out["outcome"] = "unknown order"
		return nil
	case errors.As(err, &ee):
		log.Error("stripe payment not settled; kept for review", "order", ev.OrderNumber, "session", ev.SessionID, "err", err)
		out["outcome"] = "not settled"
		return nil
	case err != nil:
		return err
	}
	out["orderNumber"], out["status"], out["outcome"] = o.OrderNumber, o.Status, "settled"
	h.settlePendingRefunds(eventID, o)
	return nil
}

// settlePendingRefunds asks Stripe for the order's pending refunds (a late
// payment's or a second charge's, just requested): what cannot finish now
// stays pending for the resumer.
func (h *Handlers) settlePendingRefunds(eventID string, o event.Order) {
	for _, r := range o.Refunds {
		if r.Status != event.RefundPending {
			continue
		}
		if _, _, err := h.refunds.Settle(eventID, event.RefundStart{Order: o, Refund: r}); err != nil {
			h.srv.Logger().Warn("refund left pending for the resumer", "refund", r.ID, "order", o.OrderNumber, "err", err)
		}
	}
}

func isNotFound(err error) bool {
	var ee *event.Error
	return errors.As(err, &ee) && ee.Code == event.NotFound
}
