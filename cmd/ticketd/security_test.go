package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// defaultsProc is `ticketd serve` as an operator runs it: no limit flag, no
// TICKETD_* variable, so every default limit is on (rate budgets, the
// failed-authentication budget), and the log at info, captured whole.
type defaultsProc struct {
	base, addr, dataDir string
	secret, publishable string
	admin               string
	mu                  sync.Mutex
	log                 bytes.Buffer
	exited              chan struct{}
}

func (p *defaultsProc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func startDefaults(t *testing.T) *defaultsProc {
	t.Helper()
	addr := freePort(t)
	p := &defaultsProc{base: "http://" + addr, addr: addr, dataDir: t.TempDir(), exited: make(chan struct{})}
	cmd := exec.Command(binary, "serve", "-addr", addr, "-data-dir", p.dataDir, "-log-level", "info")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TICKETD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var drained sync.WaitGroup
	drained.Add(1)
	go func() {
		defer drained.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if m := secretRE.FindStringSubmatch(line); m != nil {
				p.secret = m[1]
			}
			if m := publishableRE.FindStringSubmatch(line); m != nil {
				p.publishable = m[1]
			}
			if strings.HasPrefix(line, "ticketd listening on ") {
				close(ready)
			}
		}
		_ = cmd.Wait()
		drained.Wait()
		close(p.exited)
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("ticketd did not start; log:\n%s", p.logs())
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })
	tok, err := os.ReadFile(filepath.Join(p.dataDir, "admin-token"))
	require.NoError(t, err)
	p.admin = strings.TrimSpace(string(tok))
	require.NotEmpty(t, p.secret)
	require.NotEmpty(t, p.publishable)
	return p
}

// answer is one response, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) reason(t *testing.T) string {
	t.Helper()
	var env struct {
		Error struct {
			Reason string `json:"reason"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(a.body, &env), "%d %s", a.status, a.body)
	return env.Error.Reason
}

var plain = &http.Client{Timeout: 10 * time.Second}

// send sends one request from 127.0.0.1 (every request of these tests
// shares one client address, as the clients behind one NAT do).
func send(t *testing.T, method, u, token string, hdr ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header[hdr[i]] = []string{hdr[i+1]}
	}
	res, err := plain.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return answer{res.StatusCode, res.Header, b}
}

// TestDefaultLimitsNeverLockOutValidCredentials: with every default limit
// on, failed authentications from one address (every cause: missing,
// unknown, revoked, wrong surface, a wrong admin token) are answered 401
// until the address's budget (20) is spent, then 429 AUTH_THROTTLED with
// Retry-After, while the valid secret key, publishable key and admin token
// sent from that same address are served throughout (decisions §17). Every
// 401 and 429 echoes the service-version sent.
func TestDefaultLimitsNeverLockOutValidCredentials(t *testing.T) {
	p := startDefaults(t)
	const old = "2026-03-15"

	// A revoked key: made and revoked through the admin API.
	var units struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	a := send(t, "GET", p.base+"/admin/v1/business-units", p.admin)
	require.Equal(t, 200, a.status, "%s", a.body)
	require.NoError(t, json.Unmarshal(a.body, &units))
	req, _ := http.NewRequest("POST", p.base+"/admin/v1/business-units/"+units.Data[0].ID+"/api-keys", strings.NewReader(`{"type":"secret"}`))
	req.Header.Set("Authorization", "Bearer "+p.admin)
	res, err := plain.Do(req)
	require.NoError(t, err)
	var key struct{ ID, Key string }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&key))
	res.Body.Close()
	require.Equal(t, 201, res.StatusCode)
	require.Equal(t, 200, send(t, "GET", p.base+"/v1/events", key.Key).status)
	require.Equal(t, 200, send(t, "POST", p.base+"/admin/v1/api-keys/"+key.ID+"/revoke", p.admin).status)
	revoked := key.Key

	// A door device of an event: its key works on /door/v1 only.
	post := func(path, token, body string, into any) {
		t.Helper()
		req, _ := http.NewRequest("POST", p.base+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := plain.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, 201, res.StatusCode, path)
		require.NoError(t, json.NewDecoder(res.Body).Decode(into))
	}
	var ev struct {
		ID string `json:"id"`
	}
	post("/v1/events", p.secret, `{"name":"Door","timezone":"UTC"}`, &ev)
	var dev struct {
		SetupCode string `json:"setupCode"`
	}
	post("/v1/events/"+ev.ID+"/devices", p.secret, `{"name":"gate"}`, &dev)
	var dk struct {
		Key string `json:"key"`
	}
	post("/door/v1/device/initialize", "", `{"setupCode":"`+dev.SetupCode+`"}`, &dk)
	require.True(t, strings.HasPrefix(dk.Key, "dk_"), dk.Key)

	type failure struct{ name, method, path, token string }
	failures := []failure{
		{"missing", "GET", "/v1/events", ""},
		{"unknown secret key", "GET", "/v1/events", "sk_unknownunknownunknownunknown0"},
		{"revoked", "GET", "/v1/events", revoked},
		{"wrong surface", "GET", "/v1/events", p.publishable},
		{"unknown publishable key", "GET", "/storefront/v1/events", "pk_unknownunknownunknownunknown0"},
		{"secret key on the storefront", "GET", "/storefront/v1/events", p.secret},
		{"wrong admin token", "GET", "/admin/v1/business-units", "adm_wrongwrongwrongwrongwrong00"},
		{"a key as the admin token", "GET", "/admin/v1/business-units", p.secret},
	}
	valid := func(when string) {
		t.Helper()
		a := send(t, "GET", p.base+"/v1/events", p.secret, "service-version", old)
		require.Equal(t, 200, a.status, "secret key %s: %s", when, a.body)
		assert.Equal(t, old, a.header.Get("service-version"))
		assert.NotEmpty(t, a.header.Get("RateLimit-Limit"), "rate-limit headers stay")
		a = send(t, "GET", p.base+"/storefront/v1/events", p.publishable)
		require.Equal(t, 200, a.status, "publishable key %s: %s", when, a.body)
		assert.NotEmpty(t, a.header.Get("RateLimit-Remaining"))
		a = send(t, "GET", p.base+"/admin/v1/business-units", p.admin)
		require.Equal(t, 200, a.status, "admin token %s: %s", when, a.body)
		// The door device: its download, then its caught-up polls (the
		// second answered from what the first remembered).
		a = send(t, "GET", p.base+"/door/v1/passes", dk.Key)
		require.Equal(t, 200, a.status, "device key %s: %s", when, a.body)
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		require.NoError(t, json.Unmarshal(a.body, &page))
		for range 2 {
			a = send(t, "GET", p.base+"/door/v1/passes?cursor="+url.QueryEscape(page.NextCursor), dk.Key)
			require.Equal(t, 200, a.status, "device key caught up %s: %s", when, a.body)
			require.JSONEq(t, `{"data":[],"hasMore":false,"nextCursor":"`+page.NextCursor+`"}`, string(a.body))
		}
	}
	var first401 []byte
	for i := 0; i < 20; i++ {
		f := failures[i%len(failures)]
		a := send(t, f.method, p.base+f.path, f.token, "service-version", old)
		require.Equal(t, 401, a.status, "failure %d (%s): %s", i, f.name, a.body)
		require.Equal(t, "UNAUTHENTICATED", a.reason(t))
		if !strings.HasPrefix(f.path, "/admin") {
			require.Equal(t, old, a.header.Get("service-version"), "a 401 echoes the version sent (%s)", f.name)
		}
		if first401 == nil {
			first401 = a.body
		}
		require.JSONEq(t, string(first401), string(a.body), "one 401 for every cause")
		if i%5 == 4 {
			valid(fmt.Sprintf("after %d failures", i+1))
		}
	}
	// The budget is spent: every further failure, whatever its cause, is
	// 429 AUTH_THROTTLED; the valid credentials are still served, the
	// way the reported attack went (failures, then a valid request, again).
	var first429 []byte
	for round := 0; round < 3; round++ {
		for _, f := range failures {
			a := send(t, f.method, p.base+f.path, f.token, "service-version", old)
			require.Equal(t, 429, a.status, "%s after the budget: %s", f.name, a.body)
			require.Equal(t, "AUTH_THROTTLED", a.reason(t))
			require.NotEmpty(t, a.header.Get("Retry-After"))
			if !strings.HasPrefix(f.path, "/admin") {
				require.Equal(t, old, a.header.Get("service-version"), "a 429 echoes the version sent (%s)", f.name)
			}
			if first429 == nil {
				first429 = a.body
			}
			var e1, e2 map[string]any
			require.NoError(t, json.Unmarshal(first429, &e1))
			require.NoError(t, json.Unmarshal(a.body, &e2))
			require.Equal(t, e1["error"].(map[string]any)["reason"], e2["error"].(map[string]any)["reason"], "one answer for every cause")
		}
		valid(fmt.Sprintf("in throttled round %d", round))
	}
	// /metrics shares the budget and also serves the admin token.
	require.Equal(t, 429, send(t, "GET", p.base+"/metrics", "adm_wrongwrongwrongwrongwrong00").status)
	require.Equal(t, 200, send(t, "GET", p.base+"/metrics", p.admin).status)

	// Another address has its own budget.
	c := fromAddr("127.0.0.2")
	r2, _ := http.NewRequest("GET", p.base+"/v1/events", nil)
	r2.Header.Set("Authorization", "Bearer sk_unknownunknownunknownunknown0")
	res, err = c.Do(r2)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 401, res.StatusCode)
}

// rawExchange writes raw on a fresh connection and returns what the
// server answered (status line and headers).
func rawExchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(c, raw)
	require.NoError(t, err)
	b, _ := io.ReadAll(c)
	return string(b)
}

var statusLine = regexp.MustCompile(`^HTTP/1\.1 (\d{3}) `)

// TestMalformedRequestsLeakNoCredentialToTheLog: requests fasthttp refuses
// (a control byte in a header, in the credential itself, a header without a
// colon, an oversized header block, a broken request line) and requests
// with a credential where it does not belong (the path, the query), each
// carrying each kind of credential (secret key, publishable key, admin
// token, console session cookie), against the real binary at log level
// info: each refusal carries service-version, and no piece of any
// credential appears anywhere in the log.
func TestMalformedRequestsLeakNoCredentialToTheLog(t *testing.T) {
	p := startDefaults(t)

	// A real console session: sign in with the admin token.
	jar := &cookieJar{}
	c := &http.Client{Timeout: 10 * time.Second, Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(p.base + "/console/login")
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	require.NotNil(t, csrf, "%s", page)
	res, err = c.PostForm(p.base+"/console/login", url.Values{"csrf": {string(csrf[1])}, "token": {p.admin}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 303, res.StatusCode)
	session := jar.value("ticketd_console")
	require.NotEmpty(t, session)

	creds := map[string]struct{ header, secret string }{
		"secret key":      {"Authorization: Bearer " + p.secret, p.secret},
		"publishable key": {"Authorization: Bearer " + p.publishable, p.publishable},
		"admin token":     {"Authorization: Bearer " + p.admin, p.admin},
		"session cookie":  {"Cookie: ticketd_console=" + session, session},
	}
	for name, cr := range creds {
		bad := map[string]string{
			"control byte in another header": "GET /v1/events HTTP/1.1\r\nHost: x\r\n" + cr.header + "\r\nX-Probe: a\x01b\r\n\r\n",
			"control byte in the credential": "GET /v1/events HTTP/1.1\r\nHost: x\r\n" + cr.header[:len(cr.header)-8] + "\x01" + cr.header[len(cr.header)-8:] + "\r\n\r\n",
			"header without a colon":         "GET /v1/events HTTP/1.1\r\nHost: x\r\n" + cr.header + "\r\nNoColonHere\r\n\r\n",
			"oversized header block":         "GET /v1/events HTTP/1.1\r\nHost: x\r\n" + cr.header + "\r\nX-Pad: " + strings.Repeat("p", 9000) + "\r\n\r\n",
			"broken request line":            "GET /v1/ev ents HTTP/1.1 x\r\nHost: x\r\n" + cr.header + "\r\n\r\n",
			"bad content length":             "POST /v1/events HTTP/1.1\r\nHost: x\r\n" + cr.header + "\r\nContent-Length: zz\r\n\r\n{}",
		}
		for kind, raw := range bad {
			got := rawExchange(t, p.addr, raw)
			m := statusLine.FindStringSubmatch(got)
			require.NotNil(t, m, "%s, %s: no answer: %q", name, kind, got)
			require.Regexp(t, `^4\d\d$`, m[1], "%s, %s: %q", name, kind, got)
			require.Contains(t, strings.ToLower(got), "\r\nservice-version: 2026-", "%s, %s: the refusal carries service-version: %q", name, kind, got)
		}
		if name == "session cookie" {
			// A session id is bare random text: in a path it cannot be
			// told from an id, so it is not sent there.
			continue
		}
		// A credential where none belongs: in the path and the query of
		// well-formed requests, which the access log writes.
		rawExchange(t, p.addr, "GET /v1/"+cr.secret+"?key="+url.QueryEscape(cr.secret)+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		rawExchange(t, p.addr, "GET /nope/"+cr.secret+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"+cr.header+"\r\n\r\n")
	}

	// The log did record the refusals (so the search below searches
	// something): fasthttp's own line and the access log's.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.logs(), "status=400") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	out := p.logs()
	require.Contains(t, out, "status=400", "the access log has the refusals")
	require.Contains(t, out, "error when serving connection", "fasthttp logged its refusals")
	for name, cr := range creds {
		// No 10-character piece of the credential's secret part (past
		// its prefix), anywhere: a snippet cut mid-token would still show.
		s := cr.secret
		if i := strings.IndexByte(s, '_'); i >= 0 && i < 6 {
			s = s[i+1:]
		}
		for i := 0; i+10 <= len(s); i++ {
			if strings.Contains(out, s[i:i+10]) {
				t.Fatalf("the log holds a piece %q of the %s:\n%s", s[i:i+10], name, out)
			}
		}
	}
}

// cookieJar is the smallest http.CookieJar: one origin.
type cookieJar struct {
	mu      sync.Mutex
	cookies map[string]*http.Cookie
}

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cookies == nil {
		j.cookies = map[string]*http.Cookie{}
	}
	for _, c := range cs {
		j.cookies[c.Name] = c
	}
}

func (j *cookieJar) Cookies(*url.URL) []*http.Cookie {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []*http.Cookie
	for _, c := range j.cookies {
		if c.MaxAge >= 0 && c.Value != "" {
			out = append(out, c)
		}
	}
	return out
}

func (j *cookieJar) value(name string) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if c := j.cookies[name]; c != nil {
		return c.Value
	}
	return ""
}
