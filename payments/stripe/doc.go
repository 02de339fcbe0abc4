// Package stripe is the Stripe payment provider: it
// creates the Checkout Session of a confirmed paid order, expires it when
// the order is cancelled or expires, refunds through the Refunds API, and
// verifies and maps Stripe's webhooks. It calls Stripe with stripe-go
// (github.com/stripe/stripe-go/v84) and knows nothing of events, actors or
// HTTP handlers: the caller feeds it plain values and records the outcomes.
//
// # Concurrency
//
// A Provider is safe for concurrent use. CreateCheckoutSession,
// ExpireSession and Refund make HTTP requests (bounded by
// Config.RequestTimeout per attempt, Config.MaxNetworkRetries retries, and
// the caller's context): never call them from inside an event actor.
// Verify, ParseWebhook and the amount helpers make no call and are cheap.
//
// # Failures
//
// Every error of a call wraps ErrUnavailable (Stripe unreachable, slow, 409,
// 429 or 5xx: answer 503 with ReasonUnavailable, and a repeat of the same
// call completes the work once, as the idempotency key is the same) or
// ErrRefused (4xx: answer with ReasonRefused; a repeat will not help).
// Within a call, stripe-go retries network failures and timeouts, and the
// Provider retries Stripe's 409 and 5xx answers (which stripe-go does
// not), each time with the same idempotency key. Secrets never appear in
// an error, in a log line (stripe-go's log lines go through Config.Logger,
// redacted), or in Config's String. Arguments that cannot make a valid
// request (lines that do not sum to the total, 500.5 JPY) are refused
// before any call, with an error that wraps neither class.
//
// # Amounts
//
// The service writes amounts as decimals in major units ("49.99") with at
// most 2 decimals; Stripe wants integers in the currency's smallest unit:
// 4999 USD, 500 JPY for "500" (zero-decimal currencies), 12340 KWD for
// "12.34" (three-decimal currencies). ToMinor refuses what a currency
// cannot carry ("500.5" JPY) instead of rounding, so the buyer pays
// exactly the order's total; FromMinor formats back without trailing
// zeros, like the API ("50", "49.9"). Line items carry the purchase-time,
// discounted prices; a line whose amount does not split over its units
// goes as one unit of the whole line, and the lines must sum to the total.
// A webhook settles an order only if Event.Check passes: the same amount
// in Stripe's integer units, and the same currency (case-insensitive).
//
// # Webhook events
//
//	Stripe event                              condition             Kind               the caller
//	checkout.session.completed                payment_status=paid   KindPaid           settles if Check passes
//	checkout.session.completed                payment_status=unpaid KindPending        waits (async method)
//	checkout.session.async_payment_succeeded                        KindPaid           settles if Check passes
//	checkout.session.async_payment_failed                           KindFailed         marks the failure
//	checkout.session.expired                                        KindExpired        nothing
//	charge.refunded                                                 KindRefunded       keeps refunds in step
//	refund.updated                                                  KindRefundUpdated  completes or fails a refund
//	any other type, or no order number                              KindIgnored        2xx, changes nothing
//
// The order is named by client_reference_id (else metadata[orderNumber]);
// sessions also put the order number (and the service's payment id) in the
// payment intent's metadata, so charges carry it, and refunds carry
// metadata[refundId]. The signed payload is trusted: Stripe is not asked
// again. A missing, forged, wrong-secret or stale signature (t more than
// Config.WebhookTolerance, 300 s, from now either way) wraps
// payments.ErrNoSignature, payments.ErrBadSignature or payments.ErrStale:
// answer 400 and change nothing. Several v1 signatures (a secret rotation)
// are accepted when one matches. An event of another API version than
// stripe-go's is accepted: only fields stable across versions are read.
//
// # What the caller makes durable before answering 2xx
//
// Stripe redelivers a webhook until it gets a 2xx, for days, so a 2xx is
// a promise that the outcome survives a crash. Before answering it the
// caller makes durable, in one logged change: the event id (Event.ID, the
// de-duplication key: a repeat answers 2xx and changes nothing more), and
// the outcome: for KindPaid the order paid (or, for a late payment, the order
// fulfilled, or its refund requested with a refund id, which the
// resumer finishes) together with Event.PaymentIntentID, which a refund
// later needs; for a mismatch (Check failed) the payment kept unsettled
// for review; for refunds, the refund's new state. If that write fails,
// answer 5xx: Stripe retries. A KindPaid for an order that is already paid
// through another session or payment intent is money taken twice: it is
// refunded (a refund id made durable first), never dropped as a repeat;
// only the same event id is a repeat.
//
// # Sessions and holds
//
// expires_at is the order's hold end, but Stripe accepts only 30 minutes
// to 24 hours ahead. A shorter hold (the default is 15 minutes) gets the
// earliest accepted instant (on a 5-minute grid), a hold longer than 24
// hours the latest. The window is counted from Order.PreparedAt, the
// instant of the confirm's first try, which the core keeps with the order
// (event.OrderConfirmPrepared), not from the retry's now: every retry,
// across a grid line or a restart, sends the same parameters and key. A
// retry so late that the kept expires_at left the window still sends it
// (Stripe answers a session an earlier try made under that key); Stripe
// refusing it wraps ErrWindowPassed, and the caller prepares anew. The service
// then sets the order's hold to the session's expires_at (Session.ExpiresAt),
// so the two end together: Stripe never takes money for places that
// lapsed, except a payment completing in the last instant, which is a late
// payment (fulfilled if the places can still be taken, else refunded).
//
// # Wiring
//
// The service uses the Provider through its hosted-provider seam (event's
// provider.go, http/payprovider's stripe.go):
//
//   - Confirm of a paid order: the handler asks the actor to check the
//     confirm (ConfirmOrder.Prepare, which keeps the first try's instant
//     and hold end and answers them to every retry), creates the
//     session outside the actor, then asks the actor to record it
//     (ConfirmOrder.Provider: the session id, url and expires_at, logged in
//     OrderPaymentStarted). Stripe unavailable: 503 ReasonUnavailable and
//     nothing logged, the order still open; a retry sends the same
//     idempotency key. The actor refusing (the hold lapsed meanwhile): the
//     handler expires the session. A confirm of an order already awaiting
//     payment answers the recorded url without a call.
//   - Cancel and hold expiry: OrderReleased names the session and the
//     actor indexes it in the same batch; payments.Closer calls
//     CloseCheckout (ExpireSession) outside any actor until Stripe answers.
//   - Refunds: payments.Refunds calls RefundPayment (Refund, with the
//     session id the order recorded, or the one a second charge named);
//     a refund pending at Stripe stays pending until refund.updated or the
//     resumer's next call with the same refund id.
//   - Webhooks: ParseWebhook, then payments.Seen de-duplicates by event id
//     durably; see "What the caller makes durable before answering 2xx".
package stripe
