package persistence

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// pebbleRotateWAL is the function whose directory sync the WAL guard
// takes as a WAL's (a Pebble upgrade that renames it fails
// TestWALRotationFaultFailsStore/dirsync with the fatal error).
const pebbleRotateWAL = "github.com/cockroachdb/pebble/v2.(*DB).rotateWAL"

// walGuardFS keeps WAL faults away from Pebble, which cannot survive one
// in a WAL rotation (see "WAL rotation" in the package doc).
//
// The first failed write, sync or close of a WAL file, failed creation of
// one, or failed directory sync inside DB.rotateWAL fails the store (the
// fault callback) before it returns, then freezes the WAL: that call and
// every later call on a WAL file succeed without reaching the disk, and a
// WAL created later is an empty file in memory only. Pebble goes on as if
// nothing happened, and the store acknowledges nothing from then on
// (Commit checks Err after Pebble reports a batch durable, and the fault
// is recorded before the call that would make Pebble report it returns).
//
// What the disk holds is what a crash at the fault would leave: the WALs
// up to the fault, the last one with a torn tail, which Open takes as the
// end of the log. No WAL is written after the faulted one (a WAL after a
// torn one would make Open call the torn one corrupt). Tables and the
// MANIFEST are not frozen: a flush after the fault writes a memtable that
// may hold batches never acknowledged, which a fault allows (an error at a
// fault means "unknown"), and only then lets Pebble drop the WALs it
// covers.
//
// While pebble.Open runs, errors go to Pebble as they are: Open returns
// them.
type walGuardFS struct {
	vfs.FS
	// fault fails the store with err, the error of op on a WAL.
	fault   func(op string, err error)
	opening *atomic.Bool
	frozen  atomic.Bool
	// inMemory holds the names of the WALs created after the fault, which
	// exist only for Pebble.
	inMemory sync.Map
}

func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

// swallow records err, the error of op on a WAL, and reports whether to
// hide it from Pebble (always, but while Open runs).
func (fs *walGuardFS) swallow(op string, err error) bool {
	fs.fault(op, err)
	if fs.opening.Load() {
		return false
	}
	fs.frozen.Store(true) // after the fault: who sees it frozen sees Err
	return true
}

func (fs *walGuardFS) create(name string, create func() (vfs.File, error)) (vfs.File, error) {
	if !isWAL(name) {
		return create()
	}
	if fs.frozen.Load() {
		return fs.memWAL(name), nil
	}
	f, err := create()
	if err != nil {
		if fs.swallow("create "+name, err) {
			return fs.memWAL(name), nil
		}
		return f, err
	}
	return &walFile{File: f, fs: fs, name: name}, nil
}

func (fs *walGuardFS) memWAL(name string) vfs.File {
	fs.inMemory.Store(name, true)
	return memWAL{name: name}
}

// Create implements vfs.FS.
func (fs *walGuardFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.create(name, func() (vfs.File, error) { return fs.FS.Create(name, category) })
}

// ReuseForWrite implements vfs.FS: Pebble recycles an obsolete WAL as the
// next one. After the fault the obsolete file stays as it is (the next
// Open removes it).
func (fs *walGuardFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.create(newname, func() (vfs.File, error) { return fs.FS.ReuseForWrite(oldname, newname, category) })
}

// Remove implements vfs.FS: a WAL that exists only in memory is gone.
func (fs *walGuardFS) Remove(name string) error {
	if _, ok := fs.inMemory.LoadAndDelete(name); ok {
		return nil
	}
	return fs.FS.Remove(name)
}

// OpenDir implements vfs.FS: rotateWAL syncs the directory after creating
// the next WAL (wal.StandaloneManager.Create) and panics on its error.
func (fs *walGuardFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return f, err
	}
	return &guardDir{File: f, fs: fs, name: name}, nil
}

// Unwrap returns the wrapped filesystem.
func (fs *walGuardFS) Unwrap() vfs.FS { return fs.FS }

// guardDir is a directory under the guard. Only its sync inside rotateWAL
// is the WAL's: any other (a new MANIFEST's, a table's) must fail as it
// does, or Pebble would rely on a file that a crash may lose.
type guardDir struct {
	vfs.File
	fs   *walGuardFS
	name string
}

func (d *guardDir) Sync() error {
	err := d.File.Sync()
	if err != nil && onStack(pebbleRotateWAL) && d.fs.swallow("sync directory "+d.name, err) {
		return nil
	}
	return err
}

// onStack reports whether fn is a caller of the function that calls
// onStack. It walks the stack, so it is only for fault paths.
func onStack(fn string) bool {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	for {
		f, more := frames.Next()
		if f.Function == fn {
			return true
		}
		if !more {
			return false
		}
	}
}

// walFile is a WAL file on disk under the guard.
type walFile struct {
	vfs.File
	fs   *walGuardFS
	name string
}

func (f *walFile) Write(p []byte) (int, error) {
	if f.fs.frozen.Load() {
		return len(p), nil
	}
	n, err := f.File.Write(p)
	if err != nil && f.fs.swallow("write "+f.name, err) {
		return len(p), nil
	}
	return n, err
}

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.frozen.Load() {
		return len(p), nil
	}
	n, err := f.File.WriteAt(p, off)
	if err != nil && f.fs.swallow("write "+f.name, err) {
		return len(p), nil
	}
	return n, err
}

// Preallocate only reserves space: Pebble ignores its error.
func (f *walFile) Preallocate(off, n int64) error {
	if f.fs.frozen.Load() {
		return nil
	}
	return f.File.Preallocate(off, n)
}

func (f *walFile) sync(op func() error) error {
	if f.fs.frozen.Load() {
		return nil
	}
	err := op()
	if err != nil && f.fs.swallow("sync "+f.name, err) {
		return nil
	}
	return err
}

func (f *walFile) Sync() error     { return f.sync(f.File.Sync) }
func (f *walFile) SyncData() error { return f.sync(f.File.SyncData) }

func (f *walFile) SyncTo(length int64) (bool, error) {
	full := false
	err := f.sync(func() error {
		var err error
		full, err = f.File.SyncTo(length)
		return err
	})
	return full, err
}

func (f *walFile) Close() error {
	err := f.File.Close() // releases the descriptor; writes nothing
	if err != nil && (f.fs.frozen.Load() || f.fs.swallow("close "+f.name, err)) {
		return nil
	}
	return err
}

// memWAL is a WAL created after the fault: it takes writes and syncs and
// keeps nothing.
type memWAL struct{ name string }

func (memWAL) Close() error                           { return nil }
func (memWAL) Read([]byte) (int, error)               { return 0, io.EOF }
func (memWAL) ReadAt([]byte, int64) (int, error)      { return 0, io.EOF }
func (memWAL) Write(p []byte) (int, error)            { return len(p), nil }
func (memWAL) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (memWAL) Preallocate(int64, int64) error         { return nil }
func (w memWAL) Stat() (vfs.FileInfo, error)          { return memWALInfo{w.name}, nil }
func (memWAL) Sync() error                            { return nil }
func (memWAL) SyncTo(int64) (bool, error)             { return true, nil }
func (memWAL) SyncData() error                        { return nil }
func (memWAL) Prefetch(int64, int64) error            { return nil }
func (memWAL) Fd() uintptr                            { return vfs.InvalidFd }

type memWALInfo struct{ name string }

func (i memWALInfo) Name() string         { return i.name }
func (memWALInfo) Size() int64            { return 0 }
func (memWALInfo) Mode() os.FileMode      { return 0o644 }
func (memWALInfo) ModTime() time.Time     { return time.Time{} }
func (memWALInfo) IsDir() bool            { return false }
func (memWALInfo) Sys() any               { return nil }
func (memWALInfo) DeviceID() vfs.DeviceID { return vfs.DeviceID{} }

// walFault fails the store on the fault of op on a WAL, and ends a
// pebble.Open that is waiting meanwhile (see openDB).
func (s *Store) walFault(op string, err error) {
	if s.h.opening.Load() {
		select {
		case s.h.openFault <- err:
		default:
		}
	}
	s.fail(fmt.Errorf("wal %s: %w", op, err))
}
