package pages

import (
	"context"

	"github.com/valyala/fasthttp"

	"ticketd/event"
)

// The buyer's cancel: an order that is not paid (open or awaiting
// payment) can be given up from its order page, its continue-checkout page
// and the checkout page that found it open (ORDER_ALREADY_OPEN). Each
// shows a POST form (form=cancel) to the order page, so the form is
// protected as every gated form is: the order page's gate cookie (signed,
// HttpOnly, SameSite=Lax, scoped to /orders/{n}) must be there, else the
// gate answers and nothing changes. The cancel is ops.CancelOrder, the one
// cancel every door calls (it wakes the checkout closer, so a Stripe
// Checkout Session of the order closes at once).

// cancellable reports whether the buyer may cancel an order of status s:
// a paid order is refunded in the console; a cancelled or expired one has
// nothing left to give up.
func cancellable(status string) bool {
	return status == event.OrderStatusOpen || status == event.OrderStatusAwaitingPayment
}

// cancelledQuery marks the order page the buyer's cancel lands on, which
// then says what the cancel did (only while the order is cancelled).
const cancelledQuery = "cancelled"

// cancelOrder carries out the order page's form=cancel of a buyer who
// passed the gate: a cancellable order is cancelled and the buyer sent to
// the order page again (303, so a reload sends nothing); any other order
// is refused on its page and left as it is.
func (p *Pages) cancelOrder(rc *fasthttp.RequestCtx, h event.HostedOrder, v *view) {
	if !cancellable(h.Order.Status) {
		v.Error = v.L.T("order.cancel_refused")
		p.render(rc, 412, "order", v)
		return
	}
	o, err := p.cfg.Ops.CancelOrder(context.Background(), h.Event.ID, event.Storefront{Cmd: event.CancelOrder{Ref: h.Order.OrderNumber}})
	if err != nil {
		p.fail(rc, v.L, err)
		return
	}
	if o.Status != event.OrderStatusCancelled {
		// Expired while the form was posted: the core answers the order
		// as it is, and the page says so rather than "cancelled".
		p.headers(rc)
		rc.Redirect("/orders/"+h.Order.OrderNumber, fasthttp.StatusSeeOther)
		return
	}
	p.headers(rc)
	rc.Redirect("/orders/"+h.Order.OrderNumber+"?"+cancelledQuery+"=1", fasthttp.StatusSeeOther)
}
