package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/internal/adminctl"
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

// runPrinted runs a `ticketd admin` command line the banner printed (with
// its VAR=value prefix) through the real CLI and returns its exit status
// and output.
func runPrinted(t *testing.T, line string) (int, string) {
	t.Helper()
	env := map[string]string{}
	fields := strings.Fields(line)
	for len(fields) > 0 && strings.Contains(fields[0], "=") {
		k, v, _ := strings.Cut(fields[0], "=")
		env[k], fields = v, fields[1:]
	}
	require.GreaterOrEqual(t, len(fields), 2, line)
	require.Equal(t, []string{"ticketd", "admin"}, fields[:2], line)
	var out, errOut bytes.Buffer
	code := adminctl.Run(context.Background(), fields[2:], func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &out, &errOut)
	return code, out.String() + errOut.String()
}

// bannerLine returns the text after "label:" on the banner's line for it.
func bannerLine(t *testing.T, banner, label string) string {
	t.Helper()
	for _, l := range strings.Split(banner, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), label+":"); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("no %q line in the banner:\n%s", label, banner)
	return ""
}

// TestBannerOnFirstStartAndRestart: the first start prints the generated
// token and keys; a restart on the same data dir prints where the token is,
// the URL and the docs; both print a key-minting command that works as
// printed, and, without SMTP, that ticket mail stays in the outbox.
func TestBannerOnFirstStartAndRestart(t *testing.T) {
	dir := t.TempDir()
	var first bytes.Buffer
	m := app.NewMain(testConfig(dir), &first)
	require.NoError(t, m.Open())
	require.NotNil(t, m.Bootstrap)
	out := first.String()
	assert.Contains(t, out, "admin token:     adm_")
	assert.Contains(t, out, "secret key:      "+m.Bootstrap.SecretKey)
	assert.Contains(t, out, "publishable key: "+m.Bootstrap.PublishableKey)
	assert.Contains(t, out, "docs:            "+m.URL+"/docs  (storefront: "+m.URL+"/storefront/docs, admin: "+m.URL+"/admin/docs)")
	assert.Contains(t, out, "no SMTP server (-smtp-addr): ticket emails stay queued in the outbox, listed at GET "+m.URL+"/admin/v1/outbox")
	assert.Contains(t, out, "(read one as it would be sent: ")
	assert.Contains(t, out, "ticketd admin outbox preview ID)")
	newKey := bannerLine(t, out, "new key")
	assert.Contains(t, newKey, "ticketd admin keys create "+m.Bootstrap.UnitID+" -type secret")
	assert.True(t, strings.HasSuffix(out, "ticketd listening on "+m.URL+"\n"), "the last line, which scripts wait for")
	code, got := runPrinted(t, newKey)
	require.Equal(t, 0, code, got)
	assert.Contains(t, got, `"key": "sk_`, "the printed command mints a key")
	require.NoError(t, m.Close())

	// The restart, with a mail server this time.
	smtp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer smtp.Close()
	cfg := testConfig(dir)
	cfg.SMTPAddr = smtp.Addr().String()
	var again bytes.Buffer
	m2 := app.NewMain(cfg, &again)
	require.NoError(t, m2.Open())
	defer m2.Close()
	out = again.String()
	assert.Nil(t, m2.Bootstrap)
	assert.NotContains(t, out, "sk_", "no key is shown twice")
	assert.NotContains(t, out, "adm_", "nor the admin token")
	assert.Contains(t, out, "admin token:     kept in "+filepath.Join(dir, "admin-token"))
	assert.Contains(t, out, "docs:            "+m2.URL+"/docs  (storefront: "+m2.URL+"/storefront/docs, admin: "+m2.URL+"/admin/docs)")
	assert.NotContains(t, out, "no SMTP server")
	assert.True(t, strings.HasSuffix(out, "ticketd listening on "+m2.URL+"\n"), out)
	newKey = bannerLine(t, out, "new key")
	assert.Contains(t, newKey, "keys create "+m.Bootstrap.UnitID+" -type secret")
	code, got = runPrinted(t, newKey)
	require.Equal(t, 0, code, got)
	assert.Contains(t, got, `"key": "sk_`)
}

// TestBannerSaysTheConsoleAndTheProgramAsTyped: the banner prints the
// console's address, and its commands start with the program as it was
// started ("./bin/ticketd" from a checkout), so they work when pasted.
func TestBannerSaysTheConsoleAndTheProgramAsTyped(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Program = "./bin/ticketd"
	var out bytes.Buffer
	m := app.NewMain(cfg, &out)
	require.NoError(t, m.Open())
	defer m.Close()
	assert.Equal(t, m.URL+"/console  (sign in with the admin token)", bannerLine(t, out.String(), "console"))
	assert.Contains(t, bannerLine(t, out.String(), "new key"), "./bin/ticketd admin keys create ")
	res, err := http.Get(m.URL + "/")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, "/console/login", res.Request.URL.Path, "the root leads to the console (its sign-in page)")
}
