package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"
)

// Config is every setting of `ticketd serve` (decisions §1). Each flag has
// an environment variable, which applies only when the flag is absent.
type Config struct {
	Addr                   string
	DataDir                string
	BaseURL                string
	AdminToken             string
	RateLimitPerMinute     int
	StorefrontKeyPerMinute int
	StorefrontIPPerMinute  int
	TrustedProxies         []netip.Prefix
	OrderHold              time.Duration
	CheckoutSessionTTL     time.Duration
	PaymentWebhookSecret   string
	SMTPAddr               string
	SMTPUsername           string
	SMTPPassword           string
	MailFrom               string
	SnapshotEvery          int
	IdleTimeout            time.Duration
	LogLevel               string
	DevLogRetention        time.Duration
	DevLogPerUnit          int
	AuditRetention         time.Duration
	WebhookDisableAfter    int

	// Connection and abuse bounds of the HTTP server (see http.Config).
	StorefrontCatalogIPPerMinute int
	AuthFailuresPerMinute        int
	MaxConns                     int // 0: from the file descriptor limit
	MaxConnsPerIP                int
	HTTPReadTimeout              time.Duration
	HTTPIdleTimeout              time.Duration
}

// Validate checks a parsed configuration and fills derived defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("addr: must not be empty"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data-dir: must not be empty"))
	}
	if c.BaseURL == "" {
		c.BaseURL = "http://" + c.Addr
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		errs = append(errs, errors.New("base-url: must start with http:// or https://"))
	}
	for name, v := range map[string]int{
		"rate-limit-per-minute":           c.RateLimitPerMinute,
		"storefront-key-limit-per-minute": c.StorefrontKeyPerMinute,
		"storefront-ip-limit-per-minute":  c.StorefrontIPPerMinute,

		"storefront-catalog-ip-limit-per-minute": c.StorefrontCatalogIPPerMinute,
		"auth-failures-per-minute":               c.AuthFailuresPerMinute,
		"max-conns":                              c.MaxConns,
		"max-conns-per-ip":                       c.MaxConnsPerIP,
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s: must be >= 0", name))
		}
	}
	// Zero keeps the http package's defaults, like the limits above.
	if c.HTTPReadTimeout < 0 || c.HTTPIdleTimeout < 0 {
		errs = append(errs, errors.New("http-read-timeout, http-idle-timeout: must not be negative"))
	}
	if c.OrderHold <= 0 {
		errs = append(errs, errors.New("order-hold: must be positive"))
	}
	if c.CheckoutSessionTTL <= 0 {
		errs = append(errs, errors.New("checkout-session-ttl: must be positive"))
	}
	if c.SnapshotEvery <= 0 {
		errs = append(errs, errors.New("snapshot-every: must be positive"))
	}
	// Zero keeps the packages' defaults (a Config built in code).
	if c.DevLogRetention < 0 || c.AuditRetention < 0 {
		errs = append(errs, errors.New("devlog-retention, audit-retention: must not be negative"))
	}
	if c.DevLogPerUnit < 0 || c.DevLogPerUnit > 1_000_000 {
		errs = append(errs, errors.New("devlog-per-unit: must be 0 to 1000000"))
	}
	if c.WebhookDisableAfter < 0 || c.WebhookDisableAfter > 1000 {
		errs = append(errs, errors.New("webhook-disable-after: must be 0 to 1000"))
	}
	return errors.Join(errs...)
}

// ParseConfig reads flags from args and, for absent flags, the TICKETD_*
// environment variables through lookup.
func ParseConfig(args []string, lookup func(string) (string, bool), stderr io.Writer) (Config, error) {
	var c Config
	var proxies string
	fs := flag.NewFlagSet("ticketd serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := map[string]string{}
	str := func(p *string, name, envName, def, usage string) {
		fs.StringVar(p, name, def, usage+" ($"+envName+")")
		env[name] = envName
	}
	num := func(p *int, name, envName string, def int, usage string) {
		fs.IntVar(p, name, def, usage+" ($"+envName+")")
		env[name] = envName
	}
	dur := func(p *time.Duration, name, envName string, def time.Duration, usage string) {
		fs.DurationVar(p, name, def, usage+" ($"+envName+")")
		env[name] = envName
	}
	str(&c.Addr, "addr", "TICKETD_ADDR", "127.0.0.1:8080", "listen address")
	str(&c.DataDir, "data-dir", "TICKETD_DATA_DIR", "./data", "Pebble store and snapshots")
	str(&c.BaseURL, "base-url", "TICKETD_BASE_URL", "", "absolute prefix of every URL handed out (default http://<addr>)")
	str(&c.AdminToken, "admin-token", "TICKETD_ADMIN_TOKEN", "", "bearer token of the admin API (default: generated on first start, kept in the data dir)")
	num(&c.RateLimitPerMinute, "rate-limit-per-minute", "TICKETD_RATE_LIMIT_PER_MINUTE", 120, "Developer API requests per key per minute; 0 turns it off")
	num(&c.StorefrontKeyPerMinute, "storefront-key-limit-per-minute", "TICKETD_STOREFRONT_KEY_LIMIT_PER_MINUTE", 600, "storefront requests per publishable key per minute; 0 off")
	num(&c.StorefrontIPPerMinute, "storefront-ip-limit-per-minute", "TICKETD_STOREFRONT_IP_LIMIT_PER_MINUTE", 20, "per (key, client IP) on checkout sessions, order placement and order reads; 0 off")
	num(&c.StorefrontCatalogIPPerMinute, "storefront-catalog-ip-limit-per-minute", "TICKETD_STOREFRONT_CATALOG_IP_LIMIT_PER_MINUTE", 60, "per (key, client IP) on every other storefront route (catalog reads, code lookup, confirm, cancel); 0 off")
	num(&c.AuthFailuresPerMinute, "auth-failures-per-minute", "TICKETD_AUTH_FAILURES_PER_MINUTE", 20, "failed authentications (admin token, API keys) per client IP per minute before 429; 0 off")
	num(&c.MaxConns, "max-conns", "TICKETD_MAX_CONNS", 0, "open connections in total; at the bound the longest idle one is reclaimed (default: half the file descriptor limit, 64 to 10000)")
	num(&c.MaxConnsPerIP, "max-conns-per-ip", "TICKETD_MAX_CONNS_PER_IP", 1024, "open connections per client address (IPv6: per /64; trusted proxies exempt); more get 429")
	dur(&c.HTTPReadTimeout, "http-read-timeout", "TICKETD_HTTP_READ_TIMEOUT", 15*time.Second, "time to receive one request, from connect or its first byte")
	dur(&c.HTTPIdleTimeout, "http-idle-timeout", "TICKETD_HTTP_IDLE_TIMEOUT", 60*time.Second, "time a kept-alive connection may wait for its next request")
	str(&proxies, "trusted-proxies", "TICKETD_TRUSTED_PROXIES", "", "comma-separated CIDRs whose X-Forwarded-For is believed")
	dur(&c.OrderHold, "order-hold", "TICKETD_ORDER_HOLD", 15*time.Minute, "how long a placed order holds its places")
	dur(&c.CheckoutSessionTTL, "checkout-session-ttl", "TICKETD_CHECKOUT_SESSION_TTL", 24*time.Hour, "checkout session lifetime")
	str(&c.PaymentWebhookSecret, "payment-webhook-secret", "TICKETD_PAYMENT_WEBHOOK_SECRET", "", "HMAC secret of the sandbox payment webhook (default: generated, kept in the data dir)")
	str(&c.SMTPAddr, "smtp-addr", "TICKETD_SMTP_ADDR", "", "host:port of an SMTP server; empty keeps mail in the outbox")
	str(&c.SMTPUsername, "smtp-username", "TICKETD_SMTP_USERNAME", "", "SMTP login (AUTH); credentials go only over TLS or to a loopback server")
	str(&c.SMTPPassword, "smtp-password", "TICKETD_SMTP_PASSWORD", "", "SMTP password (prefer the environment variable: flags show in the process list)")
	str(&c.MailFrom, "mail-from", "TICKETD_MAIL_FROM", "tickets@localhost", "sender of ticket emails")
	num(&c.SnapshotEvery, "snapshot-every", "TICKETD_SNAPSHOT_EVERY", 50_000, "changes between snapshots of an event")
	dur(&c.IdleTimeout, "idle-timeout", "TICKETD_IDLE_TIMEOUT", 10*time.Minute, "passivate event actors idle this long; 0 never")
	dur(&c.DevLogRetention, "devlog-retention", "TICKETD_DEVLOG_RETENTION", 7*24*time.Hour, "how long the developer log (per-key requests, in memory) lists a request")
	num(&c.DevLogPerUnit, "devlog-per-unit", "TICKETD_DEVLOG_PER_UNIT", 5000, "requests the developer log keeps per business unit")
	dur(&c.AuditRetention, "audit-retention", "TICKETD_AUDIT_RETENTION", 90*24*time.Hour, "how long audit log entries are kept")
	num(&c.WebhookDisableAfter, "webhook-disable-after", "TICKETD_WEBHOOK_DISABLE_AFTER", 10, "consecutive failed deliveries that disable a webhook endpoint")
	str(&c.LogLevel, "log-level", "TICKETD_LOG_LEVEL", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		if v, ok := lookup(env[f.Name]); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("$%s: %w", env[f.Name], err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	for _, p := range strings.Split(proxies, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			return c, fmt.Errorf("trusted-proxies: %w", err)
		}
		c.TrustedProxies = append(c.TrustedProxies, pfx)
	}
	return c, c.Validate()
}
