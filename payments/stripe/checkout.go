package stripe

import (
	"context"

	"ticketd/payments"
)

// The Provider as the hosted-payment saga's provider (payments.HostedCheckout).
var _ payments.CheckoutProvider = (*Provider)(nil)

// CreateCheckout makes the Checkout Session of o (CreateCheckoutSession);
// its errors wrap payments.ErrUnavailable when a repeat may succeed.
func (p *Provider) CreateCheckout(ctx context.Context, o payments.CheckoutOrder) (payments.CheckoutPage, error) {
	so := Order{OrderNumber: o.OrderNumber, Email: o.Email, Currency: o.Currency, Total: o.Total,
		HoldUntil: o.HoldUntil, PreparedAt: o.PreparedAt, SuccessURL: o.SuccessURL, CancelURL: o.CancelURL}
	for _, l := range o.Lines {
		so.Lines = append(so.Lines, Line{Name: l.Name, Quantity: l.Quantity, UnitAmount: l.UnitAmount, Amount: l.Amount})
	}
	s, err := p.CreateCheckoutSession(ctx, so)
	if err != nil {
		return payments.CheckoutPage{}, hostedErr(err)
	}
	return payments.CheckoutPage{Ref: s.ID, URL: s.URL, ExpiresAt: s.ExpiresAt}, nil
}
