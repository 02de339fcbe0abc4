package persistence

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FaultFS wraps a filesystem to inject storage faults on demand, for tests
// of the fault paths (see "Storage faults" in the package doc):
//
//   - FailSyncs: every sync of a WAL file (a name ending in ".log") fails
//     with err, as a failed fdatasync does;
//   - FailWrites: every write (and preallocation) of any file fails with
//     err, as on a full disk (ENOSPC);
//   - HangSyncs: every sync of a WAL file blocks until HangSyncs(false), as
//     on a disk that stopped answering;
//   - FailDirSyncs: every sync of a directory (Pebble syncs its directory
//     after creating a file, a WAL among them) fails with err.
//
// Files opened before a fault is armed see it too: the wrapper checks on
// every call.
type FaultFS struct {
	vfs.FS
	syncErr  atomic.Pointer[error]
	writeErr atomic.Pointer[error]
	dirErr   atomic.Pointer[error]

	hangMu   sync.Mutex
	hang     chan struct{} // non-nil while syncs hang; closed to release them
	syncs    atomic.Int64  // WAL syncs attempted
	injected atomic.Int64  // calls that answered an injected error
}

// NewFaultFS returns fs with no fault armed.
func NewFaultFS(fs vfs.FS) *FaultFS { return &FaultFS{FS: fs} }

// FailSyncs makes WAL syncs fail with err from now on; nil heals.
func (fs *FaultFS) FailSyncs(err error) { fs.syncErr.Store(ptr(err)) }

// FailWrites makes every file write fail with err from now on; nil heals.
func (fs *FaultFS) FailWrites(err error) { fs.writeErr.Store(ptr(err)) }

// FailDirSyncs makes directory syncs fail with err from now on; nil heals.
func (fs *FaultFS) FailDirSyncs(err error) { fs.dirErr.Store(ptr(err)) }

// HangSyncs makes WAL syncs block (on) or releases those blocked (off).
func (fs *FaultFS) HangSyncs(on bool) {
	fs.hangMu.Lock()
	defer fs.hangMu.Unlock()
	switch {
	case on && fs.hang == nil:
		fs.hang = make(chan struct{})
	case !on && fs.hang != nil:
		close(fs.hang)
		fs.hang = nil
	}
}

// Injected returns how many calls answered an injected error.
func (fs *FaultFS) Injected() int64 { return fs.injected.Load() }

// WALSyncs returns how many WAL syncs were attempted.
func (fs *FaultFS) WALSyncs() int64 { return fs.syncs.Load() }

func ptr(err error) *error {
	if err == nil {
		return nil
	}
	return &err
}

func (fs *FaultFS) loadErr(p *atomic.Pointer[error]) error {
	if e := p.Load(); e != nil {
		fs.injected.Add(1)
		return *e
	}
	return nil
}

func (fs *FaultFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	return &faultFile{File: f, fs: fs, wal: strings.HasSuffix(name, ".log")}, nil
}

// Create implements vfs.FS.
func (fs *FaultFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return fs.wrap(name, f, err)
}

// ReuseForWrite implements vfs.FS.
func (fs *FaultFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.wrap(newname, f, err)
}

// OpenReadWrite implements vfs.FS.
func (fs *FaultFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	return fs.wrap(name, f, err)
}

// OpenDir implements vfs.FS.
func (fs *FaultFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return f, err
	}
	return &faultDir{File: f, fs: fs}, nil
}

// Unwrap returns the wrapped filesystem.
func (fs *FaultFS) Unwrap() vfs.FS { return fs.FS }

type faultFile struct {
	vfs.File
	fs  *FaultFS
	wal bool
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.loadErr(&f.fs.writeErr); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.loadErr(&f.fs.writeErr); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Preallocate(off, n int64) error {
	if err := f.fs.loadErr(&f.fs.writeErr); err != nil {
		return err
	}
	return f.File.Preallocate(off, n)
}

// syncFault waits out a hang and returns an armed sync error.
func (f *faultFile) syncFault() error {
	if !f.wal {
		return nil
	}
	f.fs.syncs.Add(1)
	f.fs.hangMu.Lock()
	h := f.fs.hang
	f.fs.hangMu.Unlock()
	if h != nil {
		<-h
	}
	return f.fs.loadErr(&f.fs.syncErr)
}

func (f *faultFile) Sync() error {
	if err := f.syncFault(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) SyncData() error {
	if err := f.syncFault(); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *faultFile) SyncTo(length int64) (bool, error) {
	if err := f.syncFault(); err != nil {
		return false, err
	}
	return f.File.SyncTo(length)
}

type faultDir struct {
	vfs.File
	fs *FaultFS
}

func (d *faultDir) Sync() error {
	if err := d.fs.loadErr(&d.fs.dirErr); err != nil {
		return err
	}
	return d.File.Sync()
}
