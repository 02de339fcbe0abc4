package persistence

import (
	"math/bits"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// batchBuckets is the number of power-of-two buckets of records per commit:
// bucket i counts commits with 2^(i-1) < records <= 2^i (bucket 0: 0 or 1
// record); the last bucket takes everything larger.
const batchBuckets = 12

// Stats are cumulative counters since Open.
type Stats struct {
	// Commits is the number of successful non-empty commits.
	Commits uint64
	// Records is the number of records appended by those commits.
	Records uint64
	// Bytes is the encoded size of those commits.
	Bytes uint64
	// CommitErrors is the number of failed commits.
	CommitErrors uint64
	// WALSyncs is the number of fsyncs of WAL files. Commits/WALSyncs is the
	// group-commit factor.
	WALSyncs uint64
	// WALSyncNanos is the time spent in those fsyncs. Over a stretch of
	// wall time it says how busy the disk kept the log: near 1 the syncs
	// ran back to back, and the disk, not the CPU, paced durable writes.
	WALSyncNanos uint64
	// RecordsPerCommit[i] counts commits of up to 2^i records (more than
	// 2^(i-1)); the last bucket is open-ended.
	RecordsPerCommit [batchBuckets]uint64
	// WriteStalls is the number of times Pebble stopped accepting writes
	// (memtables or level 0 waiting for flushes and compactions), and
	// WriteStallNanos their total length: commits wait meanwhile.
	WriteStalls     uint64
	WriteStallNanos uint64
	// Flushes and Compactions are the memtable flushes and compactions in
	// progress: the store's background work.
	Flushes, Compactions int64
	// FlushesDone and CompactionsDone count the memtable flushes and the
	// compactions finished since Open (a compaction that only moves or
	// deletes tables counts too, though it writes nothing).
	FlushesDone, CompactionsDone int64
	// FlushedBytes is what flushes wrote to level 0 tables, CompactedBytes
	// what compactions wrote to tables, and CompactionReadBytes what they
	// read. CompactedBytes/FlushedBytes is the write amplification the
	// compactions add to each byte flushed: the store's background CPU is
	// mostly that reading, merging, compressing and writing.
	FlushedBytes, CompactedBytes, CompactionReadBytes uint64
	// CompactionNanos is the wall time compactions ran (summed over
	// concurrent ones).
	CompactionNanos uint64
	// L0Sublevels and L0Files are level 0's sublevels (its read
	// amplification; Pebble compacts it from L0CompactionThreshold on and
	// stalls writes at L0StopWritesThreshold) and tables, now.
	L0Sublevels, L0Files int64
}

type stats struct {
	commits      atomic.Uint64
	records      atomic.Uint64
	bytes        atomic.Uint64
	commitErrors atomic.Uint64
	syncs        atomic.Uint64
	syncNanos    atomic.Uint64
	buckets      [batchBuckets]atomic.Uint64
	stalls       atomic.Uint64
	stallNanos   atomic.Uint64
	stallStart   atomic.Int64 // unix nanos of the stall in progress, 0 when none
}

func (st *stats) observe(records, bytes int) {
	st.commits.Add(1)
	st.records.Add(uint64(records))
	st.bytes.Add(uint64(bytes))
	i := 0
	if records > 1 {
		i = bits.Len(uint(records - 1))
	}
	st.buckets[min(i, batchBuckets-1)].Add(1)
}

// Stats returns the counters. They are read one by one, so under load they
// are approximately, not exactly, mutually consistent.
func (s *Store) Stats() Stats {
	out := Stats{
		Commits:         s.stats.commits.Load(),
		WriteStalls:     s.stats.stalls.Load(),
		WriteStallNanos: s.stats.stallNanos.Load(),
		Records:         s.stats.records.Load(),
		Bytes:           s.stats.bytes.Load(),
		CommitErrors:    s.stats.commitErrors.Load(),
		WALSyncs:        s.stats.syncs.Load(),
		WALSyncNanos:    s.stats.syncNanos.Load(),
	}
	for i := range out.RecordsPerCommit {
		out.RecordsPerCommit[i] = s.stats.buckets[i].Load()
	}
	if s.acquire() == nil {
		// Metrics takes Pebble's locks: read at a scrape, never per commit.
		m := s.db.Metrics()
		s.release()
		out.Flushes, out.Compactions = m.Flush.NumInProgress, m.Compact.NumInProgress
		out.FlushesDone, out.CompactionsDone = m.Flush.Count, m.Compact.Count
		out.CompactionNanos = uint64(m.Compact.Duration)
		for i := range m.Levels {
			l := &m.Levels[i]
			out.FlushedBytes += l.TableBytesFlushed + l.BlobBytesFlushed
			out.CompactedBytes += l.TableBytesCompacted + l.BlobBytesCompacted
			out.CompactionReadBytes += l.TableBytesRead
		}
		out.L0Sublevels, out.L0Files = int64(m.Levels[0].Sublevels), m.Levels[0].TablesCount
	}
	return out
}

// syncCountingFS counts syncs of WAL files (names ending in ".log") so Stats
// can report the real number of fsyncs the commit pipeline issued.
type syncCountingFS struct {
	vfs.FS
	syncs, nanos *atomic.Uint64
}

func (fs *syncCountingFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &syncCountingFile{File: f, syncs: fs.syncs, nanos: fs.nanos}, nil
}

func (fs *syncCountingFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return fs.wrap(name, f, err)
}

func (fs *syncCountingFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.wrap(newname, f, err)
}

func (fs *syncCountingFS) Unwrap() vfs.FS { return fs.FS }

type syncCountingFile struct {
	vfs.File
	syncs, nanos *atomic.Uint64
}

// timed counts one sync and its duration.
func (f *syncCountingFile) timed(start time.Time) {
	f.syncs.Add(1)
	f.nanos.Add(uint64(time.Since(start)))
}

func (f *syncCountingFile) Sync() error {
	defer f.timed(time.Now())
	return f.File.Sync()
}

func (f *syncCountingFile) SyncData() error {
	defer f.timed(time.Now())
	return f.File.SyncData()
}

func (f *syncCountingFile) SyncTo(length int64) (bool, error) {
	defer f.timed(time.Now())
	return f.File.SyncTo(length)
}
