package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const adminUsage = `usage: ticketd admin [-url URL] [-token TOKEN] <command>

commands:
  units create -name NAME
  units list
  keys create -unit UNIT_ID -type secret|publishable [-name N] [-origin O]... [-expires-at RFC3339] [-version YYYY-MM-DD]
  keys list -unit UNIT_ID
  keys revoke KEY_ID
  get PATH | delete PATH | post PATH [JSON] | patch PATH JSON | put PATH JSON
      raw calls of the admin API, e.g. "ticketd admin post /admin/v1/events/evt_.../venues '{\"name\":\"Hall A\"}'"

The URL defaults to $TICKETD_BASE_URL or http://$TICKETD_ADDR; the token to $TICKETD_ADMIN_TOKEN or the
admin-token file in $TICKETD_DATA_DIR (./data).`

// runAdmin is the console CLI: a thin client of /admin/v1.
func runAdmin(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ticketd admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, adminUsage) }
	url := fs.String("url", "", "base URL of the server")
	token := fs.String("token", "", "admin token")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c := adminClient{base: *url, token: *token, out: stdout}
	if c.base == "" {
		c.base = envOr(lookup, "TICKETD_BASE_URL", "")
		if c.base == "" {
			c.base = "http://" + envOr(lookup, "TICKETD_ADDR", "127.0.0.1:8080")
		}
	}
	c.base = strings.TrimRight(c.base, "/")
	if c.token == "" {
		c.token = envOr(lookup, "TICKETD_ADMIN_TOKEN", "")
	}
	if c.token == "" {
		b, err := os.ReadFile(filepath.Join(envOr(lookup, "TICKETD_DATA_DIR", "./data"), "admin-token"))
		if err == nil {
			c.token = strings.TrimSpace(string(b))
		}
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return 2
	}
	var err error
	switch rest[0] {
	case "units":
		err = c.units(ctx, rest[1:], stderr)
	case "keys":
		err = c.keys(ctx, rest[1:], stderr)
	case "get", "delete", "post", "patch", "put":
		if len(rest) < 2 {
			err = fmt.Errorf("%s needs a path", rest[0])
			break
		}
		var body []byte
		if len(rest) > 2 {
			body = []byte(rest[2])
		}
		err = c.do(ctx, strings.ToUpper(rest[0]), rest[1], body)
	default:
		err = fmt.Errorf("unknown command %q", rest[0])
	}
	if err != nil {
		fmt.Fprintln(stderr, "ticketd admin:", err)
		return 1
	}
	return 0
}

func envOr(lookup func(string) (string, bool), name, def string) string {
	if v, ok := lookup(name); ok && v != "" {
		return v
	}
	return def
}

type adminClient struct {
	base, token string
	out         io.Writer
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func (c adminClient) units(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("units: create or list")
	}
	switch args[0] {
	case "create":
		fs := flag.NewFlagSet("units create", flag.ContinueOnError)
		fs.SetOutput(stderr)
		name := fs.String("name", "", "business unit name")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return c.send(ctx, "POST", "/admin/v1/business-units", map[string]any{"name": *name})
	case "list":
		return c.do(ctx, "GET", "/admin/v1/business-units", nil)
	}
	return fmt.Errorf("units: unknown subcommand %q", args[0])
}

func (c adminClient) keys(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("keys: create, list or revoke")
	}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	unit := fs.String("unit", "", "business unit id")
	switch args[0] {
	case "create":
		typ := fs.String("type", "secret", "secret or publishable")
		name := fs.String("name", "", "key name")
		expires := fs.String("expires-at", "", "expiry, RFC 3339")
		version := fs.String("version", "", "pinned API version (default: current)")
		var origins multiFlag
		fs.Var(&origins, "origin", "allowed browser origin of a publishable key (repeatable)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		body := map[string]any{"type": *typ}
		if *name != "" {
			body["name"] = *name
		}
		if len(origins) > 0 {
			body["origins"] = []string(origins)
		}
		if *expires != "" {
			if _, err := time.Parse(time.RFC3339, *expires); err != nil {
				return fmt.Errorf("expires-at: %w", err)
			}
			body["expiresAt"] = *expires
		}
		if *version != "" {
			body["version"] = *version
		}
		return c.send(ctx, "POST", "/admin/v1/business-units/"+*unit+"/api-keys", body)
	case "list":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return c.do(ctx, "GET", "/admin/v1/business-units/"+*unit+"/api-keys", nil)
	case "revoke":
		if len(args) < 2 {
			return fmt.Errorf("keys revoke: needs a key id")
		}
		return c.do(ctx, "POST", "/admin/v1/api-keys/"+args[1]+"/revoke", nil)
	}
	return fmt.Errorf("keys: unknown subcommand %q", args[0])
}

func (c adminClient) send(ctx context.Context, method, path string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.do(ctx, method, path, b)
}

// do sends one request and prints the JSON answer; a non-2xx answer is an
// error after printing the envelope.
func (c adminClient) do(ctx context.Context, method, path string, body []byte) error {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") == nil {
		out = pretty.Bytes()
	}
	fmt.Fprintln(c.out, string(out))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return nil
}
