package stripe

import (
	"bytes"
	"context"
	"fmt"
	"go/build"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests call a real stripe-mock (Stripe's own mock API server), started
// once for the package on loopback ports, through a recording proxy: stripe-
// mock is stateless and answers canned objects, so what was sent (lines,
// amounts, references, idempotency keys) is asserted on the proxy's record.

var mock struct {
	once sync.Once
	base string // http://127.0.0.1:port, "" when absent
	why  string // why it is absent
	cmd  *exec.Cmd
}

func TestMain(m *testing.M) {
	code := m.Run()
	if mock.cmd != nil && mock.cmd.Process != nil {
		_ = mock.cmd.Process.Kill()
		_ = mock.cmd.Wait()
	}
	os.Exit(code)
}

// stripeMockBinary finds stripe-mock on PATH or in GOPATH/bin, where
// `make stripe-mock` (go install github.com/stripe/stripe-mock@v0.203.0)
// puts it.
func stripeMockBinary() string {
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		gopath = build.Default.GOPATH
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "stripe-mock")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// stripeMock answers the base URL of the package's stripe-mock, starting
// it on first use; it skips the test when the binary is absent.
func stripeMock(t *testing.T) string {
	t.Helper()
	mock.once.Do(func() {
		bin := stripeMockBinary()
		if bin == "" {
			mock.why = "stripe-mock is not installed: run `make stripe-mock` (go install github.com/stripe/stripe-mock@v0.203.0)"
			return
		}
		httpPort, httpsPort := freePort(t), freePort(t)
		// Both listeners on loopback: stripe-mock opens HTTPS on a fixed
		// port of all interfaces unless told otherwise.
		cmd := exec.Command(bin, "-http-addr", fmt.Sprintf("127.0.0.1:%d", httpPort), "-https-addr", fmt.Sprintf("127.0.0.1:%d", httpsPort))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		dieWithTest(cmd)
		if err := cmd.Start(); err != nil {
			mock.why = "stripe-mock did not start: " + err.Error()
			return
		}
		mock.cmd = cmd
		addr := fmt.Sprintf("127.0.0.1:%d", httpPort)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
				c.Close()
				mock.base = "http://" + addr
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		mock.why = "stripe-mock did not listen within 30 s: " + out.String()
	})
	if mock.base == "" {
		if strings.HasPrefix(mock.why, "stripe-mock is not installed") {
			t.Skip(mock.why)
		}
		t.Fatal(mock.why)
	}
	return mock.base
}

// sent is one request the proxy saw.
type sent struct {
	Method, Path string
	Query, Form  url.Values
	IdemKey      string
	Auth         string
}

// fault is what the proxy does instead of (or before) forwarding one
// request: wait, then answer status and body (status 0: forward).
type fault struct {
	delay  time.Duration
	status int
	body   string
}

// recorder is a loopback HTTP proxy in front of stripe-mock that records
// every request and can answer some with a fault.
type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	sent   []sent
	faults map[string][]fault // "POST /v1/refunds" -> faults, consumed in order
}

func newRecorder(t *testing.T, target string) *recorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{faults: map[string][]fault{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		key := req.Method + " " + req.URL.Path
		r.mu.Lock()
		r.sent = append(r.sent, sent{Method: req.Method, Path: req.URL.Path, Query: req.URL.Query(), Form: form,
			IdemKey: req.Header.Get("Idempotency-Key"), Auth: req.Header.Get("Authorization")})
		var f *fault
		if q := r.faults[key]; len(q) > 0 {
			f, r.faults[key] = &q[0], q[1:]
		}
		r.mu.Unlock()
		if f != nil {
			select {
			case <-time.After(f.delay):
			case <-req.Context().Done():
				return
			}
			if f.status != 0 {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Request-Id", "req_fault")
				w.WriteHeader(f.status)
				io.WriteString(w, f.body)
				return
			}
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) fail(methodPath string, fs ...fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[methodPath] = append(r.faults[methodPath], fs...)
}

// requests answers the requests seen to methodPath ("" for all).
func (r *recorder) requests(methodPath string) []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sent
	for _, s := range r.sent {
		if methodPath == "" || s.Method+" "+s.Path == methodPath {
			out = append(out, s)
		}
	}
	return out
}

const (
	testKey           = "sk_test_51TicketdTestKeyDoNotLeak0123456789"
	testWebhookSecret = "whsec_TicketdTestWebhookSecretDoNotLeak"
)

// newTestProvider is a Provider calling stripe-mock through a recorder, its
// stripe-go log lines in the answered buffer.
func newTestProvider(t *testing.T, edit ...func(*Config)) (*Provider, *recorder, *syncBuffer) {
	t.Helper()
	rec := newRecorder(t, stripeMock(t))
	logs := &syncBuffer{}
	cfg := Config{
		SecretKey: testKey, WebhookSecret: testWebhookSecret, APIBase: rec.URL,
		RequestTimeout: 5 * time.Second, MaxNetworkRetries: 2,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, rec, logs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
