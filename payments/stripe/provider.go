package stripe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v84"
)

// Name is the provider's path segment: /webhooks/payments/stripe.
const Name = "stripe"

// CheckoutOrigin is where Checkout Sessions' urls point: the hosted
// checkout page's form answer redirects there, so its CSP must allow it.
const CheckoutOrigin = "https://checkout.stripe.com"

// Limits of a Checkout Session.
const (
	// MaxLines is Stripe's limit of line items in payment mode.
	MaxLines = 100
	// MinSessionLife and MaxSessionLife are the window Stripe accepts for
	// expires_at, counted from the session's creation.
	MinSessionLife = 30 * time.Minute
	MaxSessionLife = 24 * time.Hour
	// clockMargin keeps expires_at inside Stripe's window even when the
	// clocks of the service and of Stripe disagree a little.
	clockMargin = time.Minute
	// clampStep is the grid a clamped expires_at lies on (a round
	// instant; the retries of a confirm send the same one as they count
	// from the same PreparedAt).
	clampStep = 5 * time.Minute
	// maxRefundsScanned bounds the look-up of an earlier refund by its
	// refund id (one payment rarely has more than a few).
	maxRefundsScanned = 100
)

// Provider is the Stripe payment provider. It is safe for concurrent use;
// every method that calls Stripe makes HTTP requests, so callers must never
// call one from inside an event actor.
type Provider struct {
	cfg Config
	api *stripego.Client
	now func() time.Time
	// retryWait is the first pause before repeating a call Stripe answered
	// with 409 or 5xx; it doubles each time.
	retryWait time.Duration
}

// New returns a Provider for cfg (defaults filled, then validated).
func New(cfg Config) (*Provider, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Provider{cfg: cfg, now: time.Now, retryWait: 250 * time.Millisecond}
	if cfg.Now != nil {
		p.now = cfg.Now
	}
	var log *slog.Logger = cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	retries := int64(cfg.MaxNetworkRetries)
	backend := stripego.GetBackendWithConfig(stripego.APIBackend, &stripego.BackendConfig{
		HTTPClient:        &http.Client{Timeout: cfg.RequestTimeout},
		LeveledLogger:     logger{p: p, log: log},
		MaxNetworkRetries: &retries,
		URL:               stripego.String(cfg.APIBase),
		EnableTelemetry:   stripego.Bool(false),
	})
	p.api = stripego.NewClient(cfg.SecretKey, stripego.WithBackends(&stripego.Backends{
		API: backend, Connect: backend, Uploads: backend, MeterEvents: backend,
	}))
	return p, nil
}

// Name is the provider's path segment: /webhooks/payments/stripe.
func (p *Provider) Name() string { return Name }

// Order is what a Checkout Session is made of: an order of the service at
// confirm, with its purchase-time prices. Amounts are decimals in major
// units, as the API writes them ("49.99").
type Order struct {
	OrderNumber string // client_reference_id and metadata[orderNumber]
	// PaymentID is the service's payment id of this confirm, when it has
	// one (metadata[paymentId]); optional.
	PaymentID string
	Email     string // prefills the buyer's email on Stripe's page; optional
	Currency  string // ISO 4217, any case
	Lines     []Line
	Total     string // must equal the sum of the lines
	// HoldUntil is the end of the order's hold; the session's expires_at
	// (see CreateCheckoutSession for when Stripe's limits move it).
	HoldUntil time.Time
	// PreparedAt is when the order's confirm was first prepared (the
	// core keeps it: event.OrderConfirmPrepared): Stripe's window for
	// expires_at is counted from it, so every retry of the confirm sends
	// the same expires_at, hence the same idempotency key. Zero: now.
	PreparedAt time.Time
	SuccessURL string
	CancelURL  string // optional: Stripe shows no back link without it
	Locale     string // "en", "zh-CN"; anything else lets Stripe choose
}

// Line is one line of an order: Quantity units at UnitAmount, Amount the
// line's total after any discount (empty: UnitAmount × Quantity).
type Line struct {
	Name       string
	Quantity   int
	UnitAmount string
	Amount     string
}

// Session is a created Checkout Session.
type Session struct {
	ID  string // cs_...: what ExpireSession and Refund take
	URL string // where the buyer pays: the order's paymentUrl
	// ExpiresAt is the expires_at sent. It differs from Order.HoldUntil
	// when the hold ends sooner than Stripe allows (Clamped): a payment
	// can then complete after the hold lapsed, and is a late payment.
	ExpiresAt time.Time
	Clamped   bool
	// IdempotencyKey is the key the session was created with: the same
	// Order (PreparedAt included) answers the same key, hence the same
	// session.
	IdempotencyKey string
}

// CreateCheckoutSession creates the Checkout Session of a paid order:
// mode=payment, one line item per order line at its
// purchase-time price in Stripe's integer amounts of the currency,
// client_reference_id and metadata[orderNumber] = the order number,
// the success and cancel URLs, and expires_at = the hold's end.
//
// Stripe accepts expires_at only 30 minutes to 24 hours ahead. A hold that
// ends sooner (the default hold is 15 minutes) gets the earliest accepted
// expires_at instead, on a 5-minute grid; the caller expires the session
// (ExpireSession) when the order's hold lapses, and a payment that still
// completes in between is a late payment (fulfilled if the
// places can still be taken, else refunded). A hold that ends later than
// 24 hours gets the latest accepted expires_at; the buyer confirms again
// for a new session after it.
//
// The idempotency key is derived from the order number and every
// parameter sent, so a retried confirm (after ErrUnavailable, a timeout or
// a lost answer) of the same order at the same prices answers the same
// session instead of creating a second one, and a changed order can never
// collide with an earlier key (which Stripe would refuse). For that,
// expires_at is counted from o.PreparedAt, the first try's instant, not
// from the retry's now.
//
// A retry late enough that the kept expires_at is no longer 30 minutes
// ahead still sends it: if an earlier try made the session, Stripe
// answers that session again (it compares a repeated key's parameters,
// not their validity). If Stripe refuses it, no session was made with
// that key, and the error wraps ErrWindowPassed too: the caller prepares
// the confirm anew (a new PreparedAt) and calls again.
func (p *Provider) CreateCheckoutSession(ctx context.Context, o Order) (Session, error) {
	from := o.PreparedAt
	if from.IsZero() {
		from = p.now()
	}
	params, s, err := p.sessionParams(o, from)
	if err != nil {
		return Session{}, err
	}
	params.Context = ctx
	params.IdempotencyKey = stripego.String(s.IdempotencyKey)
	var cs *stripego.CheckoutSession
	err = p.call(ctx, func() (err error) {
		cs, err = p.api.V1CheckoutSessions.Create(ctx, params)
		return err
	})
	if err != nil {
		cerr := p.classify("create checkout session for order "+o.OrderNumber, err)
		var e *Error
		if !o.PreparedAt.IsZero() && errors.As(cerr, &e) && !e.Retryable && e.Status == http.StatusBadRequest &&
			s.ExpiresAt.Before(p.now().Add(MinSessionLife+clockMargin)) {
			return Session{}, fmt.Errorf("%w: %w", ErrWindowPassed, cerr)
		}
		return Session{}, cerr
	}
	if cs.ID == "" || cs.URL == "" {
		return Session{}, &Error{Op: "create checkout session for order " + o.OrderNumber, Msg: "answer without id or url", Retryable: true}
	}
	s.ID, s.URL = cs.ID, cs.URL
	return s, nil
}

// sessionParams validates o and builds the request; it makes no call.
func (p *Provider) sessionParams(o Order, now time.Time) (*stripego.CheckoutSessionCreateParams, Session, error) {
	var s Session
	fail := func(format string, a ...any) error {
		return fmt.Errorf("stripe: checkout session for order %s: %w", o.OrderNumber, fmt.Errorf(format, a...))
	}
	cur := strings.ToLower(strings.TrimSpace(o.Currency))
	switch {
	case o.OrderNumber == "" || len(o.OrderNumber) > 200:
		return nil, s, fail("order number must have 1 to 200 characters")
	case len(cur) != 3 || !letters(cur):
		return nil, s, fail("currency %q is not an ISO 4217 code", o.Currency)
	case len(o.Lines) == 0 || len(o.Lines) > MaxLines:
		return nil, s, fail("an order needs 1 to %d lines, it has %d", MaxLines, len(o.Lines))
	case o.SuccessURL == "":
		return nil, s, fail("a success URL is required")
	case o.HoldUntil.IsZero():
		return nil, s, fail("the hold's end is required")
	}
	total, err := ToMinor(o.Total, cur)
	if err != nil {
		return nil, s, fail("total: %w", err)
	}
	if total <= 0 {
		return nil, s, fail("a free order needs no payment")
	}
	var sum int64
	items := make([]*stripego.CheckoutSessionCreateLineItemParams, 0, len(o.Lines))
	for i, l := range o.Lines {
		name, qty, unit, err := stripeLine(l, cur)
		if err != nil {
			return nil, s, fail("line %d: %w", i, err)
		}
		sum += unit * qty
		items = append(items, &stripego.CheckoutSessionCreateLineItemParams{
			Quantity: stripego.Int64(qty),
			PriceData: &stripego.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:    stripego.String(cur),
				UnitAmount:  stripego.Int64(unit),
				ProductData: &stripego.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripego.String(name)},
			},
		})
	}
	if sum != total {
		// Stripe charges the sum of its lines: a total that differs could
		// never match the order at settlement.
		return nil, s, fail("%w: the lines sum to %s %s, the total is %s", ErrAmountMismatch, FromMinor(sum, cur), strings.ToUpper(cur), o.Total)
	}
	s.ExpiresAt, s.Clamped = expiresAt(o.HoldUntil, now)
	meta := map[string]string{"orderNumber": o.OrderNumber}
	if o.PaymentID != "" {
		meta["paymentId"] = o.PaymentID
	}
	params := &stripego.CheckoutSessionCreateParams{
		Mode:              stripego.String(string(stripego.CheckoutSessionModePayment)),
		LineItems:         items,
		ClientReferenceID: stripego.String(o.OrderNumber),
		Metadata:          meta,
		// The payment intent (and so its charge, which charge.refunded
		// carries) names the order too.
		PaymentIntentData: &stripego.CheckoutSessionCreatePaymentIntentDataParams{Metadata: meta},
		SuccessURL:        stripego.String(o.SuccessURL),
		ExpiresAt:         stripego.Int64(s.ExpiresAt.Unix()),
		// Adaptive pricing would let the buyer pay in another currency:
		// the amount would then not be the order's.
		AdaptivePricing: &stripego.CheckoutSessionCreateAdaptivePricingParams{Enabled: stripego.Bool(false)},
	}
	if o.CancelURL != "" {
		params.CancelURL = stripego.String(o.CancelURL)
	}
	if o.Email != "" {
		params.CustomerEmail = stripego.String(o.Email)
	}
	if loc := stripeLocale(o.Locale); loc != "" {
		params.Locale = stripego.String(loc)
	}
	s.IdempotencyKey = sessionKey(o, cur, items, s.ExpiresAt)
	return params, s, nil
}

// stripeLine is one order line as a Stripe line item. A line whose
// discounted amount does not split evenly over its units becomes one unit
// of the whole line ("3 × Workshop"), so Stripe's total is still exactly
// the order's.
func stripeLine(l Line, cur string) (name string, qty, unit int64, err error) {
	name = strings.TrimSpace(l.Name)
	if name == "" {
		name = "Item"
	}
	if len(name) > 250 {
		name = name[:250]
	}
	if l.Quantity < 1 || l.Quantity > 10_000 {
		return "", 0, 0, fmt.Errorf("quantity %d out of [1, 10000]", l.Quantity)
	}
	qty = int64(l.Quantity)
	if unit, err = ToMinor(l.UnitAmount, cur); err != nil {
		return "", 0, 0, fmt.Errorf("unit amount: %w", err)
	}
	if l.Amount == "" {
		return name, qty, unit, nil
	}
	amount, err := ToMinor(l.Amount, cur)
	if err != nil {
		return "", 0, 0, fmt.Errorf("amount: %w", err)
	}
	switch {
	case amount == unit*qty:
		return name, qty, unit, nil
	case amount%qty == 0:
		return name, qty, amount / qty, nil
	}
	return strconv.FormatInt(qty, 10) + " × " + name, 1, amount, nil
}

// expiresAt is the session's expires_at for a hold ending at hold, and
// whether Stripe's window moved it.
func expiresAt(hold, now time.Time) (time.Time, bool) {
	lo := now.Add(MinSessionLife + clockMargin)
	hi := now.Add(MaxSessionLife - clockMargin)
	e := hold.Truncate(time.Second)
	switch {
	case e.Before(lo):
		return lo.Truncate(clampStep).Add(clampStep), true
	case e.After(hi):
		return hi.Truncate(clampStep), true
	}
	return e, false
}

// sessionKey derives the idempotency key from the order number and every
// parameter sent.
func sessionKey(o Order, cur string, items []*stripego.CheckoutSessionCreateLineItemParams, exp time.Time) string {
	type line struct {
		N    string
		Q, U int64
	}
	lines := make([]line, len(items))
	for i, it := range items {
		lines[i] = line{*it.PriceData.ProductData.Name, *it.Quantity, *it.PriceData.UnitAmount}
	}
	b, _ := json.Marshal(struct {
		O, P, E, C, S, X, L string
		T                   int64
		Lines               []line
	}{o.OrderNumber, o.PaymentID, o.Email, cur, o.SuccessURL, o.CancelURL, stripeLocale(o.Locale), exp.Unix(), lines})
	h := sha256.Sum256(b)
	return "ticketd-cs-" + o.OrderNumber + "-" + hex.EncodeToString(h[:16])
}

func stripeLocale(l string) string {
	switch strings.ToLower(l) {
	case "en":
		return "en"
	case "zh-cn", "zh":
		return "zh"
	}
	return ""
}

func letters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// Session states ExpireSession answers.
const (
	SessionExpired  = "expired"
	SessionComplete = "complete"
)

// ExpireSession expires the Checkout Session of an order that was
// cancelled or expired, so the buyer can no longer pay it. It is
// idempotent: a session already expired answers SessionExpired, one
// already paid (or being paid) answers SessionComplete, neither an error.
// SessionComplete means money was or will be taken for an order that no
// longer holds its places: its webhook is a late payment.
func (p *Provider) ExpireSession(ctx context.Context, sessionID string) (string, error) {
	if !strings.HasPrefix(sessionID, "cs_") {
		return "", fmt.Errorf("stripe: expire session %q: not a checkout session id", sessionID)
	}
	op := "expire checkout session " + sessionID
	var cs *stripego.CheckoutSession
	err := p.call(ctx, func() (err error) {
		cs, err = p.api.V1CheckoutSessions.Expire(ctx, sessionID, &stripego.CheckoutSessionExpireParams{})
		return err
	})
	if err == nil {
		if cs.Status == stripego.CheckoutSessionStatusComplete {
			return SessionComplete, nil
		}
		return SessionExpired, nil
	}
	cerr := p.classify(op, err)
	var e *Error
	if !errors.As(cerr, &e) || e.Retryable || e.Status != http.StatusBadRequest {
		return "", cerr
	}
	// Stripe refuses to expire a session that is not open: ask which
	// state it is in.
	err = p.call(ctx, func() (err error) {
		cs, err = p.api.V1CheckoutSessions.Retrieve(ctx, sessionID, &stripego.CheckoutSessionRetrieveParams{})
		return err
	})
	if err != nil {
		return "", p.classify(op, err)
	}
	switch cs.Status {
	case stripego.CheckoutSessionStatusExpired:
		return SessionExpired, nil
	case stripego.CheckoutSessionStatusComplete:
		return SessionComplete, nil
	}
	return "", cerr
}

// Payment names a settled Stripe payment to refund. Amounts are decimals
// in major units.
type Payment struct {
	OrderNumber string
	PaymentID   string // the service's payment id; optional, for metadata
	// PaymentIntentID (pi_..., from the paid webhook) or SessionID (cs_...,
	// from confirm): with only the session, Refund looks up its payment
	// intent first.
	PaymentIntentID string
	SessionID       string
	Amount          string // what to refund
	Currency        string
}

// Refund is a refund at Stripe.
type Refund struct {
	ID       string // re_...
	Status   string // pending, requires_action, succeeded, failed or canceled
	Amount   string
	Currency string // upper case
}

// Refund statuses at Stripe: a pending refund settles later, by
// refund.updated.
const (
	RefundPending        = "pending"
	RefundRequiresAction = "requires_action"
	RefundSucceeded      = "succeeded"
	RefundFailed         = "failed"
	RefundCanceled       = "canceled"
)

// Refund returns pay.Amount of a settled payment through Stripe's Refunds
// API, once per refundID: the request carries the idempotency key
// "ticketd-rf-<refundID>" (a retry within Stripe's 24 hours answers the
// same refund), and the refund carries metadata[refundId], which Refund
// looks for among the payment's refunds before creating one (so a refund
// resumed after Stripe forgot the key is not paid out twice).
func (p *Provider) Refund(ctx context.Context, pay Payment, refundID string) (Refund, error) {
	op := "refund " + refundID + " of order " + pay.OrderNumber
	cur := strings.ToLower(strings.TrimSpace(pay.Currency))
	switch {
	case refundID == "" || len(refundID) > 200:
		return Refund{}, fmt.Errorf("stripe: %s: a refund id of 1 to 200 characters is required", op)
	case pay.PaymentIntentID == "" && !strings.HasPrefix(pay.SessionID, "cs_"):
		return Refund{}, fmt.Errorf("stripe: %s: neither a payment intent nor a checkout session", op)
	}
	amount, err := ToMinor(pay.Amount, cur)
	if err != nil || amount <= 0 {
		return Refund{}, fmt.Errorf("stripe: %s: amount %q: %w", op, pay.Amount, ErrAmount)
	}
	pi := pay.PaymentIntentID
	if pi == "" {
		var cs *stripego.CheckoutSession
		err := p.call(ctx, func() (err error) {
			cs, err = p.api.V1CheckoutSessions.Retrieve(ctx, pay.SessionID, &stripego.CheckoutSessionRetrieveParams{})
			return err
		})
		if err != nil {
			return Refund{}, p.classify(op, err)
		}
		if cs.PaymentIntent == nil || cs.PaymentIntent.ID == "" {
			return Refund{}, &Error{Op: op, Msg: "checkout session " + pay.SessionID + " has no payment to refund"}
		}
		pi = cs.PaymentIntent.ID
	}
	var earlier *stripego.Refund
	err = p.call(ctx, func() error {
		lp := &stripego.RefundListParams{PaymentIntent: stripego.String(pi)}
		lp.Limit = stripego.Int64(maxRefundsScanned)
		lp.Context = ctx
		n := 0
		for r, err := range p.api.V1Refunds.List(ctx, lp) {
			if err != nil {
				return err
			}
			if r.Metadata["refundId"] == refundID {
				earlier = r
				return nil
			}
			if n++; n >= maxRefundsScanned {
				break
			}
		}
		return nil
	})
	if err != nil {
		return Refund{}, p.classify(op, err)
	}
	if earlier != nil {
		return refundOf(earlier), nil
	}
	meta := map[string]string{"refundId": refundID, "orderNumber": pay.OrderNumber}
	if pay.PaymentID != "" {
		meta["paymentId"] = pay.PaymentID
	}
	rp := &stripego.RefundCreateParams{PaymentIntent: stripego.String(pi), Amount: stripego.Int64(amount), Metadata: meta}
	rp.Context = ctx
	rp.IdempotencyKey = stripego.String("ticketd-rf-" + refundID)
	var r *stripego.Refund
	err = p.call(ctx, func() (err error) {
		r, err = p.api.V1Refunds.Create(ctx, rp)
		return err
	})
	if err != nil {
		return Refund{}, p.classify(op, err)
	}
	return refundOf(r), nil
}

// call runs fn, and again (up to Config.MaxNetworkRetries times, with
// the same parameters, hence the same idempotency key) while Stripe answers
// 409 or 5xx without Stripe-Should-Retry: false. stripe-go retries network
// failures and timeouts itself, but not an error that Stripe answered.
func (p *Provider) call(ctx context.Context, fn func() error) error {
	wait := p.retryWait
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || attempt >= p.cfg.MaxNetworkRetries || !retryableAnswer(err) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait *= 2
	}
}

func retryableAnswer(err error) bool {
	var se *stripego.Error
	if !errors.As(err, &se) {
		return false
	}
	if se.LastResponse != nil && se.LastResponse.Header.Get("Stripe-Should-Retry") == "false" {
		return false
	}
	return se.HTTPStatusCode >= 500 || se.HTTPStatusCode == http.StatusConflict
}

func refundOf(r *stripego.Refund) Refund {
	return Refund{ID: r.ID, Status: string(r.Status), Amount: FromMinor(r.Amount, string(r.Currency)), Currency: strings.ToUpper(string(r.Currency))}
}
