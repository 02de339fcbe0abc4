package chaos

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"ticketd/bench/load"
)

// SupervisorSpec says how a Supervisor starts its process.
type SupervisorSpec struct {
	// Spec returns the spec of the n-th start (0 is the first): a fault
	// may start the first process differently from its restarts.
	Spec func(n int) load.ServerSpec
	// RestartDelay is the pause before a restart (systemd's RestartSec).
	// In a crash loop (a process that lived under CrashLoopUptime, or a
	// start that failed) it doubles up to RestartDelayMax, as systemd's
	// RestartSteps does, so a service that fails at once on a full disk
	// does not spend its starts before the disk is freed.
	RestartDelay    time.Duration
	RestartDelayMax time.Duration
	// MaxStarts bounds the starts, the first included.
	MaxStarts int
	Logf      func(format string, args ...any)
}

// Exit is one end of a supervised process, or one start that failed
// before the process listened (Code -1, Err set).
type Exit struct {
	Pid      int     `json:"pid"`
	Code     int     `json:"code"`             // exit status; -1 when killed by a signal or never listening
	Signal   string  `json:"signal,omitempty"` // the signal that ended it
	UptimeS  float64 `json:"uptimeSeconds"`
	Err      string  `json:"error,omitempty"`
	AtOffset float64 `json:"at"` // seconds since the supervisor started
	// AtStop marks the exit Stop asked for (the end of a phase).
	AtStop bool `json:"atStop,omitempty"`
	at     time.Time
}

// String is the exit as the report shows it: "0", "1", "SIGKILL", "no
// start", with " at stop" for the one Stop asked for.
func (e Exit) String() string {
	var s string
	switch {
	case e.Err != "":
		s = "no start"
	case e.Signal != "":
		s = e.Signal
	default:
		s = fmt.Sprint(e.Code)
	}
	if e.AtStop {
		s += " at stop"
	}
	return s
}

// Unexpected reports whether the process ended on its own: not at Stop's
// request; a failed start counts.
func (e Exit) Unexpected() bool { return !e.AtStop }

// Supervisor keeps one service process running, as systemd's
// Restart=always does: when the process exits for any reason it is started
// again after RestartDelay, up to MaxStarts starts. It records every exit.
//
// Concurrency: its methods are safe from any goroutine; one goroutine of
// its own starts and waits for the processes.
type Supervisor struct {
	spec    SupervisorSpec
	started time.Time

	mu       sync.Mutex
	cur      *load.Server
	curDone  chan struct{} // closed when cur has exited
	first    *load.Server  // keeps the bootstrap keys printed on an empty data dir
	exits    []Exit
	starts   int
	stopping bool
	stop     chan struct{}
	done     chan struct{}
	delay    time.Duration // the next restart's pause (touched only by loop)
}

// crashLoopUptime is the uptime under which an exit counts as a crash loop.
const crashLoopUptime = 2 * time.Second

// StartSupervisor starts the first process and returns once it listens, or
// with the error of its start.
func StartSupervisor(spec SupervisorSpec) (*Supervisor, error) {
	if spec.Spec == nil || spec.MaxStarts < 1 {
		return nil, errors.New("bench: supervisor: a spec and at least one start are required")
	}
	if spec.Logf == nil {
		spec.Logf = func(string, ...any) {}
	}
	spec.RestartDelayMax = max(spec.RestartDelayMax, spec.RestartDelay)
	s := &Supervisor{spec: spec, started: time.Now(), stop: make(chan struct{}), done: make(chan struct{}), delay: spec.RestartDelay}
	srv, err := load.StartServer(spec.Spec(0))
	if err != nil {
		return nil, err
	}
	s.starts = 1
	s.first = srv
	s.setCur(srv)
	go s.loop(srv)
	return s, nil
}

func (s *Supervisor) setCur(srv *load.Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur, s.curDone = srv, make(chan struct{})
}

// loop waits for the current process and starts the next one.
func (s *Supervisor) loop(srv *load.Server) {
	defer close(s.done)
	for {
		err := <-srv.Waited
		s.mu.Lock()
		e := exitOf(srv.Pid(), err)
		e.UptimeS = time.Since(srv.Started).Seconds()
		e.at = time.Now()
		e.AtOffset = e.at.Sub(s.started).Seconds()
		stopping := s.stopping
		e.AtStop = stopping
		s.exits = append(s.exits, e)
		close(s.curDone)
		s.cur = nil
		s.mu.Unlock()
		s.spec.Logf("   supervisor: pid %d exited (%s) after %.1fs", e.Pid, e, e.UptimeS)
		if stopping {
			return
		}
		if e.UptimeS < crashLoopUptime.Seconds() {
			s.backoff()
		} else {
			s.delay = s.spec.RestartDelay
		}
		srv = s.restart()
		if srv == nil {
			return
		}
	}
}

// restart starts processes until one listens, the starts run out or Stop
// is called.
func (s *Supervisor) restart() *load.Server {
	for {
		select {
		case <-s.stop:
			return nil
		case <-time.After(s.delay):
		}
		s.mu.Lock()
		if s.stopping || s.starts >= s.spec.MaxStarts {
			s.mu.Unlock()
			if !s.stopping {
				s.spec.Logf("   supervisor: %d starts used; giving up", s.spec.MaxStarts)
			}
			return nil
		}
		n := s.starts
		s.starts++
		s.mu.Unlock()
		srv, err := load.StartServer(s.spec.Spec(n))
		if err == nil {
			srv.SecretKey, srv.PublishableKey, srv.AdminToken = s.first.SecretKey, s.first.PublishableKey, s.first.AdminToken
			s.setCur(srv)
			s.mu.Lock()
			stopping := s.stopping
			s.mu.Unlock()
			if stopping { // Stop ran while this one started: end it too
				_ = srv.Cmd.Process.Signal(syscall.SIGKILL)
			}
			s.spec.Logf("   supervisor: restarted as pid %d", srv.Pid())
			return srv
		}
		s.mu.Lock()
		s.exits = append(s.exits, Exit{Code: -1, Err: err.Error(), at: time.Now(), AtOffset: time.Since(s.started).Seconds()})
		s.mu.Unlock()
		s.spec.Logf("   supervisor: start failed: %v", err)
		s.backoff()
	}
}

func (s *Supervisor) backoff() { s.delay = min(2*s.delay, s.spec.RestartDelayMax) }

func exitOf(pid int, err error) Exit {
	e := Exit{Pid: pid}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		e.Code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = signalName(ws.Signal())
		}
	default:
		e.Code, e.Err = -1, err.Error()
	}
	return e
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// Current returns the running process, or nil between two.
func (s *Supervisor) Current() *load.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Keys returns the bootstrap keys of the first start.
func (s *Supervisor) Keys() (sk, pk string) { return s.first.SecretKey, s.first.PublishableKey }

// Exits returns a copy of the exits so far.
func (s *Supervisor) Exits() []Exit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Exit(nil), s.exits...)
}

// Starts returns how many processes were started.
func (s *Supervisor) Starts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts
}

// Signal sends sig to the running process and returns its pid and a
// channel closed when it has exited; pid 0 when none runs.
func (s *Supervisor) Signal(sig syscall.Signal) (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return 0, nil
	}
	_ = s.cur.Cmd.Process.Signal(sig)
	return s.cur.Pid(), s.curDone
}

// Exited returns a channel closed when the running process has exited (nil
// when none runs), and its pid.
func (s *Supervisor) Exited() (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return 0, nil
	}
	return s.cur.Pid(), s.curDone
}

// Terminate sends SIGTERM to the running process and waits up to grace
// for it to exit, then kills it. It returns how long the exit took and
// whether SIGTERM was enough. The supervisor restarts the process.
func (s *Supervisor) Terminate(grace time.Duration) (time.Duration, bool) {
	t := time.Now()
	_, done := s.Signal(syscall.SIGTERM)
	if done == nil {
		return 0, true
	}
	select {
	case <-done:
		return time.Since(t), true
	case <-time.After(grace):
	}
	_, done = s.Signal(syscall.SIGKILL)
	if done != nil {
		<-done
	}
	return time.Since(t), false
}

// WaitUp waits up to d for a process that started listening after since,
// and returns it (nil on timeout).
func (s *Supervisor) WaitUp(since time.Time, d time.Duration) *load.Server {
	deadline := time.Now().Add(d)
	for {
		if cur := s.Current(); cur != nil && !cur.Listening.Before(since) {
			return cur
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop ends supervision: SIGTERM to the running process, SIGKILL after
// grace. It returns how long the exit took and whether SIGTERM was enough.
func (s *Supervisor) Stop(grace time.Duration) (time.Duration, bool) {
	s.mu.Lock()
	if !s.stopping {
		s.stopping = true
		close(s.stop)
	}
	s.mu.Unlock()
	took, clean := s.Terminate(grace)
	select {
	case <-s.done:
	case <-time.After(grace + 2*time.Minute): // a start in progress gives up within 2m
	}
	// A start that finished while Stop ran is killed by restart; wait for it.
	if _, done := s.Signal(syscall.SIGKILL); done != nil {
		<-done
	}
	return took, clean
}
