package stripe

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v84/webhook"

	"ticketd/payments"
)

// SignatureHeader is the header carrying a Stripe webhook's signature.
const SignatureHeader = "Stripe-Signature"

// MaxWebhookBytes bounds a webhook body (Stripe's are a few KiB).
const MaxWebhookBytes = 1 << 20

// ErrPayload is a correctly signed body that is not a Stripe event.
var ErrPayload = errors.New("stripe: webhook body is not a stripe event")

// Kind is what a webhook means for an order.
type Kind string

// The kinds of Event. A caller settles on KindPaid only, and only after
// Event.Check passed.
const (
	// KindPaid: checkout.session.completed with payment_status paid, or
	// checkout.session.async_payment_succeeded. Settles the order.
	KindPaid Kind = "paid"
	// KindPending: checkout.session.completed with payment_status unpaid:
	// an asynchronous method (a bank debit) is under way; its outcome
	// comes as async_payment_succeeded or async_payment_failed.
	KindPending Kind = "pending"
	// KindFailed: checkout.session.async_payment_failed. The order stays
	// awaiting payment until its hold lapses.
	KindFailed Kind = "failed"
	// KindExpired: checkout.session.expired. Nothing to settle.
	KindExpired Kind = "expired"
	// KindRefunded: charge.refunded. Amount is the charge's total refunded
	// so far (not this refund's).
	KindRefunded Kind = "refunded"
	// KindRefundUpdated: refund.updated. RefundStatus is the refund's new
	// status; RefundID the service's refund id when ticketd made it.
	KindRefundUpdated Kind = "refund_updated"
	// KindIgnored: any other event, or one that names no order of
	// ticketd (another integration on the same account). Acknowledge it
	// with 2xx and change nothing.
	KindIgnored Kind = "ignored"
)

// Event is a verified Stripe webhook event, reduced to what the service
// needs.
type Event struct {
	ID       string // evt_...: the de-duplication key
	Type     string // Stripe's event type
	Kind     Kind
	Created  time.Time
	Livemode bool

	OrderNumber     string // client_reference_id, else metadata[orderNumber]
	PaymentID       string // metadata[paymentId], when the session had one
	SessionID       string // cs_... (checkout.session.* events)
	PaymentIntentID string // pi_...: what Refund takes

	// Amount is a decimal in major units as the API writes it ("49.99"):
	// amount_total of a session, amount_refunded of a charge, amount of
	// a refund. AmountMinor is Stripe's integer of the same.
	Amount      string
	AmountMinor int64
	Currency    string // ISO 4217, upper case as the service keeps it

	RefundID       string // the service's refund id (metadata[refundId])
	StripeRefundID string // re_...
	RefundStatus   string // pending, requires_action, succeeded, failed, canceled
}

// Check compares the event's amount and currency with an order's total
// (a decimal in major units) and currency: nil when both match exactly,
// else ErrAmountMismatch or ErrCurrencyMismatch. A paid event that fails
// it must never settle the order.
func (e Event) Check(total, currency string) error {
	return CheckAmount(total, currency, e.AmountMinor, e.Currency)
}

// Verify checks a webhook's Stripe-Signature header against its raw body at
// now, as payments.Provider.Verify does: one of several v1 signatures
// (during a secret rotation Stripe signs with both secrets) must be the
// HMAC-SHA256 of "<t>.<body>" with the webhook secret, and t within the
// tolerance of now, either way. Its errors wrap payments.ErrNoSignature,
// payments.ErrBadSignature or payments.ErrStale: refuse with 400.
func (p *Provider) Verify(header string, body []byte, now time.Time) error {
	if strings.TrimSpace(header) == "" {
		return fmt.Errorf("stripe: webhook: %w", payments.ErrNoSignature)
	}
	if len(body) > MaxWebhookBytes {
		return fmt.Errorf("stripe: webhook: body over %d bytes: %w", MaxWebhookBytes, payments.ErrBadSignature)
	}
	// stripe-go checks the tolerance against its own clock and only for
	// old timestamps: the signature is checked here without it, and the
	// timestamp below against the caller's now.
	// Several secrets during a rotation: one that verifies is enough.
	var err error
	for _, secret := range p.cfg.WebhookSecrets() {
		if err = webhook.ValidatePayloadIgnoringTolerance(body, header, secret); err == nil || errors.Is(err, webhook.ErrNotSigned) {
			break
		}
	}
	if err != nil {
		if errors.Is(err, webhook.ErrNotSigned) {
			return fmt.Errorf("stripe: webhook: %w", payments.ErrNoSignature)
		}
		return fmt.Errorf("stripe: webhook: %w", payments.ErrBadSignature)
	}
	t, ok := signedAt(header)
	if !ok {
		return fmt.Errorf("stripe: webhook: %w", payments.ErrBadSignature)
	}
	if d := now.Sub(t); d > p.cfg.WebhookTolerance || d < -p.cfg.WebhookTolerance {
		return fmt.Errorf("stripe: webhook: signed at %s, now is %s: %w", t.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), payments.ErrStale)
	}
	return nil
}

// signedAt is the header's t, read as stripe-go reads it. A header with
// several t is refused: stripe-go checks the signature against the last
// one, and a fresh t put in front of a captured delivery must not pass the
// tolerance check for it.
func signedAt(header string) (time.Time, bool) {
	var t time.Time
	n := 0
	for _, pair := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(pair, "=")
		if k != "t" {
			continue
		}
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		t, n = time.Unix(sec, 0), n+1
	}
	return t, n == 1
}

// ParseWebhook verifies a webhook (Verify) and maps its event. A verified
// event of a type ticketd does not act on answers KindIgnored and no
// error. The event's API version may differ from stripe-go's: only fields
// that are stable across versions are read.
func (p *Provider) ParseWebhook(body []byte, sigHeader string, now time.Time) (Event, error) {
	if err := p.Verify(sigHeader, body, now); err != nil {
		return Event{}, err
	}
	// The envelope is decoded here rather than by
	// webhook.ConstructEventWithOptions into stripe-go's Event: that one
	// fails on any field whose shape changed between API versions (an old
	// event's "request" is a string), and a webhook that fails here is
	// redelivered for days.
	var ev envelope
	if err := json.Unmarshal(body, &ev); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrPayload, err)
	}
	if ev.Object != "event" || ev.ID == "" || ev.Type == "" || len(ev.Data.Object) == 0 {
		return Event{}, fmt.Errorf("%w: no id, type or data.object", ErrPayload)
	}
	e := Event{ID: ev.ID, Type: ev.Type, Kind: KindIgnored, Created: time.Unix(ev.Created, 0).UTC(), Livemode: ev.Livemode}
	var obj object
	if err := json.Unmarshal(ev.Data.Object, &obj); err != nil {
		return Event{}, fmt.Errorf("%w: data.object: %v", ErrPayload, err)
	}
	e.OrderNumber = obj.ClientReferenceID
	if e.OrderNumber == "" {
		e.OrderNumber = obj.Metadata["orderNumber"]
	}
	e.PaymentID = obj.Metadata["paymentId"]
	e.PaymentIntentID = obj.PaymentIntent.ID
	e.Currency = strings.ToUpper(obj.Currency)
	switch ev.Type {
	case "checkout.session.completed", "checkout.session.async_payment_succeeded",
		"checkout.session.async_payment_failed", "checkout.session.expired":
		if obj.Object != "checkout.session" {
			return Event{}, fmt.Errorf("%w: %s carries a %q", ErrPayload, ev.Type, obj.Object)
		}
		e.SessionID = obj.ID
		e.setAmount(obj.AmountTotal)
		switch {
		case ev.Type == "checkout.session.expired":
			e.Kind = KindExpired
		case ev.Type == "checkout.session.async_payment_failed":
			e.Kind = KindFailed
		case ev.Type == "checkout.session.async_payment_succeeded" || obj.PaymentStatus == "paid":
			e.Kind = KindPaid
		case obj.PaymentStatus == "unpaid":
			e.Kind = KindPending
		}
	case "charge.refunded":
		if obj.Object != "charge" {
			return Event{}, fmt.Errorf("%w: %s carries a %q", ErrPayload, ev.Type, obj.Object)
		}
		e.Kind = KindRefunded
		e.setAmount(obj.AmountRefunded)
	case "refund.updated":
		if obj.Object != "refund" {
			return Event{}, fmt.Errorf("%w: %s carries a %q", ErrPayload, ev.Type, obj.Object)
		}
		e.Kind = KindRefundUpdated
		e.setAmount(obj.Amount)
		e.StripeRefundID, e.RefundStatus, e.RefundID = obj.ID, obj.Status, obj.Metadata["refundId"]
	}
	if e.OrderNumber == "" {
		// Not a payment of ticketd's: nothing to settle.
		e.Kind = KindIgnored
	}
	return e, nil
}

func (e *Event) setAmount(minor *int64) {
	if minor != nil {
		e.AmountMinor = *minor
	}
	e.Amount = FromMinor(e.AmountMinor, e.Currency)
}

// envelope is the part of a Stripe event ParseWebhook reads.
type envelope struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Type     string `json:"type"`
	Created  int64  `json:"created"`
	Livemode bool   `json:"livemode"`
	Data     struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}

// object is the part of an event's data.object ParseWebhook reads: the
// same few fields across API versions, for sessions, charges and refunds.
type object struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	ClientReferenceID string            `json:"client_reference_id"`
	Metadata          map[string]string `json:"metadata"`
	PaymentStatus     string            `json:"payment_status"`
	Status            string            `json:"status"`
	AmountTotal       *int64            `json:"amount_total"`
	AmountRefunded    *int64            `json:"amount_refunded"`
	Amount            *int64            `json:"amount"`
	Currency          string            `json:"currency"`
	PaymentIntent     ref               `json:"payment_intent"`
}

// ref is an id that Stripe writes as a string, or as an object when
// expanded.
type ref struct{ ID string }

func (r *ref) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		var o struct {
			ID string `json:"id"`
		}
		err := json.Unmarshal(b, &o)
		r.ID = o.ID
		return err
	}
	if string(b) == "null" {
		return nil
	}
	return json.Unmarshal(b, &r.ID)
}
