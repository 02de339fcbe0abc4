package stripe

import (
	"context"
	"errors"
	"fmt"

	"ticketd/payments"
)

// The Provider as the service's hosted provider: payments.HostedRefunder
// and payments.CheckoutCloser. Their errors wrap payments.ErrUnavailable
// when a repeat may succeed (ErrUnavailable here).
var (
	_ payments.HostedRefunder = (*Provider)(nil)
	_ payments.CheckoutCloser = (*Provider)(nil)
)

// RefundPayment refunds p.Amount of the payment of Checkout Session
// p.ProviderRef (Refund, with p.RefundID as the refund id: one refund per
// id) and answers its state: payments.RefundStateSucceeded,
// RefundStatePending (pending or requires_action: refund.updated settles
// it) or RefundStateFailed (failed, canceled).
func (p *Provider) RefundPayment(ctx context.Context, pay payments.Payment) (string, error) {
	sp := Payment{OrderNumber: pay.OrderNumber, PaymentID: pay.ID, Amount: pay.Amount, Currency: pay.Currency}
	if len(pay.ProviderRef) > 3 && pay.ProviderRef[:3] == "pi_" {
		sp.PaymentIntentID = pay.ProviderRef
	} else {
		sp.SessionID = pay.ProviderRef
	}
	r, err := p.Refund(ctx, sp, pay.RefundID)
	if err != nil {
		return "", hostedErr(err)
	}
	return RefundState(r.Status), nil
}

// RefundState maps a Stripe refund status to the service's refund states.
func RefundState(status string) string {
	switch status {
	case RefundSucceeded:
		return payments.RefundStateSucceeded
	case RefundPending, RefundRequiresAction:
		return payments.RefundStatePending
	}
	return payments.RefundStateFailed
}

// CloseCheckout expires Checkout Session ref (ExpireSession); a session
// already expired or complete is no error.
func (p *Provider) CloseCheckout(ctx context.Context, ref string) error {
	_, err := p.ExpireSession(ctx, ref)
	return hostedErr(err)
}

func hostedErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnavailable):
		return fmt.Errorf("%w: %w", payments.ErrUnavailable, err)
	case errors.Is(err, ErrWindowPassed):
		return fmt.Errorf("%w: %w", payments.ErrPagePrepareStale, err)
	}
	return err
}
