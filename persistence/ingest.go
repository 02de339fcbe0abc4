package persistence

import (
	"context"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ingestPrefix names the tables IngestSnapshotParts writes in Options.Dir
// before Pebble links them into the database; one left by a crash between
// the write and the ingest is garbage, removed by Open.
const ingestPrefix = "ingest-"

// IngestSnapshotParts durably stores parts[i] as part i+1 of the snapshot of
// stream at seq (parts[i] at most MaxRecordLen bytes). It is for package
// snapshots, which defines what parts hold, and replaces batches of
// SetSnapshotPart for a snapshot's payload.
//
// The parts are written as one table beside the database, synced, and
// ingested (pebble.DB.Ingest). A committed batch is written three times or
// more: to the WAL, at the memtable's flush and at every compaction of its
// level. An ingested table is written once: Pebble links the file into the
// LSM, at the lowest level whose tables hold no key in its range, which for
// a new snapshot's range is the bottom level (a table there that merely
// spans the range, from a log's last records to the first index entries,
// is split in two virtual tables: see IngestSplit in Open), and a later
// range deletion of the snapshot drops the whole file without rewriting it.
// Nor does it pass through the commit pipeline, so the log commits of the
// event actors never queue behind a snapshot's megabytes (they wait only
// for the ingest's own short manifest update).
//
// It returns once the ingested table is durable. A crash before that leaves
// at most the unlinked file, which the next Open removes.
func (s *Store) IngestSnapshotParts(stream string, seq uint64, parts [][]byte) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if len(parts) == 0 {
		return nil
	}
	path := s.fs.PathJoin(s.dir, fmt.Sprintf("%s%d.sst", ingestPrefix, s.ingestSeq.Add(1)))
	if err := s.writeSnapshotTable(path, stream, seq, parts); err != nil {
		_ = s.fs.Remove(path)
		return fmt.Errorf("persistence: ingest snapshot %s/%d: %w", stream, seq, err)
	}
	// Pebble links the file into its directory; the name here is ours to
	// remove either way.
	defer func() { _ = s.fs.Remove(path) }()
	if err := s.db.Ingest(context.Background(), []string{path}); err != nil {
		return fmt.Errorf("persistence: ingest snapshot %s/%d: %w", stream, seq, err)
	}
	// An ingest may write to the WAL (and rotate it): after a WAL fault
	// Pebble reports success for what it no longer writes.
	if err := s.Err(); err != nil {
		return fmt.Errorf("persistence: ingest snapshot %s/%d: %w", stream, seq, err)
	}
	return nil
}

// writeSnapshotTable writes parts as a synced table at path. The keys and
// sizes are checked before the file is created, so a refused ingest leaves
// nothing to remove.
func (s *Store) writeSnapshotTable(path, stream string, seq uint64, parts [][]byte) error {
	keys := make([][]byte, len(parts))
	for i, p := range parts {
		if len(p) > MaxRecordLen {
			return fmt.Errorf("part %d: %w", i+1, ErrTooLarge)
		}
		key, err := SnapshotKey(stream, seq, uint32(i+1))
		if err != nil {
			return err
		}
		keys[i] = key
	}
	f, err := s.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	// Written back every BytesPerSync as it goes, as Pebble writes its own
	// tables: synced once at the end, a table of a few hundred megabytes
	// went to the disk in one go and every WAL fsync queued behind it (a
	// drop at half its maximum had a p99 of 320 ms instead of 24 ms while
	// snapshots were saved). Each range waits for the one before, so the
	// writer also goes no faster than the disk.
	f = vfs.NewSyncingFile(f, vfs.SyncingFileOptions{BytesPerSync: s.popts.BytesPerSync})
	// Options of L0: Pebble may place the table at any level, so it must
	// not carry the bottom level's assumptions.
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), s.popts.MakeWriterOptions(0, s.db.TableFormat()))
	for i, p := range parts {
		if err := w.Set(keys[i], p); err != nil {
			_ = w.Close()
			return fmt.Errorf("part %d: %w", i+1, err)
		}
	}
	// Close finishes the table and syncs the file before closing it.
	return w.Close()
}

// removeIngestLeftovers deletes the tables a crash left between their write
// and their ingest. Pebble holds its own link to every ingested table, so
// the names in Options.Dir are never the database's data.
func (s *Store) removeIngestLeftovers() {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return
	}
	for _, n := range names {
		if strings.HasPrefix(n, ingestPrefix) && strings.HasSuffix(n, ".sst") {
			_ = s.fs.Remove(s.fs.PathJoin(s.dir, n))
		}
	}
}
