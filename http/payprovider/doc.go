// Package payprovider is the payment provider's side of ticketd's HTTP
// service: the routes a provider (or the buyer it sends) calls, outside the
// API's route table. With the sandbox provider: its hosted payment page
// (GET/POST /pay/{paymentId}, rendered by http/pages), where "Pay" or
// "Decline" delivers the provider's signed webhook, and the webhook itself
// (POST /webhooks/payments/sandbox), which settles the order. With Stripe
// (TICKETD_PAYMENT_PROVIDER=stripe): Stripe's webhook
// (POST /webhooks/payments/stripe), which settles paid orders and finishes
// refunds; the checkout that sends buyers there is the application layer's
// hosted-payment saga (payments.HostedCheckout), not this package's.
//
// A webhook is verified before it is read: a missing, forged or stale
// signature answers 400 and changes nothing. A delivery acted on before
// answers 200 and changes nothing more (the order already paid; Stripe's
// event ids in payments.Seen). Settling asks the event's actor through the
// application layer (ops.Do); a late payment's refund is asked of the
// provider at once and, if that cannot finish, left pending for the refund
// resumer. The package imports neither the actors nor the store.
//
// # Concurrency
//
// The handlers run on fasthttp's request goroutines and share only the
// application layer and its payment services, each safe for concurrent
// use. New and Register are called once, before Serve.
package payprovider
