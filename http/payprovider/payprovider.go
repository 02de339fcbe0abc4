package payprovider

import (
	"context"
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/pages"
	"ticketd/ops"
	"ticketd/payments"
	"ticketd/payments/stripe"
)

// Config is what New needs.
type Config struct {
	// Ops is the application layer: the orders the providers' calls
	// settle, and its payment services (the sandbox, refunds, the record
	// of Stripe's events).
	Ops *ops.Ops
	// Stripe takes the payments when set; nil: the sandbox.
	Stripe *stripe.Provider
	// Now is the clock of signature checks (nil: time.Now).
	Now func() time.Time
}

// Handlers are the payment provider's HTTP faces. Build them with New,
// then Register them on the server.
type Handlers struct {
	cfg     Config
	ops     *ops.Ops
	sandbox *payments.Sandbox
	refunds *payments.Refunds
	stripe  *stripe.Provider // nil unless Stripe takes the payments
	seen    *payments.Seen   // Stripe's webhook events acted on
	srv     *thttp.Server    // set by Register: error envelopes, the logger
}

// New builds the handlers over cfg.Ops's payment services.
func New(cfg Config) (*Handlers, error) {
	o := cfg.Ops
	switch {
	case o == nil || o.Sandbox() == nil || o.Refunds() == nil:
		return nil, errors.New("payprovider: no application layer, or one without its sandbox or refunds")
	case cfg.Stripe != nil && o.Seen() == nil:
		return nil, errors.New("payprovider: stripe without its record of events")
	}
	return &Handlers{cfg: cfg, ops: o, sandbox: o.Sandbox(), refunds: o.Refunds(), stripe: cfg.Stripe, seen: o.Seen()}, nil
}

// PageOrigins are the hosted provider's page origins, which the hosted
// checkout form redirects to (its CSP form-action; pages.Config).
func (h *Handlers) PageOrigins() []string {
	if h.stripe == nil {
		return nil
	}
	return []string{stripe.CheckoutOrigin}
}

// Register adds the provider's routes to srv: Stripe's webhook when Stripe
// takes the payments, else the sandbox's webhook and its payment page
// (rendered by p).
func (h *Handlers) Register(srv *thttp.Server, p *pages.Pages) {
	h.srv = srv
	if h.stripe != nil {
		// Stripe takes the payments: the sandbox's page, which settles
		// without money, must not exist.
		srv.Handle("POST", "/webhooks/payments/stripe", h.stripeWebhook)
		return
	}
	srv.Handle("POST", "/webhooks/payments/sandbox", h.paymentWebhook)
	srv.Handle("GET", "/pay/{paymentId}", func(rc *fasthttp.RequestCtx) { h.payPage(rc, p) })
	srv.Handle("POST", "/pay/{paymentId}", h.payAction)
}

func (h *Handlers) now() time.Time {
	if h.cfg.Now != nil {
		return h.cfg.Now()
	}
	return time.Now()
}

// do asks the event's actor through the application layer, with the
// command's own result type. Its deadline is the actor system's ask
// timeout, not the HTTP connection's.
func do[R any](h *Handlers, eventID string, cmd event.Op[R]) (R, error) {
	return ops.Do(context.Background(), h.ops, eventID, cmd)
}
