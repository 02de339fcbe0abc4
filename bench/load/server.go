package load

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Server is a service process started by the harness: the real ticketd, the
// bench-only build with fsync off, or the ceiling server.
type Server struct {
	URL            string
	Addr           string
	DataDir        string
	SecretKey      string // bootstrap keys, printed on an empty data dir
	PublishableKey string
	AdminToken     string
	// Started is when the process was started, Listening when its banner's
	// last line was read.
	Started, Listening time.Time

	Cmd    *exec.Cmd
	Waited chan error
}

// ServerSpec says how to start a server process.
type ServerSpec struct {
	Bin     string   // executable
	Args    []string // before the harness's own flags (e.g. "serve")
	Env     []string // added to the environment
	DataDir string   // "" for processes without one (the ceiling)
	LogFile string   // stderr goes here; "" discards it
	// Extra flags after the defaults (later flags win).
	Extra []string
	// Bare skips the service flags (the ceiling server takes only -addr).
	Bare bool
}

var (
	reListening = regexp.MustCompile(`ticketd listening on (\S+)`)
	reSecret    = regexp.MustCompile(`\bsk_[A-Za-z0-9]+`)
	rePublish   = regexp.MustCompile(`\bpk_[A-Za-z0-9]+`)
	reAdmin     = regexp.MustCompile(`\badm_[A-Za-z0-9]+`)
)

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("bench: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// StartServer starts the process of spec with rate limits off and long
// holds (a hold must not lapse mid-benchmark), and waits for its banner's
// last line.
func StartServer(spec ServerSpec) (*Server, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string(nil), spec.Args...)
	args = append(args, "-addr", addr)
	if !spec.Bare {
		args = append(args,
			"-data-dir", spec.DataDir,
			"-rate-limit-per-minute", "0",
			"-storefront-key-limit-per-minute", "0",
			"-storefront-ip-limit-per-minute", "0",
			"-storefront-catalog-ip-limit-per-minute", "0",
			"-device-limit-per-minute", "0",
			// Every load connection comes from loopback.
			// Every load connection comes from loopback: one address
			// places the whole drop's orders.
			"-storefront-open-orders-per-ip", "0",
			"-storefront-open-sessions-per-ip", "0",
			"-max-conns-per-ip", "100000",
			"-order-hold", "6h",
			"-log-level", "warn",
		)
	}
	args = append(args, spec.Extra...)
	cmd := exec.Command(spec.Bin, args...)
	cmd.Env = append(os.Environ(), spec.Env...)
	if spec.LogFile != "" {
		if err := os.MkdirAll(filepath.Dir(spec.LogFile), 0o755); err != nil {
			return nil, fmt.Errorf("bench: log dir: %w", err)
		}
		f, err := os.OpenFile(spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("bench: log file: %w", err)
		}
		defer f.Close() // the child keeps its own descriptor
		cmd.Stderr = f
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: stdout pipe: %w", err)
	}
	s := &Server{Addr: addr, DataDir: spec.DataDir, Cmd: cmd, Waited: make(chan error, 1)}
	s.Started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start %s: %w", spec.Bin, err)
	}
	go func() { s.Waited <- cmd.Wait() }()

	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		// Keep draining so the child never blocks on a full pipe.
		_, _ = io.Copy(io.Discard, out)
	}()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				s.Kill()
				return nil, fmt.Errorf("bench: %s exited before listening (see %s)", spec.Bin, spec.LogFile)
			}
			if m := reSecret.FindString(l); m != "" && strings.Contains(l, "secret key") {
				s.SecretKey = m
			}
			if m := rePublish.FindString(l); m != "" && strings.Contains(l, "publishable key") {
				s.PublishableKey = m
			}
			if m := reAdmin.FindString(l); m != "" {
				s.AdminToken = m
			}
			if m := reListening.FindStringSubmatch(l); m != nil {
				if s.AdminToken == "" && spec.DataDir != "" {
					// Printed only when generated: a restart reads it back.
					if b, err := os.ReadFile(filepath.Join(spec.DataDir, "admin-token")); err == nil {
						s.AdminToken = strings.TrimSpace(string(b))
					}
				}
				s.Listening = time.Now()
				s.URL = m[1]
				go func() {
					for range lines {
					}
				}()
				return s, nil
			}
		case <-timeout:
			s.Kill()
			return nil, fmt.Errorf("bench: %s did not print its listening line within 2m", spec.Bin)
		}
	}
}

// Kill ends the process with SIGKILL (kill -9) and waits for it.
func (s *Server) Kill() {
	_ = s.Cmd.Process.Signal(syscall.SIGKILL)
	<-s.Waited
}

// Stop asks the process to shut down gracefully (SIGTERM) and waits up to a
// minute, then kills it.
func (s *Server) Stop() error {
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.Waited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return fmt.Errorf("bench: stop: %w", err)
		}
		return nil
	case <-time.After(time.Minute):
		_ = s.Cmd.Process.Signal(syscall.SIGKILL)
		<-s.Waited
		return errors.New("bench: stop: the process did not exit within 1m; killed")
	}
}

// Pid returns the process id.
func (s *Server) Pid() int { return s.Cmd.Process.Pid }
