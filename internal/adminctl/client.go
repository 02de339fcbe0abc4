package adminctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// requestTimeout bounds one call: the admin API answers in milliseconds,
// so a minute-long wait means the server is gone, not busy.
const requestTimeout = 30 * time.Second

// maxAnswer bounds the answer printed (a page of a list is far smaller).
const maxAnswer = 64 << 20

// Client calls one server's admin API.
type Client struct {
	// BaseURL is the server's URL, without a trailing slash.
	BaseURL string
	// Token is the admin bearer token.
	Token string
	// Out receives each answer, indented.
	Out io.Writer
}

// FromEnv fills what is empty in c the way `ticketd serve` chose it: the
// URL from $TICKETD_BASE_URL or http://$TICKETD_ADDR (127.0.0.1:8080), the
// token from $TICKETD_ADMIN_TOKEN or the admin-token file in
// $TICKETD_DATA_DIR (./data). lookup is os.LookupEnv outside tests.
func (c Client) FromEnv(lookup func(string) (string, bool)) Client {
	env := func(name, def string) string {
		if v, ok := lookup(name); ok && v != "" {
			return v
		}
		return def
	}
	if c.BaseURL == "" {
		c.BaseURL = env("TICKETD_BASE_URL", "http://"+env("TICKETD_ADDR", "127.0.0.1:8080"))
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Token == "" {
		c.Token = env("TICKETD_ADMIN_TOKEN", "")
	}
	if c.Token == "" {
		// Absent, the server answers 401, which says more than an error here.
		b, err := os.ReadFile(filepath.Join(env("TICKETD_DATA_DIR", "./data"), "admin-token"))
		if err == nil {
			c.Token = strings.TrimSpace(string(b))
		}
	}
	return c
}

// Do sends one request and prints the JSON answer; a non-2xx answer is an
// error after printing its envelope, so the reason is on screen.
func (c Client) Do(ctx context.Context, method, path string, body []byte) error {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("console: read answer: %w", err)
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") == nil {
		out = pretty.Bytes()
	}
	fmt.Fprintln(c.Out, string(out))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("console: %s %s: %s", method, path, resp.Status)
	}
	return nil
}
