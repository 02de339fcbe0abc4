package http_test

import (
	"bytes"
	"encoding/json"
	"io"
	nethttp "net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pgAPI calls the Developer API with a secret key and decodes JSON.
func pgAPI(t testing.TB, s *service, key, method, path string, body any) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := nethttp.NewRequest(method, s.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := nethttp.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Less(t, res.StatusCode, 300, "%s %s: %s", method, path, raw)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return out
}

// pgEvent is a published event with one open ticket type of price (in
// major units, 0 for free) and an open add-on.
type pgEvent struct {
	ID, TypeID, AddonID string
}

func pgPublished(t testing.TB, s *service, key string, price float64) pgEvent {
	t.Helper()
	ev := pgAPI(t, s, key, "POST", "/v1/events", map[string]any{
		"name": "Gophers Summit", "timezone": "Europe/Berlin", "startsAt": time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339), "currency": "EUR",
	})
	id := ev["id"].(string)
	tt := pgAPI(t, s, key, "POST", "/v1/events/"+id+"/ticket-types", map[string]any{"name": "General admission", "capacity": 50, "priceAmount": price})
	pgAPI(t, s, key, "PATCH", "/v1/events/"+id+"/ticket-types/"+tt["id"].(string), map[string]any{"status": "open"})
	ao := pgAPI(t, s, key, "POST", "/v1/events/"+id+"/addons", map[string]any{"name": "Conference T-shirt", "priceAmount": 15, "capacity": 100})
	pgAPI(t, s, key, "PATCH", "/v1/events/"+id+"/addons/"+ao["id"].(string), map[string]any{"status": "open"})
	pgAPI(t, s, key, "PATCH", "/v1/events/"+id, map[string]any{"status": "published"})
	return pgEvent{ID: id, TypeID: tt["id"].(string), AddonID: ao["id"].(string)}
}

// pgBrowser is a cookie-keeping client that does not follow redirects, so
// tests see each hop.
type pgBrowser struct {
	t testing.TB
	c *nethttp.Client
}

func newPGBrowser(t testing.TB) *pgBrowser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &pgBrowser{t: t, c: &nethttp.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }}}
}

// pgPage is one answer of a page.
type pgPage struct {
	Status int
	Header nethttp.Header
	Body   string
}

func (b *pgBrowser) do(req *nethttp.Request) pgPage {
	b.t.Helper()
	res, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	return pgPage{Status: res.StatusCode, Header: res.Header, Body: string(raw)}
}

func (b *pgBrowser) get(u string, header ...string) pgPage {
	b.t.Helper()
	req, err := nethttp.NewRequest("GET", u, nil)
	require.NoError(b.t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

func (b *pgBrowser) post(u string, form url.Values, header ...string) pgPage {
	b.t.Helper()
	req, err := nethttp.NewRequest("POST", u, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}
