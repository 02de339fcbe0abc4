package adminctl

import (
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseAdmin: each command line stands for one request, with the
// names given as names or as flags, and flags anywhere on the line.
func TestParseAdmin(t *testing.T) {
	for _, tc := range []struct {
		args, method, path, body, url string
	}{
		{args: "units create Acme", method: "POST", path: "/admin/v1/business-units", body: `{"name":"Acme"}`},
		{args: "units create -name Acme", method: "POST", path: "/admin/v1/business-units", body: `{"name":"Acme"}`},
		{args: "units list", method: "GET", path: "/admin/v1/business-units"},
		{args: "-url http://h:1 units list", method: "GET", path: "/admin/v1/business-units", url: "http://h:1"},
		{args: "units list -url http://h:2", method: "GET", path: "/admin/v1/business-units", url: "http://h:2"},
		{args: "keys create bu_1", method: "POST", path: "/admin/v1/business-units/bu_1/api-keys", body: `{"type":"secret"}`},
		{args: "keys create -unit bu_1 -type publishable -origin https://a.example -origin https://b.example -name shop",
			method: "POST", path: "/admin/v1/business-units/bu_1/api-keys",
			body: `{"name":"shop","origins":["https://a.example","https://b.example"],"type":"publishable"}`},
		{args: "keys create -type secret bu_1 -expires-at 2030-01-01T00:00:00Z -version 2026-08-22",
			method: "POST", path: "/admin/v1/business-units/bu_1/api-keys",
			body: `{"expiresAt":"2030-01-01T00:00:00Z","type":"secret","version":"2026-08-22"}`},
		{args: "keys list bu_1", method: "GET", path: "/admin/v1/business-units/bu_1/api-keys"},
		{args: "keys list -unit bu_1", method: "GET", path: "/admin/v1/business-units/bu_1/api-keys"},
		{args: "keys revoke key_1", method: "POST", path: "/admin/v1/api-keys/key_1/revoke"},
		{args: "get /admin/v1/outbox", method: "GET", path: "/admin/v1/outbox"},
		{args: "outbox list", method: "GET", path: "/admin/v1/outbox"},
		{args: "outbox list -limit 5", method: "GET", path: "/admin/v1/outbox?limit=5"},
		{args: "outbox preview evt_1.0000000000000007-0000", method: "GET", path: "/admin/v1/outbox/evt_1.0000000000000007-0000/preview"},
		{args: "outbox preview mail/evt_1/0000000000000007-0000 -eml", method: "GET",
			path: "/admin/v1/outbox/evt_1.0000000000000007-0000/preview?format=eml"},
		{args: "outbox retry evt_1.0000000000000007-0000", method: "POST", path: "/admin/v1/outbox/evt_1.0000000000000007-0000/retry"},
		{args: `post /admin/v1/business-units {"name":"X"}`, method: "POST", path: "/admin/v1/business-units", body: `{"name":"X"}`},
		{args: "delete /admin/v1/webhook-endpoints/we_1", method: "DELETE", path: "/admin/v1/webhook-endpoints/we_1"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			var c Client
			r, err := parseAdmin(strings.Fields(tc.args), &c)
			require.NoError(t, err)
			assert.Equal(t, tc.method, r.method)
			assert.Equal(t, tc.path, r.path)
			assert.Equal(t, tc.body, string(r.body))
			assert.Equal(t, tc.url, c.BaseURL)
		})
	}
}

// TestParseAdminRefuses: a line that misses a name or has one too many is
// a usage error naming what is wrong; -h anywhere asks for the help.
func TestParseAdminRefuses(t *testing.T) {
	for args, want := range map[string]string{
		"":                         "missing a command",
		"keys create":              "keys create: missing -unit UNIT_ID",
		"keys create -unit":        "flag needs an argument: -unit",
		"keys list":                "keys list: missing -unit UNIT_ID",
		"keys revoke":              "keys revoke: missing KEY_ID",
		"keys revoke key_1 key_2":  `keys revoke: unexpected argument "key_2"`,
		"units create":             "units create: missing NAME",
		"units create -name A B":   `units create: unexpected argument "B"`,
		"units":                    "units: missing a subcommand: create or list",
		"put /x":                   "put: missing the JSON body",
		"get /x /y":                `get: unexpected argument "/y"`,
		"frob":                     `unknown command "frob"`,
		"keys create bu_1 -type x": `-type is secret or publishable, not "x"`,
		"outbox":                   "outbox: missing a subcommand: list, preview or retry",
		"outbox preview":           "outbox preview: missing ID",
		"outbox preview a b":       `outbox preview: unexpected argument "b"`,
		"outbox send x":            `unknown command "outbox send"`,
	} {
		_, err := parseAdmin(strings.Fields(args), &Client{})
		var usage usageError
		require.True(t, errors.As(err, &usage), "%q: %v", args, err)
		assert.Contains(t, err.Error(), want, args)
	}
	for _, args := range []string{"-h", "help", "keys -h", "keys create -h", "units list --help", "get -help"} {
		_, err := parseAdmin(strings.Fields(args), &Client{})
		assert.ErrorIs(t, err, flag.ErrHelp, args)
	}
}
