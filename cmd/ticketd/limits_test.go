package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// limitedProc is a ticketd process started under a file descriptor limit.
type limitedProc struct {
	*proc
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan struct{}
}

func (p *limitedProc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// startUnderNofile runs `ticketd serve` through a shell that first sets
// RLIMIT_NOFILE (soft and hard) to nofile, and waits for its banner.
func startUnderNofile(t *testing.T, nofile int, extra ...string) *limitedProc {
	addr := freePort(t)
	dataDir := t.TempDir()
	args := append([]string{"serve", "-addr", addr, "-data-dir", dataDir, "-log-level", "warn"}, extra...)
	cmd := exec.Command("sh", append([]string{"-c", `ulimit -n ` + strconv.Itoa(nofile) + ` && exec "$0" "$@"`, binary}, args...)...)
	p := &limitedProc{proc: &proc{t: t, cmd: cmd, base: "http://" + addr, dataDir: dataDir, stdout: &bytes.Buffer{}},
		exited: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ticketd listening on ") {
				close(ready)
			}
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("ticketd did not start; stderr:\n%s", p.logs())
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })
	return p
}

// alive fails the test if the process has exited.
func (p *limitedProc) alive(t *testing.T, when string) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("ticketd exited %s: %v; stderr:\n%s", when, p.cmd.ProcessState, p.logs())
	default:
	}
}

// idleFlood opens n connections from 127.0.0.1 that never send a byte.
// The kernel completes them from the listen backlog whether or not the
// server has accepted them yet.
func idleFlood(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err, "idle connection %d", i)
		conns = append(conns, c)
	}
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return conns
}

// fromAddr is an HTTP client whose connections come from the loopback
// address local (127.0.0.2 is as much loopback as 127.0.0.1 on Linux).
func fromAddr(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// answersWithin polls GET path from a fresh client until it answers 200 and
// returns how long that took, failing after limit.
func answersWithin(t *testing.T, c *http.Client, url string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < limit {
		res, err := c.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == 200 {
				return time.Since(start)
			}
			last = res.Status
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no 200 from %s within %s; last: %s", url, limit, last)
	return 0
}

var metricLine = regexp.MustCompile(`(?m)^(ticketd_http_[a-z_]+) ([0-9.e+]+)$`)

// connMetrics scrapes the connection counters with the admin token.
func (p *limitedProc) connMetrics(t *testing.T) map[string]float64 {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(p.dataDir, "admin-token"))
	require.NoError(t, err)
	req, _ := http.NewRequest("GET", p.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	res, err := fromAddr("127.0.0.3").Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	body, _ := io.ReadAll(res.Body)
	out := map[string]float64{}
	for _, m := range metricLine.FindAllStringSubmatch(string(body), -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		out[m[1]] = v
	}
	return out
}

// TestIdleFloodUnderLowNofile is the idle-connection flood against the real
// binary with 256 file descriptors: more idle connections than descriptors
// neither end the process nor lock a fresh client out.
func TestIdleFloodUnderLowNofile(t *testing.T) {
	const nofile, flood = 256, 400

	t.Run("total bound from the descriptor limit", func(t *testing.T) {
		// max-conns defaults to half the descriptors (128): the flood fills
		// it, and every connection past it reclaims the longest idle one.
		p := startUnderNofile(t, nofile, "-max-conns-per-ip", "100000")
		conns := idleFlood(t, p.base[len("http://"):], flood)
		took := answersWithin(t, fromAddr("127.0.0.2"), p.base+"/hosted/style.css", 10*time.Second)
		t.Logf("%d idle connections held; a fresh client got 200 after %s", len(conns), took)
		// Reclaimed connections close as soon as their goroutine runs.
		var m map[string]float64
		require.Eventually(t, func() bool {
			m = p.connMetrics(t)
			return m["ticketd_http_connections_open"] <= 128+1 // and the scrape's own
		}, 10*time.Second, 50*time.Millisecond, "within the bound: %v", m)
		t.Logf("connection metrics: %v", m)
		require.Greater(t, m["ticketd_http_connections_reclaimed_total"], 0.0)
		time.Sleep(200 * time.Millisecond)
		p.alive(t, "during the flood")
	})

	t.Run("bound above the descriptor limit: EMFILE", func(t *testing.T) {
		// A bound the descriptors cannot hold: accept fails with EMFILE,
		// which is retried after reclaiming an idle connection.
		p := startUnderNofile(t, nofile, "-max-conns", "5000", "-max-conns-per-ip", "100000")
		conns := idleFlood(t, p.base[len("http://"):], flood)
		took := answersWithin(t, fromAddr("127.0.0.2"), p.base+"/hosted/style.css", 20*time.Second)
		t.Logf("%d idle connections held; a fresh client got 200 after %s", len(conns), took)
		m := p.connMetrics(t)
		t.Logf("connection metrics: %v", m)
		require.Greater(t, m["ticketd_http_accept_errors_total"], 0.0, "the descriptors ran out")
		require.Contains(t, p.logs(), "too many open files")
		p.alive(t, "after running out of descriptors")
		// The flood goes away: the service is whole again.
		for _, c := range conns {
			_ = c.Close()
		}
		answersWithin(t, fromAddr("127.0.0.2"), p.base+"/hosted/style.css", 5*time.Second)
		p.alive(t, "after the flood")
	})

	t.Run("idle connections time out", func(t *testing.T) {
		p := startUnderNofile(t, nofile, "-http-read-timeout", "500ms", "-max-conns-per-ip", "100000")
		conns := idleFlood(t, p.base[len("http://"):], 50)
		deadline := time.Now().Add(10 * time.Second)
		for {
			if open := p.connMetrics(t)["ticketd_http_connections_open"]; open <= 1 {
				break // the scrape's own connection
			}
			require.True(t, time.Now().Before(deadline), "silent connections were not let go")
			time.Sleep(100 * time.Millisecond)
		}
		// Each silent connection was answered 408 and closed.
		_ = conns[0].SetReadDeadline(time.Now().Add(time.Second))
		b, _ := io.ReadAll(conns[0])
		require.Contains(t, string(b), "408", "%s", b)
		p.alive(t, "after the timeouts")
	})
}

// TestConnsPerIPOnTheBinary: one address at its connection bound gets 429
// on the next, another address is served.
func TestConnsPerIPOnTheBinary(t *testing.T) {
	p := startUnderNofile(t, 1024, "-max-conns-per-ip", "8")
	addr := p.base[len("http://"):]
	conns := idleFlood(t, addr, 8)
	// The ninth from 127.0.0.1 is refused with a 429 envelope.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, _ = fmt.Fprintf(c, "GET /hosted/style.css HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	require.True(t, bytes.HasPrefix(b, []byte("HTTP/1.1 429 ")), "%s", b)
	require.Contains(t, string(b), `"code":429`)
	answersWithin(t, fromAddr("127.0.0.2"), p.base+"/hosted/style.css", 5*time.Second)
	_ = conns
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Closing one frees a place for its address.
	_ = conns[0].Close()
	for ctx.Err() == nil {
		res, err := fromAddr("127.0.0.1").Get(p.base + "/hosted/style.css")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("127.0.0.1 was not served after closing one of its connections")
}

// TestSIGTERMDuringIdleFlood: connections that never send a request do not
// hold a graceful stop for the read timeout.
func TestSIGTERMDuringIdleFlood(t *testing.T) {
	p := startUnderNofile(t, 1024, "-http-read-timeout", "1m")
	idleFlood(t, p.base[len("http://"):], 600)
	answersWithin(t, fromAddr("127.0.0.2"), p.base+"/hosted/style.css", 10*time.Second)
	start := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10 s after SIGTERM; stderr:\n%s", p.logs())
	}
	require.True(t, p.cmd.ProcessState.Success(), "exit status %v; stderr:\n%s", p.cmd.ProcessState, p.logs())
	t.Logf("exited %s after SIGTERM with 600 silent connections open", time.Since(start))
}
