package stripe

import (
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	stripego "github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/webhook"

	"ticketd/payments"
)

// Provider answers the webhook half of payments.Provider the same way.
var _ interface {
	Name() string
	Verify(header string, body []byte, now time.Time) error
} = (*Provider)(nil)

// webhookProvider needs no stripe-mock: verifying and mapping a webhook
// makes no call.
func webhookProvider(t *testing.T) *Provider {
	t.Helper()
	p, err := New(Config{SecretKey: testKey, WebhookSecret: testWebhookSecret})
	require.NoError(t, err)
	return p
}

func sign(body []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at}).Header
}

// eventBody is a Stripe event as Stripe sends it.
func eventBody(id, typ, apiVersion, object string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"object":"event","api_version":%q,"created":1795600000,"livemode":false,
"pending_webhooks":1,"request":{"id":null,"idempotency_key":null},"type":%q,"data":{"object":%s}}`, id, apiVersion, typ, object))
}

func sessionObject(paymentStatus string, amount int64, currency string) string {
	return fmt.Sprintf(`{"id":"cs_test_a1","object":"checkout.session","mode":"payment","status":"complete",
"payment_status":%q,"amount_total":%d,"currency":%q,"client_reference_id":"7K3Q-0042",
"metadata":{"orderNumber":"7K3Q-0042","paymentId":"pay_ab12.XYZ"},"payment_intent":"pi_3Abc","unknown_future_field":{"x":[1,2]}}`,
		paymentStatus, amount, currency)
}

func TestWebhookEventsMapToKinds(t *testing.T) {
	p := webhookProvider(t)
	v := stripego.APIVersion
	for _, tc := range []struct {
		name, typ, apiVersion, object string
		want                          Event
	}{
		{"completed and paid", "checkout.session.completed", v, sessionObject("paid", 4999, "usd"),
			Event{Kind: KindPaid, OrderNumber: "7K3Q-0042", PaymentID: "pay_ab12.XYZ", SessionID: "cs_test_a1", PaymentIntentID: "pi_3Abc", Amount: "49.99", AmountMinor: 4999, Currency: "USD"}},
		{"completed, paid in yen", "checkout.session.completed", v, sessionObject("paid", 5000, "jpy"),
			Event{Kind: KindPaid, OrderNumber: "7K3Q-0042", PaymentID: "pay_ab12.XYZ", SessionID: "cs_test_a1", PaymentIntentID: "pi_3Abc", Amount: "5000", AmountMinor: 5000, Currency: "JPY"}},
		{"completed, async method under way", "checkout.session.completed", v, sessionObject("unpaid", 4999, "usd"),
			Event{Kind: KindPending, OrderNumber: "7K3Q-0042", PaymentID: "pay_ab12.XYZ", SessionID: "cs_test_a1", PaymentIntentID: "pi_3Abc", Amount: "49.99", AmountMinor: 4999, Currency: "USD"}},
		{"async succeeded", "checkout.session.async_payment_succeeded", v, sessionObject("paid", 5000, "eur"),
			Event{Kind: KindPaid, OrderNumber: "7K3Q-0042", PaymentID: "pay_ab12.XYZ", SessionID: "cs_test_a1", PaymentIntentID: "pi_3Abc", Amount: "50", AmountMinor: 5000, Currency: "EUR"}},
		{"async failed", "checkout.session.async_payment_failed", v, sessionObject("unpaid", 4999, "usd"),
			Event{Kind: KindFailed, OrderNumber: "7K3Q-0042", PaymentID: "pay_ab12.XYZ", SessionID: "cs_test_a1", PaymentIntentID: "pi_3Abc", Amount: "49.99", AmountMinor: 4999, Currency: "USD"}},
		{"session expired", "checkout.session.expired", v, sessionObject("unpaid", 4999, "usd"),
			Event{Kind: KindExpired, OrderNumber: "7K3Q-0042", PaymentID: "pay_ab12.XYZ", SessionID: "cs_test_a1", PaymentIntentID: "pi_3Abc", Amount: "49.99", AmountMinor: 4999, Currency: "USD"}},
		{"an older API version is tolerated", "checkout.session.completed", "2020-08-27", sessionObject("paid", 4999, "usd"),
			Event{Kind: KindPaid, OrderNumber: "7K3Q-0042", PaymentID: "pay_ab12.XYZ", SessionID: "cs_test_a1", PaymentIntentID: "pi_3Abc", Amount: "49.99", AmountMinor: 4999, Currency: "USD"}},
		{"charge refunded", "charge.refunded", v,
			`{"id":"ch_1","object":"charge","amount":4999,"amount_refunded":2000,"currency":"usd","refunded":false,
"payment_intent":{"id":"pi_3Abc","object":"payment_intent"},"metadata":{"orderNumber":"7K3Q-0042","paymentId":"pay_ab12.XYZ"}}`,
			Event{Kind: KindRefunded, OrderNumber: "7K3Q-0042", PaymentID: "pay_ab12.XYZ", PaymentIntentID: "pi_3Abc", Amount: "20", AmountMinor: 2000, Currency: "USD"}},
		{"refund updated", "refund.updated", v,
			`{"id":"re_9","object":"refund","amount":4999,"currency":"usd","status":"failed","payment_intent":"pi_3Abc",
"metadata":{"refundId":"rf_01","orderNumber":"7K3Q-0042"}}`,
			Event{Kind: KindRefundUpdated, OrderNumber: "7K3Q-0042", PaymentIntentID: "pi_3Abc", Amount: "49.99", AmountMinor: 4999, Currency: "USD",
				RefundID: "rf_01", StripeRefundID: "re_9", RefundStatus: "failed"}},
		{"another event type", "customer.created", v, `{"id":"cus_1","object":"customer","metadata":{}}`,
			Event{Kind: KindIgnored}},
		{"a session of another integration", "checkout.session.completed", v,
			`{"id":"cs_other","object":"checkout.session","payment_status":"paid","amount_total":100,"currency":"usd","client_reference_id":null,"metadata":{}}`,
			Event{Kind: KindIgnored, SessionID: "cs_other", Amount: "1", AmountMinor: 100, Currency: "USD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := eventBody("evt_1", tc.typ, tc.apiVersion, tc.object)
			got, err := p.ParseWebhook(body, sign(body, testWebhookSecret, testNow), testNow)
			require.NoError(t, err)
			want := tc.want
			want.ID, want.Type, want.Created = "evt_1", tc.typ, time.Unix(1795600000, 0).UTC()
			assert.Equal(t, want, got)
		})
	}
}

func TestWebhookOfAnOldAPIVersion(t *testing.T) {
	// Before 2017-05-25 an event's "request" was a string: stripe-go's Event
	// cannot decode it, ParseWebhook reads only what it needs.
	p := webhookProvider(t)
	body := []byte(`{"id":"evt_old","object":"event","api_version":"2017-02-14","created":1795600000,"livemode":false,
"request":"req_1","type":"checkout.session.completed","data":{"object":` + sessionObject("paid", 4999, "usd") + `}}`)
	e, err := p.ParseWebhook(body, sign(body, testWebhookSecret, testNow), testNow)
	require.NoError(t, err)
	assert.Equal(t, KindPaid, e.Kind)
	assert.NoError(t, e.Check("49.99", "USD"))
}

func TestWebhookSignatures(t *testing.T) {
	p := webhookProvider(t)
	body := eventBody("evt_2", "checkout.session.completed", stripego.APIVersion, sessionObject("paid", 4999, "usd"))
	good := sign(body, testWebhookSecret, testNow)

	_, err := p.ParseWebhook(body, good, testNow)
	require.NoError(t, err)
	_, err = p.ParseWebhook(body, good, testNow.Add(300*time.Second))
	assert.NoError(t, err, "at the edge of the 300 s tolerance")

	refused := map[string]struct {
		body   []byte
		header string
		now    time.Time
		want   error
	}{
		"missing":             {body, "", testNow, payments.ErrNoSignature},
		"wrong secret":        {body, sign(body, "whsec_someoneElse", testNow), testNow, payments.ErrBadSignature},
		"body changed":        {append([]byte(nil), body[:len(body)-1]...), good, testNow, payments.ErrBadSignature},
		"stale":               {body, good, testNow.Add(301 * time.Second), payments.ErrStale},
		"from the future":     {body, good, testNow.Add(-301 * time.Second), payments.ErrStale},
		"garbage":             {body, "garbage", testNow, payments.ErrBadSignature},
		"no v1":               {body, fmt.Sprintf("t=%d", testNow.Unix()), testNow, payments.ErrBadSignature},
		"only v0":             {body, fmt.Sprintf("t=%d,v0=%s", testNow.Unix(), good[len(good)-64:]), testNow, payments.ErrBadSignature},
		"bad timestamp":       {body, "t=abc,v1=" + good[len(good)-64:], testNow, payments.ErrBadSignature},
		"signature, no stamp": {body, "v1=" + good[len(good)-64:], testNow, payments.ErrBadSignature},
		"re-stamped": {body, fmt.Sprintf("t=%d,v1=%s", testNow.Add(time.Minute).Unix(), good[len(good)-64:]),
			testNow, payments.ErrBadSignature},
		"captured, then re-stamped in front": {body, fmt.Sprintf("t=%d,", testNow.Add(time.Hour).Unix()) + good,
			testNow.Add(time.Hour), payments.ErrBadSignature},
		"captured, then re-stamped behind": {body, good + fmt.Sprintf(",t=%d", testNow.Add(time.Hour).Unix()),
			testNow.Add(time.Hour), payments.ErrBadSignature},
		"two wrong v1": {body, fmt.Sprintf("t=%d,v1=%s,v1=%s", testNow.Unix(), hex.EncodeToString(make([]byte, 32)),
			sign(body, "whsec_old", testNow)[len(good)-64:]), testNow, payments.ErrBadSignature},
	}
	for name, tc := range refused {
		_, err := p.ParseWebhook(tc.body, tc.header, tc.now)
		assert.ErrorIs(t, err, tc.want, name)
		assert.Error(t, p.Verify(tc.header, tc.body, tc.now), name)
	}

	// A secret rotation: Stripe signs with the old and the new secret, one
	// v1 each; the one this service knows is enough, in either place.
	old := sign(body, "whsec_previousSecret", testNow)
	rotated := old + ",v1=" + good[len(good)-64:]
	_, err = p.ParseWebhook(body, rotated, testNow)
	assert.NoError(t, err)
	rotated = good + ",v1=" + old[len(old)-64:]
	_, err = p.ParseWebhook(body, rotated, testNow)
	assert.NoError(t, err)

	// Correctly signed, but not an event.
	junk := []byte(`{"object":"list","data":[]}`)
	_, err = p.ParseWebhook(junk, sign(junk, testWebhookSecret, testNow), testNow)
	assert.ErrorIs(t, err, ErrPayload)
	junk = []byte(`not json`)
	_, err = p.ParseWebhook(junk, sign(junk, testWebhookSecret, testNow), testNow)
	assert.ErrorIs(t, err, ErrPayload)
	junk = eventBody("evt_3", "checkout.session.completed", stripego.APIVersion, `{"id":"ch_1","object":"charge"}`)
	_, err = p.ParseWebhook(junk, sign(junk, testWebhookSecret, testNow), testNow)
	assert.ErrorIs(t, err, ErrPayload, "a session event carrying a charge")

	// A repeated delivery parses to the same event id: the caller's
	// de-duplication key.
	a, _ := p.ParseWebhook(body, good, testNow)
	b, _ := p.ParseWebhook(body, sign(body, testWebhookSecret, testNow.Add(time.Minute)), testNow.Add(time.Minute))
	assert.Equal(t, "evt_2", a.ID)
	assert.Equal(t, a, b)
}

func TestWebhookAmountMismatchNeverSettles(t *testing.T) {
	p := webhookProvider(t)
	parse := func(amount int64, cur string) Event {
		body := eventBody("evt_4", "checkout.session.completed", stripego.APIVersion, sessionObject("paid", amount, cur))
		e, err := p.ParseWebhook(body, sign(body, testWebhookSecret, testNow), testNow)
		require.NoError(t, err)
		require.Equal(t, KindPaid, e.Kind)
		return e
	}
	assert.NoError(t, parse(4999, "usd").Check("49.99", "USD"))
	assert.NoError(t, parse(5000, "usd").Check("50", "usd"))
	assert.NoError(t, parse(5000, "usd").Check("50.00", "USD"))
	assert.NoError(t, parse(5000, "jpy").Check("5000", "JPY"))
	assert.ErrorIs(t, parse(4998, "usd").Check("49.99", "USD"), ErrAmountMismatch)
	assert.ErrorIs(t, parse(4999, "eur").Check("49.99", "USD"), ErrCurrencyMismatch)
	assert.ErrorIs(t, parse(4999, "jpy").Check("49.99", "JPY"), ErrAmountMismatch, "49.99 yen cannot be paid at all")
	assert.ErrorIs(t, parse(500000, "jpy").Check("5000", "JPY"), ErrAmountMismatch, "hundredths of a yen are not yen")
	assert.ErrorIs(t, parse(12345, "kwd").Check("12.34", "KWD"), ErrAmountMismatch)
	assert.ErrorIs(t, parse(0, "usd").Check("49.99", "USD"), ErrAmountMismatch)

	// amount_total absent (null): nothing to match.
	body := eventBody("evt_5", "checkout.session.completed", stripego.APIVersion,
		`{"id":"cs_1","object":"checkout.session","payment_status":"paid","amount_total":null,"currency":null,"client_reference_id":"A-1"}`)
	e, err := p.ParseWebhook(body, sign(body, testWebhookSecret, testNow), testNow)
	require.NoError(t, err)
	assert.ErrorIs(t, e.Check("49.99", "USD"), ErrCurrencyMismatch)
}

func FuzzParseWebhook(f *testing.F) {
	f.Add(eventBody("evt_1", "checkout.session.completed", stripego.APIVersion, sessionObject("paid", 4999, "usd")))
	f.Add(eventBody("evt_1", "refund.updated", "2020-08-27", `{"object":"refund","payment_intent":{"id":1}}`))
	f.Add([]byte(`{"object":"event","data":null}`))
	p, err := New(Config{SecretKey: testKey, WebhookSecret: testWebhookSecret})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := p.ParseWebhook(body, sign(body, testWebhookSecret, testNow), testNow)
		if err == nil && e.ID == "" {
			t.Fatalf("an event without id: %+v", e)
		}
		_ = p.Verify(string(body), body, testNow)
	})
}

// TestWebhookSecretsRotation: the service may hold several secrets while
// one is rolled (TICKETD_STRIPE_WEBHOOK_SECRET="new,old"): a delivery
// signed with either is accepted, one signed with neither is not, and the
// secrets stay out of Config's String.
func TestWebhookSecretsRotation(t *testing.T) {
	p, err := New(Config{SecretKey: testKey, WebhookSecret: " whsec_newSecret , whsec_oldSecret "})
	require.NoError(t, err)
	body := eventBody("evt_rot", "checkout.session.completed", stripego.APIVersion, sessionObject("paid", 4999, "usd"))
	for _, secret := range []string{"whsec_newSecret", "whsec_oldSecret"} {
		_, err := p.ParseWebhook(body, sign(body, secret, testNow), testNow)
		assert.NoError(t, err, secret)
	}
	_, err = p.ParseWebhook(body, sign(body, "whsec_thirdSecret", testNow), testNow)
	assert.ErrorIs(t, err, payments.ErrBadSignature)

	s := fmt.Sprintf("%v %+v %#v", p.cfg, p.cfg, p.cfg)
	assert.NotContains(t, s, "newSecret")
	assert.NotContains(t, s, "oldSecret")
	assert.Contains(t, s, "whsec_***,whsec_***")

	for _, bad := range []string{"whsec_a,,whsec_b", "whsec_a,whsec_b,whsec_c,whsec_d,whsec_e", ","} {
		assert.Error(t, Config{SecretKey: testKey, WebhookSecret: bad}.WithDefaults().Validate(), bad)
	}
}
