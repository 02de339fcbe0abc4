package payprovider

import (
	"context"
	"encoding/json"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/pages"
	"ticketd/payments"
)

// The sandbox payment provider's two HTTP faces: its hosted payment page
// (GET/POST /pay/{paymentId}) and the service's webhook endpoint that the
// provider calls (POST /webhooks/payments/sandbox).

// paymentWebhook settles a payment: a missing, wrong or stale signature is
// refused with 400 and changes nothing; a repeated delivery answers 200 and
// changes nothing more (the machine sees the order already paid). A late
// payment (the order's hold lapsed) is acknowledged too: the machine either
// fulfils the order or records a refund of the whole payment, which is
// asked of the provider here; if that cannot finish, the refund stays
// pending and the refund resumer finishes it.
func (h *Handlers) paymentWebhook(rc *fasthttp.RequestCtx) {
	body := rc.PostBody()
	sig := string(rc.Request.Header.Peek(payments.SignatureHeader))
	if err := h.sandbox.Verify(sig, body, h.now()); err != nil {
		h.srv.WriteError(rc, thttp.NewError(400, "webhook signature refused: "+err.Error()).WithReason(event.ReasonWebhookSignatureInvalid))
		return
	}
	w, err := payments.ParseWebhook(body)
	if err != nil {
		h.srv.WriteError(rc, thttp.NewError(400, err.Error()))
		return
	}
	amount, err := event.ParseMoney(w.Data.Amount.String())
	if err != nil {
		h.srv.WriteError(rc, thttp.NewError(400, "data.amount: "+err.Error(), event.Detail{Field: "data.amount", Reason: err.Error()}))
		return
	}
	eventID, ok := event.EventIDFromPayment(w.Data.PaymentID)
	if !ok {
		h.srv.WriteError(rc, thttp.NewError(404, "payment not found"))
		return
	}
	if _, known := h.ops.EventUnit(eventID); !known {
		h.srv.WriteError(rc, thttp.NewError(404, "payment not found"))
		return
	}
	outcome := "succeeded"
	if w.Type == payments.Failed {
		outcome = "failed"
	}
	o, err := do(h, eventID, event.SettlePayment{
		PaymentID: w.Data.PaymentID, Amount: amount, Currency: w.Data.Currency, DeliveryID: w.ID, Outcome: outcome,
	})
	if err != nil {
		h.srv.WriteError(rc, err)
		return
	}
	for _, r := range o.Refunds {
		if r.Status == event.RefundPending {
			// The provider's refusal is recorded as a failed refund (the
			// next delivery asks again); an unrecorded outcome is the
			// resumer's. The payment itself is settled either way.
			if done, _, err := h.refunds.Settle(eventID, event.RefundStart{Order: o, Refund: r}); err == nil {
				o = done
			}
		}
	}
	rc.SetContentType("application/json")
	b, _ := json.Marshal(map[string]any{"received": true, "orderNumber": o.OrderNumber, "status": o.Status})
	rc.SetBody(b)
}

// payment reads the order of the path's payment id.
func (h *Handlers) payment(rc *fasthttp.RequestCtx) (event.Order, error) {
	id, _ := rc.UserValue("paymentId").(string)
	eventID, ok := event.EventIDFromPayment(id)
	if !ok {
		return event.Order{}, thttp.NewError(404, "payment not found")
	}
	if _, known := h.ops.EventUnit(eventID); !known {
		return event.Order{}, thttp.NewError(404, "payment not found")
	}
	return do(h, eventID, event.GetPayment{ID: id})
}

func (h *Handlers) payPage(rc *fasthttp.RequestCtx, p *pages.Pages) {
	o, err := h.payment(rc)
	p.PayPage(rc, o, err)
}

// payAction is the provider reacting to "Pay" or "Decline": it delivers the
// signed webhook to the service (an HTTP call, never made from an actor)
// and sends the buyer on: to successUrl / cancelUrl when the order has them,
// else to the hosted order page.
func (h *Handlers) payAction(rc *fasthttp.RequestCtx) {
	o, err := h.payment(rc)
	if err != nil {
		h.srv.WriteError(rc, err)
		return
	}
	typ := payments.Succeeded
	if string(rc.PostArgs().Peek("action")) == "decline" {
		typ = payments.Failed
	}
	// An order whose hold lapsed while the buyer was on this page is paid
	// all the same, as a real provider would: the service decides what a
	// late payment becomes (fulfilled, or refunded).
	late := typ == payments.Succeeded && o.PaymentID != nil && (o.Status == "expired" || o.Status == "cancelled") && len(o.Refunds) == 0
	if o.Status == "awaiting_payment" || late {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, err = h.sandbox.Deliver(ctx, typ, payments.Payment{
			ID: *o.PaymentID, OrderNumber: o.OrderNumber, Amount: o.TotalAmount.String(), Currency: o.Currency,
		}, h.now())
		cancel()
		if err != nil {
			h.srv.WriteError(rc, thttp.NewError(503, "the payment provider could not reach the service; retry"))
			return
		}
		if o, err = h.payment(rc); err != nil {
			h.srv.WriteError(rc, err)
			return
		}
	}
	next := o.OrderURL
	switch {
	case typ == payments.Succeeded && o.Status != "paid":
		// Not fulfilled (refunded, or not paid at all): successUrl would
		// tell the buyer otherwise; the order page says what happened.
	case typ == payments.Succeeded && o.SuccessURL != nil:
		next = *o.SuccessURL
	case typ == payments.Failed && o.CancelURL != nil:
		next = *o.CancelURL
	}
	rc.Redirect(next, fasthttp.StatusSeeOther)
}
