package app_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
)

const (
	leakKey    = "sk_test_StripeConfigLeakCheck0123456789"
	leakSecret = "whsec_StripeConfigLeakCheckSecret"
)

// TestStripeModeRefusesToStartWithoutItsKeys: TICKETD_PAYMENT_PROVIDER=stripe
// without the secret key or the webhook secret never opens, and says which
// setting is missing; the sandbox stays the default.
func TestStripeModeRefusesToStartWithoutItsKeys(t *testing.T) {
	d := app.DefaultConfig()
	assert.Equal(t, app.PaymentSandbox, d.PaymentProvider)

	for name, tc := range map[string]struct {
		key, secret string
		want        string
	}{
		"no key":    {"", leakSecret, "TICKETD_STRIPE_SECRET_KEY is required"},
		"no secret": {leakKey, "", "TICKETD_STRIPE_WEBHOOK_SECRET is required"},
		"pk key":    {"pk_test_abc", leakSecret, "TICKETD_STRIPE_SECRET_KEY must be a secret (sk_) or restricted (rk_) key"},
	} {
		cfg := testConfig(t.TempDir())
		cfg.PaymentProvider = app.PaymentStripe
		cfg.Stripe.SecretKey, cfg.Stripe.WebhookSecret = tc.key, tc.secret
		err := app.NewMain(cfg, &bytes.Buffer{}).Open()
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "TICKETD_PAYMENT_PROVIDER=stripe", name)
		assert.Contains(t, err.Error(), tc.want, name)
		assert.NotContains(t, err.Error(), "LeakCheck", name)
	}

	cfg := testConfig(t.TempDir())
	cfg.PaymentProvider = "paypal"
	assert.ErrorContains(t, cfg.Validate(), "payment-provider: must be sandbox or stripe")
}

// TestStripeSecretsNeverPrint: the configuration printed in any form, or
// logged, shows the kind of each secret and never its value.
func TestStripeSecretsNeverPrint(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.PaymentProvider = app.PaymentStripe
	cfg.Stripe.SecretKey, cfg.Stripe.WebhookSecret = leakKey, leakSecret+",whsec_OtherLeakCheck"
	require.NoError(t, cfg.Validate())
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "stripe", cfg.Stripe)
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(cfg.Stripe), logged.String()} {
		assert.NotContains(t, s, "LeakCheck")
	}
	assert.Contains(t, fmt.Sprintf("%+v", cfg), "sk_test_***")
}
