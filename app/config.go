package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"ticketd/actors"
	"ticketd/cluster/node"
	"ticketd/cluster/settle"
	thttp "ticketd/http"
	"ticketd/http/console"
	"ticketd/mail"
	"ticketd/payments/stripe"
	"ticketd/persistence"
	"ticketd/wallet"
	"ticketd/webhooks"
)

// Config is every setting of the service. cmd/ticketd fills it from flags
// and environment variables; tests build it in code from DefaultConfig.
type Config struct {
	// Program is the command that started the service as it was typed
	// ("./bin/ticketd"), so the commands the start banner prints work when
	// pasted; empty: "ticketd".
	Program string
	Addr    string
	// DebugAddr is a loopback host:port serving the Go runtime's profiles
	// (net/http/pprof, no authentication); empty: none.
	DebugAddr              string
	DataDir                string
	BaseURL                string
	AdminToken             string
	RateLimitPerMinute     int
	StorefrontKeyPerMinute int
	StorefrontIPPerMinute  int
	DevicePerMinute        int // per door device on /door/v1 (decisions §18)
	TrustedProxies         []netip.Prefix
	OrderHold              time.Duration
	CheckoutSessionTTL     time.Duration
	// CheckoutSessionKeep is how long a checkout session that expired
	// unused still answers as expired before it is purged (event's
	// checkoutpurge.go).
	CheckoutSessionKeep  time.Duration
	PaymentWebhookSecret string
	SMTPAddr             string
	SMTPUsername         string
	SMTPPassword         string
	MailFrom             string
	SnapshotEvery        int
	IdleTimeout          time.Duration
	LogLevel             string
	DevLogRetention      time.Duration
	DevLogPerUnit        int
	AuditRetention       time.Duration
	WebhookDisableAfter  int
	// WebhookAllowPrivate lifts the rule that webhook endpoints be https
	// on public addresses (decisions §23), for development and tests.
	WebhookAllowPrivate bool
	// StorefrontOpenOrdersPerIP and StorefrontOpenSessionsPerIP are the
	// hold limits per (publishable key, client IP) and event (decisions
	// §22): open orders (10) and unused checkout sessions (20); 0 off.
	StorefrontOpenOrdersPerIP   int
	StorefrontOpenSessionsPerIP int

	// Connection and abuse bounds of the HTTP server (see http.Config).
	StorefrontCatalogIPPerMinute int
	AuthFailuresPerMinute        int
	MaxConns                     int // 0: from the file descriptor limit
	MaxConnsPerIP                int
	HTTPReadTimeout              time.Duration
	HTTPIdleTimeout              time.Duration

	// Payments: the provider of paid orders, PaymentSandbox (the default)
	// or PaymentStripe. Stripe's settings (its secrets print masked in
	// String, %v, %#v and slog) matter only for PaymentStripe, which
	// refuses to start without the secret key and webhook secret.
	PaymentProvider string
	Stripe          stripe.Config

	// Cluster mode (decisions §15): empty ClusterPeers runs the single
	// node on Pebble; else the node joins an embedded NATS JetStream
	// cluster and keeps its event log there.
	NodeName    string // unique in the cluster
	ClusterAddr string // this node's cluster listen host:port
	// ClusterForwardAddr is where the node takes forwarded requests over
	// TCP (node.Config.ForwardAddr: empty for the cluster address's
	// host and any port, "off" for NATS only).
	ClusterForwardAddr string
	ClusterPeers       string // comma-separated cluster addresses of all nodes
	ClusterReplicas    int    // replicas of each event stream
	// ClusterShards is how many streams the events are spread over, fixed
	// when the cluster is made (node.Config.Shards).
	ClusterShards int
	// ClusterSnapshotTailMax bounds the changes after an event's last
	// snapshot in cluster mode, the tail a failover replays (0: the
	// interval grows with the event, as on a single node).
	ClusterSnapshotTailMax int
	// ClusterSettleLag is how many messages of its shard an event may hold
	// the log's trim back before the trimmer settles it (snapshot kept
	// twice, log trimmed through it); ClusterSettleSmall the records of an
	// event settled even while it still changes (see node.Config).
	ClusterSettleLag   int
	ClusterSettleSmall int

	// Wallet: the buyer's Apple Wallet and Google Wallet passes
	// (decisions §21); empty: the pass page offers the PDF alone.
	Wallet WalletConfig

	// Logger receives the service's log; nil: text lines on stderr at
	// LogLevel.
	Logger *slog.Logger
	// Tune, when set, adjusts the configuration of the parts Main builds
	// before they start (tests shorten the webhook backoff with it).
	Tune *Tuning
}

// Tuning holds settings no flag sets: the parts' own knobs, which tests
// shorten. A zero field keeps the part's default.
type Tuning struct {
	// Store adjusts the Pebble options (the benchmarks measure NoSync).
	Store    func(*persistence.Options)
	Webhooks func(*webhooks.Config)
	Mail     func(*mail.Config)
	Actors   func(*actors.Config)
	HTTP     func(*thttp.Config)
	Console  func(*console.Config)
	// Wallet adjusts the wallets (tests put doubles of APNs and the
	// Google Wallet API in).
	Wallet func(*wallet.Config)
	// Cluster adjusts the cluster node's configuration (tests make the
	// trimmer look every 200 ms, or put every event on one shard).
	Cluster func(*node.Config)
	// AskTimeout bounds how long a caller waits for an actor's answer
	// (0: the actors' default, 10 s). The bench seeder raises it: an
	// actor loading a copied log of a million changes on a busy machine
	// answers its first ask after minutes.
	AskTimeout time.Duration
}

// Payment providers (TICKETD_PAYMENT_PROVIDER).
const (
	PaymentSandbox = "sandbox"
	PaymentStripe  = "stripe"
)

// DefaultConfig returns the settings of `ticketd serve` without flags.
func DefaultConfig() Config {
	return Config{
		Addr:                   "127.0.0.1:8080",
		DataDir:                "./data",
		RateLimitPerMinute:     thttp.DefaultRateLimitPerMinute,
		StorefrontKeyPerMinute: thttp.DefaultStorefrontKeyLimitPerMinute,
		StorefrontIPPerMinute:  thttp.DefaultStorefrontIPLimitPerMinute,
		DevicePerMinute:        600,
		OrderHold:              15 * time.Minute,
		CheckoutSessionTTL:     24 * time.Hour,
		CheckoutSessionKeep:    24 * time.Hour,
		MailFrom:               "tickets@localhost",
		SnapshotEvery:          50_000,
		IdleTimeout:            10 * time.Minute,
		LogLevel:               "info",
		DevLogRetention:        7 * 24 * time.Hour,
		DevLogPerUnit:          5000,
		AuditRetention:         90 * 24 * time.Hour,
		WebhookDisableAfter:    10,
		PaymentProvider:        PaymentSandbox,
		ClusterReplicas:        3,
		ClusterShards:          node.DefaultShards,
		ClusterSnapshotTailMax: settle.SnapshotTailMax,
		ClusterSettleLag:       10_000,
		ClusterSettleSmall:     10_000,

		StorefrontCatalogIPPerMinute: thttp.DefaultStorefrontCatalogIPLimitPerMinute,
		// The hold limits (decisions §22).
		StorefrontOpenOrdersPerIP:   10,
		StorefrontOpenSessionsPerIP: 20,
		AuthFailuresPerMinute:       thttp.DefaultAuthFailuresPerMinute,
		MaxConnsPerIP:               1024,
		HTTPReadTimeout:             15 * time.Second,
		HTTPIdleTimeout:             60 * time.Second,
	}
}

// Validate checks a parsed configuration and fills derived defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("app: addr: must not be empty"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("app: data-dir: must not be empty"))
	}
	if err := checkDebugAddr(c.DebugAddr); err != nil {
		errs = append(errs, err)
	}
	// On port 0 the base URL is known once Open has bound the listener.
	if c.BaseURL == "" && !strings.HasSuffix(c.Addr, ":0") {
		c.BaseURL = "http://" + c.Addr
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.BaseURL != "" && !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		errs = append(errs, errors.New("app: base-url: must start with http:// or https://"))
	}
	for name, v := range map[string]int{
		"rate-limit-per-minute":           c.RateLimitPerMinute,
		"storefront-key-limit-per-minute": c.StorefrontKeyPerMinute,
		"storefront-ip-limit-per-minute":  c.StorefrontIPPerMinute,
		"device-limit-per-minute":         c.DevicePerMinute,

		"storefront-catalog-ip-limit-per-minute": c.StorefrontCatalogIPPerMinute,
		"auth-failures-per-minute":               c.AuthFailuresPerMinute,
		"max-conns":                              c.MaxConns,
		"max-conns-per-ip":                       c.MaxConnsPerIP,
		"storefront-open-orders-per-ip":          c.StorefrontOpenOrdersPerIP,
		"storefront-open-sessions-per-ip":        c.StorefrontOpenSessionsPerIP,
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
	if c.CheckoutSessionKeep <= 0 {
		errs = append(errs, errors.New("checkout-session-keep: must be positive"))
	}
	if c.SnapshotEvery <= 0 {
		errs = append(errs, errors.New("snapshot-every: must be positive"))
	}
	if c.ClusterSnapshotTailMax < 0 {
		errs = append(errs, errors.New("cluster-snapshot-tail-max: must not be negative"))
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
	errs = append(errs, c.validatePayments())
	if c.Clustered() {
		if _, err := c.clusterConfig(); err != nil {
			errs = append(errs, err)
		}
		// A token generated per node would be another on every node.
		if c.AdminToken == "" {
			errs = append(errs, errors.New("app: cluster mode needs the admin token set (TICKETD_ADMIN_TOKEN, the same on every node)"))
		}
	}
	return errors.Join(errs...)
}

// validatePayments checks the payment provider's settings; its errors name
// the environment variable at fault, never a secret's value.
func (c *Config) validatePayments() error {
	switch c.PaymentProvider {
	case "", PaymentSandbox:
		c.PaymentProvider = PaymentSandbox
		return nil
	case PaymentStripe:
		sc := c.Stripe.WithDefaults()
		if err := sc.Validate(); err != nil {
			return fmt.Errorf("app: payment-provider stripe (TICKETD_PAYMENT_PROVIDER=stripe) cannot start: %w", err)
		}
		return nil
	}
	return fmt.Errorf("app: payment-provider: must be %s or %s", PaymentSandbox, PaymentStripe)
}

// Clustered reports whether the node runs in cluster mode.
func (c *Config) Clustered() bool { return strings.TrimSpace(c.ClusterPeers) != "" }

// clusterConfig is the cluster block as the cluster package takes it.
func (c *Config) clusterConfig() (node.Config, error) {
	var peers []string
	for _, p := range strings.Split(c.ClusterPeers, ",") {
		if p = strings.TrimSpace(p); p != "" {
			peers = append(peers, p)
		}
	}
	cc := node.Config{NodeName: c.NodeName, Addr: c.ClusterAddr, ForwardAddr: c.ClusterForwardAddr, Peers: peers, Replicas: c.ClusterReplicas, Shards: c.ClusterShards,
		SettleLag: c.ClusterSettleLag, SettleSmall: c.ClusterSettleSmall, DataDir: c.DataDir, Logger: c.Logger}
	if c.Tune != nil && c.Tune.Cluster != nil {
		c.Tune.Cluster(&cc)
	}
	if len(peers) < cc.Replicas {
		// A cluster smaller than the default replica count keeps a copy on
		// every node.
		cc.Replicas = len(peers)
	}
	err := cc.Validate()
	return cc, err
}
