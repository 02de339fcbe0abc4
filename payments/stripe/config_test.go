package stripe

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

func TestConfig(t *testing.T) {
	env := map[string]string{EnvSecretKey: " sk_test_abc ", EnvWebhookSecret: "whsec_x", EnvAPIBase: "http://127.0.0.1:12111/"}
	c := ConfigFromEnv(func(k string) string { return env[k] }).WithDefaults()
	require.NoError(t, c.Validate())
	assert.Equal(t, "sk_test_abc", c.SecretKey)
	assert.Equal(t, "http://127.0.0.1:12111", c.APIBase)
	assert.Equal(t, DefaultRequestTimeout, c.RequestTimeout)
	assert.Equal(t, DefaultWebhookTolerance, c.WebhookTolerance)
	assert.Equal(t, DefaultMaxNetworkRetries, c.MaxNetworkRetries)

	d := Config{SecretKey: "sk_live_abc", WebhookSecret: "whsec_x"}.WithDefaults()
	require.NoError(t, d.Validate())
	assert.Equal(t, DefaultAPIBase, d.APIBase)

	for name, edit := range map[string]func(*Config){
		"no key":               func(c *Config) { c.SecretKey = "" },
		"publishable key":      func(c *Config) { c.SecretKey = "pk_test_abc" },
		"no webhook secret":    func(c *Config) { c.WebhookSecret = "" },
		"plain http off host":  func(c *Config) { c.APIBase = "http://api.example.com" },
		"not a url":            func(c *Config) { c.APIBase = "api.stripe.com" },
		"credentials in url":   func(c *Config) { c.APIBase = "https://u:p@api.stripe.com" },
		"timeout too long":     func(c *Config) { c.RequestTimeout = time.Hour },
		"too many retries":     func(c *Config) { c.MaxNetworkRetries = 9 },
		"tolerance too narrow": func(c *Config) { c.WebhookTolerance = time.Millisecond },
	} {
		c := Config{SecretKey: "sk_test_abc", WebhookSecret: "whsec_x"}.WithDefaults()
		edit(&c)
		err := c.Validate()
		assert.Error(t, err, name)
		if err != nil {
			assert.NotContains(t, err.Error(), "abc", "%s: the error names the setting, not its value", name)
		}
		_, err = New(c)
		assert.Error(t, err, name)
	}
	assert.Zero(t, Config{SecretKey: "sk_test_abc", WebhookSecret: "whsec_x", MaxNetworkRetries: -1}.WithDefaults().MaxNetworkRetries)
}
