package apptest

import (
	"io"
	nethttp "net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Browser is a cookie-keeping client that does not follow redirects, so
// tests see each hop.
type Browser struct {
	t testing.TB
	c *nethttp.Client
}

// NewBrowser returns a Browser with an empty cookie jar reporting to t.
func NewBrowser(t testing.TB) *Browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatalf("apptest: cookie jar: %v", err)
	}
	return &Browser{t: t, c: &nethttp.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }}}
}

// Page is one answer of a page.
type Page struct {
	Status int
	Header nethttp.Header
	Body   string
}

// Do sends req and reads the whole answer.
func (b *Browser) Do(req *nethttp.Request) Page {
	b.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("apptest: %v", err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatalf("apptest: %v", err)
	}
	return Page{Status: res.StatusCode, Header: res.Header, Body: string(raw)}
}

// Get sends GET u with header name, value pairs.
func (b *Browser) Get(u string, header ...string) Page {
	b.t.Helper()
	req, err := nethttp.NewRequest("GET", u, nil)
	if err != nil {
		b.t.Fatalf("apptest: %v", err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.Do(req)
}

// Post sends the form to u with header name, value pairs.
func (b *Browser) Post(u string, form url.Values, header ...string) Page {
	b.t.Helper()
	req, err := nethttp.NewRequest("POST", u, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatalf("apptest: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.Do(req)
}

// NewBrowserWith returns a Browser over client c (its own transport, for
// example one that dials from another loopback address). c should keep
// cookies and not follow redirects, as NewBrowser's does.
func NewBrowserWith(t testing.TB, c *nethttp.Client) *Browser {
	return &Browser{t: t, c: c}
}
