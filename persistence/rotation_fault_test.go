package persistence

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// rotationMemTableBytes is the memtable size of the rotation fault tests.
// A batch of at least half of it is a "large batch": Pebble writes it to
// the current WAL and then always rotates the WAL (closes it, with a final
// sync, and creates the next one) in the committing goroutine, which makes
// a WAL rotation happen exactly when the test wants it.
const rotationMemTableBytes = 1 << 20

// TestWALRotationFaultFailsStore injects a storage fault into the WAL
// rotation that a large batch forces. Pebble v2.1.7's rotateWAL panics on
// the error of closing the old WAL after it has released DB.mu, and the
// unwinding unlocks DB.mu again: "fatal error: sync: unlock of unlocked
// mutex", which ends the process and no recover can stop. The store must
// instead fail (ErrFailed with the disk's error), answer the commit, close
// promptly, and leave a disk that reopens with every acknowledged record.
func TestWALRotationFaultFailsStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		arm  func(*FaultFS)
		want error
		// parks says the fault always reaches the rotation. A failed
		// write may instead come back to the commit that writes the
		// batch's later blocks (the WAL writer keeps the error of its
		// first), and Pebble panics there (db.go:955), which fails the
		// store without a rotation.
		parks bool
	}{
		// The rotation's close syncs the old WAL: the sync fails.
		{"sync", func(fs *FaultFS) { fs.FailSyncs(syscall.EIO) }, syscall.EIO, true},
		// The close writes the batch and the EOF trailer: the write fails,
		// and the WAL writer keeps that error for its close.
		{"write", func(fs *FaultFS) { fs.FailWrites(syscall.ENOSPC) }, syscall.ENOSPC, false},
		// The old WAL closes cleanly, but the sync of the directory
		// after creating the next WAL fails.
		{"dirsync", func(fs *FaultFS) { fs.FailDirSyncs(syscall.EIO) }, syscall.EIO, true},
	} {
		for _, async := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/async=%v", tc.name, async), func(t *testing.T) {
				mem := NewCrashableFS()
				ffs := NewFaultFS(mem)
				s, err := Open(Options{Dir: "data", FS: ffs, MemTableBytes: rotationMemTableBytes})
				require.NoError(t, err)
				const acked = 50
				for seq := uint64(1); seq <= acked; seq++ {
					b := s.NewBatch()
					b.Append("evt_1", seq, []byte(fmt.Sprintf("evt_1/%d", seq)))
					require.NoError(t, s.Commit(b))
					b.Close()
				}

				tc.arm(ffs)
				b := s.NewBatch()
				b.Append("evt_1", acked+1, make([]byte, rotationMemTableBytes/2+1))
				done := make(chan error, 1)
				go func() {
					var err error
					if async {
						var wait func() error
						if wait, err = s.CommitAsync(b); err == nil {
							err = wait()
						}
					} else {
						err = s.Commit(b)
					}
					b.Close()
					done <- err
				}()
				select {
				case err := <-done:
					require.ErrorIs(t, err, ErrFailed)
					require.ErrorIs(t, err, tc.want)
				case <-time.After(5 * time.Second):
					t.Fatal("the commit of the large batch was not answered")
				}
				select {
				case <-s.Failed():
				default:
					t.Fatal("the store did not fail")
				}
				require.ErrorIs(t, s.Err(), tc.want)

				b = s.NewBatch()
				b.Append("evt_1", acked+2, []byte("late"))
				require.ErrorIs(t, s.Commit(b), ErrFailed, "a failed store takes no write")
				b.Close()

				// The rotation did not return: its goroutine is parked
				// for good, and Close leaves the database to the exit.
				// (The store fails at the fault, so the commit may be
				// answered a moment before the rotation gets to park.)
				if tc.parks {
					require.Eventually(t, func() bool { return s.wal.parked.Load() == 1 },
						2*time.Second, time.Millisecond, "the rotation's goroutine parked")
				}
				t0 := time.Now()
				err = s.Close()
				require.ErrorIs(t, err, ErrFailed)
				require.ErrorIs(t, err, tc.want)
				require.Less(t, time.Since(t0), 2*time.Second)
				t.Logf("close: %v", err)

				ffs.FailSyncs(nil)
				ffs.FailWrites(nil)
				ffs.FailDirSyncs(nil)
				crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
				s2 := openMem(t, crashed)
				defer s2.Close()
				got := replayAll(t, s2, "evt_1", 0)
				require.GreaterOrEqual(t, len(got), acked, "acknowledged records lost")
				for i, r := range got[:acked] {
					require.Equal(t, fmt.Sprintf("evt_1/%d", i+1), r.data)
				}
				b = s2.NewBatch()
				b.Append("evt_1", uint64(len(got))+1, []byte("after restart"))
				require.NoError(t, s2.Commit(b), "the reopened store takes writes")
				b.Close()
			})
		}
	}
}

// TestWALSyncFaultOutsideRotationClosesDB fails a WAL sync with no rotation
// in sight: the WAL writer's flush loop gets the error (the guard parks
// nothing), so after the fault Close still closes the database, whose
// DB.Close meets the poisoned WAL and returns, and the same filesystem
// reopens (the directory lock is released) with every acknowledged record.
func TestWALSyncFaultOutsideRotationClosesDB(t *testing.T) {
	mem := NewCrashableFS()
	ffs := NewFaultFS(mem)
	s := openMem(t, ffs)
	for seq := uint64(1); seq <= 10; seq++ {
		b := s.NewBatch()
		b.Append("evt_1", seq, []byte(fmt.Sprintf("evt_1/%d", seq)))
		require.NoError(t, s.Commit(b))
		b.Close()
	}
	ffs.FailSyncs(syscall.EIO)
	b := s.NewBatch()
	b.Append("evt_1", 11, []byte("evt_1/11"))
	require.ErrorIs(t, s.Commit(b), syscall.EIO)
	b.Close()
	require.ErrorIs(t, s.Err(), ErrFailed)

	err := s.Close()
	require.ErrorIs(t, err, ErrFailed)
	require.NotContains(t, err.Error(), "left open")
	require.Zero(t, s.wal.parked.Load(), "a fault in the flush loop parks nothing")

	ffs.FailSyncs(nil)
	s2 := openMem(t, ffs)
	defer s2.Close()
	require.GreaterOrEqual(t, len(replayAll(t, s2, "evt_1", 0)), 10)
}
