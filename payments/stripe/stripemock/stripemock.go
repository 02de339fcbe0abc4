// Package stripemock runs Stripe's own mock API server, stripe-mock, for
// tests: one process per test binary on loopback ports, and a recording
// proxy in front of it that tests assert on (stripe-mock is stateless and
// answers canned objects) and that can answer with faults instead.
//
// Concurrency: Start and a Recorder are safe for concurrent use. The
// process is killed when the test binary exits (Linux: the parent's death
// kills it too).
package stripemock

import (
	"bytes"
	"fmt"
	"go/build"
	"io"
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

var mock struct {
	once sync.Once
	base string
	why  string
	cmd  *exec.Cmd
}

// Binary finds stripe-mock on PATH or in GOPATH/bin ("" when absent).
func Binary() string {
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

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start answers the base URL of the test binary's stripe-mock, starting it
// on first use; it skips t when stripe-mock is not installed.
func Start(t testing.TB) string {
	t.Helper()
	mock.once.Do(func() {
		bin := Binary()
		if bin == "" {
			mock.why = "stripe-mock is not installed: run `make stripe-mock`"
			return
		}
		// Both listeners on loopback: stripe-mock opens HTTPS on a fixed
		// port of all interfaces unless told otherwise.
		hp, err1 := freePort()
		sp, err2 := freePort()
		if err1 != nil || err2 != nil {
			mock.why = fmt.Sprintf("no free port: %v %v", err1, err2)
			return
		}
		cmd := exec.Command(bin, "-http-addr", fmt.Sprintf("127.0.0.1:%d", hp), "-https-addr", fmt.Sprintf("127.0.0.1:%d", sp))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		dieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			mock.why = "stripe-mock did not start: " + err.Error()
			return
		}
		mock.cmd = cmd
		addr := fmt.Sprintf("127.0.0.1:%d", hp)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
				c.Close()
				mock.base = "http://" + addr
				return
			}
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

// Stop kills the stripe-mock process, if one was started (TestMain).
func Stop() {
	if mock.cmd != nil && mock.cmd.Process != nil {
		_ = mock.cmd.Process.Kill()
		_ = mock.cmd.Wait()
	}
}

// Request is one request the Recorder saw.
type Request struct {
	Method, Path string
	Query, Form  url.Values
	IdemKey      string
	Auth         string // the Authorization header
}

// Fault is what the Recorder answers instead of forwarding one request:
// after Delay, Status and Body (Status 0: forward after the delay).
type Fault struct {
	Delay  time.Duration
	Status int
	Body   string
}

// Recorder is a loopback proxy in front of stripe-mock that records every
// request and answers some with faults.
type Recorder struct {
	*httptest.Server
	mu     sync.Mutex
	sent   []Request
	faults map[string][]Fault
}

// NewRecorder starts a Recorder in front of target, closed when t ends.
func NewRecorder(t testing.TB, target string) *Recorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	r := &Recorder{faults: map[string][]Fault{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		key := req.Method + " " + req.URL.Path
		r.mu.Lock()
		r.sent = append(r.sent, Request{Method: req.Method, Path: req.URL.Path, Query: req.URL.Query(), Form: form,
			IdemKey: req.Header.Get("Idempotency-Key"), Auth: req.Header.Get("Authorization")})
		var f *Fault
		if q := r.faults[key]; len(q) > 0 {
			f, r.faults[key] = &q[0], q[1:]
		}
		r.mu.Unlock()
		if f != nil {
			select {
			case <-time.After(f.Delay):
			case <-req.Context().Done():
				return
			}
			if f.Status != 0 {
				w.Header().Set("Content-Type", "application/json")
				// Stripe sends one with every answer, errors included.
				w.Header().Set("Request-Id", "req_fault")
				w.WriteHeader(f.Status)
				io.WriteString(w, f.Body)
				return
			}
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

// Fail queues faults for the requests to methodPath ("POST /v1/refunds"),
// used in order.
func (r *Recorder) Fail(methodPath string, fs ...Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[methodPath] = append(r.faults[methodPath], fs...)
}

// Requests answers the requests seen to methodPath ("" for all).
func (r *Recorder) Requests(methodPath string) []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Request
	for _, s := range r.sent {
		if methodPath == "" || s.Method+" "+s.Path == methodPath {
			out = append(out, s)
		}
	}
	return out
}
