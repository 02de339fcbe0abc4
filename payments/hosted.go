package payments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ErrUnavailable wraps a hosted provider's failure that a later call with
// the same arguments may cure (unreachable, slow, 5xx): the caller leaves
// the work pending and retries; any other error is a refusal.
var ErrUnavailable = errors.New("payments: payment provider unavailable")

// Refund states a HostedRefunder answers.
const (
	RefundStateSucceeded = "succeeded"
	RefundStatePending   = "pending" // settles later (a webhook, or the resumer asking again)
	RefundStateFailed    = "failed"
)

// HostedRefunder is a hosted provider's refund call (the Stripe adapter's
// RefundPayment): it returns p.Amount of the payment p.ProviderRef once
// per p.RefundID, and answers the refund's state.
type HostedRefunder interface {
	RefundPayment(ctx context.Context, p Payment) (state string, err error)
}

// CheckoutCloser closes a hosted provider's payment page (expires a Stripe
// Checkout Session); a page already closed or paid is no error.
type CheckoutCloser interface {
	CloseCheckout(ctx context.Context, ref string) error
}

// CloseTimeout bounds one CloseCheckout call.
const CloseTimeout = 15 * time.Second

// maxClosePass bounds the pages one pass closes.
const maxClosePass = 500

// Closer closes the payment pages of orders that stopped holding (the
// index under CheckoutClosePrefix, written by Owed), outside any actor: a pass
// asks the provider for each and deletes the entry once it answered, so
// a page the provider could not be asked about is tried again next pass.
// Safe for concurrent use.
type Closer struct {
	sys    System
	closer CheckoutCloser
	log    *slog.Logger
	wake   chan struct{}
}

// NewCloser returns the closer of sys's pages through closer.
func NewCloser(sys System, closer CheckoutCloser, log *slog.Logger) *Closer {
	return &Closer{sys: sys, closer: closer, log: log, wake: make(chan struct{}, 1)}
}

// Wake asks for a pass now (after a cancel), without waiting for it.
func (c *Closer) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Pass closes the pages waiting to be closed; it answers how many it
// closed, and the errors of those it could not.
func (c *Closer) Pass() (int, error) {
	todo, err := CheckoutsToClose(c.sys.Store(), maxClosePass)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, t := range todo {
		ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
		err := c.closer.CloseCheckout(ctx, t.Ref)
		cancel()
		if err != nil && errors.Is(err, ErrUnavailable) {
			errs = append(errs, fmt.Errorf("close %s of order %s: %w", t.Ref, t.OrderID, err))
			continue
		}
		if err != nil {
			// Refused for good (unknown page): trying again cannot help.
			c.log.Error("payment page not closed", "ref", t.Ref, "order", t.OrderID, "err", err)
		}
		if err := CheckoutClosed(c.sys.Store(), t); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// Run makes a pass at once, then every interval and on Wake, until stop.
func (c *Closer) Run(stop <-chan struct{}, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := c.Pass(); err != nil {
			c.log.Error("payment page close", "closed", n, "err", err)
		} else if n > 0 {
			c.log.Info("payment page close", "closed", n)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		case <-c.wake:
		}
	}
}
