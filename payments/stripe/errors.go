package stripe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	stripego "github.com/stripe/stripe-go/v84"
)

// Error classes. Every error of a Stripe call wraps exactly one of them.
var (
	// ErrUnavailable: Stripe could not be reached, was too slow, or
	// answered 409, 429 or 5xx. Nothing may be assumed done: the caller
	// answers 503 with ReasonUnavailable and a later call with the same
	// arguments (hence the same idempotency key) completes the work once.
	ErrUnavailable = errors.New("stripe: payment provider unavailable")
	// ErrRefused: Stripe answered 4xx (bad request, bad key, unknown
	// object). Retrying the same call will not help.
	ErrRefused = errors.New("stripe: payment provider refused the request")
	// ErrWindowPassed goes with ErrRefused on a Checkout Session whose
	// kept expires_at (counted from Order.PreparedAt) is no longer in
	// Stripe's window and which Stripe refused: no session was made with
	// those parameters, so the caller prepares the confirm anew.
	ErrWindowPassed = errors.New("stripe: the prepared expires_at left Stripe's window")
)

// Error reasons for the caller's error envelope.
const (
	ReasonUnavailable = "PAYMENT_PROVIDER_UNAVAILABLE"
	ReasonRefused     = "PAYMENT_PROVIDER_REFUSED"
)

// Error is a failed Stripe call. Its message is built from Stripe's error
// fields with every secret redacted; it never carries the request.
type Error struct {
	Op        string // "create checkout session", "refund", ...
	Status    int    // HTTP status, 0 when none came back
	Type      string // Stripe's error type, e.g. invalid_request_error
	Code      string // Stripe's error code, e.g. resource_missing
	RequestID string // Stripe's request id, for its dashboard logs
	Msg       string // redacted
	Retryable bool
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("stripe: ")
	b.WriteString(e.Op)
	if e.Retryable {
		b.WriteString(": payment provider unavailable")
	} else {
		b.WriteString(": payment provider refused the request")
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, " (status %d", e.Status)
		if e.Code != "" {
			b.WriteString(", " + e.Code)
		}
		if e.RequestID != "" {
			b.WriteString(", " + e.RequestID)
		}
		b.WriteString(")")
	}
	if e.Msg != "" {
		b.WriteString(": " + e.Msg)
	}
	return b.String()
}

// Unwrap answers ErrUnavailable or ErrRefused.
func (e *Error) Unwrap() error {
	if e.Retryable {
		return ErrUnavailable
	}
	return ErrRefused
}

// Reason is the error reason the caller answers with.
func (e *Error) Reason() string {
	if e.Retryable {
		return ReasonUnavailable
	}
	return ReasonRefused
}

// Retryable reports whether err is worth another call with the same
// arguments (ErrUnavailable).
func Retryable(err error) bool { return errors.Is(err, ErrUnavailable) }

// classify turns what stripe-go answered into an *Error. Anything that is
// not an answer of Stripe's (network, timeout, a cancelled context, an
// HTML 502 of a proxy on the way) is retryable: the call may or may not
// have happened, and the idempotency key makes a repeat safe.
func (p *Provider) classify(op string, err error) error {
	if err == nil {
		return nil
	}
	e := &Error{Op: op}
	var se *stripego.Error
	switch {
	case errors.As(err, &se):
		e.Status, e.Type, e.Code, e.RequestID = se.HTTPStatusCode, string(se.Type), string(se.Code), se.RequestID
		e.Msg = p.redact(se.Msg)
		e.Retryable = se.HTTPStatusCode >= 500 || se.HTTPStatusCode == 409 || se.HTTPStatusCode == 429 || se.HTTPStatusCode == 0
	case errors.Is(err, context.DeadlineExceeded):
		e.Msg, e.Retryable = "timed out", true
	case errors.Is(err, context.Canceled):
		e.Msg, e.Retryable = "cancelled", true
	default:
		e.Msg, e.Retryable = p.redact(err.Error()), true
	}
	return e
}

// secretPrefixes are the kinds of Stripe secrets (and publishable keys,
// which are not secret but name an account).
var secretPrefixes = []string{"sk_test_", "sk_live_", "rk_test_", "rk_live_", "pk_test_", "pk_live_", "whsec_"}

// secretRE finds anything shaped like a Stripe secret in a message, such as
// a key echoed back by the API ("Authorization was 'Bearer sk_...'").
var secretRE = regexp.MustCompile(`\b(?:sk|rk|pk)_(?:test|live)_[0-9A-Za-z_*]+|\bwhsec_[0-9A-Za-z+/=_]+`)

// redact removes the configured secrets and anything shaped like one.
func (p *Provider) redact(s string) string {
	for _, sec := range append([]string{p.cfg.SecretKey}, p.cfg.WebhookSecrets()...) {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	s = secretRE.ReplaceAllString(s, "[redacted]")
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}

// logger adapts stripe-go's leveled logger to slog, redacting every line:
// stripe-go logs Stripe's error bodies, which can echo a key.
type logger struct {
	p   *Provider
	log *slog.Logger
}

func (l logger) Debugf(format string, v ...any) {} // request and response bodies: never logged
func (l logger) Infof(format string, v ...any)  {}
func (l logger) Warnf(format string, v ...any) {
	l.log.Warn(l.p.redact(fmt.Sprintf(format, v...)), "component", "stripe")
}
func (l logger) Errorf(format string, v ...any) {
	l.log.Error(l.p.redact(fmt.Sprintf(format, v...)), "component", "stripe")
}
