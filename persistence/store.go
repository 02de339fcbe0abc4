package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// MaxRecordLen bounds one log record or index value. Snapshots, which are
// larger, are chunked by package snapshots below this size.
const MaxRecordLen = 16 << 20

// replayBlockBytes is the uncompressed size of table data blocks.
const replayBlockBytes = 32 << 10

// ErrClosed reports use of a Store after Close.
var ErrClosed = errors.New("persistence: store closed")

// ErrTooLarge reports a record or value above MaxRecordLen.
var ErrTooLarge = errors.New("persistence: value too large")

// Options configure Open. The zero value of every field but Dir is usable.
type Options struct {
	// Dir is the data directory; the database lives in Dir/pebble.
	Dir string
	// FS is the filesystem; nil means vfs.Default. Tests use vfs.NewCrashableMem().
	FS vfs.FS
	// Logger receives Pebble's own log lines (info lines at debug level).
	// Nil discards them, so Pebble never writes to stderr on its own.
	Logger *slog.Logger
	// CacheBytes is the block cache size; 0 means 64 MiB.
	CacheBytes int64
	// MemTableBytes is the memtable size; 0 means 16 MiB. It bounds the WAL
	// that Open must replay (and flush) after a crash: about 0.1 s at
	// 16 MiB against 0.45 s at 64 MiB here (BenchmarkOpen). A graceful
	// Close flushes, so it does not matter for a clean restart.
	MemTableBytes uint64
	// NoSync makes Commit skip the fsync. It is for the benchmark that
	// measures what fsync costs and never a service mode: acknowledged
	// writes can be lost on a crash.
	NoSync bool
	// StallTimeout fails the store (ErrFailed) when commits wait and none
	// completes for this long; 0 means DefaultStallTimeout, below 0 turns
	// the watchdog off.
	StallTimeout time.Duration
	// CloseTimeout bounds Close: the wait for operations in flight, then
	// the flush and close of the database; 0 means DefaultCloseTimeout.
	CloseTimeout time.Duration
	// tune, when a test or benchmark sets it, edits Pebble's options
	// before Open fills in the defaults (BenchmarkDoorBurstCompaction
	// tries other LSM shapes with it).
	tune func(*pebble.Options)
}

// Store is the write-ahead log and index store on one Pebble database.
type Store struct {
	db    *pebble.DB
	wo    *pebble.WriteOptions
	stats stats
	// fs, dir and popts serve IngestSnapshotParts, which writes a table
	// beside the database and hands it to Pebble.
	fs        vfs.FS
	dir       string
	popts     *pebble.Options
	ingestSeq atomic.Uint64
	// wal stands between Pebble and its WAL files: a WAL fault fails the
	// store there and never reaches Pebble (see walGuardFS).
	wal *walGuardFS
	// h admits operations (Close waits for those in flight, so Pebble
	// never sees a call on a closed DB) and holds the fault state.
	h            health
	closeTimeout time.Duration
	closeOnce    sync.Once
	closeErr     error
}

// Open opens or creates the store in opts.Dir/pebble.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("persistence: open: empty Dir")
	}
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	cacheBytes := opts.CacheBytes
	if cacheBytes <= 0 {
		cacheBytes = 64 << 20
	}
	memBytes := opts.MemTableBytes
	if memBytes == 0 {
		memBytes = 16 << 20
	}
	s := &Store{wo: pebble.Sync, fs: fs, dir: opts.Dir, closeTimeout: opts.CloseTimeout}
	if s.closeTimeout <= 0 {
		s.closeTimeout = DefaultCloseTimeout
	}
	s.h.init(opts.Logger)
	if opts.NoSync {
		s.wo = pebble.NoSync
	}
	s.wal = &walGuardFS{FS: fs, fault: s.walFault, opening: &s.h.opening}
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	popts := &pebble.Options{
		FS:                 &syncCountingFS{FS: s.wal, syncs: &s.stats.syncs, nanos: &s.stats.syncNanos},
		Cache:              cache,
		MemTableSize:       memBytes,
		Logger:             slogAdapter{l: opts.Logger, fail: s.fail},
		EventListener:      s.stallListener(opts.Logger),
		FormatMajorVersion: pebble.FormatNewest,
	}
	for i := range popts.Levels {
		// Replay reads a log front to back: 32 KiB blocks cost one read,
		// one allocation and one decompression per ~150 records instead
		// of per ~20 (4 KiB, Pebble's default).
		popts.Levels[i].BlockSize = replayBlockBytes
	}
	// Pebble's fastest profile (MinLZ on amd64, Snappy where MinLZ has no
	// assembly): flushes and compactions are a quarter to a third of the
	// service's CPU while door batches write (issue 33), and MinLZ
	// compresses the store's own 32 KiB blocks 25% faster than Snappy at a
	// slightly better ratio (35.2% vs 36.1% of the input). Tables written
	// with Snappy before stay readable; the format is already the newest.
	popts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionFastest })
	// Ingested snapshots go to the bottom of the LSM, not level 0. Pebble
	// ingests a table into L0 or the lowest level from Lbase down whose
	// tables neither hold keys in its range nor span it; but the snapshot
	// namespace ('s') lies between the log ('l') and the indexes ('x'), so
	// a compaction's output table often ends with a log's last records and
	// starts the indexes, spanning every snapshot key without holding one.
	// Such a table sent each snapshot to L0, and the snapshot, "written
	// once", was rewritten by the L0->Lbase compaction and again below it.
	// With IngestSplit Pebble splits that one table into two virtual tables
	// (a manifest edit, no bytes rewritten) and links the snapshot between
	// them at the bottom. BenchmarkDoorBurstCompaction, door batches with a
	// 40 MiB snapshot saved once per 200,000 scans (medians of 5, loaded
	// machine): compactions wrote 0.93 bytes per byte committed before,
	// 0.36 after, read 1.24 before, 0.52 after, and the process's CPU per
	// burst fell from 0.97 s to 0.75 s; with a 12 MiB snapshot 0.46 -> 0.40
	// written, 0.71 -> 0.55 read.
	//
	// The rest stays at Pebble's defaults, measured on the same benchmark
	// (bench/results/20261129-store-compaction.md): MemTableSize 64 MiB
	// wrote 0.25 instead of 0.36 and removed most write stalls, but costs up
	// to 96 MiB more memory (two memtables) and 4.5x the WAL replay after a
	// crash (see Options.MemTableBytes); LBaseMaxBytes 256 MiB only wrote
	// less while level 0 was allowed to grow (with level 0 kept compacted
	// it read more and cost the same CPU); L0CompactionThreshold 8 wrote
	// 0.17 by letting level 0 reach 8 sublevels before compacting, twice
	// the read amplification of every read and 4 sublevels from the write
	// stall at 12, unmeasured on the read side here; a bigger L0 target
	// file size (8 MiB) or FlushSplitBytes (32 MiB) cut flushes less often
	// around the snapshot and wrote more even counting what the others
	// still owed (1.42 and 0.66 with 5 bursts, against 0.39 + 0.31 owed).
	popts.Experimental.IngestSplit = func() bool { return true }
	if opts.tune != nil {
		opts.tune(popts)
	}
	// Open fills the defaults into a copy; IngestSnapshotParts makes its
	// writer options from these, so they need them too.
	popts.EnsureDefaults()
	dir := fs.PathJoin(opts.Dir, "pebble")
	db, err := s.openDB(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("persistence: open %s: %w", dir, err)
	}
	s.db, s.popts = db, popts
	s.removeIngestLeftovers()
	stall := opts.StallTimeout
	if stall == 0 {
		stall = DefaultStallTimeout
	}
	if stall > 0 {
		s.h.watchWG.Add(1)
		go s.watch(stall)
	}
	return s, nil
}

// Close waits for in-flight operations, flushes the memtable and closes the
// database. The flush moves what the WAL holds into a table, so the next
// Open has no WAL to replay (Pebble replays the WAL of an unflushed
// memtable on open and flushes it before returning, which costs as much as
// the memtable is large). A crash skips the flush and loses nothing: the
// WAL stays, and Open replays it.
//
// Close returns within about Options.CloseTimeout in every state. After a
// fault it neither waits for operations stuck inside Pebble nor flushes:
// it closes the database only if nothing is in flight, and otherwise
// leaves it to the process exit, which loses nothing either (what was
// acknowledged is in the synced WAL). It then returns the fault.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Store) close() error {
	deadline := time.Now().Add(s.closeTimeout)
	s.h.closing.Store(true)
	s.stopWatch()
	if fault := s.Err(); fault != nil {
		// Healthy operations finish in microseconds; stuck ones never do.
		if !s.waitDrained(time.Now().Add(100 * time.Millisecond)) {
			return fmt.Errorf("persistence: close: database left open, %d operations stuck in pebble: %w", s.h.inflight.Load(), fault)
		}
		if err := s.closeDB(deadline, false); err != nil {
			return errors.Join(fault, err)
		}
		return fault
	}
	if !s.waitDrained(deadline) {
		return fmt.Errorf("persistence: close: database left open, %d operations still in flight after %s", s.h.inflight.Load(), s.closeTimeout)
	}
	err := s.closeDB(deadline, true)
	if fault := s.Err(); fault != nil {
		// The flush rotates the WAL, which may meet a WAL fault: Pebble
		// does not see it (see walGuardFS), so report it here.
		return errors.Join(fault, err)
	}
	return err
}

// closeDB flushes (if asked) and closes the database, giving up at
// deadline: a disk that hangs must not hold the process's exit.
func (s *Store) closeDB(deadline time.Time, flush bool) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("persistence: close: pebble panicked: %v", r)
			}
		}()
		if flush {
			if err := s.db.Flush(); err != nil {
				_ = s.db.Close()
				done <- fmt.Errorf("persistence: close: flush: %w", err)
				return
			}
		}
		if err := s.db.Close(); err != nil {
			done <- fmt.Errorf("persistence: close: %w", err)
			return
		}
		done <- nil
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("persistence: close: database did not close within %s", s.closeTimeout)
	}
}

// DB returns the underlying database, an escape hatch for tests and tools
// (for example to damage a value on purpose). Unlike Store methods, using it
// after Close panics; package snapshots reads through ViewSnapshots instead.
func (s *Store) DB() *pebble.DB { return s.db }

// Batch collects appends and index updates that commit atomically.
// It belongs to one goroutine.
type Batch struct {
	pb        *pebble.Batch
	records   int
	committed bool
	key       []byte // scratch for the keys of appended records
	// err is the first bad argument; Commit returns it, so the mutator
	// methods can keep the shape of a builder.
	err error
}

// NewBatch returns an empty batch. Close it after Commit or when abandoned.
func (s *Store) NewBatch() *Batch {
	return &Batch{pb: s.db.NewBatch()}
}

// NewBatchSized returns an empty batch with room for about bytes of keys and
// values, so a large batch (snapshot parts) does not grow by doubling.
func (s *Store) NewBatchSized(bytes int) *Batch {
	return &Batch{pb: s.db.NewBatchWithSize(max(bytes, 0))}
}

func (b *Batch) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Append logs record as number seq of stream. The bytes are copied.
func (b *Batch) Append(stream string, seq uint64, record []byte) {
	if err := checkStream(stream); err != nil {
		b.fail(fmt.Errorf("persistence: append: %w", err))
		return
	}
	if len(record) > MaxRecordLen {
		b.fail(fmt.Errorf("persistence: append %s/%d: %w: %d bytes", stream, seq, ErrTooLarge, len(record)))
		return
	}
	// Set copies the key: one scratch buffer serves every record.
	b.key = appendLogKey(b.key[:0], stream, seq)
	if err := b.pb.Set(b.key, record, nil); err != nil {
		b.fail(fmt.Errorf("persistence: append %s/%d: %w", stream, seq, err))
		return
	}
	b.records++
}

// Put sets index entry key to value. Both are copied.
func (b *Batch) Put(key, value []byte) {
	if err := checkKey(key); err != nil {
		b.fail(fmt.Errorf("persistence: put: %w", err))
		return
	}
	if len(value) > MaxRecordLen {
		b.fail(fmt.Errorf("persistence: put: %w: %d bytes", ErrTooLarge, len(value)))
		return
	}
	if err := b.pb.Set(indexKey(key), value, nil); err != nil {
		b.fail(fmt.Errorf("persistence: put: %w", err))
	}
}

// Delete removes index entry key.
func (b *Batch) Delete(key []byte) {
	if err := checkKey(key); err != nil {
		b.fail(fmt.Errorf("persistence: delete: %w", err))
		return
	}
	if err := b.pb.Delete(indexKey(key), nil); err != nil {
		b.fail(fmt.Errorf("persistence: delete: %w", err))
	}
}

// Trim deletes the records of stream with seq <= through when the batch
// commits. Putting it in the same batch as a snapshot makes both atomic.
func (b *Batch) Trim(stream string, through uint64) {
	if err := checkStream(stream); err != nil {
		b.fail(fmt.Errorf("persistence: trim: %w", err))
		return
	}
	if err := b.pb.DeleteRange(logKey(stream, 0), logBound(stream, through), nil); err != nil {
		b.fail(fmt.Errorf("persistence: trim %s: %w", stream, err))
	}
}

// SetSnapshotPart writes one part of the snapshot of stream at seq. It is for
// package snapshots, which defines what parts hold.
func (b *Batch) SetSnapshotPart(stream string, seq uint64, part uint32, value []byte) {
	key, err := SnapshotKey(stream, seq, part)
	if err != nil {
		b.fail(fmt.Errorf("persistence: snapshot part: %w", err))
		return
	}
	if len(value) > MaxRecordLen {
		b.fail(fmt.Errorf("persistence: snapshot part %s/%d/%d: %w", stream, seq, part, ErrTooLarge))
		return
	}
	if err := b.pb.Set(key, value, nil); err != nil {
		b.fail(fmt.Errorf("persistence: snapshot part %s/%d/%d: %w", stream, seq, part, err))
	}
}

// DeleteSnapshots deletes every part of the snapshots of stream with
// from <= seq < to. It is for package snapshots.
func (b *Batch) DeleteSnapshots(stream string, from, to uint64) {
	if from >= to {
		return
	}
	lo, err := SnapshotKey(stream, from, 0)
	if err != nil {
		b.fail(fmt.Errorf("persistence: delete snapshots: %w", err))
		return
	}
	hi, _ := SnapshotKey(stream, to, 0)
	if err := b.pb.DeleteRange(lo, hi, nil); err != nil {
		b.fail(fmt.Errorf("persistence: delete snapshots %s: %w", stream, err))
	}
}

// Empty reports whether the batch holds no mutation.
func (b *Batch) Empty() bool { return b.pb.Empty() }

// Count returns the number of records appended.
func (b *Batch) Count() int { return b.records }

// Bytes returns the encoded size of the batch.
func (b *Batch) Bytes() int { return b.pb.Len() }

// Close releases the batch. It is safe to call twice.
func (b *Batch) Close() {
	if b.pb != nil {
		_ = b.pb.Close()
		b.pb = nil
	}
}

// Commit writes b and returns once it is durable (fsynced), unless
// Options.NoSync. Concurrent commits share fsyncs. An empty batch is a no-op.
// A batch commits at most once; Close it afterwards. A failed commit fails
// the store (ErrFailed): see the package doc, "Storage faults". Commit
// succeeds only if Pebble reports the batch durable and the store has not
// failed by then: after a WAL fault Pebble reports success for what it no
// longer writes (see "WAL rotation" in the package doc).
func (s *Store) Commit(b *Batch) (err error) {
	if b.err != nil {
		return b.err
	}
	if b.pb == nil {
		return errors.New("persistence: commit: batch closed")
	}
	if b.committed {
		return errors.New("persistence: commit: batch already committed")
	}
	if b.pb.Empty() {
		return nil
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	n := b.pb.Len()
	b.committed = true
	s.commitBegin()
	defer s.commitEnd()
	defer s.recoverPebble(&err)
	if err := s.db.Apply(b.pb, s.wo); err != nil {
		s.stats.commitErrors.Add(1)
		return s.fail(fmt.Errorf("commit %d records: %w", b.records, err))
	}
	if err := s.Err(); err != nil {
		s.stats.commitErrors.Add(1)
		return err
	}
	s.stats.observe(b.records, n)
	return nil
}

// Replay calls fn for every record of stream with seq > after, in order.
// The record slice is valid only during the call. An error from fn stops
// the replay and is returned unwrapped. fn must not call Store methods:
// Close waits for Replay, and a pending Close blocks new calls.
func (s *Store) Replay(stream string, after uint64, fn func(seq uint64, record []byte) error) error {
	if err := checkStream(stream); err != nil {
		return fmt.Errorf("persistence: replay: %w", err)
	}
	if after == ^uint64(0) {
		return nil
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: logKey(stream, after+1),
		UpperBound: streamEnd(nsLog, stream),
	})
	if err != nil {
		return fmt.Errorf("persistence: replay %s: %w", stream, err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		key := it.Key()
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("persistence: replay %s: %w", stream, err)
		}
		if err := fn(binary.BigEndian.Uint64(key[len(key)-8:]), v); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("persistence: replay %s: %w", stream, err)
	}
	return nil
}

// edgeSeq returns the seq of the first (last=false) or last record of stream.
func (s *Store) edgeSeq(stream string, last bool) (uint64, error) {
	if err := checkStream(stream); err != nil {
		return 0, fmt.Errorf("persistence: seq: %w", err)
	}
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.release()
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: streamPrefix(nsLog, stream),
		UpperBound: streamEnd(nsLog, stream),
	})
	if err != nil {
		return 0, fmt.Errorf("persistence: seq %s: %w", stream, err)
	}
	var valid bool
	if last {
		valid = it.Last()
	} else {
		valid = it.First()
	}
	var seq uint64
	if valid {
		key := it.Key()
		seq = binary.BigEndian.Uint64(key[len(key)-8:])
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("persistence: seq %s: %w", stream, err)
	}
	return seq, nil
}

// LastSeq returns the seq of the newest record of stream present, 0 if none.
// After Trim has removed every record it is 0 again: the caller's position
// comes from its snapshot plus replay, not from here alone.
func (s *Store) LastSeq(stream string) (uint64, error) { return s.edgeSeq(stream, true) }

// FirstSeq returns the seq of the oldest record of stream present, 0 if
// none. Recovery uses it to check that the log continues right after the
// snapshot it loaded.
func (s *Store) FirstSeq(stream string) (uint64, error) { return s.edgeSeq(stream, false) }

// Trim durably deletes the records of stream with seq <= through.
func (s *Store) Trim(stream string, through uint64) error {
	b := s.NewBatch()
	defer b.Close()
	b.Trim(stream, through)
	return s.Commit(b)
}

// ViewSnapshots calls fn with an iterator over the snapshot keys of stream
// (bounded to SnapshotPrefix(stream)), one consistent view for the whole
// call. It is for package snapshots. Close waits for fn to return; fn must
// not call other Store methods, which could deadlock with a pending Close.
func (s *Store) ViewSnapshots(stream string, fn func(it *pebble.Iterator) error) error {
	return s.ViewSnapshotsN(stream, 1, func(its []*pebble.Iterator) error { return fn(its[0]) })
}

// ViewSnapshotsN is ViewSnapshots with n iterators (at least one) over one
// consistent view (a Pebble snapshot): iterators are not safe for
// concurrent use, so a reader that splits a large snapshot's parts among
// goroutines gives each its own, and all of them see the same parts even
// if a save or a trim commits meanwhile.
func (s *Store) ViewSnapshotsN(stream string, n int, fn func(its []*pebble.Iterator) error) error {
	lo, err := SnapshotPrefix(stream)
	if err != nil {
		return err
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	view := s.db.NewSnapshot()
	defer view.Close()
	its := make([]*pebble.Iterator, 0, max(n, 1))
	closeAll := func(err error) error {
		for _, it := range its {
			if cerr := it.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("persistence: view snapshots %s: %w", stream, cerr)
			}
		}
		return err
	}
	for range max(n, 1) {
		it, err := view.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: streamEnd(nsSnapshot, stream)})
		if err != nil {
			return closeAll(fmt.Errorf("persistence: view snapshots %s: %w", stream, err))
		}
		its = append(its, it)
	}
	return closeAll(fn(its))
}

// Get returns a copy of index entry key.
func (s *Store) Get(key []byte) ([]byte, bool, error) {
	if err := checkKey(key); err != nil {
		return nil, false, fmt.Errorf("persistence: get: %w", err)
	}
	if err := s.acquire(); err != nil {
		return nil, false, err
	}
	defer s.release()
	v, closer, err := s.db.Get(indexKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("persistence: get: %w", err)
	}
	out := append([]byte(nil), v...)
	if err := closer.Close(); err != nil {
		return nil, false, fmt.Errorf("persistence: get: %w", err)
	}
	return out, true, nil
}

// Scan calls fn for every index entry whose key starts with prefix, in key
// order. key and value are valid only during the call. An error from fn
// stops the scan and is returned unwrapped. Like Replay's, fn must not call
// Store methods.
func (s *Store) Scan(prefix []byte, fn func(key, value []byte) error) error {
	return s.ScanRange(prefix, nil, nil, fn)
}

// ScanRange is Scan limited to the keys after after (nil: from the start
// of prefix) and up to and including through (nil: to the end of prefix).
// The iterator is positioned by seeking, so the entries before after cost
// nothing, not even deleted ones (see Cursor).
func (s *Store) ScanRange(prefix, after, through []byte, fn func(key, value []byte) error) error {
	if len(prefix) > MaxKeyLen || len(after) > MaxKeyLen || len(through) > MaxKeyLen {
		return fmt.Errorf("persistence: scan: %w: key length above %d", ErrBadKey, MaxKeyLen)
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	lo := indexKey(prefix)
	hi := prefixEnd(lo)
	if after != nil {
		if k := append(indexKey(after), 0); bytes.Compare(k, lo) > 0 {
			lo = k // the smallest key after after
		}
	}
	if through != nil {
		if k := append(indexKey(through), 0); hi == nil || bytes.Compare(k, hi) < 0 {
			hi = k // bounds are exclusive: through itself is in
		}
	}
	if hi != nil && bytes.Compare(lo, hi) >= 0 {
		return nil
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("persistence: scan: %w", err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("persistence: scan: %w", err)
		}
		if err := fn(it.Key()[1:], v); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("persistence: scan: %w", err)
	}
	return nil
}

// slogAdapter routes Pebble's logging to slog. Pebble's info lines (WAL
// recovery, compactions) are chatty, so they go out at debug level.
type slogAdapter struct {
	l    *slog.Logger
	fail func(error) error
}

func (a slogAdapter) Infof(format string, args ...any) {
	if a.l != nil {
		a.l.Debug("pebble: " + fmt.Sprintf(format, args...))
	}
}

func (a slogAdapter) Errorf(format string, args ...any) {
	if a.l != nil {
		a.l.Error("pebble: " + fmt.Sprintf(format, args...))
	}
}

// Fatalf fails the store and panics instead of exiting. Pebble calls it
// when it cannot go on (a commit error leaves its commit pipeline
// unusable, a MANIFEST sync failed, an invariant broke) and expects it not
// to return. In a commit the panic becomes the commit's error (see
// recoverPebble) and the service exits through Store.Failed; in Pebble's
// own goroutines it ends the process, which is the fail-stop Pebble's
// default logger (os.Exit(1)) would do too.
func (a slogAdapter) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, "pebble: ") {
		msg = "pebble: " + msg
	}
	if a.l != nil {
		a.l.Error(msg)
	}
	if a.fail != nil {
		fe := &fatalError{msg: msg}
		for _, arg := range args {
			if err, ok := arg.(error); ok {
				fe.err = err // keeps errors.Is(err, syscall.EIO) true
				break
			}
		}
		a.fail(fe)
	}
	panic(msg)
}

// fatalError is what Pebble reported through Fatalf, with the error it
// formatted, if any, as its cause.
type fatalError struct {
	msg string
	err error
}

func (e *fatalError) Error() string { return e.msg }
func (e *fatalError) Unwrap() error { return e.err }

// CommitAsync hands b to Pebble's commit pipeline and returns once b is
// written to the WAL (and visible), without waiting for the fsync; wait
// blocks until b is durable and must be called exactly once, before
// b.Close. Batches committed one after another by one goroutine reach the
// WAL in that order, so when a later one is durable every earlier one is
// too. This lets an actor keep several batches in flight while Pebble
// groups their fsyncs, instead of waiting a round trip per sync.
//
// A failed hand-off or sync fails the store (ErrFailed), like Commit, and
// like Commit, wait succeeds only if the store has not failed when Pebble
// reports the batch durable.
func (s *Store) CommitAsync(b *Batch) (wait func() error, err error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.pb == nil {
		return nil, errors.New("persistence: commit: batch closed")
	}
	if b.committed {
		return nil, errors.New("persistence: commit: batch already committed")
	}
	if b.pb.Empty() {
		return func() error { return nil }, nil
	}
	if err := s.acquire(); err != nil {
		return nil, err
	}
	n := b.pb.Len()
	b.committed = true
	s.commitBegin()
	if err := s.applyNoSyncWait(b); err != nil {
		s.commitEnd()
		s.release()
		s.stats.commitErrors.Add(1)
		return nil, err
	}
	if !s.wo.Sync { // Options.NoSync (benchmarks): nothing to wait for
		s.commitEnd()
		s.release()
		s.stats.observe(b.records, n)
		return func() error { return nil }, nil
	}
	records := b.records
	return func() error {
		defer s.release()
		defer s.commitEnd()
		if err := b.pb.SyncWait(); err != nil {
			s.stats.commitErrors.Add(1)
			return s.fail(fmt.Errorf("sync %d records: %w", records, err))
		}
		if err := s.Err(); err != nil {
			s.stats.commitErrors.Add(1)
			return err
		}
		s.stats.observe(records, n)
		return nil
	}, nil
}

// applyNoSyncWait hands b to Pebble without waiting for its sync (with
// Options.NoSync, it applies it without one).
func (s *Store) applyNoSyncWait(b *Batch) (err error) {
	defer s.recoverPebble(&err)
	if !s.wo.Sync {
		err = s.db.Apply(b.pb, s.wo)
	} else {
		err = s.db.ApplyNoSyncWait(b.pb, s.wo)
	}
	if err != nil {
		return s.fail(fmt.Errorf("commit %d records: %w", b.records, err))
	}
	return nil
}

// TruncateAfter deletes the records of stream with seq > after. Recovery
// uses it to drop records past a gap: they were never acknowledged (answers
// are released in log order), and must not resurface behind new ones.
func (s *Store) TruncateAfter(stream string, after uint64) error {
	if err := checkStream(stream); err != nil {
		return fmt.Errorf("persistence: truncate: %w", err)
	}
	if after == ^uint64(0) {
		return nil
	}
	b := s.NewBatch()
	defer b.Close()
	if err := b.pb.DeleteRange(logKey(stream, after+1), streamEnd(nsLog, stream), nil); err != nil {
		return fmt.Errorf("persistence: truncate %s: %w", stream, err)
	}
	return s.Commit(b)
}

// stallListener counts and logs Pebble's write stalls: while one lasts, no
// commit completes, so every actor's answers wait.
func (s *Store) stallListener(l *slog.Logger) *pebble.EventListener {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	var lastLog atomic.Int64 // unix nanos of the last background error logged
	var quiet atomic.Int64   // background errors not logged since
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			if s.h.opening.Load() && isDiskFault(err) {
				select {
				case s.h.openFault <- err:
				default:
				}
			}
			// Pebble retries a failed flush at once and without end: on
			// a full disk that is a line every few milliseconds.
			now := time.Now().UnixNano()
			if last := lastLog.Load(); now-last < int64(time.Second) || !lastLog.CompareAndSwap(last, now) {
				quiet.Add(1)
				return
			}
			l.Error("pebble: background error", "err", err, "not_logged_since", quiet.Swap(0))
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			s.stats.stalls.Add(1)
			s.stats.stallStart.Store(time.Now().UnixNano())
			l.Warn("pebble write stall", "reason", info.Reason)
		},
		WriteStallEnd: func() {
			if t := s.stats.stallStart.Swap(0); t != 0 {
				d := time.Now().UnixNano() - t
				s.stats.stallNanos.Add(uint64(d))
				l.Warn("pebble write stall ended", "ms", d/1e6)
			}
		},
	}
}
