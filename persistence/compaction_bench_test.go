package persistence

import (
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// The layout of door-sync's event (issue 33) and its door batches.
const (
	doorStream         = "evt_01JDOORSYNC0000000000000"
	doorLogRecords     = 100_000 // the event's log before the bursts
	doorLogRecordLen   = 300     // a registration's change
	doorFeedEntries    = 100_000 // the registrations' change feed
	doorFeedEntryLen   = 95      // one feed entry
	doorSnapshotPart   = 256 << 10
	doorCommitsPerOp   = 400 // one op: 200,000 scans in batches of 500
	doorScansPerCommit = 500
	doorCheckinLen     = 80 // one check-in's log record
	doorSpanEntryLen   = 95 // one check-in's share of the feed span
)

// fillText writes text that compresses about as the store's records do
// (field names and separators repeat, ids and times do not): MinLZ keeps
// about 40% of it.
func fillText(buf []byte, rng *rand.Rand) {
	const hexdigits = "0123456789abcdef"
	const words = `{"type":"checked_in","pass":"pas_","at":"2026-11-29T23:","door":"dev_","seq":`
	for i := 0; i < len(buf); {
		if rng.IntN(4) != 0 {
			n := copy(buf[i:], words[rng.IntN(len(words)-8):][:8])
			i += n
			continue
		}
		for j := 0; j < 8 && i < len(buf); j++ {
			buf[i] = hexdigits[rng.IntN(16)]
			i++
		}
	}
}

// doorFeedKey is the change feed's key of the entry (or span) ending at seq.
func doorFeedKey(seq uint64) []byte {
	return fmt.Appendf(nil, "feed/%s/%016x", doorStream, seq)
}

// loadDoorEvent writes the event as door-sync finds it: its log, its
// change feed, compacted as a long-lived store's are, and its snapshot,
// ingested as the snapshotter does (snapshots.Store.SaveAndTrim without
// the trim: IngestSnapshotParts, then the header in a batch). It returns
// the next log seq and feed seq.
func loadDoorEvent(b *testing.B, s *Store, snapBytes int) (logSeq, feedSeq uint64) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	rec := make([]byte, doorLogRecordLen)
	for seq := uint64(1); seq <= doorLogRecords; {
		bt := s.NewBatch()
		for i := 0; i < 1000 && seq <= doorLogRecords; i++ {
			fillText(rec, rng)
			bt.Append(doorStream, seq, rec)
			seq++
		}
		require.NoError(b, s.Commit(bt))
		bt.Close()
	}
	entry := make([]byte, doorFeedEntryLen)
	for seq := uint64(1); seq <= doorFeedEntries; {
		bt := s.NewBatch()
		for i := 0; i < 1000 && seq <= doorFeedEntries; i++ {
			fillText(entry, rng)
			bt.Put(doorFeedKey(seq), entry)
			seq++
		}
		require.NoError(b, s.Commit(bt))
		bt.Close()
	}
	require.NoError(b, s.DB().Flush())
	require.NoError(b, s.DB().Compact(b.Context(), []byte{0}, []byte{0xff}, false))
	parts := make([][]byte, snapBytes/doorSnapshotPart)
	for i := range parts {
		parts[i] = make([]byte, doorSnapshotPart)
		fillText(parts[i], rng)
	}
	require.NoError(b, s.IngestSnapshotParts(doorStream, doorLogRecords, parts))
	bt := s.NewBatch()
	bt.SetSnapshotPart(doorStream, doorLogRecords, 0, make([]byte, 64))
	require.NoError(b, s.Commit(bt))
	bt.Close()
	waitBackground(b, s)
	return doorLogRecords + 1, doorFeedEntries + 1
}

// waitBackground returns once no flush or compaction has run for a few
// polls: Pebble schedules the compactions a flush enables when it ends.
func waitBackground(b *testing.B, s *Store) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for quiet := 0; quiet < 3; {
		require.True(b, time.Now().Before(deadline), "background work did not settle")
		m := s.DB().Metrics()
		if m.Flush.NumInProgress+m.Compact.NumInProgress > 0 {
			quiet = 0
		} else {
			quiet++
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cpuNanos is the process's user and system CPU time, Pebble's background
// goroutines included.
func cpuNanos(b *testing.B) int64 {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// doorTunings are the LSM shapes BenchmarkDoorBurstCompaction compares:
// "store" is Open's own, "before" what Open set before this benchmark
// (no ingest splitting), the others Open's with one change each.
// DOOR_TUNING=<name> runs one of them (to interleave runs on a shared
// machine).
var doorTunings = []struct {
	name string
	tune func(*pebble.Options)
}{
	{"store", nil},
	{"before", func(o *pebble.Options) { o.Experimental.IngestSplit = nil }},
	// With level 0 compacted from 20 tables on, tail appends cannot pile
	// up there: compaction work is done, not owed (the debt stays small).
	{"l0files20", func(o *pebble.Options) { o.L0CompactionFileThreshold = 20 }},
	{"l0files20+lbase256", func(o *pebble.Options) {
		o.L0CompactionFileThreshold = 20
		o.LBaseMaxBytes = 256 << 20
	}},
	{"mem32", func(o *pebble.Options) { o.MemTableSize = 32 << 20 }},
	{"mem64", func(o *pebble.Options) { o.MemTableSize = 64 << 20 }},
	{"l0threshold8", func(o *pebble.Options) { o.L0CompactionThreshold = 8 }},
	{"lbase256", func(o *pebble.Options) { o.LBaseMaxBytes = 256 << 20 }},
	{"l0threshold8+lbase256", func(o *pebble.Options) {
		o.L0CompactionThreshold = 8
		o.LBaseMaxBytes = 256 << 20
	}},
	{"target8", func(o *pebble.Options) { o.TargetFileSizes[0] = 8 << 20 }},
	{"target1", func(o *pebble.Options) { o.TargetFileSizes[0] = 1 << 20 }},
	{"flushsplit32", func(o *pebble.Options) { o.FlushSplitBytes = 32 << 20 }},
}

// saveDoorSnapshot saves a snapshot of the event at seq as
// snapshots.Store.SaveAndTrim does, keeping the newest two: the payload
// ingested as one table, then in one batch its header, the deletion of the
// older snapshots and the trim of the log through the oldest kept.
func saveDoorSnapshot(b *testing.B, s *Store, rng *rand.Rand, snapBytes int, kept []uint64, seq uint64) []uint64 {
	b.Helper()
	parts := make([][]byte, snapBytes/doorSnapshotPart)
	for i := range parts {
		parts[i] = make([]byte, doorSnapshotPart)
		fillText(parts[i], rng)
	}
	require.NoError(b, s.IngestSnapshotParts(doorStream, seq, parts))
	kept = append(kept, seq)
	if len(kept) > 2 {
		kept = kept[len(kept)-2:]
	}
	bt := s.NewBatch()
	defer bt.Close()
	bt.SetSnapshotPart(doorStream, seq, 0, make([]byte, 64))
	bt.DeleteSnapshots(doorStream, 0, kept[0])
	bt.Trim(doorStream, kept[0])
	require.NoError(b, s.Commit(bt))
	return kept
}

// BenchmarkDoorBurstCompaction measures the store's background work under
// door batches: one event whose log holds 100,000 records, with a
// snapshot and 100,000 feed entries, then bursts of commits each appending
// 500 check-ins (one log record set, ~80 B each) and one feed span (~95 B
// a check-in) to the tails of the log and the feed, far apart in key order
// with the snapshot and the feed between. One op is one burst of 400
// commits (200,000 scans, ~35 MB). Sync is off: what is measured is
// Pebble's flushes and compactions, not the disk.
//
// save=true also saves a snapshot halfway through each burst (and deletes
// the older one and trims the log), as the service does: an event is
// snapshotted every max(50,000, covered) changes, so once in door-sync's
// 200,000 scans. The snapshot is 40 MiB (21 MB as a table) or 12 MiB (6
// MB): a flush spanning both tails is split before a snapshot table of
// Lbase only when the tables it would overlap there pass 10x L0's target
// file size (20 MB), so the two sizes take different paths.
//
// The timed part includes, after the last op, a flush of what the
// memtable still holds and the wait for every compaction that follows, so
// a larger memtable cannot hide its work past the end of the window:
// cpu-ns/op is all the CPU the process spent on the bursts, background
// included. compact-B/appended-B is what compactions wrote per byte
// committed (flush-B/appended-B what flushes wrote: about the compressed
// share). Pebble compacts level 0 only from 4 sublevels on, so some work
// may still be owed at the end: L0-MB-left and debt-MB-left (Pebble's
// estimate of the bytes compactions must still process) say how much, and
// compact+debt-B/appended-B adds the debt to what compactions wrote, so a
// shape that only postpones work does not look cheaper. Run enough ops for
// the debt to be small beside the work done (-benchtime 15x: 650 MB). Each run loads a fresh store.
func BenchmarkDoorBurstCompaction(b *testing.B) {
	for _, tn := range doorTunings {
		if only := os.Getenv("DOOR_TUNING"); only != "" && only != tn.name {
			continue
		}
		for _, sc := range []struct {
			mib  int
			save bool
		}{{40, false}, {40, true}, {12, true}} {
			b.Run(fmt.Sprintf("%s/snapshot=%dMiB/save=%t", tn.name, sc.mib, sc.save), func(b *testing.B) { doorBurst(b, tn.tune, sc.mib<<20, sc.save) })
		}
	}
}

func doorBurst(b *testing.B, tune func(*pebble.Options), snapBytes int, save bool) {
	s, err := Open(Options{Dir: b.TempDir(), NoSync: true, tune: tune})
	require.NoError(b, err)
	defer s.Close()
	logSeq, feedSeq := loadDoorEvent(b, s, snapBytes)
	kept := []uint64{logSeq - 1}
	rng := rand.New(rand.NewPCG(3, 4))
	rec := make([]byte, doorCheckinLen)
	span := make([]byte, doorScansPerCommit*doorSpanEntryLen)
	before := s.Stats()
	cpu := cpuNanos(b)
	b.ResetTimer()
	for range b.N {
		for c := range doorCommitsPerOp {
			if save && c == doorCommitsPerOp/2 {
				kept = saveDoorSnapshot(b, s, rng, snapBytes, kept, logSeq-1)
			}
			bt := s.NewBatchSized(doorScansPerCommit*(doorCheckinLen+48) + len(span) + 64)
			for range doorScansPerCommit {
				fillText(rec, rng)
				bt.Append(doorStream, logSeq, rec)
				logSeq++
			}
			fillText(span, rng)
			feedSeq += doorScansPerCommit
			bt.Put(doorFeedKey(feedSeq-1), span)
			if err := s.Commit(bt); err != nil {
				b.Fatal(err)
			}
			bt.Close()
		}
	}
	require.NoError(b, s.DB().Flush())
	waitBackground(b, s)
	b.StopTimer()
	cpu = cpuNanos(b) - cpu
	after := s.Stats()
	appended := float64(after.Bytes - before.Bytes)
	n := float64(b.N)
	b.ReportMetric(float64(cpu)/n, "cpu-ns/op")
	b.ReportMetric(float64(after.CompactedBytes-before.CompactedBytes)/appended, "compact-B/appended-B")
	b.ReportMetric(float64(after.CompactionReadBytes-before.CompactionReadBytes)/appended, "compact-read-B/appended-B")
	b.ReportMetric(float64(after.FlushedBytes-before.FlushedBytes)/appended, "flush-B/appended-B")
	b.ReportMetric(float64(after.FlushesDone-before.FlushesDone)/n, "flushes/op")
	b.ReportMetric(float64(after.CompactionsDone-before.CompactionsDone)/n, "compactions/op")
	b.ReportMetric(float64(after.WriteStallNanos-before.WriteStallNanos)/1e6/n, "stall-ms/op")
	// Work left for later: level 0 below its compaction threshold, and
	// Pebble's estimate of what compactions owe to reach a stable shape.
	m := s.DB().Metrics()
	b.ReportMetric(float64(m.Levels[0].TablesSize)/1e6, "L0-MB-left")
	b.ReportMetric(float64(m.Compact.EstimatedDebt)/1e6, "debt-MB-left")
	b.ReportMetric((float64(after.CompactedBytes-before.CompactedBytes)+float64(m.Compact.EstimatedDebt))/appended, "compact+debt-B/appended-B")
	if testing.Verbose() {
		tables, err := s.DB().SSTables()
		require.NoError(b, err)
		span := 0
		for _, t := range tables[0] {
			if t.Smallest.UserKey[0] == 'l' && t.Largest.UserKey[0] == 'x' {
				span++
			}
		}
		b.Logf("appended %.1f MB; level 0: %d tables, %d span l..x\n%s", appended/1e6, len(tables[0]), span, s.DB().Metrics())
	}
}
