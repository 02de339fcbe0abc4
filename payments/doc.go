// Package payments is the payment-provider side of ticketd: the Provider
// interface a real provider's adapter implements, and the built-in sandbox
// provider that stands in for one.
//
// The sandbox's hosted payment page (served by package http at
// {base_url}/pay/{paymentId}) has "Pay" and "Decline"; pressing one makes
// the provider POST a signed webhook to {base_url}/webhooks/payments/sandbox:
//
//	{"id": "<delivery id>", "type": "payment.succeeded"|"payment.failed",
//	 "data": {"paymentId", "orderNumber", "amount", "currency"}}
//	Payment-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">
//
// A signature is refused when missing, wrong, or when t is more than five
// minutes away from now. Amounts are decimal numbers in the currency's major
// unit, like every amount of the API.
//
// Refunds: Provider.Refund returns Payment.Amount of a settled payment,
// once per Payment.RefundID (a retried refund id is accepted and not paid
// twice). The sandbox accepts every refund at once and books it; Refunds
// lists the book (at most 10,000 entries, oldest forgotten first).
//
// The refund workflow (Refunds) drives a refund through the event's actor
// and the provider in three steps, none holding the actor across the
// provider call: the actor records RefundRequested (durable, and indexed
// as pending), Settle asks the provider within RefundTimeout, the actor
// records the outcome. A crash or a failed write between the steps leaves
// the refund pending; Resume finishes it with the same refund id.
//
// Hosted providers (Stripe, package payments/stripe) make the payment
// page themselves. Refunds sends the refunds of an order paid through one
// to its HostedRefunder (a refund still pending there stays pending, and
// one it could not be asked about wraps ErrUnavailable and is resumed);
// Closer expires the pages of orders that stopped holding, from the
// index Owed writes (CheckoutClosePrefix), retrying each pass until the
// provider answers; Seen records the provider's webhook event ids
// durably (SeenPrefix), so a redelivery changes nothing.
//
// # Owed work
//
// Owed (actors.OwedWork, wired by app.Main) writes the payment work a
// change owes into the batch that logs the change, so it is exactly as
// durable as that change: "refund/<eventId>/<refundId>" (a PendingRefund)
// while a refund is pending, deleted when it settles, and
// "checkout-close/<eventId>/<orderId>" (a CheckoutToClose) for a page to
// close. Values are version-free JSON (new fields optional). The prefixes
// are persistence's (persistence.Schema).
//
// Concurrency: a Sandbox, a Refunds, a Closer and a Seen are safe for
// concurrent use. Delivery makes an HTTP
// call: callers must never make it from inside an event actor.
package payments
