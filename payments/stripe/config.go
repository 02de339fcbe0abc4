package stripe

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The settings' environment names. Only cmd/ reads the
// environment: it passes os.Getenv to ConfigFromEnv.
const (
	EnvSecretKey     = "TICKETD_STRIPE_SECRET_KEY"
	EnvWebhookSecret = "TICKETD_STRIPE_WEBHOOK_SECRET"
	EnvAPIBase       = "TICKETD_STRIPE_API_BASE"
)

// DefaultAPIBase is Stripe's own API.
const DefaultAPIBase = "https://api.stripe.com"

// Defaults of Config.
const (
	DefaultRequestTimeout    = 10 * time.Second
	DefaultMaxNetworkRetries = 2
	DefaultWebhookTolerance  = 300 * time.Second
)

// Config configures a Provider.
type Config struct {
	// SecretKey is the account's secret (sk_...) or restricted (rk_...)
	// API key. It never appears in an error, a log line or String.
	SecretKey string
	// WebhookSecret is the webhook endpoint's signing secret (whsec_...),
	// or several separated by commas while a secret is rolled: a delivery
	// signed with any of them is accepted.
	WebhookSecret string
	// APIBase is where the API is called, DefaultAPIBase unless set (tests
	// point it at a local stripe-mock). Plain http is accepted only for a
	// loopback host: the secret key travels in every request.
	APIBase string
	// RequestTimeout bounds one HTTP attempt (DefaultRequestTimeout). The
	// caller's context bounds the whole call, retries included.
	RequestTimeout time.Duration
	// MaxNetworkRetries is how often an attempt that failed on the
	// network or timed out (stripe-go retries those), or that Stripe
	// answered with 409 or 5xx (the Provider retries those), is repeated,
	// each time with the same idempotency key (DefaultMaxNetworkRetries; a
	// negative value means none).
	MaxNetworkRetries int
	// WebhookTolerance is how far a webhook signature's timestamp may be
	// from now, either way (DefaultWebhookTolerance).
	WebhookTolerance time.Duration
	// Logger receives stripe-go's own log lines (errors and warnings),
	// with every secret redacted; nil discards them.
	Logger *slog.Logger
	// Now is the clock a Checkout Session's expires_at window is counted
	// by when the confirm was not prepared (Order.PreparedAt zero), and
	// by which a kept expires_at is judged out of Stripe's window;
	// time.Now unless set (tests step it, with the actors' clock).
	Now func() time.Time
}

// maxWebhookSecrets bounds the secrets of a rotation (Stripe keeps two
// alive at once).
const maxWebhookSecrets = 4

// WebhookSecrets are the accepted signing secrets, in the order given.
func (c Config) WebhookSecrets() []string {
	var out []string
	for _, s := range strings.Split(c.WebhookSecret, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ConfigFromEnv reads the settings through getenv (os.Getenv in cmd/).
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{
		SecretKey:     strings.TrimSpace(getenv(EnvSecretKey)),
		WebhookSecret: strings.TrimSpace(getenv(EnvWebhookSecret)),
		APIBase:       strings.TrimSpace(getenv(EnvAPIBase)),
	}
}

// WithDefaults fills the unset fields.
func (c Config) WithDefaults() Config {
	if c.APIBase == "" {
		c.APIBase = DefaultAPIBase
	}
	c.APIBase = strings.TrimRight(c.APIBase, "/")
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxNetworkRetries == 0 {
		c.MaxNetworkRetries = DefaultMaxNetworkRetries
	}
	if c.MaxNetworkRetries < 0 {
		c.MaxNetworkRetries = 0
	}
	if c.WebhookTolerance == 0 {
		c.WebhookTolerance = DefaultWebhookTolerance
	}
	return c
}

// Validate checks a Config after WithDefaults. Its errors name the
// setting, never its value.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.SecretKey == "":
		errs = append(errs, fmt.Errorf("stripe: %s is required", EnvSecretKey))
	case !strings.HasPrefix(c.SecretKey, "sk_") && !strings.HasPrefix(c.SecretKey, "rk_"):
		errs = append(errs, fmt.Errorf("stripe: %s must be a secret (sk_) or restricted (rk_) key", EnvSecretKey))
	case strings.ContainsAny(c.SecretKey, " \t\r\n"):
		errs = append(errs, fmt.Errorf("stripe: %s contains white space", EnvSecretKey))
	}
	switch secrets := c.WebhookSecrets(); {
	case len(secrets) == 0:
		errs = append(errs, fmt.Errorf("stripe: %s is required", EnvWebhookSecret))
	case len(secrets) > maxWebhookSecrets:
		errs = append(errs, fmt.Errorf("stripe: %s holds at most %d secrets", EnvWebhookSecret, maxWebhookSecrets))
	case len(secrets) != strings.Count(c.WebhookSecret, ",")+1:
		errs = append(errs, fmt.Errorf("stripe: %s has an empty entry between its commas", EnvWebhookSecret))
	}
	if err := checkAPIBase(c.APIBase); err != nil {
		errs = append(errs, err)
	}
	if c.RequestTimeout <= 0 || c.RequestTimeout > 2*time.Minute {
		errs = append(errs, errors.New("stripe: RequestTimeout must be in (0, 2m]"))
	}
	if c.MaxNetworkRetries < 0 || c.MaxNetworkRetries > 5 {
		errs = append(errs, errors.New("stripe: MaxNetworkRetries must be in [0, 5]"))
	}
	if c.WebhookTolerance < time.Second || c.WebhookTolerance > time.Hour {
		errs = append(errs, errors.New("stripe: WebhookTolerance must be in [1s, 1h]"))
	}
	return errors.Join(errs...)
}

func checkAPIBase(base string) error {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.RawQuery != "" {
		return fmt.Errorf("stripe: %s must be an absolute http(s) URL without credentials or query", EnvAPIBase)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return fmt.Errorf("stripe: %s may be plain http only for a loopback host (the secret key is sent with every request)", EnvAPIBase)
	}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// String shows the settings with the secrets masked, so a Config printed
// by mistake leaks nothing.
func (c Config) String() string {
	return "stripe.Config{SecretKey:" + mask(c.SecretKey) + " WebhookSecret:" + mask(c.WebhookSecret) +
		" APIBase:" + strconv.Quote(c.APIBase) + " RequestTimeout:" + c.RequestTimeout.String() +
		" MaxNetworkRetries:" + strconv.Itoa(c.MaxNetworkRetries) + " WebhookTolerance:" + c.WebhookTolerance.String() + "}"
}

// GoString is String, for %#v.
func (c Config) GoString() string { return c.String() }

// LogValue is String's content for slog.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("secretKey", mask(c.SecretKey)), slog.String("webhookSecret", mask(c.WebhookSecret)),
		slog.String("apiBase", c.APIBase), slog.Duration("requestTimeout", c.RequestTimeout),
		slog.Int("maxNetworkRetries", c.MaxNetworkRetries), slog.Duration("webhookTolerance", c.WebhookTolerance))
}

// mask keeps a secret's kind and hides the rest: "sk_test_***"; each of
// several comma-separated secrets is masked alone.
func mask(s string) string {
	if s == "" {
		return `""`
	}
	if strings.Contains(s, ",") {
		parts := strings.Split(s, ",")
		for i, p := range parts {
			parts[i] = mask(strings.TrimSpace(p))
		}
		return strings.Join(parts, ",")
	}
	for _, p := range secretPrefixes {
		if strings.HasPrefix(s, p) {
			return p + "***"
		}
	}
	return "***"
}
