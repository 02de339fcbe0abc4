package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"ticketd/actors"
	"ticketd/audit"
	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"
	"ticketd/cluster/routing"
	"ticketd/cluster/settle"
	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/api"
	"ticketd/http/console"
	"ticketd/http/devlog"
	"ticketd/internal/logredact"
	"ticketd/mail"
	"ticketd/ops"
	"ticketd/payments"
	"ticketd/payments/stripe"
	"ticketd/persistence"
	"ticketd/snapshots"
	"ticketd/wallet"
	"ticketd/webhooks"
)

// Main is the running service: the store, the actor system, the mail and
// webhook deliverers and the HTTP server. cmd/ticketd, the end-to-end and
// HTTP tests and the benchmarks all run this one wiring.
type Main struct {
	cfg Config
	out io.Writer
	log *slog.Logger

	store *persistence.Store
	sys   *actors.System
	srv   *thttp.Server
	ln    net.Listener
	done  chan error
	debug *debugListener // the pprof listener on Config.DebugAddr; nil when none
	idem  *thttp.DurableIdempotency
	mail  *mail.Mailer      // delivers the owed mail
	hooks *webhooks.Service // webhook endpoints; delivers the webhook queue
	audit *audit.Log
	// refunds settles refunds; its resumer runs until Close
	refunds *payments.Refunds
	// checkouts closes Stripe's sessions of orders that stopped holding
	// (nil with the sandbox)
	checkouts *payments.Closer
	// ops is the application layer every front door asks
	ops  *ops.Ops
	stop chan struct{} // closed by Close: ends background loops

	// Cluster mode only: the node, and the router that forwards requests
	// for events other nodes own.
	node   *node.Node
	router *routing.Router
	shared *clusterShared // see shareCluster

	// wallet is the buyer's wallet passes (nil until Open loads it).
	wallet atomic.Pointer[wallet.Service]

	// URL is the base URL once Open returned.
	URL string
	// Bootstrap holds the keys created on an empty data dir, else nil.
	Bootstrap *Bootstrap
}

// Bootstrap is what a first start creates so a newcomer can call the API.
type Bootstrap struct {
	UnitID         string
	SecretKey      string
	PublishableKey string
}

// NewMain returns a Main for cfg that prints its banner to out.
func NewMain(cfg Config, out io.Writer) *Main {
	log := cfg.Logger
	if log == nil {
		level := slog.LevelInfo
		_ = level.UnmarshalText([]byte(cfg.LogLevel))
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}
	// Every line of every part goes through this one handler, which cuts
	// out credentials (logredact: no path may write one, fasthttp's
	// included); the secrets of the configuration are cut out by value
	// too, whatever they look like.
	secrets := []string{cfg.AdminToken, cfg.PaymentWebhookSecret, cfg.SMTPPassword, cfg.Stripe.SecretKey}
	secrets = append(secrets, strings.Split(cfg.Stripe.WebhookSecret, ",")...)
	log = slog.New(logredact.New(log.Handler(), secrets...))
	return &Main{cfg: cfg, out: out, log: log}
}

// shutdownTimeout bounds Close, whatever state the service is in: a
// supervisor's stop (systemd's default TimeoutStopSec is 90 s, Kubernetes'
// grace period 30 s) must never need a SIGKILL.
const shutdownTimeout = 9 * time.Second

// faultGrace is how long the service keeps answering (503 for anything
// that needs the store) after a storage fault before it shuts down.
const faultGrace = time.Second

// System is the actor system of an open Main (tests seed and inspect
// state through it).
func (m *Main) System() *actors.System { return m.sys }

// Refunds is the refund workflow of an open Main (tests run its resumer).
func (m *Main) Refunds() *payments.Refunds { return m.refunds }

// Checkouts closes the hosted payment pages of orders that stopped
// holding (nil unless the provider is Stripe); tests run its passes.
func (m *Main) Checkouts() *payments.Closer { return m.checkouts }

// Audit is the audit log of an open Main (tests read what was recorded).
func (m *Main) Audit() *audit.Log { return m.audit }

// Ops is the application layer of an open Main (tests ask operations
// the way the front doors do).
func (m *Main) Ops() *ops.Ops { return m.ops }

// Store is the store of an open Main (the bench seeder counts an event's
// records and waits for its snapshots there; reads only).
func (m *Main) Store() *persistence.Store { return m.store }

// Server is the HTTP server of an open Main.
func (m *Main) Server() *thttp.Server { return m.srv }

// Run opens the service, serves until ctx is done, then shuts down
// gracefully: stop accepting, finish in-flight requests, flush the log.
// After a storage fault it shuts down the same way and returns the fault
// (fail-stop: the process exits non-zero and its supervisor restarts it,
// which recovers from the log; see package persistence).
func (m *Main) Run(ctx context.Context) error {
	if err := m.Open(); err != nil {
		return err
	}
	var fault error
	select {
	case <-ctx.Done():
	case err := <-m.done:
		if err != nil {
			_ = m.closeBounded()
			return fmt.Errorf("app: serve: %w", err)
		}
	case <-m.store.Failed():
		fault = m.store.Err()
		m.log.Error("storage fault: shutting down so that a restart recovers from the log; nothing acknowledged is lost",
			"err", fault)
		// A moment more of prompt 503s (and /readyz 503) lets load
		// balancers and probes see why, rather than only refused
		// connections; a stop signal cuts it short.
		select {
		case <-time.After(faultGrace):
		case <-ctx.Done():
		}
	}
	err := m.closeBounded()
	if fault != nil {
		return fmt.Errorf("storage fault: %w", fault)
	}
	return err
}

// closeBounded is Close with shutdownTimeout: past it, the parts still
// closing are left to the process exit (what was acknowledged is in the
// synced log already). In cluster mode Close first hands the node's
// shards over (routing.Router.Leave, at most routing.LeaveBound: as long
// as each taker reports progress, within routing.LeaveMax, then the
// quorum wait): the bound is that much longer. Cut at 9 s, a graceful
// stop whose taker was still building a big event's state exited
// mid-handover, and the event moved as after a loss: its writes stopped
// 18.5 s while a survivor loaded it (bench/results/20261129-moves2.md).
func (m *Main) closeBounded() error {
	timeout := shutdownTimeout
	if m.router != nil {
		timeout += routing.LeaveBound
	}
	done := make(chan error, 1)
	go func() { done <- m.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		m.log.Error("shutdown did not finish in time; exiting anyway", "timeout", timeout)
		return fmt.Errorf("shutdown: not finished after %s", timeout)
	}
}

// Open opens the data dir, starts the actors and listens. On an Addr with
// port 0 it binds a free port, and URL (and, unless set, the base URL) is
// the bound address.
func (m *Main) Open() error {
	if err := m.cfg.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(m.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("app: data dir: %w", err)
	}
	adminToken, adminNew, err := secretFile(m.cfg.DataDir, "admin-token", m.cfg.AdminToken, "adm_")
	if err != nil {
		return err
	}
	webhookSecret, _, err := secretFile(m.cfg.DataDir, "payment-webhook-secret", m.sandboxSecret(adminToken), "whsec_")
	if err != nil {
		return err
	}
	// The hosted pages sign their email-gate cookies with it: kept, so
	// devices stay remembered across restarts.
	pagesSecret, _, err := secretFile(m.cfg.DataDir, "pages-secret", "", "pgs_")
	if err != nil {
		return err
	}
	// Listen first: on port 0 the base URL, which the actors hand out in
	// checkout URLs, is known only once the port is bound.
	m.ln, err = net.Listen("tcp", m.cfg.Addr)
	if err != nil {
		return fmt.Errorf("app: listen: %w", err)
	}
	if m.cfg.DebugAddr != "" {
		if m.debug, err = startDebug(m.cfg.DebugAddr); err != nil {
			return err
		}
		m.log.Info("profiles of the running service (net/http/pprof)", "url", "http://"+m.debug.Addr()+"/debug/pprof/")
	}
	bound := "http://" + m.ln.Addr().String()
	if m.cfg.BaseURL == "" {
		m.cfg.BaseURL = bound
	}
	so := persistence.Options{Dir: m.cfg.DataDir, Logger: m.log}
	if t := m.cfg.Tune; t != nil && t.Store != nil {
		t.Store(&so)
	}
	m.store, err = persistence.Open(so)
	if err != nil {
		_ = m.ln.Close()
		return fmt.Errorf("app: open store: %w", err)
	}
	m.stop = make(chan struct{})
	mc := mail.Config{SMTPAddr: m.cfg.SMTPAddr, Username: m.cfg.SMTPUsername, Password: m.cfg.SMTPPassword,
		From: m.cfg.MailFrom, Logger: m.log,
		// A wallet configured wrongly stops the start below (openWallet).
		AppleWallet: m.cfg.Wallet.ApplePassTypeID != "", GoogleWallet: m.cfg.Wallet.GoogleIssuerID != ""}
	if t := m.cfg.Tune; t != nil && t.Mail != nil {
		t.Mail(&mc)
	}
	m.mail, err = mail.New(mc, m.store)
	if err != nil {
		m.closeBackend()
		return err
	}
	hc := webhooks.Config{Logger: m.log, DisableAfter: m.cfg.WebhookDisableAfter, AllowPrivate: m.cfg.WebhookAllowPrivate}
	if t := m.cfg.Tune; t != nil && t.Webhooks != nil {
		t.Webhooks(&hc)
	}
	m.hooks, err = webhooks.New(hc, m.store, nil)
	if err != nil {
		m.closeBackend()
		return err
	}
	m.audit = audit.New(m.store, m.cfg.AuditRetention, m.log)
	// The actors wake both deliverers (bound now: Close clears the fields).
	mailer, hooks := m.mail, m.hooks
	snaps := snapshots.New(m.store, 2)
	ac := actors.Config{
		Event: event.Config{
			BaseURL:             m.cfg.BaseURL,
			OrderHold:           m.cfg.OrderHold,
			CheckoutSessionTTL:  m.cfg.CheckoutSessionTTL,
			CheckoutSessionKeep: m.cfg.CheckoutSessionKeep,
			// 0 is off here; the core reads 0 as its default.
			OpenOrdersPerClient:   offIfZero(m.cfg.StorefrontOpenOrdersPerIP),
			OpenSessionsPerClient: offIfZero(m.cfg.StorefrontOpenSessionsPerIP),
		},
		SnapshotEvery: m.cfg.SnapshotEvery,
		IdleTimeout:   m.cfg.IdleTimeout,
		Logger:        m.log,
		// What a change owes is written by its owners, in its batch.
		Owed:         []actors.OwedWork{mail.Owed{Logger: m.log}, webhooks.Owed{Want: hooks.Subscribed}, payments.Owed{}},
		Links:        mail.Owed{Logger: m.log},
		OnOwed:       func() { mailer.Wake(); hooks.Wake() },
		OnPassChange: m.passChanged,
	}
	if m.cfg.Clustered() {
		if err := m.joinCluster(&ac); err != nil {
			m.closeBackend()
			return err
		}
	}
	if t := m.cfg.Tune; t != nil && t.AskTimeout > 0 {
		ac.AskTimeout = t.AskTimeout
	}
	if t := m.cfg.Tune; t != nil && t.Actors != nil {
		t.Actors(&ac)
	}
	m.sys, err = actors.Open(ac, m.store, snaps)
	if err != nil {
		m.closeBackend()
		return err
	}
	if m.router != nil {
		if err := m.router.Serve(m.sys); err != nil {
			m.closeBackend()
			return err
		}
	}
	if err := m.followCluster(); err != nil {
		m.closeBackend()
		return err
	}
	// A cluster's directory is read from its peers once they are up: its
	// first unit is made then (bootstrapCluster).
	if !m.cfg.Clustered() && len(m.sys.Directory().Units()) == 0 {
		if m.Bootstrap, err = bootstrap(m.sys); err != nil {
			m.closeBackend()
			return fmt.Errorf("app: bootstrap: %w", err)
		}
	}
	idem := m.idempotencyStore()
	hcfg := thttp.Config{
		Addr:                        m.cfg.Addr,
		BaseURL:                     m.cfg.BaseURL,
		AdminToken:                  adminToken,
		RateLimitPerMinute:          m.cfg.RateLimitPerMinute,
		StorefrontKeyLimitPerMinute: m.cfg.StorefrontKeyPerMinute,
		StorefrontIPLimitPerMinute:  m.cfg.StorefrontIPPerMinute,
		DeviceLimitPerMinute:        m.cfg.DevicePerMinute,
		TrustedProxies:              m.cfg.TrustedProxies,
		Idempotency:                 idem,
		Logger:                      m.log,

		StorefrontCatalogIPLimitPerMinute: m.cfg.StorefrontCatalogIPPerMinute,
		AuthFailuresPerMinute:             m.cfg.AuthFailuresPerMinute,
		MaxConns:                          m.cfg.MaxConns,
		MaxConnsPerIP:                     m.cfg.MaxConnsPerIP,
		ReadTimeout:                       m.cfg.HTTPReadTimeout,
		IdleTimeout:                       m.cfg.HTTPIdleTimeout,
	}
	if t := m.cfg.Tune; t != nil && t.HTTP != nil {
		t.HTTP(&hcfg)
	}
	// The sandbox provider delivers its webhooks to the service's own
	// listener, whatever the public base URL.
	sandbox := payments.NewSandbox(webhookSecret, m.cfg.BaseURL, loopbackURL(m.ln.Addr().String())+"/webhooks/payments/sandbox")
	m.refunds = payments.NewRefunds(m.sys, sandbox)
	var hosted *stripe.Provider
	if m.cfg.PaymentProvider == PaymentStripe {
		sc := m.cfg.Stripe
		sc.Logger = m.log
		if hosted, err = stripe.New(sc); err != nil {
			m.closeBackend()
			return err
		}
		m.refunds.WithHosted(stripe.Name, hosted)
		m.checkouts = payments.NewCloser(m.sys, hosted, m.log)
	}
	// The application layer: every door asks its operations, and it hands
	// them the services built above.
	oc := ops.Config{System: m.sys, Audit: m.audit, Sandbox: sandbox, Refunds: m.refunds, Checkouts: m.checkouts,
		Mail: m.mail, Webhooks: m.hooks, Logger: m.log}
	if hosted != nil {
		oc.Hosted = payments.NewHostedCheckout(hosted, m.log)
		if oc.Seen = m.sharedSeen(); oc.Seen == nil {
			oc.Seen = payments.NewSeen(m.store, stripe.Name)
		}
	}
	m.ops, err = ops.New(oc)
	if err != nil {
		m.closeBackend()
		return err
	}
	dlog := devlog.New(m.cfg.DevLogPerUnit, m.cfg.DevLogRetention)
	if err := m.openWallet(walletSecret(pagesSecret, m.pagesSharedSecret())); err != nil {
		m.closeBackend()
		return err
	}
	m.srv, err = api.New(hcfg, api.Deps{Ops: m.ops, Stripe: hosted,
		PagesSecret: pagesSecret, PagesSharedSecret: m.pagesSharedSecret(),
		DevLog: dlog, Cluster: m.clusterView(), Wallet: m.wallet.Load()})
	if err != nil {
		m.closeBackend()
		return err
	}
	if err := m.openConsole(adminToken, dlog); err != nil {
		m.closeBackend()
		return err
	}
	m.URL = m.cfg.BaseURL
	if strings.HasSuffix(m.cfg.Addr, ":0") {
		m.URL = bound
	}
	m.mail.Start()
	m.hooks.Start()
	m.done = make(chan error, 1)
	// The listener as a value: a Close right after Open clears m.ln.
	ln := m.ln
	go func() { m.done <- m.srv.Serve(ln) }()
	go m.resumeRefunds(m.stop)
	// The change feed keeps 30 days (decisions §20): older entries go.
	sys := m.sys // Close clears m.sys
	go m.periodic("change feed trim", "deleted", feedTrimEvery, m.stop, func(bool) (int, error) { return sys.TrimFeeds() })
	if m.checkouts != nil {
		go m.checkouts.Run(m.stop, checkoutCloseInterval)
		seen := payments.NewSeen(m.store, stripe.Name)
		go m.periodic("stripe event sweep", "forgotten", time.Hour, m.stop, func(bool) (int, error) { return seen.Sweep(time.Now()) })
	}
	m.banner(adminToken, adminNew, mc.SMTPAddr)
	return nil
}

// openConsole registers the console web app (/console) on the server,
// over the same actor system, audit log and refund workflow as the API.
func (m *Main) openConsole(adminToken string, dlog *devlog.Log) error {
	cc := console.DefaultConfig()
	cc.BaseURL, cc.AdminToken, cc.TrustedProxies, cc.Logger = m.cfg.BaseURL, adminToken, m.cfg.TrustedProxies, m.log
	cc.AdminTokenHint = "The admin token is in the file " + filepath.Join(m.cfg.DataDir, "admin-token") +
		" on the server (written at the first start, and printed then)."
	if m.cfg.AdminToken != "" {
		cc.AdminTokenHint = "The admin token is the value of TICKETD_ADMIN_TOKEN in the server's configuration."
	}
	if t := m.cfg.Tune; t != nil && t.Console != nil {
		t.Console(&cc)
	}
	ad, gd := m.wallet.Load().Describe()
	wallets := []console.WalletStatus{{ID: "apple", Name: "Apple Wallet", Configured: ad != "", Detail: ad},
		{ID: "google", Name: "Google Wallet", Configured: gd != "", Detail: gd}}
	con, err := console.New(cc, console.Deps{Ops: m.ops, Outbox: m.mail, DevLog: dlog,
		Wallets: wallets})
	if err != nil {
		return err
	}
	m.shareConsole(con)
	con.Register(m.srv)
	return nil
}

// banner tells whoever started the service what they need next, on every
// start: a restart on a kept data dir prints no keys, so it says where the
// admin token is and how to mint a key.
func (m *Main) banner(adminToken string, adminNew bool, smtpAddr string) {
	tokenPath := filepath.Join(m.cfg.DataDir, "admin-token")
	if adminNew {
		fmt.Fprintf(m.out, "  admin token:     %s  (generated; kept in %s)\n", adminToken, tokenPath)
	} else if m.cfg.AdminToken == "" {
		fmt.Fprintf(m.out, "  admin token:     kept in %s\n", tokenPath)
	}
	if b := m.Bootstrap; b != nil {
		fmt.Fprintf(m.out, "  business unit:   Default (%s)\n", b.UnitID)
		fmt.Fprintf(m.out, "  secret key:      %s  (shown once)\n", b.SecretKey)
		fmt.Fprintf(m.out, "  publishable key: %s\n", b.PublishableKey)
	}
	fmt.Fprintf(m.out, "  console:         %s/console  (sign in with the admin token)\n", m.URL)
	fmt.Fprintf(m.out, "  docs:            %s/docs  (storefront: %s/storefront/docs, admin: %s/admin/docs)\n", m.URL, m.URL, m.URL)
	unit := "UNIT_ID"
	if units := m.sys.Directory().Units(); len(units) > 0 {
		unit = units[0].ID
	}
	fmt.Fprintf(m.out, "  new key:         %s\n", m.adminCommand("keys create "+unit+" -type secret"))
	fmt.Fprintf(m.out, "                   (or -type publishable -origin https://... for a storefront; ticketd admin units list shows every unit)\n")
	if m.cfg.PaymentProvider == PaymentStripe {
		fmt.Fprintf(m.out, "  payments:        Stripe; its webhook endpoint is %s/webhooks/payments/stripe\n", m.cfg.BaseURL)
	}
	if smtpAddr == "" {
		// Otherwise ticket mail piles up unseen: nothing fails, nothing is sent.
		fmt.Fprintf(m.out, "  mail:            no SMTP server (-smtp-addr): ticket emails stay queued in the outbox, listed at GET %s/admin/v1/outbox\n", m.URL)
		fmt.Fprintf(m.out, "                   (read one as it would be sent: %s)\n", m.adminCommand("outbox preview ID"))
	}
	// The last line: scripts and tests wait for it.
	fmt.Fprintf(m.out, "ticketd listening on %s\n", m.URL)
}

// adminCommand is `ticketd admin args` as it must be typed to reach this
// server: the CLI assumes the default URL and data dir unless told.
func (m *Main) adminCommand(args string) string {
	var env []string
	if d := DefaultConfig(); m.URL != "http://"+d.Addr {
		env = append(env, "TICKETD_BASE_URL="+m.URL)
	}
	if m.cfg.AdminToken == "" && filepath.Clean(m.cfg.DataDir) != filepath.Clean(DefaultConfig().DataDir) {
		env = append(env, "TICKETD_DATA_DIR="+m.cfg.DataDir)
	}
	prog := m.cfg.Program
	if prog == "" {
		prog = "ticketd"
	}
	return strings.Join(append(env, prog+" admin "+args), " ")
}

// Close shuts down in order: HTTP (in-flight requests finish), actors
// (mailboxes drain, syncs complete), store.
func (m *Main) Close() error {
	var errs []error
	if m.router != nil {
		// A graceful stop hands this node's shards over first, as planned
		// moves (while the takers progress, at most routing.LeaveBound):
		// its events' writes pause
		// well under a second instead of waiting for a survivor to load
		// them after the shutdown. Meanwhile /readyz answers 503 and the
		// node serves on.
		m.router.Leave(context.Background())
	}
	if m.stop != nil {
		close(m.stop)
		m.stop = nil
	}
	if m.srv != nil {
		// In-flight requests are answered within seconds even after a
		// storage fault (the actors answer at once, or the store's
		// watchdog fails a stalled disk), so 3 s is plenty.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		errs = append(errs, m.srv.Shutdown(ctx))
		cancel()
	}
	m.closeBackend()
	if m.debug != nil {
		errs = append(errs, m.debug.close())
		m.debug = nil
	}
	return errors.Join(errs...)
}

// DebugAddr is the pprof listener's address (Config.DebugAddr with its
// port resolved); empty when there is none.
func (m *Main) DebugAddr() string {
	if m.debug == nil {
		return ""
	}
	return m.debug.Addr()
}

func (m *Main) closeBackend() {
	// A failed Open ends the loops it started too.
	if m.stop != nil {
		close(m.stop)
		m.stop = nil
	}
	if m.ln != nil {
		_ = m.ln.Close() // already closed once the server shut down
		m.ln = nil
	}
	if m.mail != nil {
		_ = m.mail.Close() // undelivered mail stays queued
		m.mail = nil
	}
	if m.router != nil {
		m.router.Close() // forwarded requests go to the event's next owner
		m.router = nil
	}
	m.closeShared()
	m.closeWallet()
	if m.sys != nil {
		_ = m.sys.Close()
		m.sys = nil
	}
	if m.node != nil {
		_ = m.node.Close()
		m.node = nil
	}
	if m.hooks != nil {
		_ = m.hooks.Close() // undelivered webhooks stay queued
		m.hooks = nil
	}
	if m.audit != nil {
		// After a storage fault the audit log cannot be written, and its
		// flush may be stuck in the store holding the log's lock: leave
		// it to the process exit.
		if m.store == nil || m.store.Err() == nil {
			if err := m.audit.Close(); err != nil {
				m.log.Error("close audit log", "err", err)
			}
		}
		m.audit = nil
	}
	if m.store != nil {
		if err := m.store.Close(); err != nil {
			m.log.Error("close store", "err", err)
		}
		m.store = nil
	}
}

// periodic runs job at once and then every interval until stop, logging
// what it did: the count under what, or its error.
func (m *Main) periodic(name, what string, interval time.Duration, stop <-chan struct{}, job func(first bool) (int, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for first := true; ; first = false {
		if n, err := job(first); err != nil {
			m.log.Error(name, what, n, "err", err)
		} else if n > 0 {
			m.log.Info(name, what, n)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// feedTrimEvery is how often the change feed's entries past their
// retention are deleted; reads treat them as gone at once anyway.
const feedTrimEvery = time.Hour

// sweepIdempotency deletes expired Idempotency-Key answers hourly.
func (m *Main) sweepIdempotency(stop <-chan struct{}) {
	m.periodic("idempotency sweep", "deleted", time.Hour, stop, func(bool) (int, error) { return m.idem.Sweep(time.Now()) })
}

// checkoutCloseInterval is how often the sessions of orders whose hold
// lapsed are expired at Stripe (a cancel asks for a pass at once).
const checkoutCloseInterval = 30 * time.Second

// refundResumeAge is how long a refund is pending before the periodic
// resumer takes it over from the request that started it (that request
// gives the provider refundTimeout, 15 s).
const refundResumeAge = time.Minute

// resumeRefunds finishes the refunds a crash left pending, at start (no
// request of this process is working on one yet), then every minute those
// pending for longer than refundResumeAge (an outcome that could not be
// recorded).
func (m *Main) resumeRefunds(stop <-chan struct{}) {
	m.periodic("refund resume", "settled", time.Minute, stop, func(first bool) (int, error) {
		if first {
			return m.refunds.Resume(0)
		}
		return m.refunds.Resume(refundResumeAge)
	})
}

func bootstrap(sys *actors.System) (*Bootstrap, error) {
	ctx := context.Background()
	u, err := sys.CreateUnit(ctx, "Default")
	if err != nil {
		return nil, err
	}
	return bootstrapKeys(ctx, sys, u.ID)
}

// bootstrapKeys creates the first secret and publishable keys of a unit.
func bootstrapKeys(ctx context.Context, sys *actors.System, unitID string) (*Bootstrap, error) {
	_, sk, err := sys.CreateKey(ctx, actors.NewKeySpec{UnitID: unitID, Type: directory.Secret, Name: "bootstrap", Version: thttp.CurrentVersion})
	if err != nil {
		return nil, err
	}
	_, pk, err := sys.CreateKey(ctx, actors.NewKeySpec{UnitID: unitID, Type: directory.Publishable, Name: "bootstrap",
		Origins: []string{"http://localhost:3000", "http://127.0.0.1:3000"}, Version: thttp.CurrentVersion})
	if err != nil {
		return nil, err
	}
	return &Bootstrap{UnitID: unitID, SecretKey: sk, PublishableKey: pk}, nil
}

// secretFile returns value when set; else the secret kept in dir/name,
// generating and keeping one (0600) on first use. fresh reports generation.
func secretFile(dir, name, value, prefix string) (secret string, fresh bool, err error) {
	if value != "" {
		return value, false, nil
	}
	path := filepath.Join(dir, name)
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", false, fmt.Errorf("app: read %s: %w", path, err)
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", false, err
	}
	secret = prefix + hex.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("app: write %s: %w", path, err)
	}
	return secret, true, nil
}

// loopbackURL is how the service reaches its own listener (the sandbox
// payment provider delivers webhooks there), whatever its public base URL.
func loopbackURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// joinCluster starts this node's member of the cluster and points the
// actors at its event log: the event records, and the index entries they
// owe, go to JetStream; the directory, the event index, the audit log and
// the idempotency keys go to replicated streams too (see shareCluster).
func (m *Main) joinCluster(ac *actors.Config) error {
	cc, err := m.cfg.clusterConfig()
	if err != nil {
		return err
	}
	cc.Logger = m.log
	m.node, err = node.Start(cc)
	if err != nil {
		return fmt.Errorf("app: join cluster: %w", err)
	}
	m.router = routing.NewRouter(m.node, thttp.EncodeAnswer)
	node := m.node
	clog := eventlog.NewLog(node, m.store)
	ac.Log = clog
	// Snapshots go to a replicated store too: a survivor that takes an
	// event over loads it from there and the log's tail.
	snaps := settle.NewSnapshots(clog)
	ac.Snapshots = snaps
	// The change feed's entries reach the owner's store alone: a new
	// owner imports them at its claim, before it serves a read.
	clog.ImportClaimed = snaps.Feeds.Import
	m.router.PrefetchFeed = snaps.Feeds.Prefetch
	// A failover replays the tail after the newest snapshot over the
	// network while the event's writes wait: bounded, not growing with
	// the event.
	ac.SnapshotTailMax = m.cfg.ClusterSnapshotTailMax
	// What an event owes (mail, webhooks, refunds) is sent by its owner.
	m.router.Own(clog, ac.OnOwed, m.hooks.Release)
	ac.Forward = m.router.Forward
	ac.Ready = func() error {
		if !node.Ready() {
			return errors.New("app: cluster node not ready")
		}
		return nil
	}
	m.shareCluster(ac)
	return nil
}

// Node is the cluster node of an open Main in cluster mode, else nil.
func (m *Main) Node() *node.Node { return m.node }

// clusterView is what the cluster admin routes read; nil on a single node.
func (m *Main) clusterView() api.Cluster {
	if m.node == nil {
		return nil
	}
	return clusterView{m.node, m.router}
}

type clusterView struct {
	node   *node.Node
	router *routing.Router
}

func (v clusterView) Nodes() []api.ClusterNode {
	ns := v.node.Nodes()
	out := make([]api.ClusterNode, len(ns))
	for i, n := range ns {
		out[i] = api.ClusterNode{Name: n.Name, Ready: n.Ready}
	}
	return out
}

func (v clusterView) Owner(ctx context.Context, eventID string) (string, error) {
	owner, err := v.router.EventOwner(ctx, eventID)
	if errors.Is(err, routing.ErrNoEvent) {
		return "", event.Errorf(event.NotFound, "event not found")
	}
	return owner, err
}

// offIfZero maps a configured limit where 0 is off to the event core's
// form, where 0 takes the default and a negative value is off.
func offIfZero(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
