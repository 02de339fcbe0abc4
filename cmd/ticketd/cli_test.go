package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runBinary runs the built ticketd with args and env (nothing else from the
// test's environment besides PATH and HOME) and returns its exit status and
// output.
func runBinary(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), o.String(), e.String()
	}
	require.NoError(t, err)
	return 0, o.String(), e.String()
}

// TestCLIHelpVersionAndRefusals: help and version answer on stdout with
// status 0; a command line that misses something says what, exits 2 and
// sends nothing (the admin commands point at a server counting requests).
func TestCLIHelpVersionAndRefusals(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, `{"error":{"message":"not here"}}`, 404)
	}))
	defer srv.Close()
	env := []string{"TICKETD_BASE_URL=" + srv.URL, "TICKETD_ADMIN_TOKEN=adm_test"}
	for _, tc := range []struct {
		args       string
		code       int
		out, err   string // substrings of stdout and stderr
		notOnWire  bool   // refused before any request
		outIsEmpty bool
	}{
		{args: "", code: 2, err: "ticketd serve [flags]", notOnWire: true, outIsEmpty: true},
		{args: "-h", out: "ticketd version", notOnWire: true},
		{args: "--help", out: "ticketd admin <command>", notOnWire: true},
		{args: "help", out: "ticketd serve [flags]", notOnWire: true},
		{args: "help serve", out: "-smtp-addr string", notOnWire: true},
		{args: "help admin", out: "keys create UNIT_ID", notOnWire: true},
		{args: "serve -h", out: "($TICKETD_DATA_DIR)", notOnWire: true},
		{args: "serve --help", out: "-data-dir string", notOnWire: true},
		{args: "serve -nope", code: 2, err: "flag provided but not defined: -nope (ticketd serve -h lists the flags)", outIsEmpty: true, notOnWire: true},
		{args: "serve extra", code: 2, err: `unexpected argument "extra"`, notOnWire: true},
		{args: "version", out: "ticketd (devel) ", notOnWire: true}, // then the commit when stamped, and the Go version
		{args: "frob", code: 2, err: `unknown command "frob"`, notOnWire: true, outIsEmpty: true},
		{args: "admin -h", out: "units create NAME", notOnWire: true},
		{args: "admin help", out: "keys revoke KEY_ID", notOnWire: true},
		{args: "admin", code: 2, err: "missing a command: units, keys", notOnWire: true},
		{args: "admin keys", code: 2, err: "keys: missing a subcommand: create, list or revoke", notOnWire: true},
		{args: "admin keys create", code: 2, err: "keys create: missing -unit UNIT_ID", notOnWire: true, outIsEmpty: true},
		{args: "admin keys create -type publishable -origin https://a.example", code: 2, err: "keys create: missing -unit UNIT_ID", notOnWire: true},
		{args: "admin keys create bu_1 -type public", code: 2, err: `-type is secret or publishable, not "public"`, notOnWire: true},
		{args: "admin keys create bu_1 -expires-at tomorrow", code: 2, err: `-expires-at is not RFC 3339`, notOnWire: true},
		{args: "admin keys create bu_1 bu_2", code: 2, err: `keys create: unexpected argument "bu_2"`, notOnWire: true},
		{args: "admin keys list", code: 2, err: "keys list: missing -unit UNIT_ID", notOnWire: true},
		{args: "admin keys revoke", code: 2, err: "keys revoke: missing KEY_ID", notOnWire: true},
		{args: "admin keys rotate", code: 2, err: `unknown command "keys rotate"`, notOnWire: true},
		{args: "admin units create", code: 2, err: "units create: missing NAME", notOnWire: true},
		{args: "admin units list extra", code: 2, err: `units list: unexpected argument "extra"`, notOnWire: true},
		{args: "admin units create -bogus x", code: 2, err: "flag provided but not defined: -bogus", notOnWire: true},
		{args: "admin get", code: 2, err: "get: missing PATH", notOnWire: true},
		{args: "admin patch /admin/v1/x", code: 2, err: "patch: missing the JSON body", notOnWire: true},
		{args: "admin post /admin/v1/x {nope", code: 2, err: "post: the body is not JSON", notOnWire: true},
		// A call the server refuses: status 1 and the envelope on stdout.
		{args: "admin keys list bu_1", code: 1, out: "not here", err: "GET /admin/v1/business-units/bu_1/api-keys: 404"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			before := requests.Load()
			code, out, errOut := runBinary(t, env, strings.Fields(tc.args)...)
			assert.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, tc.out)
			assert.Contains(t, errOut, tc.err)
			if tc.code == 0 {
				assert.Empty(t, errOut, "help and version go to stdout")
			}
			if tc.outIsEmpty {
				assert.Empty(t, out)
			}
			if tc.notOnWire {
				assert.Equal(t, before, requests.Load(), "nothing is sent")
			} else {
				assert.Greater(t, requests.Load(), before)
			}
		})
	}
}

// TestCLIAdminWithPositionalNames: against a real server, the admin
// commands take the unit name, unit id and key id as names, with flags
// before or after them, and read the token from the data dir.
func TestCLIAdminWithPositionalNames(t *testing.T) {
	dataDir := t.TempDir()
	p := start(t, dataDir)
	env := []string{"TICKETD_BASE_URL=" + p.base, "TICKETD_DATA_DIR=" + dataDir}
	admin := func(args ...string) map[string]any {
		t.Helper()
		code, out, errOut := runBinary(t, env, append([]string{"admin"}, args...)...)
		require.Equal(t, 0, code, "%v\nstdout:\n%s\nstderr:\n%s", args, out, errOut)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), out)
		return m
	}
	unit := admin("units", "create", "Acme Events")
	assert.Equal(t, "Acme Events", unit["name"])
	unitID := unit["id"].(string)

	key := admin("keys", "create", "-type", "publishable", unitID, "-origin", "https://shop.acme.example", "-name", "shop")
	assert.Equal(t, "publishable", key["type"])
	assert.Equal(t, []any{"https://shop.acme.example"}, key["origins"])
	keyID := key["id"].(string)
	secret := admin("keys", "create", "-unit", unitID)
	assert.Equal(t, "secret", secret["type"], "secret is the default type")

	list := admin("keys", "list", unitID)
	assert.Len(t, list["data"], 2)
	revoked := admin("keys", "revoke", keyID)
	assert.NotEmpty(t, revoked["revokedAt"], revoked)
	units := admin("get", "/admin/v1/business-units", "-url", p.base)
	assert.Len(t, units["data"], 2, "the bootstrap unit and Acme Events")

	code, _, errOut := runBinary(t, []string{"TICKETD_BASE_URL=" + p.base, "TICKETD_DATA_DIR=" + t.TempDir()}, "admin", "units", "list")
	assert.Equal(t, 1, code, "no token: the server's 401")
	assert.Contains(t, errOut, "401")
}

// TestFormatVersion: the override wins over the module version; the commit,
// its time, a dirty tree and the Go version follow when the build has them.
func TestFormatVersion(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef"},
		{Key: "vcs.time", Value: "2026-11-25T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name     string
		override string
		bi       *debug.BuildInfo
		want     string
	}{
		{"no build info", "", nil, "(devel)"},
		{"no build info, override", "v1.2.3", nil, "v1.2.3"},
		{"inside the module", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "(devel) go1.26.8"},
		{"go install of a tag", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}}, "v0.4.0 go1.26.8"},
		{"vcs stamped, dirty", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"(devel) commit 0123456789abcdef (modified) 2026-11-25T10:00:00Z go1.26.8"},
		{"override and vcs, clean", "v1.0.0", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs[:3]},
			"v1.0.0 commit 0123456789abcdef 2026-11-25T10:00:00Z go1.26.8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, formatVersion(tc.override, tc.bi))
		})
	}
}

// TestVersionFromLdflags: the variable `make build` sets is the one
// `ticketd version` prints.
func TestVersionFromLdflags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "ticketd")
	out, err := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	got, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(got), "ticketd v9.8.7-test "), "%s", got)
	assert.Contains(t, string(got), runtime.Version())
}
