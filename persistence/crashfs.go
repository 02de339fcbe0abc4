package persistence

import (
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// CrashableFS is vfs.NewCrashableMem for tests that crash the filesystem
// (CrashClone) while a Store works on it.
//
// Pebble's MemFS.Link read-locks the filesystem's clone mutex twice (in
// Link and again in its walk), so a CrashClone that asks for the write
// lock between the two blocks both for good; an ingest links its table,
// and a test crashing beside snapshot ingests hung until its timeout.
// Here a crash waits for the links in flight and holds new ones back.
type CrashableFS struct {
	*vfs.MemFS
	mu sync.RWMutex
}

// NewCrashableFS returns an empty crashable in-memory filesystem.
func NewCrashableFS() *CrashableFS { return &CrashableFS{MemFS: vfs.NewCrashableMem()} }

// Link implements vfs.FS.
func (fs *CrashableFS) Link(oldname, newname string) error {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.MemFS.Link(oldname, newname)
}

// CrashClone returns the filesystem as a crash now would leave it (see
// vfs.MemFS.CrashClone).
func (fs *CrashableFS) CrashClone(cfg vfs.CrashCloneCfg) *vfs.MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.MemFS.CrashClone(cfg)
}
