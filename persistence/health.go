package persistence

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// ErrFailed reports that the store stopped after a storage fault (a failed
// WAL write or fsync, a panic inside Pebble, or commits making no progress
// for Options.StallTimeout). It is final: the process must restart to write
// again (see the package doc, "Storage faults").
var ErrFailed = errors.New("persistence: storage failed")

// Defaults of the fault options.
const (
	DefaultStallTimeout = 3 * time.Second
	DefaultCloseTimeout = 3 * time.Second
)

// health is the store's fault state and its operation gate.
//
// The gate replaces a read-write lock: an operation stuck inside Pebble
// (behind a wedged commit pipeline) would hold a read lock forever and
// Close, waiting for the write lock, with it. Here Close waits for the
// operations in flight with a deadline and then gives up on them.
type health struct {
	log *slog.Logger

	inflight atomic.Int64 // operations between acquire and release
	closing  atomic.Bool
	drained  chan struct{} // signalled when closing and inflight drops to 0

	// opening is set while pebble.Open runs; a disk fault in a
	// background job meanwhile (the flush of the replayed WAL) lands in
	// openFault.
	opening   atomic.Bool
	openFault chan error

	failedFlag atomic.Bool
	failOnce   sync.Once
	failErr    error // set once, before failed is closed
	failed     chan struct{}

	// Commit progress for the stall watchdog: the number of commits
	// waiting and when one last started from idle or completed, in
	// nanoseconds since epoch (monotonic).
	epoch    time.Time
	waiting  atomic.Int64
	progress atomic.Int64
	stop     chan struct{}
	stopOnce sync.Once
	watchWG  sync.WaitGroup
}

func (h *health) init(log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h.log = log
	h.drained = make(chan struct{}, 1)
	h.openFault = make(chan error, 1)
	h.failed = make(chan struct{})
	h.stop = make(chan struct{})
	h.epoch = time.Now()
}

// acquire admits one operation unless the store is closing or failed.
func (s *Store) acquire() error {
	s.h.inflight.Add(1)
	// Sequentially consistent atomics: either Close sees this operation in
	// inflight, or this operation sees closing.
	if s.h.closing.Load() {
		s.release()
		return ErrClosed
	}
	if s.h.failedFlag.Load() {
		s.release()
		return s.Err()
	}
	return nil
}

func (s *Store) release() {
	if s.h.inflight.Add(-1) == 0 && s.h.closing.Load() {
		select {
		case s.h.drained <- struct{}{}:
		default:
		}
	}
}

// waitDrained waits until no operation is in flight or the deadline passes.
func (s *Store) waitDrained(deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for s.h.inflight.Load() != 0 {
		select {
		case <-s.h.drained:
		case <-t.C:
			return s.h.inflight.Load() == 0
		}
	}
	return true
}

// Err returns nil while the store is healthy, else the fault that stopped
// it, wrapping ErrFailed.
func (s *Store) Err() error {
	if s.h.failedFlag.Load() {
		return s.h.failErr
	}
	// Failed may be closed a moment before the flag is set: whoever woke
	// on it must see the fault.
	select {
	case <-s.h.failed:
		return s.h.failErr
	default:
		return nil
	}
}

// Failed is closed when the store stops after a storage fault. The service
// watches it to exit (fail-stop) and to answer waiting requests at once.
func (s *Store) Failed() <-chan struct{} { return s.h.failed }

// fail stops the store for good: every later operation answers the
// returned error (the first fault's). It logs the fault once.
func (s *Store) fail(cause error) error {
	s.h.failOnce.Do(func() {
		s.h.failErr = fmt.Errorf("%w: %w", ErrFailed, cause)
		close(s.h.failed)
		s.h.failedFlag.Store(true) // after the close: Err never waits
		s.h.log.Error("persistence: storage fault: the store refuses every operation from now on; restart the process to recover from the log",
			"err", cause)
	})
	return s.h.failErr
}

func (s *Store) now() int64 { return int64(time.Since(s.h.epoch)) }

// commitBegin and commitEnd bracket a commit for the stall watchdog.
func (s *Store) commitBegin() {
	if s.h.waiting.Add(1) == 1 {
		s.h.progress.Store(s.now())
	}
}

func (s *Store) commitEnd() {
	s.h.progress.Store(s.now())
	s.h.waiting.Add(-1)
}

// watch fails the store when commits wait and none completes for timeout:
// a disk that hangs, or a write stall that cannot end because Pebble's
// flushes keep failing (a full disk), would otherwise hold every writer
// and every reader queued behind one for good, with no error to see.
func (s *Store) watch(timeout time.Duration) {
	defer s.h.watchWG.Done()
	every := max(timeout/8, 10*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	last, resumed := s.now(), int64(0)
	for {
		select {
		case <-s.h.stop:
			return
		case <-s.h.failed:
			return
		case <-tick.C:
		}
		now := s.now()
		if time.Duration(now-last) > every+timeout/2 {
			// This process did not run meanwhile (SIGSTOP, a paused VM):
			// the disk had no time to show progress in. Counted, a 15 s
			// SIGSTOP failed the store of a cluster node at SIGCONT and it
			// exited (bench/results/20261129-moves2.md).
			resumed = now
		}
		last = now
		if s.h.waiting.Load() == 0 {
			continue
		}
		if idle := stallIdle(now, s.h.progress.Load(), resumed); idle > timeout {
			s.fail(fmt.Errorf("no commit completed for %s with %d waiting (disk stalled or full)",
				idle.Round(time.Millisecond), s.h.waiting.Load()))
			return
		}
	}
}

// stallIdle is how long commits have made no progress at now: since the
// last completed (progress) or since the process last resumed after not
// running, whichever is later.
func stallIdle(now, progress, resumed int64) time.Duration {
	return time.Duration(now - max(progress, resumed))
}

func (s *Store) stopWatch() {
	s.h.stopOnce.Do(func() { close(s.h.stop) })
	s.h.watchWG.Wait()
}

// recoverPebble turns a panic inside Pebble during a commit into a store
// fault. Pebble panics when its WAL writer has kept an earlier write
// error (db.go commitWrite), and our Logger.Fatalf panics after a commit
// error that leaves its commit pipeline unusable. (WAL errors no longer
// reach Pebble, see walGuardFS; the panic of rotateWAL on one could not
// be recovered at all.)
func (s *Store) recoverPebble(err *error) {
	if r := recover(); r != nil {
		*err = s.fail(fmt.Errorf("pebble panicked in a commit: %v", r))
	}
}

// openDB runs pebble.Open, but gives up when a background job of the open
// meets a disk fault. Open flushes the WAL it replayed and waits for that
// flush; Pebble retries a failed flush without end, so on a full disk
// Open would never return and a restarted service would hang instead of
// exiting for its supervisor to try again later.
func (s *Store) openDB(dir string, popts *pebble.Options) (*pebble.DB, error) {
	type result struct {
		db  *pebble.DB
		err error
	}
	done := make(chan result, 1)
	var mu sync.Mutex
	gaveUp := false
	s.h.opening.Store(true)
	defer s.h.opening.Store(false)
	go func() {
		db, err := pebble.Open(dir, popts)
		mu.Lock()
		defer mu.Unlock()
		if gaveUp {
			if err == nil {
				_ = db.Close()
			}
			return
		}
		done <- result{db, err}
	}()
	select {
	case r := <-done:
		return r.db, r.err
	case err := <-s.h.openFault:
		mu.Lock()
		gaveUp = true
		mu.Unlock()
		select { // it may have finished before we gave up
		case r := <-done:
			if r.err == nil {
				_ = r.db.Close()
			}
		default:
		}
		return nil, fmt.Errorf("disk fault while opening: %w", err)
	}
}

// isDiskFault reports errors of the disk itself (full, failing, read-only),
// as opposed to Pebble's own.
func isDiskFault(err error) bool {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EROFS} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
