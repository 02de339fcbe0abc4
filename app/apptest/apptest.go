// Package apptest starts the real service, app.Main, for black-box tests:
// Pebble in t.TempDir(), every part app wires (durable idempotency, the
// mail queue without an SMTP server, the webhook deliverer, the audit
// log, the refund resumer), the HTTP server on a free loopback port.
//
// Rate limits and the failed-authentication budget are off (DefaultLimits
// turns them on), webhooks may go to loopback receivers
// (WebhookAllowPrivate) and the log is kept in memory, its last lines
// printed when the test fails, unless an Option sets another logger (with
// LogEnv set, it goes to standard error too). The service closes when the
// test ends. A Service is safe for
// concurrent use by parallel subtests.
package apptest

import (
	"context"
	"io"
	"log/slog"
	nethttp "net/http"
	"os"
	"testing"

	"ticketd/actors"
	"ticketd/app"
	"ticketd/directory"
	thttp "ticketd/http"
)

// AdminToken is the admin token of a started service unless an Option
// sets another.
const AdminToken = "adm_test_token_0123456789"

// WebhookSecret is the sandbox payment provider's webhook secret of a
// started service, so tests can sign webhooks.
const WebhookSecret = "whsec_test"

// Service is a running app.Main.
type Service struct {
	t testing.TB
	// URL is the base URL (http://127.0.0.1:<port>).
	URL string
	// Admin is the admin token.
	Admin string
	// Main is the running service; Sys its actor system.
	Main *app.Main
	Sys  *actors.System
	// Config is the configuration it was opened with.
	Config app.Config
}

// Unit is a business unit with one key of each type.
type Unit struct {
	ID          string
	Secret      string
	Publishable string
}

// Option adjusts the configuration before the service opens.
type Option func(c *app.Config)

// DefaultLimits keeps every default limit of the service on, as `ticketd
// serve` runs: the request budgets and the failed-authentication budget,
// which Start otherwise turns off. Tests of what the limits do to real
// traffic use it.
func DefaultLimits() Option {
	return func(c *app.Config) {
		d := app.DefaultConfig()
		c.RateLimitPerMinute, c.StorefrontKeyPerMinute, c.StorefrontIPPerMinute = d.RateLimitPerMinute, d.StorefrontKeyPerMinute, d.StorefrontIPPerMinute
		c.StorefrontCatalogIPPerMinute, c.AuthFailuresPerMinute = d.StorefrontCatalogIPPerMinute, d.AuthFailuresPerMinute
	}
}

// LogEnv names the environment variable that sends a started service's
// log to standard error too, at the level it holds (debug, info, warn,
// error), each line with its node's name: what the nodes did during a
// flaky run (go test -v keeps it beside the test's output). Unset, the
// log is kept in memory alone (the tail a failed test prints).
const LogEnv = "TICKETD_TEST_LOG"

// envLogger is the service's logger into tail, and to standard error at
// LogEnv's level when it is set.
func envLogger(nodeName string, tail io.Writer) *slog.Logger {
	var level slog.Level
	v := os.Getenv(LogEnv)
	if v == "" || level.UnmarshalText([]byte(v)) != nil {
		return slog.New(slog.NewTextHandler(tail, nil))
	}
	l := slog.New(slog.NewTextHandler(io.MultiWriter(tail, os.Stderr), &slog.HandlerOptions{Level: level}))
	if nodeName != "" {
		l = l.With("node", nodeName)
	}
	return l
}

// Start opens app.Main on a temporary data dir and a loopback port and
// closes it when t ends.
func Start(t testing.TB, opts ...Option) *Service {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = AdminToken
	cfg.PaymentWebhookSecret = WebhookSecret
	// Tests deliver webhooks to loopback receivers (httptest).
	cfg.WebhookAllowPrivate = true
	cfg.RateLimitPerMinute, cfg.StorefrontKeyPerMinute, cfg.StorefrontIPPerMinute = 0, 0, 0
	cfg.StorefrontCatalogIPPerMinute, cfg.AuthFailuresPerMinute, cfg.DevicePerMinute = 0, 0, 0
	tail := &logTail{}
	def := slog.New(slog.NewTextHandler(tail, nil))
	cfg.Logger = def
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Logger == def {
		cfg.Logger = envLogger(cfg.NodeName, tail)
	}
	m := app.NewMain(cfg, io.Discard)
	if err := m.Open(); err != nil {
		t.Fatalf("apptest: open: %v", err)
	}
	s := &Service{t: t, URL: m.URL, Admin: cfg.AdminToken, Main: m, Sys: m.System(), Config: cfg}
	// Registered first, so it runs last (after the close below): a failed
	// test prints the end of the service's log.
	t.Cleanup(func() {
		if t.Failed() {
			if out := tail.String(); out != "" {
				t.Logf("apptest: the last %d lines of the log of %s (%s):\n%s", logTailLines, s.URL, cfg.NodeName, out)
			}
		}
	})
	t.Cleanup(func() {
		if s.Main == nil {
			return // a failed Restart
		}
		// net/http's default pool keeps connections to the service open;
		// close them first, since the server's Shutdown waits for open
		// keep-alive connections.
		if tr, ok := nethttp.DefaultTransport.(*nethttp.Transport); ok {
			tr.CloseIdleConnections()
		}
		if err := s.Main.Close(); err != nil {
			t.Errorf("apptest: close: %v", err)
		}
	})
	return s
}

// Restart closes the service and opens it again on the same data
// directory and configuration (a new loopback port: URL changes). It is
// not safe to call while requests are in flight.
func (s *Service) Restart() {
	s.t.Helper()
	if tr, ok := nethttp.DefaultTransport.(*nethttp.Transport); ok {
		tr.CloseIdleConnections()
	}
	if err := s.Main.Close(); err != nil {
		s.t.Fatalf("apptest: close before restart: %v", err)
	}
	s.Main = nil
	cfg := s.Config
	cfg.BaseURL = "" // the new port's
	m := app.NewMain(cfg, io.Discard)
	if err := m.Open(); err != nil {
		s.t.Fatalf("apptest: reopen: %v", err)
	}
	s.Main, s.URL, s.Sys = m, m.URL, m.System()
}

// NewUnit creates a business unit with a secret and a publishable key
// (origins as given) straight through the actor system.
func (s *Service) NewUnit(name string, origins ...string) Unit {
	s.t.Helper()
	ctx := context.Background()
	u, err := s.Sys.CreateUnit(ctx, name)
	if err != nil {
		s.t.Fatalf("apptest: create unit: %v", err)
	}
	_, sk, err := s.Sys.CreateKey(ctx, actors.NewKeySpec{UnitID: u.ID, Type: directory.Secret, Version: thttp.CurrentVersion})
	if err != nil {
		s.t.Fatalf("apptest: create key: %v", err)
	}
	_, pk, err := s.Sys.CreateKey(ctx, actors.NewKeySpec{UnitID: u.ID, Type: directory.Publishable, Origins: origins, Version: thttp.CurrentVersion})
	if err != nil {
		s.t.Fatalf("apptest: create key: %v", err)
	}
	return Unit{ID: u.ID, Secret: sk, Publishable: pk}
}
