package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"ticketd/app"
)

// ParseConfig reads flags from args and, for absent flags, the TICKETD_*
// environment variables through lookup. On -h it prints the flags to help
// and returns flag.ErrHelp.
func ParseConfig(args []string, lookup func(string) (string, bool), help io.Writer) (app.Config, error) {
	var c app.Config
	d := app.DefaultConfig()
	var proxies string
	fs := flag.NewFlagSet("ticketd serve", flag.ContinueOnError)
	// Errors are returned, not printed: a wrong flag is one line, not the
	// list of thirty.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	env := map[string]string{}
	str := func(p *string, name, envName, def, usage string) {
		fs.StringVar(p, name, def, usage+" ($"+envName+")")
		env[name] = envName
	}
	num := func(p *int, name, envName string, def int, usage string) {
		fs.IntVar(p, name, def, usage+" ($"+envName+")")
		env[name] = envName
	}
	boolean := func(p *bool, name, envName string, def bool, usage string) {
		fs.BoolVar(p, name, def, usage+" ($"+envName+")")
		env[name] = envName
	}
	dur := func(p *time.Duration, name, envName string, def time.Duration, usage string) {
		fs.DurationVar(p, name, def, usage+" ($"+envName+")")
		env[name] = envName
	}
	str(&c.Addr, "addr", "TICKETD_ADDR", d.Addr, "listen address")
	str(&c.DataDir, "data-dir", "TICKETD_DATA_DIR", d.DataDir, "Pebble store and snapshots")
	str(&c.BaseURL, "base-url", "TICKETD_BASE_URL", d.BaseURL, "absolute prefix of every URL handed out (default http://<addr>)")
	str(&c.AdminToken, "admin-token", "TICKETD_ADMIN_TOKEN", d.AdminToken, "bearer token of the admin API (default: generated on first start, kept in the data dir)")
	num(&c.RateLimitPerMinute, "rate-limit-per-minute", "TICKETD_RATE_LIMIT_PER_MINUTE", d.RateLimitPerMinute, "Developer API requests per key per minute (a token bucket of half that, refilled continuously); 0 turns it off")
	num(&c.StorefrontKeyPerMinute, "storefront-key-limit-per-minute", "TICKETD_STOREFRONT_KEY_LIMIT_PER_MINUTE", d.StorefrontKeyPerMinute, "storefront requests per publishable key per minute (a token bucket of half that, refilled continuously; the default serves 10,000 visitors each within their per-IP budgets); 0 off")
	num(&c.DevicePerMinute, "device-limit-per-minute", "TICKETD_DEVICE_LIMIT_PER_MINUTE", d.DevicePerMinute, "door requests per device per minute (a batch of scans counts once); 0 off")
	num(&c.StorefrontIPPerMinute, "storefront-ip-limit-per-minute", "TICKETD_STOREFRONT_IP_LIMIT_PER_MINUTE", d.StorefrontIPPerMinute, "per (key, client IP) on checkout sessions, order placement and order reads; 0 off")
	num(&c.StorefrontCatalogIPPerMinute, "storefront-catalog-ip-limit-per-minute", "TICKETD_STOREFRONT_CATALOG_IP_LIMIT_PER_MINUTE", d.StorefrontCatalogIPPerMinute, "per (key, client IP) on every other storefront route (catalog reads, code lookup, confirm, cancel); 0 off")
	num(&c.StorefrontOpenOrdersPerIP, "storefront-open-orders-per-ip", "TICKETD_STOREFRONT_OPEN_ORDERS_PER_IP", d.StorefrontOpenOrdersPerIP, "open (unpaid) storefront orders per (publishable key, client IP) per event; beyond: 429 HOLD_LIMIT; 0 off")
	num(&c.StorefrontOpenSessionsPerIP, "storefront-open-sessions-per-ip", "TICKETD_STOREFRONT_OPEN_SESSIONS_PER_IP", d.StorefrontOpenSessionsPerIP, "unused checkout sessions per (publishable key, client IP) per event; beyond: 429 CHECKOUT_SESSION_LIMIT; 0 off")
	num(&c.AuthFailuresPerMinute, "auth-failures-per-minute", "TICKETD_AUTH_FAILURES_PER_MINUTE", d.AuthFailuresPerMinute, "failed authentications (admin token, API keys) per client IP per minute (IPv6: per /64); further failures get 429 AUTH_THROTTLED, valid credentials are always served; 0 off")
	num(&c.MaxConns, "max-conns", "TICKETD_MAX_CONNS", d.MaxConns, "open connections in total; at the bound the longest idle one is reclaimed (default: half the file descriptor limit, 64 to 10000)")
	num(&c.MaxConnsPerIP, "max-conns-per-ip", "TICKETD_MAX_CONNS_PER_IP", d.MaxConnsPerIP, "open connections per client address (IPv6: per /64; trusted proxies exempt); more get 429")
	dur(&c.HTTPReadTimeout, "http-read-timeout", "TICKETD_HTTP_READ_TIMEOUT", d.HTTPReadTimeout, "time to receive one request, from connect or its first byte")
	dur(&c.HTTPIdleTimeout, "http-idle-timeout", "TICKETD_HTTP_IDLE_TIMEOUT", d.HTTPIdleTimeout, "time a kept-alive connection may wait for its next request")
	str(&proxies, "trusted-proxies", "TICKETD_TRUSTED_PROXIES", "", "comma-separated CIDRs whose X-Forwarded-For is believed")
	dur(&c.OrderHold, "order-hold", "TICKETD_ORDER_HOLD", d.OrderHold, "how long a placed order holds its places")
	dur(&c.CheckoutSessionTTL, "checkout-session-ttl", "TICKETD_CHECKOUT_SESSION_TTL", d.CheckoutSessionTTL, "checkout session lifetime")
	dur(&c.CheckoutSessionKeep, "checkout-session-keep", "TICKETD_CHECKOUT_SESSION_KEEP", d.CheckoutSessionKeep, "how long an expired, unused checkout session still answers as expired before it is purged")
	str(&c.PaymentWebhookSecret, "payment-webhook-secret", "TICKETD_PAYMENT_WEBHOOK_SECRET", d.PaymentWebhookSecret, "HMAC secret of the sandbox payment webhook (default: generated, kept in the data dir)")
	str(&c.PaymentProvider, "payment-provider", "TICKETD_PAYMENT_PROVIDER", d.PaymentProvider, "payment provider of paid orders: sandbox or stripe")
	str(&c.Stripe.SecretKey, "stripe-secret-key", "TICKETD_STRIPE_SECRET_KEY", "", "Stripe secret key sk_... (prefer the environment variable: flags show in the process list)")
	str(&c.Stripe.WebhookSecret, "stripe-webhook-secret", "TICKETD_STRIPE_WEBHOOK_SECRET", "", "Stripe webhook signing secret whsec_...; several, comma-separated, while one is rolled")
	str(&c.Stripe.APIBase, "stripe-api-base", "TICKETD_STRIPE_API_BASE", "", "Stripe API address (default https://api.stripe.com; tests point it at stripe-mock)")
	str(&c.SMTPAddr, "smtp-addr", "TICKETD_SMTP_ADDR", d.SMTPAddr, "host:port of an SMTP server; empty keeps mail in the outbox")
	str(&c.SMTPUsername, "smtp-username", "TICKETD_SMTP_USERNAME", d.SMTPUsername, "SMTP login (AUTH); credentials go only over TLS or to a loopback server")
	str(&c.SMTPPassword, "smtp-password", "TICKETD_SMTP_PASSWORD", d.SMTPPassword, "SMTP password (prefer the environment variable: flags show in the process list)")
	str(&c.MailFrom, "mail-from", "TICKETD_MAIL_FROM", d.MailFrom, "sender of ticket emails")
	num(&c.SnapshotEvery, "snapshot-every", "TICKETD_SNAPSHOT_EVERY", d.SnapshotEvery, "changes between snapshots of an event")
	dur(&c.IdleTimeout, "idle-timeout", "TICKETD_IDLE_TIMEOUT", d.IdleTimeout, "passivate event actors idle this long; 0 never")
	dur(&c.DevLogRetention, "devlog-retention", "TICKETD_DEVLOG_RETENTION", d.DevLogRetention, "how long the developer log (per-key requests, in memory) lists a request")
	num(&c.DevLogPerUnit, "devlog-per-unit", "TICKETD_DEVLOG_PER_UNIT", d.DevLogPerUnit, "requests the developer log keeps per business unit")
	dur(&c.AuditRetention, "audit-retention", "TICKETD_AUDIT_RETENTION", d.AuditRetention, "how long audit log entries are kept")
	num(&c.WebhookDisableAfter, "webhook-disable-after", "TICKETD_WEBHOOK_DISABLE_AFTER", d.WebhookDisableAfter, "consecutive failed deliveries that disable a webhook endpoint")
	boolean(&c.WebhookAllowPrivate, "webhook-allow-private", "TICKETD_WEBHOOK_ALLOW_PRIVATE", d.WebhookAllowPrivate, "development and tests only: webhook endpoints may be http://localhost and private, loopback or link-local addresses")
	str(&c.Wallet.ApplePassTypeID, "apple-pass-type-id", "TICKETD_APPLE_PASS_TYPE_ID", "", "Apple Wallet: pass type identifier (pass.com.example.tickets); with the four below, passes are offered")
	str(&c.Wallet.AppleTeamID, "apple-team-id", "TICKETD_APPLE_TEAM_ID", "", "Apple Wallet: Apple Developer team identifier")
	str(&c.Wallet.ApplePassCert, "apple-pass-cert", "TICKETD_APPLE_PASS_CERT", "", "Apple Wallet: pass type certificate, PEM file")
	str(&c.Wallet.ApplePassKey, "apple-pass-key", "TICKETD_APPLE_PASS_KEY", "", "Apple Wallet: the certificate's private key, unencrypted PEM file")
	str(&c.Wallet.AppleWWDRCert, "apple-wwdr-cert", "TICKETD_APPLE_WWDR_CERT", "", "Apple Wallet: Apple's WWDR intermediate certificate that issued it, PEM file")
	str(&c.Wallet.GoogleIssuerID, "google-wallet-issuer-id", "TICKETD_GOOGLE_WALLET_ISSUER_ID", "", "Google Wallet: issuer id; with the key below, Save to Google Wallet is offered")
	str(&c.Wallet.GoogleKey, "google-wallet-key", "TICKETD_GOOGLE_WALLET_KEY", "", "Google Wallet: the service account's JSON key file")
	str(&c.DebugAddr, "debug-addr", "TICKETD_DEBUG_ADDR", d.DebugAddr, "loopback host:port serving the running service's memory and CPU profiles (net/http/pprof, no authentication); empty: off")
	str(&c.LogLevel, "log-level", "TICKETD_LOG_LEVEL", d.LogLevel, "debug, info, warn or error")
	str(&c.NodeName, "node-name", "TICKETD_NODE_NAME", d.NodeName, "cluster mode: this node's unique name")
	str(&c.ClusterAddr, "cluster-addr", "TICKETD_CLUSTER_ADDR", d.ClusterAddr, "cluster mode: this node's cluster listen host:port")
	str(&c.ClusterForwardAddr, "cluster-forward-addr", "TICKETD_CLUSTER_FORWARD_ADDR", d.ClusterForwardAddr, "cluster mode: where other nodes forward requests over TCP, host:port (empty: the cluster address's host, any port; off: over NATS)")
	str(&c.ClusterPeers, "cluster-peers", "TICKETD_CLUSTER_PEERS", d.ClusterPeers, "comma-separated cluster addresses of all nodes; empty runs a single node on Pebble")
	num(&c.ClusterReplicas, "cluster-replicas", "TICKETD_CLUSTER_REPLICAS", d.ClusterReplicas, "cluster mode: nodes keeping each event stream (at most the peers)")
	num(&c.ClusterShards, "cluster-shards", "TICKETD_CLUSTER_SHARDS", d.ClusterShards, "cluster mode: streams the events are spread over, fixed when the cluster is made (1 to 256)")
	num(&c.ClusterSnapshotTailMax, "cluster-snapshot-tail-max", "TICKETD_CLUSTER_SNAPSHOT_TAIL_MAX", d.ClusterSnapshotTailMax, "cluster mode: most changes after an event's last snapshot, the tail a failover replays (0: grows with the event)")
	num(&c.ClusterSettleLag, "cluster-settle-lag", "TICKETD_CLUSTER_SETTLE_LAG", d.ClusterSettleLag, "cluster mode: shard messages an idle or small event may hold the log's trim back before it is settled (100 to 10000000)")
	num(&c.ClusterSettleSmall, "cluster-settle-small", "TICKETD_CLUSTER_SETTLE_SMALL", d.ClusterSettleSmall, "cluster mode: records of an event settled even while it still changes (1 to 10000000)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(help, "usage: ticketd serve [flags]\n\nEvery flag also reads the environment variable named after it, when absent.\n\nflags:")
		fs.SetOutput(help)
		fs.PrintDefaults()
		return c, err
	} else if err != nil {
		return c, fmt.Errorf("%w (ticketd serve -h lists the flags)", err)
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
