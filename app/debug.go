package app

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"time"
)

// debugListener serves the Go runtime's profiles (net/http/pprof) on
// Config.DebugAddr: the heap by allocation site, CPU, goroutines, mutex and
// block contention of the running service, what an engineer needs to say
// where its memory and time go under real load (issue 33: a GC cycle over
// the live heap decided door-sync's runs, and the heap's make-up is only
// known from the service itself). It has no authentication, so it listens
// on loopback only (checkDebugAddr); reach it over SSH or from the host.
type debugListener struct {
	ln  net.Listener
	srv *http.Server
}

// checkDebugAddr accepts an empty address (no listener) or a loopback
// host:port.
func checkDebugAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("app: debug-addr: %q is not host:port", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("app: debug-addr: %q must be a loopback address such as 127.0.0.1:6060: it serves the process's memory and CPU profiles without authentication", addr)
}

func startDebug(addr string) (*debugListener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("app: debug listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	d := &debugListener{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = d.srv.Serve(ln) }()
	return d, nil
}

// Addr is where the listener listens (a port 0 resolved).
func (d *debugListener) Addr() string { return d.ln.Addr().String() }

func (d *debugListener) close() error {
	if err := d.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
