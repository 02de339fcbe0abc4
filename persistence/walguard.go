package persistence

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble functions the WAL guard looks for on the stack of a failing call.
const (
	pebblePkg       = "github.com/cockroachdb/pebble/v2."
	pebbleRotateWAL = pebblePkg + "(*DB).rotateWAL"
	pebbleOpen      = pebblePkg + "Open"
	pebbleDBClose   = pebblePkg + "(*DB).Close"
	pebbleFlushLoop = "github.com/cockroachdb/pebble/v2/record.(*LogWriter).flushLoop"
)

// walGuardFS keeps a WAL fault from reaching the one place in Pebble where
// an error kills the process: DB.rotateWAL (db.go in v2.1.7; see "WAL
// rotation" in the package doc).
//
// rotateWAL releases DB.mu, closes the old WAL (the flush loop writes what
// is buffered and the EOF trailer, then vfs.syncingFile.Close syncs and
// closes the file) and creates the next one (StandaloneManager.Create,
// which syncs the directory). It panics on any error there (db.go:2822,
// 2835) while its caller holds a deferred DB.mu.Unlock (commitWrite,
// AsyncFlush, ingest, the delayed flush), and the unwinding unlocks the
// released mutex: "fatal error: sync: unlock of unlocked mutex", which no
// recover can stop. The close fails whenever the WAL writer kept an
// earlier write or sync error (record.LogWriter keeps the first one), so
// once a WAL write or sync has failed the next rotation (a full memtable,
// a large batch, a flush, an ingest) ends the process.
//
// The guard sits between Pebble and the filesystem:
//
//   - A failed write or sync of a WAL file fails the store at once, before
//     Pebble hands the error to the commits waiting for that sync, and
//     poisons the WAL. The error still goes to the WAL writer's flush loop,
//     which keeps it, writes nothing more, and answers the waiting commits
//     with it.
//   - A call that would hand rotateWAL an error does not return: its
//     goroutine parks for good. That is any call on a WAL file after the
//     poisoning (the old WAL's last sync and close; the creation of a new
//     WAL), a failed call on a WAL file from anything but the flush loop,
//     DB.Close or Open, and a failed directory sync inside rotateWAL. The
//     parked goroutine holds Pebble's commit mutex, so commits still in
//     Pebble stay there too; the store answers their callers from Failed
//     (Store.await), and the process exits as after any storage fault.
//   - So nothing reaches a WAL after the fault, and no WAL follows one
//     that faulted (after which Open would call the faulted one's torn tail
//     corrupt): the disk is as after a crash at the fault, which Open
//     recovers.
//
// DB.Close closes the WAL too and returns its error instead of panicking:
// its calls go on after a poisoning, and fail normally. So do those of
// pebble.Open, which returns the error of creating its first WAL.
type walGuardFS struct {
	vfs.FS
	// fault fails the store with err, the error of op on a WAL file.
	fault    func(op string, err error)
	poisoned atomic.Bool
	// parked counts goroutines parked for good. Close does not close the
	// database while one is: DB.Close would wait for them.
	parked atomic.Int64
}

func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

// onStack reports whether one of funcs is a caller of the function that
// calls onStack.
func onStack(funcs ...string) bool {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	for {
		f, more := frames.Next()
		for _, fn := range funcs {
			if f.Function == fn {
				return true
			}
		}
		if !more {
			return false
		}
	}
}

// poison records a fault of op on a WAL file and fails the store.
func (fs *walGuardFS) poison(op string, err error) {
	fs.poisoned.Store(true)
	fs.fault(op, err)
}

// park blocks the calling goroutine of Pebble for good: see walGuardFS.
func (fs *walGuardFS) park(op string, err error) {
	fs.poison(op, err)
	fs.parked.Add(1)
	select {}
}

func (fs *walGuardFS) create(name string, create func() (vfs.File, error)) (vfs.File, error) {
	if !isWAL(name) {
		return create()
	}
	if fs.poisoned.Load() && !onStack(pebbleOpen) {
		// A new WAL behind a poisoned one: a crash would leave two WALs
		// with unclean tails, and Open calls the older one corrupt.
		fs.park("create "+name, errors.New("a new WAL after a WAL fault"))
	}
	f, err := create()
	if err != nil {
		if !onStack(pebbleOpen) {
			fs.park("create "+name, err)
		}
		return f, err
	}
	return &walFile{File: f, fs: fs, name: name}, nil
}

// Create implements vfs.FS.
func (fs *walGuardFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.create(name, func() (vfs.File, error) { return fs.FS.Create(name, category) })
}

// ReuseForWrite implements vfs.FS (a recycled WAL).
func (fs *walGuardFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.create(newname, func() (vfs.File, error) { return fs.FS.ReuseForWrite(oldname, newname, category) })
}

// OpenDir implements vfs.FS: StandaloneManager.Create syncs the directory
// after creating a WAL, inside rotateWAL.
func (fs *walGuardFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return f, err
	}
	return &guardDir{File: f, fs: fs, name: name}, nil
}

// Unwrap returns the wrapped filesystem.
func (fs *walGuardFS) Unwrap() vfs.FS { return fs.FS }

type guardDir struct {
	vfs.File
	fs   *walGuardFS
	name string
}

func (d *guardDir) Sync() error {
	err := d.File.Sync()
	if err != nil && onStack(pebbleRotateWAL) {
		d.fs.park("sync directory "+d.name, err)
	}
	return err
}

// walFile is a WAL file under the guard.
type walFile struct {
	vfs.File
	fs   *walGuardFS
	name string
}

// before parks a call on a WAL file after a WAL fault, unless DB.Close
// makes it: the only other callers then are rotateWAL's close of the old
// WAL (vfs.syncingFile.Close syncs before it closes, and returns a failed
// sync without closing) and the creation of a new WAL, and both must not
// return.
func (f *walFile) before(op string) {
	if f.fs.poisoned.Load() && !onStack(pebbleDBClose) {
		f.fs.park(op+" "+f.name, errors.New("a WAL call after a WAL fault"))
	}
}

// after poisons the WAL on err. The WAL writer's flush loop gets the error
// (it keeps it, stops writing, and answers the commits waiting for it), as
// do DB.Close and Open; any other caller is in a rotation, or not known to
// handle the error, and parks.
func (f *walFile) after(op string, err error) error {
	if err == nil {
		return nil
	}
	f.fs.poison(op+" "+f.name, err)
	if !onStack(pebbleFlushLoop, pebbleDBClose, pebbleOpen) {
		f.fs.park(op+" "+f.name, err)
	}
	return err
}

func (f *walFile) Write(p []byte) (int, error) {
	f.before("write")
	n, err := f.File.Write(p)
	return n, f.after("write", err)
}

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	f.before("write")
	n, err := f.File.WriteAt(p, off)
	return n, f.after("write", err)
}

func (f *walFile) Sync() error {
	f.before("sync")
	return f.after("sync", f.File.Sync())
}

func (f *walFile) SyncData() error {
	f.before("sync")
	return f.after("sync", f.File.SyncData())
}

func (f *walFile) SyncTo(length int64) (bool, error) {
	f.before("sync")
	full, err := f.File.SyncTo(length)
	return full, f.after("sync", err)
}

func (f *walFile) Stat() (vfs.FileInfo, error) {
	fi, err := f.File.Stat()
	return fi, f.after("stat", err)
}

func (f *walFile) Close() error {
	f.before("close")
	return f.after("close", f.File.Close())
}

// walFault fails the store on the fault of op on a WAL file, and ends a
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
