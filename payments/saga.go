package payments

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"ticketd/event"
)

// The hosted-payment saga: with a hosted provider (Stripe), the confirm
// of a paid order makes its payment page (HostedCheckout), and an order
// that stops holding (cancelled, expired) has it closed by the Closer,
// which the application layer wakes after every cancel. The provider is called only here, in the caller's goroutine,
// never from an event actor: the actor checks the confirm first
// (ConfirmOrder.Prepare), then records the page the call made
// (ConfirmOrder.Provider); see event/provider.go. The saga speaks to the
// actors through the application layer's Asker, so it imports neither
// the actors nor HTTP.

// Asker sends a command to an event's actor and answers its result or
// the shell's failure, unmapped (the application layer maps it once,
// after the saga). A write's context (its idempotency record) goes with
// the ask that makes the write.
type Asker func(ctx context.Context, eventID string, cmd event.Command) (any, error)

// CheckoutProvider is a hosted provider's payment pages: it makes an
// order's page (the Stripe adapter's CreateCheckout) and closes one.
// Errors of CreateCheckout wrap ErrUnavailable when a repeat may succeed.
type CheckoutProvider interface {
	Name() string
	CreateCheckout(ctx context.Context, o CheckoutOrder) (CheckoutPage, error)
	CheckoutCloser
}

// CheckoutOrder is what a payment page is made of: an order at confirm,
// with its purchase-time prices as decimals in major units ("49.99").
type CheckoutOrder struct {
	OrderNumber string
	Email       string
	Currency    string
	Total       string
	HoldUntil   time.Time
	// PreparedAt is when the confirm was first prepared (the core keeps
	// it): a provider counts its limits from it, not from now, so every
	// retry of the confirm sends the same parameters.
	PreparedAt time.Time
	SuccessURL string
	CancelURL  string
	Lines      []CheckoutLine
}

// CheckoutLine is one line of a CheckoutOrder.
type CheckoutLine struct {
	Name       string
	Quantity   int
	UnitAmount string
	Amount     string
}

// ErrPagePrepareStale wraps a provider's refusal of a page whose kept
// parameters (counted from CheckoutOrder.PreparedAt) left its window: no
// page was made with them, so the confirm is prepared anew and tried once
// more.
var ErrPagePrepareStale = errors.New("payments: the prepared payment page left the provider's window")

// CheckoutPage is a made payment page.
type CheckoutPage struct {
	Ref       string    // the provider's id of the page (cs_...)
	URL       string    // where the buyer pays
	ExpiresAt time.Time // when the page expires: the hold's new end
}

// PageError is a hosted provider's failure to make an order's payment
// page; nothing was recorded, the order stays open. Retryable: a repeat
// of the same confirm may succeed (the provider was unreachable or slow).
type PageError struct {
	Retryable bool
	Err       error
}

func (e *PageError) Error() string { return "payments: payment page not made: " + e.Err.Error() }
func (e *PageError) Unwrap() error { return e.Err }

// confirmProviderTimeout bounds the page call of one confirm, the
// provider client's retries included.
const confirmProviderTimeout = 20 * time.Second

// closeRetries and closeRetryWait bound the best-effort closing of a page
// that no order recorded.
const (
	closeRetries   = 3
	closeRetryWait = 2 * time.Second
)

// HostedCheckout is the confirm half of the hosted-payment saga of one
// provider. Safe for concurrent use.
type HostedCheckout struct {
	provider CheckoutProvider
	log      *slog.Logger
}

// NewHostedCheckout returns the saga of provider.
func NewHostedCheckout(provider CheckoutProvider, log *slog.Logger) *HostedCheckout {
	if log == nil {
		log = slog.Default()
	}
	return &HostedCheckout{provider: provider, log: log}
}

// Provider is the saga's provider name.
func (h *HostedCheckout) Provider() string { return h.provider.Name() }

// Ask runs a confirm of an order (storefront or not) through ask, the
// payment page made outside the actor; ok is false for any other
// command, which the caller asks itself. ctx goes with the ask that makes
// the request's write: the last one.
func (h *HostedCheckout) Ask(ctx context.Context, ask Asker, eventID string, cmd event.Command) (res any, err error, ok bool) {
	inner, storefront := event.StorefrontInner(cmd)
	wrap := func(c event.Command) event.Command {
		if storefront {
			return event.Storefront{Cmd: c}
		}
		return c
	}
	c, ok := inner.(event.ConfirmOrder)
	if !ok {
		return nil, nil, false
	}
	res, err = h.confirm(ctx, ask, eventID, c, wrap)
	return res, err, true
}

// confirm confirms a paid order with a payment page: the actor checks the
// confirm and keeps (the first time) the hold's new end and the instant
// of this first try; the page is made here from them (its idempotency key
// comes from the order and every parameter, so a retried confirm, however
// late and across restarts, answers the same page); the actor records it.
// If the kept parameters left the provider's window and it refused them
// (ErrPagePrepareStale: no page was made with them), the confirm is
// prepared anew and the page asked for once more. If the provider
// cannot be reached the answer is a retryable PageError and nothing was
// recorded: the order stays open and the same confirm may be sent again.
// A page that no order recorded (the hold lapsed meanwhile) is closed
// again at once.
func (h *HostedCheckout) confirm(ctx context.Context, ask Asker, eventID string, c event.ConfirmOrder, wrap func(event.Command) event.Command) (any, error) {
	var page CheckoutPage
	for renew := false; ; renew = true {
		prep := c
		prep.Prepare, prep.Renew, prep.Provider = true, renew, nil
		res, err := ask(context.Background(), eventID, wrap(prep))
		if err != nil {
			return nil, err
		}
		o, isOrder := res.(event.Order)
		if !isOrder || o.Status != event.OrderStatusOpen || o.TotalAmount == 0 || o.HoldExpiresAt == nil {
			// Free, or confirmed already: the core answers without a payment page.
			return ask(ctx, eventID, wrap(c))
		}
		page, err = h.page(o, c)
		if err == nil {
			break
		}
		if !renew && errors.Is(err, ErrPagePrepareStale) {
			h.log.Info(h.provider.Name()+" checkout session prepared anew", "order", o.OrderNumber, "err", err)
			continue
		}
		h.log.Warn(h.provider.Name()+" checkout session not created", "order", o.OrderNumber, "err", err)
		return nil, &PageError{Retryable: errors.Is(err, ErrUnavailable), Err: err}
	}
	fin := c
	fin.Prepare, fin.Provider = false, &event.ProviderCheckout{Provider: h.provider.Name(), Ref: page.Ref, URL: page.URL, HoldUntil: page.ExpiresAt}
	res, err := ask(ctx, eventID, wrap(fin))
	if err != nil {
		go h.closeUnrecorded(page.Ref)
		return nil, err
	}
	if got, ok := res.(event.Order); ok && got.ProviderRef != page.Ref {
		// A concurrent confirm recorded another page first.
		go h.closeUnrecorded(page.Ref)
	}
	return res, nil
}

// page asks the provider for the payment page of the prepared confirm o
// of c.
func (h *HostedCheckout) page(o event.Order, c event.ConfirmOrder) (CheckoutPage, error) {
	co := CheckoutOrder{
		OrderNumber: o.OrderNumber, Email: o.Email, Currency: o.Currency, Total: o.TotalAmount.String(),
		HoldUntil: o.HoldExpiresAt.Time, PreparedAt: o.PreparedAt, SuccessURL: c.SuccessURL, CancelURL: c.CancelURL,
	}
	// Without URLs (the storefront's hosted flow) the provider sends the
	// buyer back to the hosted order page, which shows what happened.
	if co.SuccessURL == "" {
		co.SuccessURL = o.OrderURL
	}
	if co.CancelURL == "" {
		co.CancelURL = o.OrderURL
	}
	for _, it := range o.Items {
		co.Lines = append(co.Lines, CheckoutLine{Name: it.Name, Quantity: it.Quantity, UnitAmount: it.UnitPriceAmount.String(), Amount: it.Amount.String()})
	}
	pctx, cancel := context.WithTimeout(context.Background(), confirmProviderTimeout)
	defer cancel()
	return h.provider.CreateCheckout(pctx, co)
}

// closeUnrecorded closes a page no order recorded, a few times at most:
// nobody was given its URL, and the provider expires it anyway; a payment
// of it would be a late payment all the same.
func (h *HostedCheckout) closeUnrecorded(ref string) {
	for i := 0; i < closeRetries; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
		err := h.provider.CloseCheckout(ctx, ref)
		cancel()
		if err == nil || !errors.Is(err, ErrUnavailable) {
			return
		}
		time.Sleep(closeRetryWait << i)
	}
}
