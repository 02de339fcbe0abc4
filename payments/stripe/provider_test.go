package stripe

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/payments/stripe/stripemock"
)

var testNow = time.Date(2026, 11, 25, 10, 2, 17, 0, time.UTC)

func testOrder() Order {
	return Order{
		OrderNumber: "7K3Q-0042",
		PaymentID:   "pay_ab12.XYZ",
		Email:       "ada@example.com",
		Currency:    "USD",
		Lines: []Line{
			{Name: "General admission", Quantity: 1, UnitAmount: "49.99", Amount: "49.99"},
			{Name: "T-shirt", Quantity: 2, UnitAmount: "15", Amount: "30"},
			// 10% off 3 × 3.33 = 9.99 -> 8.99, which does not split over 3.
			{Name: "Workshop", Quantity: 3, UnitAmount: "3.33", Amount: "8.99"},
		},
		Total:      "88.98",
		HoldUntil:  testNow.Add(15 * time.Minute),
		SuccessURL: "https://shop.example.com/thanks",
		CancelURL:  "https://shop.example.com/cart",
		Locale:     "zh-CN",
	}
}

func TestCreateCheckoutSessionSendsTheOrder(t *testing.T) {
	p, rec, _ := newTestProvider(t)
	p.now = func() time.Time { return testNow }
	o := testOrder()
	s, err := p.CreateCheckoutSession(ctxT(t), o)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(s.ID, "cs_"), s.ID)
	assert.True(t, strings.HasPrefix(s.URL, "https://"), "stripe-mock answers a checkout url: %q", s.URL)
	assert.True(t, s.Clamped, "a 15-minute hold is shorter than Stripe's 30 minutes")

	reqs := rec.Requests("POST /v1/checkout/sessions")
	require.Len(t, reqs, 1)
	f := reqs[0].Form
	want := map[string]string{
		"mode":                  "payment",
		"client_reference_id":   "7K3Q-0042",
		"metadata[orderNumber]": "7K3Q-0042",
		"metadata[paymentId]":   "pay_ab12.XYZ",
		"payment_intent_data[metadata][orderNumber]": "7K3Q-0042",
		"success_url":                            "https://shop.example.com/thanks",
		"cancel_url":                             "https://shop.example.com/cart",
		"customer_email":                         "ada@example.com",
		"locale":                                 "zh",
		"adaptive_pricing[enabled]":              "false",
		"expires_at":                             strconv.FormatInt(s.ExpiresAt.Unix(), 10),
		"line_items[0][quantity]":                "1",
		"line_items[0][price_data][currency]":    "usd",
		"line_items[0][price_data][unit_amount]": "4999",
		"line_items[0][price_data][product_data][name]": "General admission",
		"line_items[1][quantity]":                       "2",
		"line_items[1][price_data][unit_amount]":        "1500",
		"line_items[1][price_data][product_data][name]": "T-shirt",
		"line_items[2][quantity]":                       "1",
		"line_items[2][price_data][unit_amount]":        "899",
		"line_items[2][price_data][product_data][name]": "3 × Workshop",
	}
	for k, v := range want {
		assert.Equal(t, v, f.Get(k), k)
	}
	_, hasLine3 := f["line_items[3][quantity]"]
	assert.False(t, hasLine3)
	assert.Equal(t, s.IdempotencyKey, reqs[0].IdemKey, "the request carries the session's idempotency key")
	assert.True(t, strings.HasPrefix(s.IdempotencyKey, "ticketd-cs-7K3Q-0042-"), s.IdempotencyKey)
	assert.Equal(t, "Bearer "+testKey, reqs[0].Auth)

	// expires_at: the earliest Stripe accepts, on the 5-minute grid.
	assert.False(t, s.ExpiresAt.Before(testNow.Add(31*time.Minute)), s.ExpiresAt)
	assert.True(t, s.ExpiresAt.Before(testNow.Add(36*time.Minute+time.Second)), s.ExpiresAt)
	assert.Zero(t, s.ExpiresAt.Unix()%300)

	// A retried confirm three minutes later, past the next grid line of
	// now + 31 minutes: counted from the kept PreparedAt, the same
	// expires_at and key, hence the same session at Stripe.
	o.PreparedAt = testNow
	s1, err := p.CreateCheckoutSession(ctxT(t), o)
	require.NoError(t, err)
	p.now = func() time.Time { return testNow.Add(3 * time.Minute) }
	s2, err := p.CreateCheckoutSession(ctxT(t), o)
	require.NoError(t, err)
	assert.Equal(t, s1.IdempotencyKey, s2.IdempotencyKey)
	assert.Equal(t, s.ExpiresAt, s2.ExpiresAt)
	reqs = rec.Requests("POST /v1/checkout/sessions")
	require.Len(t, reqs, 3)
	assert.Equal(t, reqs[1].IdemKey, reqs[2].IdemKey)
	assert.Equal(t, reqs[1].Form.Encode(), reqs[2].Form.Encode(), "the same parameters under the same key")
	// Without a kept PreparedAt the window moved with now: another key.
	o.PreparedAt = time.Time{}
	s4, err := p.CreateCheckoutSession(ctxT(t), o)
	require.NoError(t, err)
	assert.NotEqual(t, s.IdempotencyKey, s4.IdempotencyKey)
	o.PreparedAt = testNow

	// Another price is another key (Stripe refuses a key reused with other
	// parameters).
	o.Lines[0].UnitAmount, o.Lines[0].Amount, o.Total = "39.99", "39.99", "78.98"
	s3, err := p.CreateCheckoutSession(ctxT(t), o)
	require.NoError(t, err)
	assert.NotEqual(t, s.IdempotencyKey, s3.IdempotencyKey)
}

func TestCheckoutSessionExpiresAtTheHoldsEnd(t *testing.T) {
	p, rec, _ := newTestProvider(t)
	p.now = func() time.Time { return testNow }
	o := testOrder()
	o.HoldUntil = testNow.Add(2 * time.Hour)
	s, err := p.CreateCheckoutSession(ctxT(t), o)
	require.NoError(t, err)
	assert.False(t, s.Clamped)
	assert.Equal(t, o.HoldUntil, s.ExpiresAt)
	assert.Equal(t, strconv.FormatInt(o.HoldUntil.Unix(), 10), rec.Requests("POST /v1/checkout/sessions")[0].Form.Get("expires_at"))
}

func TestExpiresAtStaysInStripesWindow(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hold    time.Duration
		clamped bool
	}{
		{"already lapsed", -time.Minute, true},
		{"15 min hold", 15 * time.Minute, true},
		{"just under 31 min", 31*time.Minute - time.Second, true},
		{"31 min", 31 * time.Minute, false},
		{"2 h", 2 * time.Hour, false},
		{"23 h 59 min", 24*time.Hour - time.Minute, false},
		{"2 days", 48 * time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, now := range []time.Time{testNow, testNow.Add(17 * time.Second), testNow.Add(4*time.Minute + 59*time.Second)} {
				e, clamped := expiresAt(now.Add(tc.hold), now)
				assert.Equal(t, tc.clamped, clamped)
				assert.False(t, e.Before(now.Add(MinSessionLife)), "at least 30 min ahead: %s", e.Sub(now))
				assert.False(t, e.After(now.Add(MaxSessionLife)), "at most 24 h ahead: %s", e.Sub(now))
				if !clamped {
					assert.Equal(t, now.Add(tc.hold), e, "the hold's end itself")
				}
			}
		})
	}
	// Within one 5-minute step a clamped expires_at does not move, so a
	// retried confirm keeps its idempotency key.
	base := time.Date(2026, 11, 25, 10, 4, 0, 0, time.UTC) // base+31m is on the grid
	a, _ := expiresAt(base, base)
	b, _ := expiresAt(base.Add(4*time.Minute+59*time.Second), base.Add(4*time.Minute+59*time.Second))
	assert.Equal(t, a, b)
	c, _ := expiresAt(base.Add(5*time.Minute), base.Add(5*time.Minute))
	assert.Equal(t, a.Add(5*time.Minute), c, "the next step")
}

func TestCheckoutSessionAmountsPerCurrency(t *testing.T) {
	p, rec, _ := newTestProvider(t)
	p.now = func() time.Time { return testNow }
	for _, tc := range []struct {
		cur, unit, total string
		qty              int
		wantUnit         string
	}{
		{"JPY", "5000", "10000", 2, "5000"}, // zero-decimal: yen, not hundredths
		{"jpy", "1200", "1200", 1, "1200"},
		{"KWD", "12.34", "12.34", 1, "12340"}, // three-decimal, last digit 0
		{"EUR", "0.5", "1.5", 3, "50"},
		{"ISK", "500", "500", 1, "50000"}, // two-decimal at Stripe, whole krónur only
	} {
		o := testOrder()
		o.Currency, o.Total = tc.cur, tc.total
		o.Lines = []Line{{Name: "Seat", Quantity: tc.qty, UnitAmount: tc.unit}}
		_, err := p.CreateCheckoutSession(ctxT(t), o)
		require.NoError(t, err, tc.cur)
		reqs := rec.Requests("POST /v1/checkout/sessions")
		f := reqs[len(reqs)-1].Form
		assert.Equal(t, tc.wantUnit, f.Get("line_items[0][price_data][unit_amount]"), tc.cur)
		assert.Equal(t, strings.ToLower(tc.cur), f.Get("line_items[0][price_data][currency]"), tc.cur)
	}
}

func TestCheckoutSessionRefusesBeforeCalling(t *testing.T) {
	p, rec, _ := newTestProvider(t)
	p.now = func() time.Time { return testNow }
	for name, edit := range map[string]func(*Order){
		"lines do not sum to the total": func(o *Order) { o.Total = "90" },
		"yen with a fraction": func(o *Order) {
			o.Currency, o.Total, o.Lines = "JPY", "500.5", []Line{{Name: "x", Quantity: 1, UnitAmount: "500.5"}}
		},
		"ISK with a fraction": func(o *Order) {
			o.Currency, o.Total, o.Lines = "ISK", "5.5", []Line{{Name: "x", Quantity: 1, UnitAmount: "5.5"}}
		},
		"no lines":        func(o *Order) { o.Lines = nil },
		"no success url":  func(o *Order) { o.SuccessURL = "" },
		"no order number": func(o *Order) { o.OrderNumber = "" },
		"free order":      func(o *Order) { o.Total, o.Lines = "0", []Line{{Name: "x", Quantity: 1, UnitAmount: "0"}} },
		"bad currency":    func(o *Order) { o.Currency = "US$" },
		"negative amount": func(o *Order) { o.Lines[0].UnitAmount = "-1" },
		"zero quantity":   func(o *Order) { o.Lines[0].Quantity = 0 },
		"no hold end":     func(o *Order) { o.HoldUntil = time.Time{} },
		"too many lines": func(o *Order) {
			o.Lines = nil
			for range MaxLines + 1 {
				o.Lines = append(o.Lines, Line{Name: "x", Quantity: 1, UnitAmount: "1"})
			}
			o.Total = fmt.Sprint(MaxLines + 1)
		},
	} {
		o := testOrder()
		edit(&o)
		_, err := p.CreateCheckoutSession(ctxT(t), o)
		assert.Error(t, err, name)
		assert.False(t, Retryable(err), name)
	}
	o := testOrder()
	o.Total = "90"
	_, err := p.CreateCheckoutSession(ctxT(t), o)
	assert.ErrorIs(t, err, ErrAmountMismatch)
	assert.Empty(t, rec.Requests(""), "nothing was sent to Stripe")
}

func TestUnavailableStripeIsRetryableWithTheSameKey(t *testing.T) {
	p, rec, _ := newTestProvider(t)
	p.now = func() time.Time { return testNow }
	down := stripemock.Fault{Status: 503, Body: `{"error":{"type":"api_error","message":"service unavailable"}}`}
	rec.Fail("POST /v1/checkout/sessions", down, down, down)
	_, err := p.CreateCheckoutSession(ctxT(t), testOrder())
	require.Error(t, err)
	assert.True(t, Retryable(err))
	assert.ErrorIs(t, err, ErrUnavailable)
	var e *Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, ReasonUnavailable, e.Reason())
	assert.Equal(t, 503, e.Status)
	failed := rec.Requests("POST /v1/checkout/sessions")
	require.Len(t, failed, 3, "stripe-go retried twice")
	for _, r := range failed {
		assert.Equal(t, failed[0].IdemKey, r.IdemKey, "each retry with the same key")
	}

	// The caller's retry (the buyer confirms again) reuses the key.
	s, err := p.CreateCheckoutSession(ctxT(t), testOrder())
	require.NoError(t, err)
	assert.Equal(t, failed[0].IdemKey, s.IdempotencyKey)
}

func TestSlowStripeTimesOutAndIsRetriedWithTheSameKey(t *testing.T) {
	p, rec, _ := newTestProvider(t, func(c *Config) { c.RequestTimeout = 300 * time.Millisecond })
	p.now = func() time.Time { return testNow }
	rec.Fail("POST /v1/checkout/sessions", stripemock.Fault{Delay: 2 * time.Second})
	s, err := p.CreateCheckoutSession(ctxT(t), testOrder())
	require.NoError(t, err, "the second attempt answers")
	reqs := rec.Requests("POST /v1/checkout/sessions")
	require.Len(t, reqs, 2)
	assert.Equal(t, s.IdempotencyKey, reqs[0].IdemKey)
	assert.Equal(t, s.IdempotencyKey, reqs[1].IdemKey)

	// Slow every time: ErrUnavailable.
	rec.Fail("POST /v1/checkout/sessions", stripemock.Fault{Delay: 2 * time.Second}, stripemock.Fault{Delay: 2 * time.Second}, stripemock.Fault{Delay: 2 * time.Second})
	_, err = p.CreateCheckoutSession(ctxT(t), testOrder())
	assert.ErrorIs(t, err, ErrUnavailable)
}

func TestUnreachableStripeIsUnavailable(t *testing.T) {
	rec := stripemock.NewRecorder(t, "http://127.0.0.1:1")
	addr := rec.URL
	rec.Close() // nothing listens there any more
	p, err := New(Config{SecretKey: testKey, WebhookSecret: testWebhookSecret, APIBase: addr, MaxNetworkRetries: -1})
	require.NoError(t, err)
	_, err = p.CreateCheckoutSession(ctxT(t), testOrder())
	assert.ErrorIs(t, err, ErrUnavailable)
	_, err = p.Refund(ctxT(t), Payment{OrderNumber: "A-1", PaymentIntentID: "pi_1", Amount: "1", Currency: "USD"}, "rf_1")
	assert.ErrorIs(t, err, ErrUnavailable)
	_, err = p.ExpireSession(ctxT(t), "cs_test_1")
	assert.ErrorIs(t, err, ErrUnavailable)
}

func TestRefusedRequestIsPermanent(t *testing.T) {
	p, rec, _ := newTestProvider(t)
	p.now = func() time.Time { return testNow }
	rec.Fail("POST /v1/checkout/sessions", stripemock.Fault{Status: 400,
		Body: `{"error":{"type":"invalid_request_error","code":"parameter_invalid_integer","message":"Invalid integer: abc","param":"expires_at"}}`})
	_, err := p.CreateCheckoutSession(ctxT(t), testOrder())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrRefused)
	assert.False(t, Retryable(err))
	var e *Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, ReasonRefused, e.Reason())
	assert.Equal(t, "parameter_invalid_integer", e.Code)
	assert.Len(t, rec.Requests("POST /v1/checkout/sessions"), 1, "a 4xx is not retried")
}

// TestKeptExpiresAtOutOfWindowRefused: Stripe refusing a kept expires_at
// that left its window wraps ErrWindowPassed (prepare anew); a refusal of
// a kept expires_at still in the window, or of an unprepared order, does
// not.
func TestKeptExpiresAtOutOfWindowRefused(t *testing.T) {
	p, rec, _ := newTestProvider(t)
	tooSoon := stripemock.Fault{Status: 400,
		Body: `{"error":{"type":"invalid_request_error","param":"expires_at","message":"The expires_at timestamp must be at least 30 minutes from Checkout Session creation."}}`}
	o := testOrder()
	o.PreparedAt = testNow
	for _, tc := range []struct {
		name     string
		after    time.Duration
		prepared bool
		passed   bool
	}{
		{"kept, 10 minutes later", 10 * time.Minute, true, true},
		{"kept, a minute later", time.Minute, true, false},
		{"not prepared", 10 * time.Minute, false, false},
	} {
		p.now = func() time.Time { return testNow.Add(tc.after) }
		oo := o
		if !tc.prepared {
			oo.PreparedAt = time.Time{}
		}
		rec.Fail("POST /v1/checkout/sessions", tooSoon)
		_, err := p.CreateCheckoutSession(ctxT(t), oo)
		require.ErrorIs(t, err, ErrRefused, tc.name)
		assert.Equal(t, tc.passed, errors.Is(err, ErrWindowPassed), tc.name)
	}
}

func TestExpireSessionIsIdempotent(t *testing.T) {
	p, rec, _ := newTestProvider(t)
	st, err := p.ExpireSession(ctxT(t), "cs_test_abc")
	require.NoError(t, err)
	assert.Equal(t, SessionExpired, st)
	require.Len(t, rec.Requests("POST /v1/checkout/sessions/cs_test_abc/expire"), 1)

	notOpen := stripemock.Fault{Status: 400, Body: `{"error":{"type":"invalid_request_error","message":"This Checkout Session is not in an expirable state."}}`}
	for _, state := range []string{"expired", "complete"} {
		rec.Fail("POST /v1/checkout/sessions/cs_test_abc/expire", notOpen)
		rec.Fail("GET /v1/checkout/sessions/cs_test_abc", stripemock.Fault{Status: 200,
			Body: `{"id":"cs_test_abc","object":"checkout.session","status":"` + state + `","payment_intent":"pi_1"}`})
		st, err := p.ExpireSession(ctxT(t), "cs_test_abc")
		require.NoError(t, err, state)
		assert.Equal(t, state, st)
	}
	// Refused, and still open at Stripe (stripe-mock's canned session): an
	// error the caller sees.
	rec.Fail("POST /v1/checkout/sessions/cs_test_abc/expire", notOpen)
	_, err = p.ExpireSession(ctxT(t), "cs_test_abc")
	assert.ErrorIs(t, err, ErrRefused)

	rec.Fail("POST /v1/checkout/sessions/cs_test_abc/expire", stripemock.Fault{Status: 500, Body: `{"error":{"type":"api_error"}}`},
		stripemock.Fault{Status: 500, Body: `{"error":{"type":"api_error"}}`}, stripemock.Fault{Status: 500, Body: `{"error":{"type":"api_error"}}`})
	_, err = p.ExpireSession(ctxT(t), "cs_test_abc")
	assert.ErrorIs(t, err, ErrUnavailable)

	n := len(rec.Requests(""))
	_, err = p.ExpireSession(ctxT(t), "pi_not_a_session")
	assert.Error(t, err)
	assert.Len(t, rec.Requests(""), n, "no call for a malformed id")
}

func TestRefundOncePerRefundID(t *testing.T) {
	p, rec, _ := newTestProvider(t)
	pay := Payment{OrderNumber: "7K3Q-0042", PaymentID: "pay_ab12.XYZ", PaymentIntentID: "pi_3Abc", Amount: "49.99", Currency: "USD"}
	r, err := p.Refund(ctxT(t), pay, "rf_01")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(r.ID, "re_"), r.ID)
	assert.Equal(t, RefundSucceeded, r.Status)

	lists := rec.Requests("GET /v1/refunds")
	require.Len(t, lists, 1, "an earlier refund of the same id is looked for first")
	assert.Equal(t, "pi_3Abc", lists[0].Query.Get("payment_intent"))
	creates := rec.Requests("POST /v1/refunds")
	require.Len(t, creates, 1)
	f := creates[0].Form
	assert.Equal(t, "pi_3Abc", f.Get("payment_intent"))
	assert.Equal(t, "4999", f.Get("amount"))
	assert.Equal(t, "rf_01", f.Get("metadata[refundId]"))
	assert.Equal(t, "7K3Q-0042", f.Get("metadata[orderNumber]"))
	assert.Equal(t, "ticketd-rf-rf_01", creates[0].IdemKey)

	// Stripe already has this refund (a resumed refund after its key was
	// forgotten): answered without a second one.
	rec.Fail("GET /v1/refunds", stripemock.Fault{Status: 200, Body: `{"object":"list","has_more":false,"url":"/v1/refunds","data":[
		{"id":"re_other","object":"refund","amount":100,"currency":"usd","status":"succeeded","metadata":{"refundId":"rf_00"}},
		{"id":"re_earlier","object":"refund","amount":4999,"currency":"usd","status":"pending","metadata":{"refundId":"rf_01"}}]}`})
	r, err = p.Refund(ctxT(t), pay, "rf_01")
	require.NoError(t, err)
	assert.Equal(t, Refund{ID: "re_earlier", Status: RefundPending, Amount: "49.99", Currency: "USD"}, r)
	assert.Len(t, rec.Requests("POST /v1/refunds"), 1, "no second refund")

	// Only the session known: its payment intent is looked up first.
	pay.PaymentIntentID, pay.SessionID = "", "cs_test_xyz"
	_, err = p.Refund(ctxT(t), pay, "rf_02")
	require.NoError(t, err)
	require.Len(t, rec.Requests("GET /v1/checkout/sessions/cs_test_xyz"), 1)
	creates = rec.Requests("POST /v1/refunds")
	require.Len(t, creates, 2)
	assert.True(t, strings.HasPrefix(creates[1].Form.Get("payment_intent"), "pi_"), "the session's payment intent")
	assert.Equal(t, "ticketd-rf-rf_02", creates[1].IdemKey)

	// Yen: whole units.
	_, err = p.Refund(ctxT(t), Payment{OrderNumber: "J-1", PaymentIntentID: "pi_j", Amount: "1500", Currency: "JPY"}, "rf_03")
	require.NoError(t, err)
	creates = rec.Requests("POST /v1/refunds")
	assert.Equal(t, "1500", creates[len(creates)-1].Form.Get("amount"))

	// A refusal (already refunded) is permanent; Stripe down is retryable.
	rec.Fail("POST /v1/refunds", stripemock.Fault{Status: 400, Body: `{"error":{"type":"invalid_request_error","code":"charge_already_refunded","message":"Charge ch_1 has already been refunded."}}`})
	_, err = p.Refund(ctxT(t), Payment{OrderNumber: "A-1", PaymentIntentID: "pi_1", Amount: "1", Currency: "USD"}, "rf_04")
	assert.ErrorIs(t, err, ErrRefused)
	down := stripemock.Fault{Status: 502, Body: "<html>bad gateway</html>"}
	rec.Fail("POST /v1/refunds", down, down, down)
	_, err = p.Refund(ctxT(t), Payment{OrderNumber: "A-1", PaymentIntentID: "pi_1", Amount: "1", Currency: "USD"}, "rf_05")
	assert.ErrorIs(t, err, ErrUnavailable)

	n := len(rec.Requests(""))
	for name, bad := range map[string]Payment{
		"no refund target": {OrderNumber: "A-1", Amount: "1", Currency: "USD"},
		"zero amount":      {OrderNumber: "A-1", PaymentIntentID: "pi_1", Amount: "0", Currency: "USD"},
		"yen fraction":     {OrderNumber: "A-1", PaymentIntentID: "pi_1", Amount: "1.5", Currency: "JPY"},
	} {
		_, err := p.Refund(ctxT(t), bad, "rf_x")
		assert.Error(t, err, name)
	}
	_, err = p.Refund(ctxT(t), Payment{OrderNumber: "A-1", PaymentIntentID: "pi_1", Amount: "1", Currency: "USD"}, "")
	assert.Error(t, err, "no refund id")
	assert.Len(t, rec.Requests(""), n, "nothing sent for a refused argument")
}

func TestSecretsNeverInErrorsOrLogs(t *testing.T) {
	// stripe-mock refuses a live key and echoes it back in its message
	// ("Authorization was 'Bearer sk_live_...'"), as a careless proxy might.
	const liveKey = "sk_live_TopSecretLiveKey987654321"
	p, rec, logs := newTestProvider(t, func(c *Config) { c.SecretKey = liveKey })
	p.now = func() time.Time { return testNow }
	_, err := p.CreateCheckoutSession(ctxT(t), testOrder())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrRefused)
	assert.Equal(t, 401, err.(*Error).Status)
	require.Len(t, rec.Requests(""), 1)
	_, err2 := p.Refund(ctxT(t), Payment{OrderNumber: "A-1", PaymentIntentID: "pi_1", Amount: "1", Currency: "USD"}, "rf_1")
	require.Error(t, err2)

	rec.Fail("POST /v1/checkout/sessions", stripemock.Fault{Status: 500, Body: `{"error":{"type":"api_error","message":"boom for ` + liveKey + ` and ` + testWebhookSecret + `"}}`},
		stripemock.Fault{Status: 500, Body: `not json ` + liveKey}, stripemock.Fault{Status: 500, Body: `not json ` + liveKey})
	_, err3 := p.CreateCheckoutSession(ctxT(t), testOrder())
	require.Error(t, err3)

	_, err4 := p.ParseWebhook([]byte(`{}`), "t=1,v1=00", testNow)
	cfg := p.cfg
	for _, s := range []string{err.Error(), err2.Error(), err3.Error(), err4.Error(), logs.String(),
		fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v", &cfg)} {
		assert.NotContains(t, s, "TopSecretLiveKey")
		assert.NotContains(t, s, "TicketdTestWebhookSecret")
	}
	assert.Contains(t, logs.String(), "401", "stripe-go's error lines reach the logger, redacted")
	assert.Contains(t, err.Error(), "[redacted]", "the echoed key was there and is gone: %s", err)
	var sb strings.Builder
	logger := slogTo(&sb)
	logger.Info("config", "stripe", cfg)
	assert.NotContains(t, sb.String(), "TopSecretLiveKey")
	assert.Contains(t, sb.String(), "sk_live_***")
}

func TestProviderIsSafeForConcurrentUse(t *testing.T) {
	p, rec, _ := newTestProvider(t)
	p.now = func() time.Time { return testNow }
	const n = 8
	keys := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := testOrder()
			o.OrderNumber = fmt.Sprintf("C-%d", i)
			s, err := p.CreateCheckoutSession(ctxT(t), o)
			keys[i], errs[i] = s.IdempotencyKey, err
			if err == nil {
				_, errs[i] = p.Refund(ctxT(t), Payment{OrderNumber: o.OrderNumber, PaymentIntentID: "pi_" + o.OrderNumber, Amount: "1", Currency: "USD"}, "rf_"+o.OrderNumber)
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		require.NoError(t, errs[i])
		assert.False(t, seen[keys[i]], "one key per order")
		seen[keys[i]] = true
	}
	sent := map[string]string{}
	for _, r := range rec.Requests("POST /v1/checkout/sessions") {
		sent[r.Form.Get("client_reference_id")] = r.IdemKey
	}
	require.Len(t, sent, n)
	for i := range n {
		assert.Equal(t, keys[i], sent[fmt.Sprintf("C-%d", i)], "each request under its own order's key")
	}
	assert.Len(t, rec.Requests("POST /v1/refunds"), n)
}
