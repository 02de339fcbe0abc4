package persistence

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// faultLoad runs writers committing one record per batch to their own
// stream until a commit fails or stop is closed; acked[w] is the highest
// seq whose Commit returned nil. It returns when every writer has stopped.
func faultLoad(s *Store, writers int, async bool, stop <-chan struct{}, acked []atomic.Uint64, errs chan<- error) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("evt_%d", w)
			for seq := uint64(1); ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				b := s.NewBatch()
				b.Append(stream, seq, []byte(fmt.Sprintf("%s/%d", stream, seq)))
				err := commit(s, b, async)
				b.Close()
				if err != nil {
					errs <- err
					return
				}
				acked[w].Store(seq)
			}
		}()
	}
	return &wg
}

// checkAcked reopens the crash clone and checks that every acknowledged
// record of every writer is there, in order, and that it takes writes.
func checkAcked(t *testing.T, crashed vfs.FS, acked []atomic.Uint64) {
	t.Helper()
	s2 := openMem(t, crashed)
	defer s2.Close()
	for w := range acked {
		stream := fmt.Sprintf("evt_%d", w)
		got := replayAll(t, s2, stream, 0)
		require.GreaterOrEqual(t, uint64(len(got)), acked[w].Load(), "%s lost acknowledged records", stream)
		for i, r := range got {
			require.Equal(t, fmt.Sprintf("%s/%d", stream, i+1), r.data)
		}
		b := s2.NewBatch()
		b.Append(stream, uint64(len(got))+1, []byte("after restart"))
		require.NoError(t, s2.Commit(b), "the reopened store takes writes")
		b.Close()
	}
}

// TestFailedSyncFailsStore injects EIO into WAL syncs under a commit load:
// every commit from then on fails with ErrFailed (none is acknowledged),
// reads are refused too (the memtable holds records that never became
// durable), Close returns promptly, and a restart (the crash clone: what
// the disk kept) has every acknowledged record and takes writes.
func TestFailedSyncFailsStore(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			mem := NewCrashableFS()
			ffs := NewFaultFS(mem)
			s := openMem(t, ffs)
			const writers = 8
			acked := make([]atomic.Uint64, writers)
			errs := make(chan error, writers)
			stop := make(chan struct{})
			wg := faultLoad(s, writers, async, stop, acked, errs)
			for acked[0].Load() < 100 {
				time.Sleep(time.Millisecond)
			}
			ffs.FailSyncs(syscall.EIO)
			start := time.Now()
			select {
			case <-s.Failed():
			case <-time.After(5 * time.Second):
				t.Fatal("the store did not fail after a sync error")
			}
			t.Logf("failed after %s: %v", time.Since(start), s.Err())
			wg.Wait() // every writer's last commit failed: none hangs
			close(errs)
			n := 0
			for err := range errs {
				require.ErrorIs(t, err, ErrFailed)
				n++
			}
			require.Equal(t, writers, n)
			require.ErrorIs(t, s.Err(), ErrFailed)
			require.ErrorIs(t, s.Err(), syscall.EIO)

			b := s.NewBatch()
			b.Append("evt_x", 1, []byte("late"))
			require.ErrorIs(t, s.Commit(b), ErrFailed, "a failed store takes no write")
			b.Close()
			_, _, err := s.Get([]byte("k"))
			require.ErrorIs(t, err, ErrFailed, "a failed store serves no read")

			t0 := time.Now()
			require.ErrorIs(t, s.Close(), ErrFailed)
			require.Less(t, time.Since(t0), 2*time.Second)
			close(stop)

			ffs.FailSyncs(nil)
			checkAcked(t, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}), acked)
		})
	}
}

// TestFullDiskFailsStore makes every write fail with ENOSPC under a commit
// load: the WAL writer keeps its first error, so the store fails; once
// space is back, a restart has every acknowledged record and takes writes.
func TestFullDiskFailsStore(t *testing.T) {
	mem := NewCrashableFS()
	ffs := NewFaultFS(mem)
	s := openMem(t, ffs)
	const writers = 4
	acked := make([]atomic.Uint64, writers)
	errs := make(chan error, writers)
	stop := make(chan struct{})
	wg := faultLoad(s, writers, true, stop, acked, errs)
	for acked[0].Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	ffs.FailWrites(syscall.ENOSPC)
	select {
	case <-s.Failed():
	case <-time.After(5 * time.Second):
		t.Fatal("the store did not fail on a full disk")
	}
	wg.Wait()
	close(stop)
	require.ErrorIs(t, s.Err(), syscall.ENOSPC)
	_ = s.Close()

	ffs.FailWrites(nil) // space freed
	checkAcked(t, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}), acked)
}

// TestStalledSyncFailsStore hangs WAL syncs: no error ever comes, so the
// watchdog must fail the store after StallTimeout, and Close must return
// although a commit is stuck inside Pebble.
func TestStalledSyncFailsStore(t *testing.T) {
	ffs := NewFaultFS(vfs.NewMem())
	s, err := Open(Options{Dir: "data", FS: ffs, StallTimeout: 200 * time.Millisecond, CloseTimeout: time.Second})
	require.NoError(t, err)
	b := s.NewBatch()
	b.Append("evt_1", 1, []byte("ok"))
	require.NoError(t, s.Commit(b))
	b.Close()

	ffs.HangSyncs(true)
	defer ffs.HangSyncs(false) // lets the stuck goroutines end with the test
	stuck := make(chan error, 1)
	go func() {
		b := s.NewBatch()
		defer b.Close()
		b.Append("evt_1", 2, []byte("stuck"))
		stuck <- s.Commit(b)
	}()
	start := time.Now()
	select {
	case <-s.Failed():
	case <-time.After(3 * time.Second):
		t.Fatal("the watchdog did not fail a stalled store")
	}
	took := time.Since(start)
	require.GreaterOrEqual(t, took, 200*time.Millisecond)
	require.ErrorIs(t, s.Err(), ErrFailed)
	t.Logf("stall detected after %s: %v", took, s.Err())

	t0 := time.Now()
	err = s.Close()
	require.Error(t, err)
	require.Less(t, time.Since(t0), 2*time.Second, "Close waited for a commit stuck in pebble")
	select {
	case err := <-stuck:
		t.Fatalf("the stuck commit returned %v while syncs hang", err)
	default:
	}
}

// TestCloseIsBoundedWhenHealthy checks the ordinary path still flushes:
// a reopen after Close has nothing to replay and sees every record.
func TestCloseIsBoundedWhenHealthy(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	for i := uint64(1); i <= 100; i++ {
		b := s.NewBatch()
		b.Append("evt_1", i, []byte("r"))
		require.NoError(t, s.Commit(b))
		b.Close()
	}
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close twice")
	require.True(t, errors.Is(s.Commit(s.NewBatch()), nil)) // an empty batch is a no-op
	s2 := openMem(t, fs)
	defer s2.Close()
	require.Len(t, replayAll(t, s2, "evt_1", 0), 100)
}

// TestOpenOnFullDiskFailsPromptly restarts on a full disk with a WAL to
// replay: Pebble's Open waits for the flush of the replayed WAL and
// retries a failed flush without end, so Open must give up with the disk
// error instead of hanging; once space is back it opens with everything.
func TestOpenOnFullDiskFailsPromptly(t *testing.T) {
	mem := NewCrashableFS()
	s := openMem(t, mem)
	for i := uint64(1); i <= 500; i++ {
		b := s.NewBatch()
		b.Append("evt_1", i, make([]byte, 1000))
		require.NoError(t, s.Commit(b))
		b.Close()
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}) // the WAL is not flushed
	require.NoError(t, s.Close())

	ffs := NewFaultFS(crashed)
	ffs.FailWrites(syscall.ENOSPC)
	t0 := time.Now()
	_, err := Open(Options{Dir: "data", FS: ffs})
	require.Error(t, err)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Less(t, time.Since(t0), 5*time.Second)
	t.Logf("open on a full disk: %v after %s", err, time.Since(t0).Round(time.Millisecond))

	// Space freed. The abandoned Open finishes its flush now and releases
	// the directory lock (in the service, the process has exited).
	ffs.FailWrites(nil)
	var s2 *Store
	require.Eventually(t, func() bool {
		s2, err = Open(Options{Dir: "data", FS: ffs})
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "reopen after freeing space: %v", err)
	defer s2.Close()
	require.Len(t, replayAll(t, s2, "evt_1", 0), 500)
}

// The watchdog counts a stall from the later of the last commit completed
// and the moment the process ran again after it did not run (a SIGSTOP):
// the time it was stopped is no disk's fault.
func TestStallIdleAfterOwnPause(t *testing.T) {
	s := int64(time.Second)
	require.Equal(t, 4*time.Second, stallIdle(5*s, 1*s, 0), "no pause: since the last commit")
	require.Equal(t, 500*time.Millisecond, stallIdle(16*s+s/2, 1*s, 16*s), "stopped 15 s: since it ran again")
	require.Equal(t, 2*time.Second, stallIdle(20*s, 18*s, 16*s), "a commit since: since that commit")
}
