package app_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
)

// TestDebugListenerServesProfilesOnLoopback: with DebugAddr the running
// service's heap profile is served there (not on the API's port), and the
// listener is gone after Close.
func TestDebugListenerServesProfilesOnLoopback(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.DebugAddr = "127.0.0.1:0"
	m := app.NewMain(cfg, io.Discard)
	require.NoError(t, m.Open())
	addr := m.DebugAddr()
	require.NotEmpty(t, addr)
	require.NotContains(t, addr, ":0")

	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(body), "heap profile:")
	assert.Contains(t, string(body), "ticketd/", "the profile names the service's own code")

	st, _ := call(t, "GET", m.URL+"/debug/pprof/heap", "")
	assert.Equal(t, 404, st, "the API's port serves no profiles")

	require.NoError(t, m.Close())
	c := http.Client{Timeout: 2 * time.Second}
	_, err = c.Get("http://" + addr + "/debug/pprof/")
	require.Error(t, err, "closed with the service")
}

// TestDebugAddrMustBeLoopback: the profiles have no authentication, so
// only a loopback address is accepted, with a sentence saying why.
func TestDebugAddrMustBeLoopback(t *testing.T) {
	for _, ok := range []string{"", "127.0.0.1:6060", "[::1]:6060", "localhost:6060", "127.0.0.2:0"} {
		cfg := testConfig(t.TempDir())
		cfg.DebugAddr = ok
		require.NoError(t, cfg.Validate(), ok)
	}
	for _, bad := range []string{"0.0.0.0:6060", ":6060", "10.0.0.5:6060", "example.com:6060", "6060"} {
		cfg := testConfig(t.TempDir())
		cfg.DebugAddr = bad
		err := cfg.Validate()
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "debug-addr", bad)
		if bad != "6060" {
			assert.Contains(t, err.Error(), "loopback", bad)
		}
	}
}
