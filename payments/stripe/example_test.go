package stripe_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v84/webhook"

	"ticketd/payments/stripe"
)

// A webhook handler's part: verify and map the delivery, and settle only a
// paid event whose amount and currency match the order.
func ExampleProvider_ParseWebhook() {
	p, err := stripe.New(stripe.Config{SecretKey: "sk_test_example", WebhookSecret: "whsec_example"})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	body := []byte(`{"id":"evt_1","object":"event","api_version":"2020-08-27","created":1795600000,
"type":"checkout.session.completed","data":{"object":{"id":"cs_test_1","object":"checkout.session",
"payment_status":"paid","amount_total":4999,"currency":"usd","client_reference_id":"7K3Q-0042",
"payment_intent":"pi_1"}}}`)
	header := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_example", Timestamp: now}).Header

	e, err := p.ParseWebhook(body, header, now)
	if err != nil {
		fmt.Println("400:", err) // bad signature: refuse, change nothing
		return
	}
	fmt.Println(e.ID, e.Kind, e.OrderNumber, e.Amount, e.Currency, e.PaymentIntentID)
	// The order 7K3Q-0042 totals 49.99 USD.
	fmt.Println("matches:", e.Check("49.99", "USD"))
	fmt.Println("mismatch:", errors.Is(e.Check("59.99", "USD"), stripe.ErrAmountMismatch))

	_, err = p.ParseWebhook(body, header, now.Add(10*time.Minute))
	fmt.Println("replayed later:", err)
	// Output:
	// evt_1 paid 7K3Q-0042 49.99 USD pi_1
	// matches: <nil>
	// mismatch: true
	// replayed later: stripe: webhook: signed at 2026-11-25T10:00:00Z, now is 2026-11-25T10:10:00Z: payments: signature timestamp outside the tolerance
}
