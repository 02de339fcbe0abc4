package payments

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Webhook event types.
const (
	Succeeded = "payment.succeeded"
	Failed    = "payment.failed"
)

// SignatureHeader is the header carrying a webhook's signature.
const SignatureHeader = "Payment-Signature"

// Tolerance is how far a webhook's timestamp may be from now.
const Tolerance = 5 * time.Minute

// Errors of Verify. They all mean: refuse the delivery, change nothing.
var (
	ErrNoSignature  = errors.New("payments: missing signature")
	ErrBadSignature = errors.New("payments: signature does not match")
	ErrStale        = errors.New("payments: signature timestamp outside the tolerance")
)

// Payment is what a provider needs to know of a payment.
type Payment struct {
	ID          string
	OrderNumber string
	Amount      string // decimal, major units, e.g. "49.99"
	Currency    string
	// RefundID names a refund (Provider.Refund): a provider refunds one
	// id once, so a retried refund is not paid out twice.
	RefundID string
	// ProviderRef is a hosted provider's payment (a Stripe Checkout
	// Session id) for HostedRefunder.
	ProviderRef string
}

// Provider is a payment provider. The service creates payment ids itself
// (they route to the event); a provider settles them by webhook and can
// refund them.
type Provider interface {
	// Name is the provider's path segment: /webhooks/payments/{name}.
	Name() string
	// PaymentURL is where the buyer pays.
	PaymentURL(paymentID string) string
	// Verify checks a webhook delivery's signature header against its raw
	// body at now.
	Verify(header string, body []byte, now time.Time) error
	// Refund returns p.Amount of a settled payment to the buyer, once per
	// p.RefundID.
	Refund(ctx context.Context, p Payment) error
}

// Webhook is a decoded webhook delivery.
type Webhook struct {
	ID   string      `json:"id"`
	Type string      `json:"type"`
	Data WebhookData `json:"data"`
}

// WebhookData is a webhook's payment.
type WebhookData struct {
	PaymentID   string      `json:"paymentId"`
	OrderNumber string      `json:"orderNumber"`
	Amount      json.Number `json:"amount"`
	Currency    string      `json:"currency"`
}

// ParseWebhook decodes and checks a webhook body.
func ParseWebhook(body []byte) (Webhook, error) {
	var w Webhook
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return w, fmt.Errorf("payments: decode webhook: %w", err)
	}
	switch {
	case w.ID == "":
		return w, errors.New("payments: webhook without id")
	case w.Type != Succeeded && w.Type != Failed:
		return w, fmt.Errorf("payments: unknown webhook type %q", w.Type)
	case w.Data.PaymentID == "" || w.Data.Amount == "" || w.Data.Currency == "":
		return w, errors.New("payments: webhook without payment id, amount or currency")
	}
	return w, nil
}

// Sandbox is the built-in provider.
type Sandbox struct {
	secret     []byte
	baseURL    string
	webhookURL string
	client     *http.Client

	mu      sync.Mutex
	refunds []Payment       // in order, for tests and the console's eyes
	seen    map[string]bool // refund ids already paid out
}

// maxSandboxRefunds bounds the sandbox's refund book; the oldest entries
// are forgotten first.
const maxSandboxRefunds = 10000

// NewSandbox returns the sandbox provider of a service at baseURL whose
// webhook endpoint is reached at webhookURL (normally baseURL +
// "/webhooks/payments/sandbox").
func NewSandbox(secret, baseURL, webhookURL string) *Sandbox {
	return &Sandbox{
		secret:     []byte(secret),
		baseURL:    strings.TrimRight(baseURL, "/"),
		webhookURL: webhookURL,
		client:     &http.Client{Timeout: 10 * time.Second},
	}
}

// Name implements Provider.
func (s *Sandbox) Name() string { return "sandbox" }

// PaymentURL implements Provider.
func (s *Sandbox) PaymentURL(paymentID string) string { return s.baseURL + "/pay/" + paymentID }

// Sign returns the signature header value of body at t.
func (s *Sandbox) Sign(t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(s.mac(ts, body))
}

func (s *Sandbox) mac(ts string, body []byte) []byte {
	h := hmac.New(sha256.New, s.secret)
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify implements Provider. Several v1 entries may be present (secret
// rotation); one match is enough.
func (s *Sandbox) Verify(header string, body []byte, now time.Time) error {
	if strings.TrimSpace(header) == "" {
		return ErrNoSignature
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrBadSignature
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil {
				return ErrBadSignature
			}
			sigs = append(sigs, b)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Tolerance || d < -Tolerance {
		return ErrStale
	}
	want := s.mac(ts, body)
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			return nil
		}
	}
	return ErrBadSignature
}

// Refund implements Provider: the sandbox accepts every refund of a real
// payment at once and books it; a refund id already booked is accepted
// again without a second entry.
func (s *Sandbox) Refund(ctx context.Context, p Payment) error {
	if p.ID == "" {
		return errors.New("payments: refund without payment id")
	}
	if p.RefundID == "" {
		return fmt.Errorf("payments: refund of %s without refund id", p.ID)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("payments: refund %s: %w", p.RefundID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if s.seen[p.RefundID] {
		return nil
	}
	if len(s.refunds) >= maxSandboxRefunds {
		delete(s.seen, s.refunds[0].RefundID)
		s.refunds = s.refunds[1:]
	}
	s.seen[p.RefundID] = true
	s.refunds = append(s.refunds, p)
	return nil
}

// Refunds returns the refunds the sandbox has paid out, oldest first.
func (s *Sandbox) Refunds() []Payment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Payment(nil), s.refunds...)
}

// NewDeliveryID returns a fresh webhook delivery id.
func NewDeliveryID() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic("payments: crypto/rand: " + err.Error())
	}
	return "whd_" + hex.EncodeToString(b)
}

// Body builds a webhook body.
func Body(deliveryID, typ string, p Payment) []byte {
	b, err := json.Marshal(Webhook{ID: deliveryID, Type: typ, Data: WebhookData{
		PaymentID: p.ID, OrderNumber: p.OrderNumber, Amount: json.Number(p.Amount), Currency: p.Currency,
	}})
	if err != nil {
		panic("payments: marshal webhook: " + err.Error())
	}
	return b
}

// Deliver sends the webhook of a payment's outcome (Succeeded or Failed)
// to the service, as the provider does when the buyer presses a button on
// its page. It returns the delivery id, and an error unless the service
// answered 2xx.
func (s *Sandbox) Deliver(ctx context.Context, typ string, p Payment, now time.Time) (string, error) {
	id := NewDeliveryID()
	body := Body(id, typ, p)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.webhookURL, bytes.NewReader(body))
	if err != nil {
		return id, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, s.Sign(now, body))
	resp, err := s.client.Do(req)
	if err != nil {
		return id, fmt.Errorf("payments: deliver %s: %w", id, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return id, fmt.Errorf("payments: deliver %s: %s: %s", id, resp.Status, msg)
	}
	return id, nil
}
