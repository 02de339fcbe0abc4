package http

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// TestReadyzFollowsTheStore serves /healthz and /readyz over a real store
// on a fault-injecting filesystem: ready while writes are durable, 503
// with reason STORAGE_UNAVAILABLE once a WAL sync failed, while /healthz
// stays 200.
func TestReadyzFollowsTheStore(t *testing.T) {
	ffs := persistence.NewFaultFS(vfs.Default)
	store, err := persistence.Open(persistence.Options{Dir: t.TempDir(), FS: ffs, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	sys, err := actors.Open(actors.Config{Event: event.Config{BaseURL: "http://x", OrderHold: time.Minute, CheckoutSessionTTL: time.Hour}},
		store, snapshots.New(store, 2))
	require.NoError(t, err)
	h := &harness{t: t, auth: newFakeAuth(), gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := NewServer(cfg, h.auth, toyRoutes(h))
	require.NoError(t, err)
	registerHealth(srv, sys)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = sys.Close()
		_ = store.Close()
	})
	base := "http://" + ln.Addr().String()
	get := func(path string) (int, map[string]any) {
		res, err := nethttp.Get(base + path)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m), "%s", body)
		return res.StatusCode, m
	}

	code, _ := get("/readyz")
	require.Equal(t, 200, code)
	code, _ = get("/healthz")
	require.Equal(t, 200, code)

	ffs.FailSyncs(syscall.EIO)
	_, err = sys.CreateUnit(context.Background(), "after the fault")
	require.ErrorIs(t, err, actors.ErrUnavailable, "the write whose sync failed is not acknowledged")
	require.ErrorIs(t, err, persistence.ErrFailed)

	code, m := get("/readyz")
	require.Equal(t, 503, code)
	e := m["error"].(map[string]any)
	require.Equal(t, "UNAVAILABLE", e["status"])
	require.Equal(t, "STORAGE_UNAVAILABLE", e["reason"])
	code, _ = get("/healthz")
	require.Equal(t, 200, code, "the process still runs")

	status, env, _ := errorResponse(err)
	require.Equal(t, 503, status)
	require.Equal(t, "STORAGE_UNAVAILABLE", env.Error.Reason)
}
