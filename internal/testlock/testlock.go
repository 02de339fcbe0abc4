// Package testlock makes test processes that must not run at the same
// time on one machine take turns.
//
// The cluster's tests are split over several packages (one test binary
// each) that each start many real nats-server nodes, and go test runs
// packages' binaries in parallel: two of them at once (a dozen clusters
// on a 2-core machine) starved the nodes past their readiness deadline,
// and a test that measures a failover's gap is sequential within its
// package so that nothing else runs beside it. Each binary's TestMain
// takes the one lock before its tests run, so the cluster packages run
// one after another, as the one package they were.
//
// # Concurrency
//
// Exclusive blocks until the lock is taken; the lock is an flock(2) on a
// file in the temporary directory, released when the process exits.
package testlock

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Exclusive takes the machine-wide lock name, waiting while another
// process holds it, and returns its release (also released at exit).
func Exclusive(name string) (release func(), err error) {
	path := filepath.Join(os.TempDir(), "ticketd-testlock-"+name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("testlock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		return func() {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			_ = f.Close()
		}, nil
	}
	// Said, so that a run that seems stuck says why (and a go test
	// -timeout counts this wait too).
	start := time.Now()
	fmt.Fprintf(os.Stderr, "testlock: waiting for %s: another test binary holds it\n", path)
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("testlock: %s: %w", path, err)
	}
	fmt.Fprintf(os.Stderr, "testlock: took %s after %s\n", path, time.Since(start).Round(time.Second))
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
