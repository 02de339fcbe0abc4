package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84/webhook"

	"ticketd/actors"
	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/event"
	"ticketd/payments"
	tstripe "ticketd/payments/stripe"
	"ticketd/payments/stripe/stripemock"
)

const (
	testKey    = "sk_test_TicketdE2EKeyNeverLogged0123456789"
	testSecret = "whsec_TicketdE2EWebhookSecret"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stripemock.Stop()
	os.Exit(code)
}

// fx is a service in Stripe mode and the proxy its Stripe calls go through.
type fx struct {
	t   *testing.T
	svc *apptest.Service
	rec *stripemock.Recorder
	sk  string // a secret key of the service's unit
	pk  string // its publishable key
}

func start(t *testing.T, opts ...apptest.Option) *fx {
	t.Helper()
	rec := stripemock.NewRecorder(t, stripemock.Start(t))
	svc := apptest.Start(t, append([]apptest.Option{func(c *app.Config) {
		c.PaymentProvider = app.PaymentStripe
		c.Stripe.SecretKey, c.Stripe.WebhookSecret, c.Stripe.APIBase = testKey, "whsec_rolledOut,"+testSecret, rec.URL
		c.Stripe.RequestTimeout, c.Stripe.MaxNetworkRetries = 2*time.Second, 1
	}}, opts...)...)
	u := svc.NewUnit("Stripe shop", "http://localhost:3000")
	return &fx{t: t, svc: svc, rec: rec, sk: u.Secret, pk: u.Publishable}
}

func (f *fx) call(method, path, key string, body any, header ...string) (int, map[string]any) {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(f.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.svc.URL+path, rd)
	require.NoError(f.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

func (f *fx) want(status int, method, path, key string, body any, header ...string) map[string]any {
	f.t.Helper()
	st, m := f.call(method, path, key, body, header...)
	require.Equal(f.t, status, st, "%s %s: %v", method, path, m)
	return m
}

// drop is a published event with an open ticket type at price (USD).
func (f *fx) drop(price float64, capacity int) (evt, typeID string) {
	ev := f.want(201, "POST", "/v1/events", f.sk, map[string]any{"name": "Paid drop", "timezone": "UTC", "startsAt": "2030-01-01T10:00:00Z"})
	evt = ev["id"].(string)
	f.want(200, "PATCH", "/v1/events/"+evt, f.sk, map[string]any{"status": "published"})
	tt := f.want(201, "POST", "/v1/events/"+evt+"/ticket-types", f.sk, map[string]any{"name": "General admission", "capacity": capacity, "priceAmount": price})
	typeID = tt["id"].(string)
	f.want(200, "PATCH", "/v1/events/"+evt+"/ticket-types/"+typeID, f.sk, map[string]any{"status": "open"})
	return evt, typeID
}

func (f *fx) place(evt, typeID, email string) string {
	o := f.want(201, "POST", "/v1/events/"+evt+"/orders", f.sk, map[string]any{"email": email,
		"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}})
	return o["orderNumber"].(string)
}

func (f *fx) confirm(evt, number string, header ...string) (int, map[string]any) {
	return f.call("POST", "/v1/events/"+evt+"/orders/"+number+"/confirm", f.sk,
		map[string]any{"successUrl": "https://shop.example.com/thanks", "cancelUrl": "https://shop.example.com/cart"}, header...)
}

func (f *fx) order(evt, number string) map[string]any {
	return f.want(200, "GET", "/v1/events/"+evt+"/orders/"+number, f.sk, nil)
}

// sessionOf is the Checkout Session id the service recorded for an order
// (the API does not show it; stripe-mock's url names another).
func (f *fx) sessionOf(evt, number string) string {
	f.t.Helper()
	res, err := f.svc.Sys.Ask(context.Background(), evt, event.GetOrder{Ref: number})
	require.NoError(f.t, err)
	ref := res.(event.Order).ProviderRef
	require.True(f.t, strings.HasPrefix(ref, "cs_"), ref)
	return ref
}

// stripeEvent is a Stripe event body of a checkout session.
func stripeEvent(id, typ, session, number, paymentStatus string, amount int64, currency string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"object":"event","api_version":"2025-01-27.acacia","created":%d,"livemode":false,
"type":%q,"data":{"object":{"id":%q,"object":"checkout.session","client_reference_id":%q,"metadata":{"orderNumber":%q},
"payment_status":%q,"status":"complete","amount_total":%d,"currency":%q,"payment_intent":"pi_e2e_%s"}}}`,
		id, time.Now().Unix(), typ, session, number, number, paymentStatus, amount, currency, session))
}

func sign(body []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at}).Header
}

func (f *fx) deliver(body []byte, sig string) (int, map[string]any) {
	f.t.Helper()
	req, err := http.NewRequest("POST", f.svc.URL+"/webhooks/payments/stripe", bytes.NewReader(body))
	require.NoError(f.t, err)
	req.Header.Set("Content-Type", "application/json")
	if sig != "" {
		req.Header.Set("Stripe-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// confirmed confirms a placed order and answers its paymentUrl and the
// recorded session id.
func (f *fx) confirmed(evt, number string) (paymentURL, session string) {
	f.t.Helper()
	st, o := f.confirm(evt, number)
	require.Equal(f.t, 200, st, o)
	require.Equal(f.t, "awaiting_payment", o["status"])
	return o["paymentUrl"].(string), f.sessionOf(evt, number)
}

func TestStripeConfirmCreatesTheCheckoutSession(t *testing.T) {
	f := start(t)
	evt, typeID := f.drop(49.99, 10)
	number := f.place(evt, typeID, "ada@example.com")

	st, o := f.confirm(evt, number)
	require.Equal(t, 200, st, o)
	assert.Equal(t, "awaiting_payment", o["status"])
	url, _ := o["paymentUrl"].(string)
	assert.True(t, strings.HasPrefix(url, "https://"), "Stripe's hosted page, not the sandbox's: %q", url)
	assert.NotContains(t, url, f.svc.URL)

	reqs := f.rec.Requests("POST /v1/checkout/sessions")
	require.Len(t, reqs, 1)
	form := reqs[0].Form
	for k, v := range map[string]string{
		"mode": "payment", "client_reference_id": number, "metadata[orderNumber]": number,
		"line_items[0][quantity]": "1", "line_items[0][price_data][unit_amount]": "4999",
		"line_items[0][price_data][currency]": "usd", "line_items[0][price_data][product_data][name]": "General admission",
		"success_url": "https://shop.example.com/thanks", "cancel_url": "https://shop.example.com/cart",
		"customer_email": "ada@example.com",
	} {
		assert.Equal(t, v, form.Get(k), k)
	}
	// The hold while paying ends when the session does: Stripe's 30
	// minutes at least, though the service's own hold is 15.
	hold, err := time.Parse(time.RFC3339, o["holdExpiresAt"].(string))
	require.NoError(t, err)
	exp, err := strconv.ParseInt(form.Get("expires_at"), 10, 64)
	require.NoError(t, err)
	assert.Equal(t, exp, hold.Unix(), "expires_at is the hold's end")
	assert.Greater(t, time.Until(hold), 30*time.Minute)
	assert.True(t, strings.HasPrefix(reqs[0].IdemKey, "ticketd-cs-"+number+"-"))

	// Confirming again answers the same page without calling Stripe.
	st, again := f.confirm(evt, number)
	require.Equal(t, 200, st)
	assert.Equal(t, url, again["paymentUrl"])
	assert.Len(t, f.rec.Requests("POST /v1/checkout/sessions"), 1)
}

// stepClock is real time moved on by a step the test sets: the actors
// and the Stripe provider read it, so a test crosses a 5-minute grid line
// of expires_at at will.
type stepClock struct{ off atomic.Int64 }

func (c *stepClock) Now() time.Time      { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *stepClock) Add(d time.Duration) { c.off.Add(int64(d)) }

// withClock runs the service's actors and its Stripe provider on c.
func withClock(c *stepClock) apptest.Option {
	return func(cfg *app.Config) {
		t := app.Tuning{}
		if cfg.Tune != nil {
			t = *cfg.Tune
		}
		t.Actors = func(ac *actors.Config) { ac.Now = c.Now }
		cfg.Tune = &t
		cfg.Stripe.Now = c.Now
	}
}

// beforeGridLine sets c so that a confirm now clamps expires_at (now + 31
// minutes, up to the 5-minute grid) just before a grid line: a retry a
// minute later would clamp to the next one.
func beforeGridLine(c *stepClock) {
	lo := c.Now().Add(tstripe.MinSessionLife + time.Minute)
	c.Add(lo.Truncate(5 * time.Minute).Add(5 * time.Minute).Add(-20 * time.Second).Sub(lo))
}

// TestStripeDownAnswers503AndTheOrderStaysConfirmable: Stripe down or slow
// answers 503 and leaves the order open; the tries, a minute apart across
// a grid line of the clamped expires_at, send the same parameters and the
// same idempotency key (the first try's expires_at is kept with the order),
// so the one that reaches Stripe makes the only session.
func TestStripeDownAnswers503AndTheOrderStaysConfirmable(t *testing.T) {
	logs := &syncBuffer{}
	clock := &stepClock{}
	f := start(t, withClock(clock), func(c *app.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	defer func() {
		// Stripe's failures were logged, its secrets never.
		assert.Contains(t, logs.String(), "stripe checkout session not created")
		assert.NotContains(t, logs.String(), testKey)
		assert.NotContains(t, logs.String(), strings.TrimPrefix(testSecret, "whsec_"))
	}()
	evt, typeID := f.drop(20, 10)
	number := f.place(evt, typeID, "bob@example.com")
	beforeGridLine(clock)
	down := stripemock.Fault{Status: 500, Body: `{"error":{"type":"api_error","message":"down"}}`}
	f.rec.Fail("POST /v1/checkout/sessions", down, down) // the first try and the adapter's one retry

	st, e := f.confirm(evt, number, "Idempotency-Key", "confirm-1")
	require.Equal(t, 503, st, e)
	assert.Equal(t, "PAYMENT_PROVIDER_UNAVAILABLE", e["error"].(map[string]any)["reason"])
	assert.Equal(t, "open", f.order(evt, number)["status"], "nothing half-applied")

	// A minute later, past the grid line. Slow: over the per-attempt
	// timeout, twice.
	clock.Add(time.Minute)
	slow := stripemock.Fault{Delay: 3 * time.Second}
	f.rec.Fail("POST /v1/checkout/sessions", slow, slow)
	st, e = f.confirm(evt, number, "Idempotency-Key", "confirm-1")
	require.Equal(t, 503, st, e)
	assert.Equal(t, "open", f.order(evt, number)["status"])

	// Stripe is back, after a restart of the service: the same request,
	// same key, confirms.
	clock.Add(time.Minute)
	f.svc.Restart()
	st, o := f.confirm(evt, number, "Idempotency-Key", "confirm-1")
	require.Equal(t, 200, st, o)
	assert.Equal(t, "awaiting_payment", o["status"])
	keys, exps := map[string]bool{}, map[string]bool{}
	reqs := f.rec.Requests("POST /v1/checkout/sessions")
	for _, r := range reqs {
		keys[r.IdemKey] = true
		exps[r.Form.Get("expires_at")] = true
	}
	assert.GreaterOrEqual(t, len(reqs), 5, "the tries reached the proxy")
	assert.Len(t, exps, 1, "every try sent the first try's expires_at")
	assert.Len(t, keys, 1, "every try carried the same Stripe idempotency key")
	hold, err := time.Parse(time.RFC3339, o["holdExpiresAt"].(string))
	require.NoError(t, err)
	assert.True(t, exps[strconv.FormatInt(hold.Unix(), 10)], "the hold ends with the session")
}

// TestStripeConfirmPreparedAnewOutOfWindow: a retry so late that the kept
// expires_at is less than 30 minutes ahead still sends the kept
// parameters (Stripe would answer a session an earlier try made); Stripe
// refusing them proves none was made, so the confirm is prepared anew and
// the session made with a new expires_at, in the same request.
func TestStripeConfirmPreparedAnewOutOfWindow(t *testing.T) {
	clock := &stepClock{}
	f := start(t, withClock(clock))
	evt, typeID := f.drop(20, 10)
	number := f.place(evt, typeID, "cat@example.com")
	down := stripemock.Fault{Status: 500, Body: `{"error":{"type":"api_error","message":"down"}}`}
	f.rec.Fail("POST /v1/checkout/sessions", down, down)
	st, e := f.confirm(evt, number)
	require.Equal(t, 503, st, e)

	clock.Add(10 * time.Minute) // the order's own 15-minute hold still runs
	tooSoon := stripemock.Fault{Status: 400, Body: `{"error":{"type":"invalid_request_error","param":"expires_at","message":"The expires_at timestamp must be at least 30 minutes from Checkout Session creation."}}`}
	f.rec.Fail("POST /v1/checkout/sessions", tooSoon)
	st, o := f.confirm(evt, number)
	require.Equal(t, 200, st, o)
	reqs := f.rec.Requests("POST /v1/checkout/sessions")
	require.Len(t, reqs, 4)
	assert.Equal(t, reqs[0].IdemKey, reqs[2].IdemKey, "the late retry sent the kept parameters first")
	assert.NotEqual(t, reqs[2].IdemKey, reqs[3].IdemKey, "then the ones prepared anew")
	exp, err := strconv.ParseInt(reqs[3].Form.Get("expires_at"), 10, 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Unix(exp, 0).Sub(clock.Now()), tstripe.MinSessionLife)
	hold, err := time.Parse(time.RFC3339, o["holdExpiresAt"].(string))
	require.NoError(t, err)
	assert.Equal(t, exp, hold.Unix())
}

func TestStripeWebhookSettlesOnceAndRefusesForgeries(t *testing.T) {
	f := start(t)
	evt, typeID := f.drop(49.99, 10)
	number := f.place(evt, typeID, "cy@example.com")
	_, session := f.confirmed(evt, number)
	paid := stripeEvent("evt_paid_1", "checkout.session.completed", session, number, "paid", 4999, "usd")

	// Forged (another secret), stale, unsigned: 400, nothing changes.
	for name, sig := range map[string]string{
		"forged":   sign(paid, "whsec_attacker", time.Now()),
		"stale":    sign(paid, testSecret, time.Now().Add(-10*time.Minute)),
		"unsigned": "",
	} {
		st, e := f.deliver(paid, sig)
		assert.Equal(t, 400, st, name)
		assert.NotEmpty(t, e["error"].(map[string]any)["reason"], name)
	}
	assert.Equal(t, "awaiting_payment", f.order(evt, number)["status"])

	// Signed with the current secret (the old one is still accepted).
	st, ack := f.deliver(paid, sign(paid, testSecret, time.Now()))
	require.Equal(t, 200, st, ack)
	o := f.order(evt, number)
	assert.Equal(t, "paid", o["status"])
	assert.NotNil(t, o["registrationId"])
	f.ticketMailQueued(number, "USD 49.99")

	// The same event again: 200, nothing more.
	st, ack = f.deliver(paid, sign(paid, testSecret, time.Now()))
	require.Equal(t, 200, st)
	assert.Equal(t, true, ack["duplicate"])
	assert.Equal(t, o["updatedAt"], f.order(evt, number)["updatedAt"])

	// The sandbox's page, which settles without money, is not served.
	pid := o["paymentId"].(string)
	st, _ = f.call("POST", "/pay/"+pid, "", nil)
	assert.Equal(t, 404, st)
	st, _ = f.call("POST", "/webhooks/payments/sandbox", "", map[string]any{})
	assert.Equal(t, 404, st)

	// The event id is kept durably, so a replay after a restart is one too.
	_, ok, err := f.svc.Sys.Store().Get([]byte("provider-event/stripe/evt_paid_1"))
	require.NoError(t, err)
	assert.True(t, ok)
}

// ticketMailQueued asserts the order's ticket email waits in the outbox
// (no SMTP here) with its receipt and calendar file, read through the
// refundPendingAtStripe places and pays a 10 USD order for name@example.com
// (its payment event evt_<name>_pay), then refunds it with Stripe
// answering the refund (re_pend) pending: the event, the order's number
// and the pending refund as the API shows it.
func (f *fx) refundPendingAtStripe(name string) (evt, number string, refund map[string]any) {
	t := f.t
	t.Helper()
	evt, typeID := f.drop(10, 10)
	number = f.place(evt, typeID, name+"@example.com")
	_, session := f.confirmed(evt, number)
	body := stripeEvent("evt_"+name+"_pay", "checkout.session.completed", session, number, "paid", 1000, "usd")
	st, _ := f.deliver(body, sign(body, testSecret, time.Now()))
	require.Equal(t, 200, st)
	f.rec.Fail("POST /v1/refunds", stripemock.Fault{Status: 200, Body: `{"id":"re_pend","object":"refund","amount":1000,"currency":"usd","status":"pending"}`})
	res := f.want(200, "POST", "/admin/v1/events/"+evt+"/orders/"+number+"/refund", f.svc.Admin, map[string]any{})
	refund = res["refunds"].([]any)[0].(map[string]any)
	require.Equal(t, "pending", refund["status"])
	return evt, number, refund
}

// operator's preview.
func (f *fx) ticketMailQueued(number, total string) {
	f.t.Helper()
	st, list := f.call("GET", "/admin/v1/outbox", f.svc.Admin, nil)
	require.Equal(f.t, 200, st, list)
	id := ""
	for _, it := range list["data"].([]any) {
		m := it.(map[string]any)
		if m["kind"] == "ticket" && m["orderNumber"] == number {
			id = m["id"].(string)
		}
	}
	require.NotEmpty(f.t, id, "a ticket email for order %s is queued: %v", number, list)
	p := f.want(200, "GET", "/admin/v1/outbox/"+id+"/preview", f.svc.Admin, nil)
	text, _ := p["text"].(string)
	assert.Contains(f.t, text, number, "the receipt names the order")
	assert.Contains(f.t, text, total, "the receipt says the total as written")
	files, _ := p["attachments"].([]any)
	require.Len(f.t, files, 1)
	file := files[0].(map[string]any)
	assert.Equal(f.t, "event.ics", file["filename"])
	assert.Contains(f.t, file["contentType"], "text/calendar")
}

func TestStripeMismatchNeverSettles(t *testing.T) {
	f := start(t)
	evt, typeID := f.drop(49.99, 10)
	for i, ev := range []struct {
		amount   int64
		currency string
	}{{4998, "usd"}, {4999, "eur"}} {
		number := f.place(evt, typeID, fmt.Sprintf("m%d@example.com", i))
		_, session := f.confirmed(evt, number)
		body := stripeEvent(fmt.Sprintf("evt_mismatch_%d", i), "checkout.session.completed", session, number, "paid", ev.amount, ev.currency)
		st, ack := f.deliver(body, sign(body, testSecret, time.Now()))
		require.Equal(t, 200, st, ack)
		assert.Equal(t, "mismatch", ack["outcome"])
		assert.Equal(t, "awaiting_payment", f.order(evt, number)["status"], "%d %s", ev.amount, ev.currency)
	}
}

func TestStripeLatePaymentOfACancelledOrderIsRefunded(t *testing.T) {
	f := start(t)
	evt, typeID := f.drop(30, 10)
	number := f.place(evt, typeID, "late@example.com")
	_, session := f.confirmed(evt, number)
	f.want(200, "POST", "/v1/events/"+evt+"/orders/"+number+"/cancel", f.sk, nil)

	// The cancel expires the session at Stripe (the closer, woken).
	require.Eventually(t, func() bool {
		return len(f.rec.Requests("POST /v1/checkout/sessions/"+session+"/expire")) == 1
	}, 10*time.Second, 20*time.Millisecond, "%v %v", session, f.rec.Requests(""))

	// The buyer had paid meanwhile: acknowledged, and refunded through Stripe.
	body := stripeEvent("evt_late_1", "checkout.session.completed", session, number, "paid", 3000, "usd")
	st, ack := f.deliver(body, sign(body, testSecret, time.Now()))
	require.Equal(t, 200, st, ack)
	o := f.order(evt, number)
	assert.Equal(t, "cancelled", o["status"])
	refunds := o["refunds"].([]any)
	require.Len(t, refunds, 1)
	r := refunds[0].(map[string]any)
	assert.Equal(t, "succeeded", r["status"])
	assert.EqualValues(t, 30, r["amount"])
	creates := f.rec.Requests("POST /v1/refunds")
	require.Len(t, creates, 1)
	assert.Equal(t, "3000", creates[0].Form.Get("amount"))
	assert.Equal(t, "ticketd-rf-"+r["id"].(string), creates[0].IdemKey)
}

func TestStripeConsoleRefundAndSecondCharge(t *testing.T) {
	f := start(t)
	evt, typeID := f.drop(25, 10)
	number := f.place(evt, typeID, "re@example.com")
	_, session := f.confirmed(evt, number)
	body := stripeEvent("evt_pay_1", "checkout.session.completed", session, number, "paid", 2500, "usd")
	st, _ := f.deliver(body, sign(body, testSecret, time.Now()))
	require.Equal(t, 200, st)

	// A second session of the same order paid too: refunded, never dropped.
	second := stripeEvent("evt_pay_2", "checkout.session.completed", "cs_test_second", number, "paid", 2500, "usd")
	st, ack := f.deliver(second, sign(second, testSecret, time.Now()))
	require.Equal(t, 200, st, ack)
	o := f.order(evt, number)
	assert.Equal(t, "paid", o["status"], "the order keeps its place")
	require.Len(t, o["refunds"].([]any), 1)
	assert.Equal(t, "succeeded", o["refunds"].([]any)[0].(map[string]any)["status"])
	require.Len(t, f.rec.Requests("GET /v1/checkout/sessions/cs_test_second"), 1, "the second session's payment is the one refunded")

	// The console refunds the order through Stripe, one refund id one key.
	res := f.want(200, "POST", "/admin/v1/events/"+evt+"/orders/"+number+"/refund", f.svc.Admin, map[string]any{"reason": "ill"})
	refunds := res["refunds"].([]any)
	require.Len(t, refunds, 2)
	last := refunds[1].(map[string]any)
	assert.Equal(t, "succeeded", last["status"])
	assert.EqualValues(t, 25, last["amount"], "the second charge's refund does not count against the order's")
	assert.Equal(t, "refunded", res["status"])
	creates := f.rec.Requests("POST /v1/refunds")
	require.Len(t, creates, 2)
	assert.Equal(t, "ticketd-rf-"+last["id"].(string), creates[1].IdemKey)
	assert.Equal(t, "2500", creates[1].Form.Get("amount"))
}

// TestStripeResumerFinishesARefundStripeCouldNotTake: a late payment's
// refund that Stripe could not be asked for stays pending (the webhook is
// acknowledged all the same), and the resumer finishes it with the same
// refund id, hence the same Stripe idempotency key.
func TestStripeResumerFinishesARefundStripeCouldNotTake(t *testing.T) {
	f := start(t)
	evt, typeID := f.drop(30, 10)
	number := f.place(evt, typeID, "resume@example.com")
	_, session := f.confirmed(evt, number)
	f.want(200, "POST", "/v1/events/"+evt+"/orders/"+number+"/cancel", f.sk, nil)
	down := stripemock.Fault{Status: 503, Body: `{"error":{"type":"api_error","message":"down"}}`}
	f.rec.Fail("POST /v1/refunds", down, down)

	body := stripeEvent("evt_late_resume", "checkout.session.completed", session, number, "paid", 3000, "usd")
	st, ack := f.deliver(body, sign(body, testSecret, time.Now()))
	require.Equal(t, 200, st, ack)
	refunds := f.order(evt, number)["refunds"].([]any)
	require.Len(t, refunds, 1)
	assert.Equal(t, "pending", refunds[0].(map[string]any)["status"])

	n, err := f.svc.Main.Refunds().Resume(0)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	r := f.order(evt, number)["refunds"].([]any)[0].(map[string]any)
	assert.Equal(t, "succeeded", r["status"])
	creates := f.rec.Requests("POST /v1/refunds")
	require.Len(t, creates, 3, "two refused tries, then the resumer's")
	for _, c := range creates {
		assert.Equal(t, "ticketd-rf-"+r["id"].(string), c.IdemKey)
	}
}

// TestStripeRefundPendingAtStripeSettlesByRefundUpdated: a refund Stripe
// answers pending stays pending until refund.updated says succeeded.
func TestStripeRefundPendingAtStripeSettlesByRefundUpdated(t *testing.T) {
	f := start(t)
	evt, number, r := f.refundPendingAtStripe("pend")

	upd := []byte(fmt.Sprintf(`{"id":"evt_refund_upd","object":"event","created":%d,"type":"refund.updated","data":{"object":
{"id":"re_pend","object":"refund","amount":1000,"currency":"usd","status":"succeeded","payment_intent":"pi_x",
"metadata":{"refundId":%q,"orderNumber":%q}}}}`, time.Now().Unix(), r["id"], number))
	st, ack := f.deliver(upd, sign(upd, testSecret, time.Now()))
	require.Equal(t, 200, st, ack)
	o := f.order(evt, number)
	assert.Equal(t, "succeeded", o["refunds"].([]any)[0].(map[string]any)["status"])
	assert.Equal(t, "refunded", o["status"])
}

// TestStripeStorefrontConfirmAndFreeOrders: the storefront's confirm makes
// a session too (back to the hosted order page without URLs); a free
// order is paid at once without calling Stripe.
func TestStripeStorefrontConfirmAndFreeOrders(t *testing.T) {
	f := start(t)
	evt, typeID := f.drop(12.5, 10)
	o := f.want(201, "POST", "/storefront/v1/events/"+evt+"/orders", f.pk, map[string]any{"email": "sf@example.com",
		"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}})
	number := o["orderNumber"].(string)
	c := f.want(200, "POST", "/storefront/v1/events/"+evt+"/orders/"+number+"/confirm", f.pk, map[string]any{})
	assert.Equal(t, "awaiting_payment", c["status"])
	assert.True(t, strings.HasPrefix(c["paymentUrl"].(string), "https://checkout.stripe.com/"), c["paymentUrl"])
	reqs := f.rec.Requests("POST /v1/checkout/sessions")
	require.Len(t, reqs, 1)
	assert.Equal(t, c["orderUrl"], reqs[0].Form.Get("success_url"))
	assert.Equal(t, "1250", reqs[0].Form.Get("line_items[0][price_data][unit_amount]"))

	free, freeType := f.drop(0, 10)
	number = f.place(free, freeType, "free@example.com")
	st, p := f.confirm(free, number)
	require.Equal(t, 200, st, p)
	assert.Equal(t, "paid", p["status"])
	assert.Len(t, f.rec.Requests("POST /v1/checkout/sessions"), 1, "no session for a free order")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStripeLapsedHoldExpiresTheSessionAndALatePaymentIsFulfilled: the
// hold lapses (the actors' clock moved past the session's end), the
// closer expires the session at Stripe, and a payment that completed at
// the last moment is fulfilled, as its place can still be taken.
func TestStripeLapsedHoldExpiresTheSessionAndALatePaymentIsFulfilled(t *testing.T) {
	var offset atomic.Int64
	f := start(t, func(c *app.Config) {
		// Idle actors passivate at once; a restarted one lapses the holds
		// that ended meanwhile, on the moved clock.
		c.IdleTimeout = 200 * time.Millisecond
		c.Tune = &app.Tuning{Actors: func(ac *actors.Config) {
			ac.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		}}
	})
	evt, typeID := f.drop(15, 10)
	number := f.place(evt, typeID, "lapse@example.com")
	_, session := f.confirmed(evt, number)

	offset.Store(int64(2 * time.Hour))
	require.Eventually(t, func() bool { return f.order(evt, number)["status"] == "expired" }, 15*time.Second, 700*time.Millisecond)
	n, err := f.svc.Main.Checkouts().Pass()
	require.NoError(t, err)
	assert.LessOrEqual(t, n, 1, "the periodic pass may have closed it first")
	require.Len(t, f.rec.Requests("POST /v1/checkout/sessions/"+session+"/expire"), 1)
	left, err := payments.CheckoutsToClose(f.svc.Sys.Store(), 10)
	require.NoError(t, err)
	assert.Empty(t, left, "closed once Stripe answered")

	body := stripeEvent("evt_lapsed_paid", "checkout.session.completed", session, number, "paid", 1500, "usd")
	st, ack := f.deliver(body, sign(body, testSecret, time.Now()))
	require.Equal(t, 200, st, ack)
	o := f.order(evt, number)
	assert.Equal(t, "paid", o["status"], "fulfilled: its place could still be taken")
	assert.Nil(t, o["refunds"])
	assert.Empty(t, f.rec.Requests("POST /v1/refunds"))
}

// TestStripeChargeRefundedFinishesPendingRefunds: charge.refunded makes
// the service ask Stripe again, with the same refund id and key, for the
// refunds it still has pending.
func TestStripeChargeRefundedFinishesPendingRefunds(t *testing.T) {
	f := start(t)
	evt, number, _ := f.refundPendingAtStripe("charge")

	ch := []byte(fmt.Sprintf(`{"id":"evt_charge_refunded","object":"event","created":%d,"type":"charge.refunded","data":{"object":
{"id":"ch_1","object":"charge","amount":1000,"amount_refunded":1000,"currency":"usd","payment_intent":"pi_x",
"metadata":{"orderNumber":%q}}}}`, time.Now().Unix(), number))
	st, ack := f.deliver(ch, sign(ch, testSecret, time.Now()))
	require.Equal(t, 200, st, ack)
	assert.Equal(t, "succeeded", f.order(evt, number)["refunds"].([]any)[0].(map[string]any)["status"])
	creates := f.rec.Requests("POST /v1/refunds")
	require.Len(t, creates, 2)
	assert.Equal(t, creates[0].IdemKey, creates[1].IdemKey, "the same refund, asked again")
}
