package api

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/payments"
	"ticketd/payments/stripe"
)

// Stripe as the payment provider (TICKETD_PAYMENT_PROVIDER=stripe): the
// confirm of a paid order creates its Checkout Session, and Stripe's
// webhook (POST /webhooks/payments/stripe) settles it. Stripe is called
// only here, in the request's goroutine, never from an event actor: the
// actor checks the confirm first (ConfirmOrder.Prepare), then records the
// session the call created (ConfirmOrder.Provider); see event/provider.go.

// paymentOrigins are the hosted provider's page origins, which the hosted
// checkout form redirects to (its CSP form-action).
func (a *api) paymentOrigins() []string {
	if a.stripe == nil {
		return nil
	}
	return []string{stripe.CheckoutOrigin}
}

// confirmProviderTimeout bounds the Checkout Session call of one confirm,
// stripe-go's retries included (each attempt has its own bound too).
const confirmProviderTimeout = 20 * time.Second

// closeRetries and closeRetryWait bound the best-effort closing of a
// session that no order recorded.
const (
	closeRetries   = 3
	closeRetryWait = 2 * time.Second
)

// askHosted runs the commands that involve the hosted provider: confirm
// (the session is created outside the actor) and cancel (the closer is
// woken to expire the order's session). ok is false for any other
// command.
//
// ctx (see keyed) goes with the ask that makes the request's write: the
// last one.
func (a *api) askHosted(ctx context.Context, eventID string, cmd event.Command) (res any, err error, ok bool) {
	inner, storefront := event.StorefrontInner(cmd)
	wrap := func(c event.Command) event.Command {
		if storefront {
			return event.Storefront{Cmd: c}
		}
		return c
	}
	switch c := inner.(type) {
	case event.ConfirmOrder:
		res, err := a.confirmHosted(ctx, eventID, c, wrap)
		return res, err, true
	case event.CancelOrder:
		res, err := a.sys.Ask(ctx, eventID, cmd)
		if err == nil && a.deps.Checkouts != nil {
			a.deps.Checkouts.Wake()
		}
		return res, shellErr(err), true
	}
	return nil, nil, false
}

// confirmHosted confirms a paid order with a Stripe Checkout Session:
// the actor checks the confirm and says the hold's new end; the session
// is created here (its idempotency key comes from the order and every
// parameter, so a retried confirm answers the same session); the actor
// records it. If Stripe cannot be reached the answer is 503
// PAYMENT_PROVIDER_UNAVAILABLE and nothing was recorded: the order stays
// open and the same confirm may be sent again. A session that no order
// recorded (the hold lapsed meanwhile) is expired again at once.
func (a *api) confirmHosted(ctx context.Context, eventID string, c event.ConfirmOrder, wrap func(event.Command) event.Command) (any, error) {
	prep := c
	prep.Prepare, prep.Provider = true, nil
	res, err := a.sys.Ask(contextBG, eventID, wrap(prep))
	if err != nil {
		return nil, shellErr(err)
	}
	o, isOrder := res.(event.Order)
	if !isOrder || o.Status != event.OrderStatusOpen || o.TotalAmount == 0 || o.HoldExpiresAt == nil {
		// Free, or confirmed already: the core answers without a payment page.
		res, err := a.sys.Ask(ctx, eventID, wrap(c))
		return res, shellErr(err)
	}
	so := stripe.Order{
		OrderNumber: o.OrderNumber, Email: o.Email, Currency: o.Currency, Total: o.TotalAmount.String(),
		HoldUntil: o.HoldExpiresAt.Time, SuccessURL: c.SuccessURL, CancelURL: c.CancelURL,
	}
	// Without URLs (the storefront's hosted flow) Stripe sends the buyer
	// back to the hosted order page, which shows what happened.
	if so.SuccessURL == "" {
		so.SuccessURL = o.OrderURL
	}
	if so.CancelURL == "" {
		so.CancelURL = o.OrderURL
	}
	for _, it := range o.Items {
		so.Lines = append(so.Lines, stripe.Line{Name: it.Name, Quantity: it.Quantity, UnitAmount: it.UnitPriceAmount.String(), Amount: it.Amount.String()})
	}
	pctx, cancel := context.WithTimeout(context.Background(), confirmProviderTimeout)
	s, err := a.stripe.CreateCheckoutSession(pctx, so)
	cancel()
	if err != nil {
		a.srv.Logger().Warn("stripe checkout session not created", "order", o.OrderNumber, "err", err)
		return nil, providerError(err)
	}
	fin := c
	fin.Prepare, fin.Provider = false, &event.ProviderCheckout{Provider: stripe.Name, Ref: s.ID, URL: s.URL, HoldUntil: s.ExpiresAt}
	res, err = a.sys.Ask(ctx, eventID, wrap(fin))
	if err != nil {
		go a.closeUnrecorded(s.ID)
		return nil, shellErr(err)
	}
	if got, ok := res.(event.Order); ok && got.ProviderRef != s.ID {
		// A concurrent confirm recorded another session first.
		go a.closeUnrecorded(s.ID)
	}
	return res, nil
}

// closeUnrecorded expires a session no order recorded, a few times at
// most: nobody was given its URL, and Stripe expires it at its expires_at
// anyway; a payment of it would be a late payment all the same.
func (a *api) closeUnrecorded(ref string) {
	for i := 0; i < closeRetries; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), payments.CloseTimeout)
		err := a.stripe.CloseCheckout(ctx, ref)
		cancel()
		if err == nil || !errors.Is(err, payments.ErrUnavailable) {
			return
		}
		time.Sleep(closeRetryWait << i)
	}
}

// providerError is the answer to a failed provider call: 503
// PAYMENT_PROVIDER_UNAVAILABLE when a repeat may succeed, else 502
// PAYMENT_PROVIDER_REFUSED.
func providerError(err error) error {
	if stripe.Retryable(err) {
		return providerUnavailable("the payment provider could not be reached; nothing was changed: retry the same request")
	}
	e := thttp.NewError(502, "the payment provider refused the payment page: "+err.Error())
	e.Reason = stripe.ReasonRefused
	return e
}

func providerUnavailable(msg string) error {
	e := thttp.NewError(503, msg)
	e.Reason = stripe.ReasonUnavailable
	return e
}

// stripeWebhook receives Stripe's events. A missing, forged, wrong-secret
// or stale signature answers 400 and changes nothing. An event id acted on
// before answers 200 and changes nothing more (payments.Seen). Otherwise
// the event is acted on, its id recorded, and only then, both durable, is
// 200 answered; a failure to make either durable answers 503, and Stripe
// delivers again.
func (a *api) stripeWebhook(rc *fasthttp.RequestCtx) {
	body := rc.PostBody()
	ev, err := a.stripe.ParseWebhook(body, string(rc.Request.Header.Peek(stripe.SignatureHeader)), a.now())
	if err != nil {
		e := thttp.NewError(400, "webhook refused: "+err.Error())
		e.Reason = event.ReasonWebhookSignatureInvalid
		if errors.Is(err, stripe.ErrPayload) {
			e.Reason = event.ReasonWebhookPayloadInvalid
		}
		a.srv.WriteError(rc, e)
		return
	}
	seen, err := a.seen.Has(ev.ID)
	if err != nil {
		a.srv.WriteError(rc, shellErr(err))
		return
	}
	out := map[string]any{"received": true, "id": ev.ID}
	if seen {
		out["duplicate"] = true
		writeJSON(rc, out)
		return
	}
	if err := a.actOnStripe(ev, out); err != nil {
		a.srv.Logger().Error("stripe webhook not acted on; stripe delivers it again", "event", ev.ID, "type", ev.Type, "err", err)
		a.srv.WriteError(rc, err)
		return
	}
	if err := a.seen.Mark(ev.ID, a.now()); err != nil {
		a.srv.WriteError(rc, thttp.NewError(503, "temporarily unavailable; retry"))
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
func (a *api) stripeEventOf(number string) (string, bool) {
	id, ok := event.EventIDFromOrderNumber(number)
	if !ok {
		return "", false
	}
	_, known := a.sys.EventUnit(id)
	return id, known
}

// actOnStripe carries out what event ev means, durably, and notes the
// outcome in out. A nil error means the outcome is durable, or that there
// is none to have (an event of no order of ours, a pending payment).
func (a *api) actOnStripe(ev stripe.Event, out map[string]any) error {
	eventID, ours := a.stripeEventOf(ev.OrderNumber)
	if !ours || ev.Kind == stripe.KindIgnored {
		out["outcome"] = "ignored"
		return nil
	}
	log := a.srv.Logger()
	switch ev.Kind {
	case stripe.KindPaid:
		return a.settleStripe(eventID, ev, out)
	case stripe.KindRefundUpdated:
		if ev.RefundID == "" {
			out["outcome"] = "ignored" // a refund made outside the service
			return nil
		}
		o, err := a.refunds.Complete(eventID, ev.OrderNumber, ev.RefundID, stripe.RefundState(ev.RefundStatus))
		if isNotFound(err) {
			out["outcome"] = "ignored"
			return nil
		}
		if err != nil {
			return shellErr(err)
		}
		out["orderNumber"], out["status"], out["outcome"] = o.OrderNumber, o.Status, "refund "+ev.RefundStatus
		return nil
	case stripe.KindRefunded:
		// The charge's refunds moved: finish the service's refunds of the
		// order that are still pending (asking Stripe again with the same
		// refund id answers the same refund).
		o, err := askOp(a, eventID, event.GetOrder{Ref: ev.OrderNumber})
		if isNotFound(err) {
			out["outcome"] = "ignored"
			return nil
		}
		if err != nil {
			return err
		}
		a.settlePendingRefunds(eventID, o)
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
func (a *api) settleStripe(eventID string, ev stripe.Event, out map[string]any) error {
	log := a.srv.Logger()
	amount, err := event.ParseMoney(ev.Amount)
	if err != nil {
		log.Error("stripe payment with an amount no order can have; kept for review", "order", ev.OrderNumber, "session", ev.SessionID, "amount", ev.Amount, "currency", ev.Currency)
		out["outcome"] = "mismatch"
		return nil
	}
	o, err := askOp(a, eventID, event.SettlePayment{
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
	a.settlePendingRefunds(eventID, o)
	return nil
}

// settlePendingRefunds asks Stripe for the order's pending refunds (a late
// payment's or a second charge's, just requested): what cannot finish now
// stays pending for the resumer.
func (a *api) settlePendingRefunds(eventID string, o event.Order) {
	for _, r := range o.Refunds {
		if r.Status != event.RefundPending {
			continue
		}
		if _, _, err := a.refunds.Settle(eventID, event.RefundStart{Order: o, Refund: r}); err != nil {
			a.srv.Logger().Warn("refund left pending for the resumer", "refund", r.ID, "order", o.OrderNumber, "err", err)
		}
	}
}

func isNotFound(err error) bool {
	var ee *event.Error
	return errors.As(err, &ee) && ee.Code == event.NotFound
}
