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
// the error of closing the old WAL or creating the next one after it has
// released DB.mu, and the unwinding unlocks DB.mu again: "fatal error:
// sync: unlock of unlocked mutex", which ends the process and no recover
// can stop (each case below did, every time, before the WAL guard). The
// store must instead fail (ErrFailed with the disk's error), answer the
// commit, close promptly, and leave a disk that reopens with every
// acknowledged record.
func TestWALRotationFaultFailsStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		arm  func(*FaultFS)
		want error
		// memWAL says the rotation goes on past the fault and creates
		// the next WAL, in memory only (see walGuardFS).
		memWAL bool
	}{
		// The rotation's close syncs the old WAL: the sync fails.
		{"sync", func(fs *FaultFS) { fs.FailSyncs(syscall.EIO) }, syscall.EIO, true},
		// The close writes the batch and the EOF trailer: the write fails,
		// and the WAL writer keeps that error for its close.
		{"write", func(fs *FaultFS) { fs.FailWrites(syscall.ENOSPC) }, syscall.ENOSPC, true},
		// The old WAL closes cleanly, but the sync of the directory
		// after creating the next WAL fails.
		{"dirsync", func(fs *FaultFS) { fs.FailDirSyncs(syscall.EIO) }, syscall.EIO, false},
	} {
		for _, async := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/async=%v", tc.name, async), func(t *testing.T) {
				mem := NewCrashableFS()
				ffs := NewFaultFS(mem)
				s, err := Open(Options{Dir: "data", FS: ffs, MemTableBytes: rotationMemTableBytes})
				require.NoError(t, err)
				const acked = 50
				commitRecords(t, s, "evt_1", acked)

				tc.arm(ffs)
				b := s.NewBatch()
				b.Append("evt_1", acked+1, make([]byte, rotationMemTableBytes/2+1))
				done := make(chan error, 1)
				go func() {
					err := commit(s, b, async)
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

				require.True(t, s.wal.frozen.Load(), "the WAL froze at the fault")
				_, created := s.wal.inMemory.Load("data/pebble/000004.log")
				require.Equal(t, tc.memWAL, created, "the rotation went on and created the next WAL in memory")
				// Nothing is stuck in Pebble: Close closes the database.
				t0 := time.Now()
				err = s.Close()
				require.ErrorIs(t, err, ErrFailed)
				require.ErrorIs(t, err, tc.want)
				require.NotContains(t, err.Error(), "left open")
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
// in sight: the commit fails with the disk's error, the WAL freezes, and
// Close still closes the database (nothing is stuck in Pebble), so the same
// filesystem reopens (the directory lock is released) with every
// acknowledged record.
func TestWALSyncFaultOutsideRotationClosesDB(t *testing.T) {
	mem := NewCrashableFS()
	ffs := NewFaultFS(mem)
	s := openMem(t, ffs)
	commitRecords(t, s, "evt_1", 10)
	ffs.FailSyncs(syscall.EIO)
	b := s.NewBatch()
	b.Append("evt_1", 11, []byte("evt_1/11"))
	require.ErrorIs(t, s.Commit(b), syscall.EIO)
	b.Close()
	require.ErrorIs(t, s.Err(), ErrFailed)

	err := s.Close()
	require.ErrorIs(t, err, ErrFailed)
	require.NotContains(t, err.Error(), "left open")
	require.True(t, s.wal.frozen.Load())

	ffs.FailSyncs(nil)
	s2 := openMem(t, ffs)
	defer s2.Close()
	require.GreaterOrEqual(t, len(replayAll(t, s2, "evt_1", 0)), 10)
}

// TestWALFaultInCloseFlush fails WAL syncs before a healthy Close: Close
// flushes, and the flush rotates the WAL, whose close meets the fault
// (before the guard, the fatal error of rotateWAL). Close reports the
// fault, and the disk reopens with every acknowledged record.
func TestWALFaultInCloseFlush(t *testing.T) {
	mem := NewCrashableFS()
	ffs := NewFaultFS(mem)
	s := openMem(t, ffs)
	commitRecords(t, s, "evt_1", 20)
	// A batch applied without a sync leaves WAL data for the close of
	// the rotation to sync (Commit always syncs).
	b := s.NewBatch()
	b.Append("evt_1", 21, []byte("evt_1/21"))
	require.NoError(t, s.DB().Apply(b.pb, nil))
	b.Close()

	ffs.FailSyncs(syscall.EIO)
	err := s.Close()
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, err, syscall.EIO)
	t.Logf("close: %v", err)

	ffs.FailSyncs(nil)
	s2 := openMem(t, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}))
	defer s2.Close()
	got := replayAll(t, s2, "evt_1", 0)
	require.GreaterOrEqual(t, len(got), 20, "acknowledged records lost")
	for i, r := range got {
		require.Equal(t, fmt.Sprintf("evt_1/%d", i+1), r.data)
	}
}

// TestWALFaultInIngestRotation fails WAL syncs before an ingest whose table
// overlaps the memtable: Pebble ingests it as a flushable, which rotates
// the WAL twice and writes the ingest to the new WAL (before the guard,
// the fatal error of rotateWAL). The ingest reports the fault, and the
// disk reopens with every acknowledged record.
func TestWALFaultInIngestRotation(t *testing.T) {
	mem := NewCrashableFS()
	ffs := NewFaultFS(mem)
	s := openMem(t, ffs)
	for seq := uint64(1); seq <= 20; seq++ {
		b := s.NewBatch()
		b.Append("evt_1", seq, []byte(fmt.Sprintf("evt_1/%d", seq)))
		if seq == 20 {
			b.SetSnapshotPart("evt_1", 20, 1, []byte("part 1, in the memtable"))
		}
		require.NoError(t, s.Commit(b))
		b.Close()
	}

	ffs.FailSyncs(syscall.EIO)
	err := s.IngestSnapshotParts("evt_1", 20, [][]byte{[]byte("part 1"), []byte("part 2")})
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, err, syscall.EIO)
	t.Logf("ingest: %v", err)
	require.ErrorIs(t, s.Close(), ErrFailed)

	ffs.FailSyncs(nil)
	s2 := openMem(t, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}))
	defer s2.Close()
	require.Len(t, replayAll(t, s2, "evt_1", 0), 20)
}

// commitRecords commits records 1..n of stream, "<stream>/<seq>" each, one
// batch a record.
func commitRecords(t *testing.T, s *Store, stream string, n uint64) {
	t.Helper()
	for seq := uint64(1); seq <= n; seq++ {
		b := s.NewBatch()
		b.Append(stream, seq, []byte(fmt.Sprintf("%s/%d", stream, seq)))
		require.NoError(t, s.Commit(b))
		b.Close()
	}
}

// commit commits b through Commit, or CommitAsync and its wait.
func commit(s *Store, b *Batch, async bool) error {
	if !async {
		return s.Commit(b)
	}
	wait, err := s.CommitAsync(b)
	if err != nil {
		return err
	}
	return wait()
}
