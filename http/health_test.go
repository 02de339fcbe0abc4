package http

import (
	"context"
	"encoding/json"
	"io"
	nethttp "net/http"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/ask"
	"ticketd/persistence"
)

// TestReadyzFollowsTheStore serves /healthz and /readyz over a real store
// on a fault-injecting filesystem: ready while writes are durable, 503
// with reason STORAGE_UNAVAILABLE once a WAL sync failed, while /healthz
// stays 200.
func TestReadyzFollowsTheStore(t *testing.T) {
	ffs := persistence.NewFaultFS(vfs.Default)
	sys, _ := openSystem(t, ffs)
	base := serveHarness(t, nil, func(srv *Server) { RegisterHealth(srv, readiness{sys}) }).base
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
	_, err := sys.CreateUnit(context.Background(), "after the fault")
	require.ErrorIs(t, err, ask.ErrUnavailable, "the write whose sync failed is not acknowledged")
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

// readiness is the actor system's answer to /readyz (ops.Ops's, without
// the rest of the layer).
type readiness struct{ sys *actors.System }

func (r readiness) StoreErr() error { return r.sys.Store().Err() }
func (r readiness) Ready() error    { return r.sys.Ready() }
