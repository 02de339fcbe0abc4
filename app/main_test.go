package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
)

func testConfig(dir string) app.Config {
	cfg := app.DefaultConfig()
	cfg.Addr, cfg.DataDir = "127.0.0.1:0", dir
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return cfg
}

func call(t *testing.T, method, url, token string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestMainOpensOnAFreePortAndKeepsItsState: on port 0 the URL (and the
// base URL handed out in checkout URLs) is the bound address; the first
// start bootstraps a unit and keys and keeps the admin token; a second
// start on the same dir bootstraps nothing and serves the same data.
func TestMainOpensOnAFreePortAndKeepsItsState(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	m := app.NewMain(testConfig(dir), &out)
	require.NoError(t, m.Open())
	assert.True(t, strings.HasPrefix(m.URL, "http://127.0.0.1:"), m.URL)
	assert.NotContains(t, m.URL, ":0")
	assert.Contains(t, out.String(), "ticketd listening on "+m.URL+"\n")
	require.NotNil(t, m.Bootstrap)
	sk := m.Bootstrap.SecretKey

	st, ev := call(t, "POST", m.URL+"/v1/events", sk)
	require.Equal(t, 400, st, "an event needs a name: %v", ev)
	st, doc := call(t, "GET", m.URL+"/openapi.json", "")
	require.Equal(t, 200, st)
	assert.Equal(t, "3.1.0", doc["openapi"])
	admin, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	require.NoError(t, err)
	st, units := call(t, "GET", m.URL+"/admin/v1/business-units", strings.TrimSpace(string(admin)))
	require.Equal(t, 200, st)
	require.Len(t, units["data"], 1)
	require.NoError(t, m.Close())

	m2 := app.NewMain(testConfig(dir), io.Discard)
	require.NoError(t, m2.Open())
	defer m2.Close()
	assert.Nil(t, m2.Bootstrap, "the unit of the first start is kept")
	st, _ = call(t, "GET", m2.URL+"/v1/events", sk)
	assert.Equal(t, 200, st, "the first start's key still works")
}

// TestMainRefusesABadConfig: Open validates the configuration.
func TestMainRefusesABadConfig(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.OrderHold = 0
	err := app.NewMain(cfg, io.Discard).Open()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "order-hold")
}
