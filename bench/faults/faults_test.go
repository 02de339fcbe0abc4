package faults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// binary is the ticketd binary built once by TestMain.
var binary string

func TestMain(m *testing.M) { apptest.RunWithBinary(m, &binary) }

// smallDisk mounts a tmpfs of size bytes and returns its path; the test
// skips when mounting is not permitted.
func smallDisk(t *testing.T, size string) string {
	dir := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.Mkdir(dir, 0o755))
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs (needs root and CAP_SYS_ADMIN): %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes a ballast file until the disk is full but keep bytes.
func fill(t *testing.T, disk string, keep int64) string {
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(disk, &st))
	free := int64(st.Bavail) * int64(st.Bsize)
	path := filepath.Join(disk, "ballast")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 1<<20)
	for n := free - keep; n > 0; n -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(int64(len(buf)), n)]); err != nil {
			break // full already
		}
	}
	return path
}

type proc struct {
	t        *testing.T
	cmd      *exec.Cmd
	base     string
	secret   string
	out      *syncBuffer // stdout and stderr
	exited   chan struct{}
	exitedAt time.Time
	state    *os.ProcessState
}

type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	finalAt time.Time // when ticketd's last line ("ticketd: <why it stopped>") came
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bytes.HasPrefix(p, []byte("ticketd: ")) || bytes.Contains(p, []byte("\nticketd: ")) {
		s.finalAt = time.Now()
	}
	return s.b.Write(p)
}

func (s *syncBuffer) final() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finalAt
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var secretRE = regexp.MustCompile(`secret key:\s+(sk_\S+)`)

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// start runs `ticketd serve` on dataDir (under the command prefix wrap, if
// any). It returns once the banner is out, or, when the process exits
// first, with p.exited closed.
func start(t *testing.T, dataDir string, wrap ...string) *proc {
	addr := freePort(t)
	args := append(wrap, binary, "serve", "-addr", addr, "-data-dir", dataDir, "-rate-limit-per-minute", "0",
		"-storefront-key-limit-per-minute", "0", "-storefront-ip-limit-per-minute", "0",
		"-storefront-open-orders-per-ip", "0", "-log-level", "warn")
	cmd := exec.Command(args[0], args[1:]...)
	p := &proc{t: t, cmd: cmd, base: "http://" + addr, out: &syncBuffer{}, exited: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = p.out
	require.NoError(t, cmd.Start())
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			_, _ = p.out.Write([]byte(line + "\n"))
			if m := secretRE.FindStringSubmatch(line); m != nil {
				p.secret = m[1]
			}
			if strings.HasPrefix(line, "ticketd listening on ") {
				close(ready)
			}
		}
	}()
	go func() {
		p.state, _ = cmd.Process.Wait()
		p.exitedAt = time.Now()
		_ = pw.Close()
		close(p.exited)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })
	select {
	case <-ready:
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("ticketd did not start; output:\n%s", p.out)
	}
	return p
}

// waitExit waits up to d for the process to exit and returns how long it took.
func (p *proc) waitExit(d time.Duration) (time.Duration, bool) {
	t0 := time.Now()
	select {
	case <-p.exited:
		return time.Since(t0), true
	case <-time.After(d):
		return d, false
	}
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// call answers status 0 when the connection failed (the process is gone).
func (p *proc) call(key, method, path string, body any) (int, map[string]any) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(p.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.base+path, rd)
	require.NoError(p.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func (p *proc) event(sk string) (string, string) {
	t := p.t
	st, ev := p.call(sk, "POST", "/v1/events", map[string]any{"name": "Flood", "timezone": "UTC", "startsAt": "2030-01-01T10:00:00Z"})
	require.Equal(t, 201, st, ev)
	evt := ev["id"].(string)
	st, tt := p.call(sk, "POST", "/v1/events/"+evt+"/ticket-types", map[string]any{"name": "GA"})
	require.Equal(t, 201, st, tt)
	typeID := tt["id"].(string)
	st, _ = p.call(sk, "PATCH", "/v1/events/"+evt+"/ticket-types/"+typeID, map[string]any{"status": "open"})
	require.Equal(t, 200, st)
	return evt, typeID
}

// flood is an order load: clients register until stopped or until the
// process is gone, and sort the answers.
type flood struct {
	mu         sync.Mutex
	acked      map[string]bool
	statuses   map[int]int
	reasons    map[string]int
	firstFault time.Time     // the first answer that was not a 201
	slowest    time.Duration // the slowest answer after firstFault
	stop       atomic.Bool
	wg         sync.WaitGroup
}

func startFlood(p *proc, sk, evt, typeID string, clients int, prefix string) *flood {
	f := &flood{acked: map[string]bool{}, statuses: map[int]int{}, reasons: map[string]int{}}
	for c := range clients {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for i := 0; !f.stop.Load(); i++ {
				t0 := time.Now()
				st, r := p.call(sk, "POST", "/v1/events/"+evt+"/registrations",
					map[string]any{"email": fmt.Sprintf("%s-%d-%d@example.com", prefix, c, i), "registrationTypeId": typeID})
				took := time.Since(t0)
				f.mu.Lock()
				f.statuses[st]++
				if st == 201 {
					f.acked[r["id"].(string)] = true
				} else {
					if f.firstFault.IsZero() {
						f.firstFault = t0
					}
					if e, ok := r["error"].(map[string]any); ok {
						f.reasons[fmt.Sprint(e["reason"])]++
					}
				}
				if !f.firstFault.IsZero() && t0.After(f.firstFault.Add(-time.Second)) {
					f.slowest = max(f.slowest, took)
				}
				f.mu.Unlock()
				if st == 0 {
					time.Sleep(20 * time.Millisecond) // the process is gone; don't spin
				}
			}
		}()
	}
	return f
}

func (f *flood) end() { f.stop.Store(true); f.wg.Wait() }

func (f *flood) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.acked)
}

func (f *flood) faulted() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.firstFault
}

// readyzWatch polls /readyz every 50 ms and counts its answers.
type readyzWatch struct {
	codes   sync.Map // status -> *atomic.Int64
	reasons sync.Map
	stop    atomic.Bool
	done    chan struct{}
}

func watchReadyz(p *proc) *readyzWatch {
	w := &readyzWatch{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for !w.stop.Load() {
			st, r := p.call("", "GET", "/readyz", nil)
			v, _ := w.codes.LoadOrStore(st, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
			if e, ok := r["error"].(map[string]any); ok {
				w.reasons.Store(fmt.Sprint(e["reason"]), true)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return w
}

func (w *readyzWatch) seen(code int) int64 {
	v, ok := w.codes.Load(code)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

// registrations lists every registration of evt.
func (p *proc) registrations(sk, evt string) map[string]bool {
	have := map[string]bool{}
	cursor := ""
	for {
		path := "/v1/events/" + evt + "/registrations?limit=100"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		st, list := p.call(sk, "GET", path, nil)
		require.Equal(p.t, 200, st, list)
		for _, d := range list["data"].([]any) {
			have[d.(map[string]any)["id"].(string)] = true
		}
		next, _ := list["nextCursor"].(string)
		if more, _ := list["hasMore"].(bool); !more || next == "" {
			return have
		}
		cursor = next
	}
}

// TestFullDiskUnderOrderFlood fills a small tmpfs under an order flood.
// Within 5 s of the first failed write every request has been answered
// (503 with reason STORAGE_UNAVAILABLE, or a refused connection once the
// process is gone), /readyz answers 503, and the process exits non-zero
// with a clear log line (fail-stop). A restart while the disk is still full
// exits non-zero too, promptly; once space is freed the restarted service
// has every acknowledged order and takes orders again. SIGTERM in the
// middle of a fault exits within 10 s.
func TestFullDiskUnderOrderFlood(t *testing.T) {
	disk := smallDisk(t, "64m")
	dataDir := filepath.Join(disk, "data")
	p := start(t, dataDir)
	require.NotEmpty(t, p.secret, "output:\n%s", p.out)
	sk := p.secret
	evt, typeID := p.event(sk)

	ballast := fill(t, disk, 3<<20)
	rz := watchReadyz(p)
	f := startFlood(p, sk, evt, typeID, 32, "a")

	// The fault comes when the WAL meets the full disk.
	deadline := time.Now().Add(60 * time.Second)
	for f.faulted().IsZero() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.False(t, f.faulted().IsZero(), "the disk never filled: %d acknowledged", f.count())
	_, exited := p.waitExit(15 * time.Second)
	fault := f.faulted()
	f.end()
	rz.stop.Store(true)
	<-rz.done
	require.True(t, exited, "the process did not exit after the storage fault; output:\n%s", p.out)
	exitAfter := p.exitedAt.Sub(fault)
	t.Logf("fault after %d acknowledged orders; process exited %s after the first non-201 answer (code %d); answers %v, reasons %v; slowest answer around the fault %s",
		len(f.acked), exitAfter.Round(time.Millisecond), p.state.ExitCode(), f.statuses, f.reasons, f.slowest.Round(time.Millisecond))
	require.NotEqual(t, 0, p.state.ExitCode(), "a storage fault exits non-zero")
	require.Less(t, exitAfter, 5*time.Second, "fail-stop within 5 s of the fault")
	require.Contains(t, p.out.String(), "storage fault", "a clear log line says why")
	require.Less(t, f.slowest, 5*time.Second, "every request is answered within 5 s of the fault")
	// 0 is a refused or dropped connection, 408 a kept-alive connection
	// the shutdown ended before its next request was read: neither was
	// applied, like a 503.
	for st := range f.statuses {
		require.Contains(t, []int{0, 201, 408, 503}, st, "answers: %v", f.statuses)
	}
	require.Positive(t, f.reasons["STORAGE_UNAVAILABLE"], "503s carry reason STORAGE_UNAVAILABLE: %v", f.reasons)
	require.Positive(t, rz.seen(503), "/readyz answered 503 before the exit")
	t.Logf("/readyz: %d x 200, %d x 503, %d refused", rz.seen(200), rz.seen(503), rz.seen(0))

	// A supervisor restarts it while the disk is still full: it must not
	// hang; it exits non-zero, or runs and says it is not ready.
	p2 := start(t, dataDir)
	select {
	case <-p2.exited:
		t.Logf("restart on a full disk exited with code %d: %s", p2.state.ExitCode(), lastLine(p2.out.String()))
		require.NotEqual(t, 0, p2.state.ExitCode())
	default:
		st, _ := p2.call("", "GET", "/readyz", nil)
		t.Logf("restart on a full disk runs; /readyz %d", st)
		took, ok := p2.sigterm(10 * time.Second)
		require.True(t, ok, "SIGTERM on a full disk took over 10 s")
		t.Logf("SIGTERM on a full disk: exited in %s", took)
	}

	// Space freed: the next restart writes again and lost nothing.
	require.NoError(t, os.Remove(ballast))
	p3 := start(t, dataDir)
	select {
	case <-p3.exited:
		t.Fatalf("restart after freeing space exited; output:\n%s", p3.out)
	default:
	}
	st, _ := p3.call("", "GET", "/readyz", nil)
	require.Equal(t, 200, st)
	have := p3.registrations(sk, evt)
	lost := 0
	for id := range f.acked {
		if !have[id] {
			lost++
		}
	}
	require.Zero(t, lost, "acknowledged orders lost (of %d)", len(f.acked))
	t.Logf("after restart: %d registrations present, %d acknowledged, 0 lost", len(have), len(f.acked))
	st, r := p3.call(sk, "POST", "/v1/events/"+evt+"/registrations", map[string]any{"email": "after@example.com", "registrationTypeId": typeID})
	require.Equal(t, 201, st, r)

	// SIGTERM in the middle of a fault: fill the disk again under load and
	// stop the process at the first failed answer.
	ballast = fill(t, disk, 2<<20)
	g := startFlood(p3, sk, evt, typeID, 32, "b")
	deadline = time.Now().Add(60 * time.Second)
	for g.faulted().IsZero() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	took, ok := p3.sigterm(10 * time.Second)
	g.end()
	require.True(t, ok, "SIGTERM during a storage fault took over 10 s; output:\n%s", p3.out)
	t.Logf("SIGTERM during the fault: exited in %s with code %d", took.Round(time.Millisecond), p3.state.ExitCode())
	require.NoError(t, os.Remove(ballast))
	p4 := start(t, dataDir)
	have = p4.registrations(sk, evt)
	for id := range g.acked {
		require.True(t, have[id], "acknowledged order %s lost across the SIGTERM", id)
	}
	t.Logf("second fault: %d acknowledged, all present", len(g.acked))

	// SIGTERM under a healthy flood: a clean exit, promptly, nothing lost.
	h := startFlood(p4, sk, evt, typeID, 32, "c")
	for h.count() < 300 {
		time.Sleep(5 * time.Millisecond)
	}
	took, ok = p4.sigterm(10 * time.Second)
	h.end()
	require.True(t, ok, "SIGTERM under load took over 10 s")
	require.Equal(t, 0, p4.state.ExitCode(), "output:\n%s", p4.out)
	t.Logf("SIGTERM under a healthy flood: exited in %s", took.Round(time.Millisecond))
	p5 := start(t, dataDir)
	have = p5.registrations(sk, evt)
	for id := range h.acked {
		require.True(t, have[id], "acknowledged order %s lost across a graceful stop", id)
	}
}

// TestFsyncFaultUnderOrderFlood injects, with strace, an EIO into
// fdatasync (the page cache may have dropped the data: a retry proves
// nothing), and in another run an 8 s fdatasync (a disk that stopped
// answering; the store's watchdog must notice), under an order flood:
// every request is answered within 5 s of the fault, the process exits
// non-zero (fail-stop) with a clear line, and a restart has every
// acknowledged order and takes orders.
func TestFsyncFaultUnderOrderFlood(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	if out, err := exec.Command(strace, "-qq", "-o", "/dev/null", "true").CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here (ptrace not permitted?): %v: %s", err, out)
	}
	// Each thread's 150th fdatasync and every later one: the start needs
	// a few, the flood thousands.
	for _, tc := range []struct{ name, inject string }{
		{"EIO", "inject=fdatasync:error=EIO:when=150+"},
		{"stall", "inject=fdatasync:delay_enter=8s:when=150+"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			p := start(t, dataDir)
			sk := p.secret
			evt, typeID := p.event(sk)
			_, _ = p.sigterm(10 * time.Second)

			p = start(t, dataDir, strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=fdatasync", "-e", tc.inject)
			select {
			case <-p.exited:
				t.Fatalf("ticketd under strace did not start; output:\n%s", p.out)
			default:
			}
			f := startFlood(p, sk, evt, typeID, 32, "e")
			_, exited := p.waitExit(60 * time.Second)
			fault := f.faulted()
			f.end()
			require.True(t, exited, "the process did not exit after the fault; output:\n%s", p.out)
			require.False(t, fault.IsZero())
			// ticketd's exit is its last line: under the injected delay
			// strace holds a thread inside fdatasync, and the kernel ends
			// the process only when that syscall returns (as with a disk
			// hung in uninterruptible sleep). That part is not ticketd's.
			require.False(t, p.out.final().IsZero(), "no final line; output:\n%s", p.out)
			exitAfter := p.out.final().Sub(fault)
			t.Logf("%d acknowledged; shut down %s after the first failed answer (process gone after %s), code %d; answers %v, reasons %v; slowest answer around the fault %s",
				len(f.acked), exitAfter.Round(time.Millisecond), p.exitedAt.Sub(fault).Round(time.Millisecond), p.state.ExitCode(),
				f.statuses, f.reasons, f.slowest.Round(time.Millisecond))
			t.Logf("log: %s", grepLine(p.out.String(), "storage fault"))
			require.NotEqual(t, 0, p.state.ExitCode())
			require.Contains(t, p.out.String(), "storage fault")
			// Answers within 5 s; the exit after 1 s more of 503s and a
			// bounded shutdown (at most 9 s, a few when actors are stuck).
			require.Less(t, f.slowest, 5*time.Second, "every request is answered within 5 s of the fault")
			require.Less(t, exitAfter, 10*time.Second)
			for st := range f.statuses {
				require.Contains(t, []int{0, 201, 408, 503}, st, "answers: %v", f.statuses)
			}

			p2 := start(t, dataDir)
			have := p2.registrations(sk, evt)
			for id := range f.acked {
				require.True(t, have[id], "acknowledged order %s lost", id)
			}
			st, r := p2.call(sk, "POST", "/v1/events/"+evt+"/registrations", map[string]any{"email": "after@example.com", "registrationTypeId": typeID})
			require.Equal(t, 201, st, r)
			t.Logf("after restart: %d present, %d acknowledged, 0 lost", len(have), len(f.acked))
		})
	}
}

// grepLine returns the first line of s that contains sub.
func grepLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// sigterm sends SIGTERM and waits up to d for the exit.
// A process that exited on its own meanwhile (a fail-stop) counts as
// stopped at once.
func (p *proc) sigterm(d time.Duration) (time.Duration, bool) {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		require.ErrorIs(p.t, err, os.ErrProcessDone)
		p.t.Logf("SIGTERM: the process had exited already")
	}
	return p.waitExit(d)
}
