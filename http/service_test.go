package http_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/openapi"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// service is the real ticketd stack for black-box tests: Pebble in a temp
// dir, the actor system, the HTTP server on a loopback port.
type service struct {
	t      testing.TB
	URL    string
	Admin  string // admin token
	Sys    *actors.System
	Store  *persistence.Store
	Config thttp.Config
	srv    *thttp.Server
	dir    string
}

// unit is a business unit with one key of each type.
type unit struct {
	ID          string
	Secret      string
	Publishable string
}

// serviceOption tweaks a service's configuration before it starts.
type serviceOption func(hc *thttp.Config, ac *actors.Config)

// startService starts the whole service. Rate limits are off unless an
// option sets them.
func startService(t testing.TB, opts ...serviceOption) *service {
	t.Helper()
	s := &service{t: t, Admin: "adm_test_token_0123456789", dir: t.TempDir()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.URL = "http://" + ln.Addr().String()
	s.Config = thttp.Config{
		Addr:       ln.Addr().String(),
		BaseURL:    s.URL,
		AdminToken: s.Admin,
	}
	ac := actors.Config{Event: event.Config{BaseURL: s.URL, OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour}}
	for _, o := range opts {
		o(&s.Config, &ac)
	}
	s.Store, err = persistence.Open(persistence.Options{Dir: s.dir})
	require.NoError(t, err)
	s.Sys, err = actors.Open(ac, s.Store, snapshots.New(s.Store, 2))
	require.NoError(t, err)
	s.srv, err = thttp.New(s.Config, thttp.Deps{System: s.Sys, WebhookSecret: "whsec_test"})
	require.NoError(t, err)
	require.NoError(t, openapi.RegisterDocs(s.srv, s.srv.Routes(), openapi.DocInfo{Version: thttp.CurrentVersion}))
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(ctx)
		_ = s.Sys.Close()
		_ = s.Store.Close()
	})
	return s
}

// newUnit creates a business unit with a secret and a publishable key
// (origins as given) straight through the actor system.
func (s *service) newUnit(name string, origins ...string) unit {
	s.t.Helper()
	ctx := context.Background()
	u, err := s.Sys.CreateUnit(ctx, name)
	require.NoError(s.t, err)
	_, sk, err := s.Sys.CreateKey(ctx, actors.NewKeySpec{UnitID: u.ID, Type: directory.Secret, Version: thttp.CurrentVersion})
	require.NoError(s.t, err)
	_, pk, err := s.Sys.CreateKey(ctx, actors.NewKeySpec{UnitID: u.ID, Type: directory.Publishable, Origins: origins, Version: thttp.CurrentVersion})
	require.NoError(s.t, err)
	return unit{ID: u.ID, Secret: sk, Publishable: pk}
}
