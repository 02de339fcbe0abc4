package persistence

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapshotParts reads the parts of the snapshot of stream at seq.
func snapshotParts(t *testing.T, s *Store, stream string, seq uint64) map[uint32]string {
	t.Helper()
	got := map[uint32]string{}
	require.NoError(t, s.ViewSnapshots(stream, func(it *pebble.Iterator) error {
		for ok := it.First(); ok; ok = it.Next() {
			sq, part, valid := ParseSnapshotKey(stream, it.Key())
			require.True(t, valid)
			if sq == seq {
				got[part] = string(it.Value())
			}
		}
		return it.Error()
	}))
	return got
}

func parts(n int, tag string) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf("%s-part-%d-%s", tag, i+1, strings.Repeat("x", i)))
	}
	return out
}

// TestIngestSnapshotPartsSurvivesCrash crashes right after the ingest
// returns: every part must be there, beside log records committed before
// and after it, and the table written beside the database is gone.
func TestIngestSnapshotPartsSurvivesCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	b := s.NewBatch()
	b.Append("evt_1", 1, []byte("before"))
	require.NoError(t, s.Commit(b))
	b.Close()

	want := parts(40, "a")
	require.NoError(t, s.IngestSnapshotParts("evt_1", 1, want))
	crash := fs.CrashClone(vfs.CrashCloneCfg{})

	b = s.NewBatch()
	b.Append("evt_1", 2, []byte("after"))
	require.NoError(t, s.Commit(b))
	b.Close()
	require.NoError(t, s.Close())

	s2 := openMem(t, crash)
	defer s2.Close()
	got := snapshotParts(t, s2, "evt_1", 1)
	require.Len(t, got, len(want))
	for i, p := range want {
		assert.Equal(t, string(p), got[uint32(i+1)], "part %d", i+1)
	}
	assert.Equal(t, []rec{{1, "before"}}, replayAll(t, s2, "evt_1", 0))
	names, err := crash.List("data")
	require.NoError(t, err)
	for _, n := range names {
		assert.False(t, strings.HasPrefix(n, ingestPrefix), "left %s beside the database", n)
	}
}

// TestIngestSnapshotPartsShadowOrphans ingests parts over orphan parts of
// the same seq (a crashed save's, committed as a batch or ingested): the
// newer parts win, and a range deletion removes both.
func TestIngestSnapshotPartsShadowOrphans(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	b := s.NewBatch()
	for i, p := range parts(5, "batch") {
		b.SetSnapshotPart("evt_1", 7, uint32(i+1), p)
	}
	require.NoError(t, s.Commit(b))
	b.Close()
	require.NoError(t, s.IngestSnapshotParts("evt_1", 7, parts(5, "ingested")))
	require.NoError(t, s.IngestSnapshotParts("evt_1", 7, parts(3, "newest")))

	got := snapshotParts(t, s, "evt_1", 7)
	assert.Equal(t, string(parts(3, "newest")[0]), got[1])
	assert.Equal(t, string(parts(3, "newest")[2]), got[3])
	assert.Equal(t, string(parts(5, "ingested")[4]), got[5], "an older part past the newest count stays until deleted")

	b = s.NewBatch()
	b.DeleteSnapshots("evt_1", 0, 8)
	require.NoError(t, s.Commit(b))
	b.Close()
	assert.Empty(t, snapshotParts(t, s, "evt_1", 7))
}

func TestIngestSnapshotPartsRefusals(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	big := [][]byte{[]byte("ok"), bytes.Repeat([]byte{1}, MaxRecordLen+1)}
	require.ErrorIs(t, s.IngestSnapshotParts("evt_1", 1, big), ErrTooLarge)
	assert.Empty(t, snapshotParts(t, s, "evt_1", 1), "a refused ingest writes no part")
	require.Error(t, s.IngestSnapshotParts("", 1, parts(1, "a")), "an invalid stream is refused")
	require.NoError(t, s.IngestSnapshotParts("evt_1", 1, nil))
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.IngestSnapshotParts("evt_1", 1, parts(1, "a")), ErrClosed)
}

// TestOpenRemovesIngestLeftovers: a table a crash left between its write
// and its ingest is removed by the next Open; other files stay.
func TestOpenRemovesIngestLeftovers(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	require.NoError(t, s.Close())
	for _, n := range []string{"ingest-3.sst", "ingest-notes.txt"} {
		f, err := fs.Create(fs.PathJoin("data", n), vfs.WriteCategoryUnspecified)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	s = openMem(t, fs)
	defer s.Close()
	names, err := fs.List("data")
	require.NoError(t, err)
	assert.NotContains(t, names, "ingest-3.sst")
	assert.Contains(t, names, "ingest-notes.txt")
	assert.Contains(t, names, "pebble")
}

// syncToCountingFS counts the SyncTo calls on the snapshot tables written
// for an ingest.
type syncToCountingFS struct {
	vfs.FS
	syncTos *int
}

func (fs syncToCountingFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil || !strings.Contains(name, ingestPrefix) {
		return f, err
	}
	return syncToCountingFile{File: f, n: fs.syncTos}, nil
}

type syncToCountingFile struct {
	vfs.File
	n *int
}

func (f syncToCountingFile) SyncTo(length int64) (bool, error) {
	*f.n++
	return f.File.SyncTo(length)
}

// A snapshot's table is written back as it is written (every
// BytesPerSync, as Pebble writes its own tables), not in one sync at the
// end that the WAL's fsyncs would queue behind.
func TestIngestSnapshotPartsWritesBackAsItGoes(t *testing.T) {
	var syncTos int
	s, err := Open(Options{Dir: t.TempDir(), FS: syncToCountingFS{FS: vfs.Default, syncTos: &syncTos}})
	require.NoError(t, err)
	defer s.Close()
	// 8 MiB that snappy cannot shrink, in 256 KiB parts.
	want := make([][]byte, 32)
	x := uint64(88172645463325252)
	for i := range want {
		want[i] = make([]byte, 256<<10)
		for j := range want[i] {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			want[i][j] = byte(x)
		}
	}
	require.NoError(t, s.IngestSnapshotParts("evt_1", 7, want))
	// (8 MiB - the last 1 MiB left to the final sync) / 512 KiB.
	assert.GreaterOrEqual(t, syncTos, 10, "the table was synced in one go")
	got := snapshotParts(t, s, "evt_1", 7)
	require.Len(t, got, len(want))
	for i, p := range want {
		require.Equal(t, string(p), got[uint32(i+1)])
	}
}

// TestIngestSnapshotSplitsSpanningTable builds the layout that kept
// snapshots in level 0: one bottom table holding a log's last records and
// the first index entries, so its bounds span every snapshot key. The
// ingested snapshot must still go to the bottom level (Pebble splits the
// spanning table into two virtual tables) and nothing may be lost: not the
// parts, the log or the index, after a crash and after compactions over
// the split table.
func TestIngestSnapshotSplitsSpanningTable(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	b := s.NewBatch()
	for seq := uint64(1); seq <= 100; seq++ {
		b.Append("evt_1", seq, []byte(fmt.Sprintf("rec-%d", seq)))
		b.Put([]byte(fmt.Sprintf("feed/evt_1/%016x", seq)), []byte("feed"))
	}
	require.NoError(t, s.Commit(b))
	b.Close()
	require.NoError(t, s.DB().Flush())
	require.NoError(t, s.DB().Compact(t.Context(), []byte{0}, []byte{0xff}, false))
	m := s.DB().Metrics()
	require.Equal(t, int64(1), m.Levels[6].TablesCount, "one bottom table from the log's records to the index's")

	want := parts(8, "split")
	require.NoError(t, s.IngestSnapshotParts("evt_1", 100, want))
	m = s.DB().Metrics()
	assert.Zero(t, m.Levels[0].TablesCount, "the snapshot went to level 0")
	assert.Equal(t, uint64(1), m.Levels[6].TablesIngested, "the snapshot is not at the bottom")
	assert.Equal(t, uint64(2), m.Levels[6].VirtualTablesCount, "the spanning table was not split")
	crash := fs.CrashClone(vfs.CrashCloneCfg{})
	require.NoError(t, s.Close())

	s2 := openMem(t, crash)
	defer s2.Close()
	check := func(records int) {
		t.Helper()
		got := snapshotParts(t, s2, "evt_1", 100)
		require.Len(t, got, len(want))
		for i, p := range want {
			assert.Equal(t, string(p), got[uint32(i+1)], "part %d", i+1)
		}
		recs := replayAll(t, s2, "evt_1", 0)
		require.Len(t, recs, records)
		assert.Equal(t, rec{100, "rec-100"}, recs[99])
		n := 0
		require.NoError(t, s2.Scan([]byte("feed/evt_1/"), func(_, _ []byte) error { n++; return nil }))
		assert.Equal(t, 100, n)
	}
	check(100)
	// Compactions over the virtual tables rewrite them from the shared
	// file; a range deletion then drops the snapshot.
	b = s2.NewBatch()
	b.Append("evt_1", 101, []byte("rec-101"))
	require.NoError(t, s2.Commit(b))
	b.Close()
	require.NoError(t, s2.DB().Compact(t.Context(), []byte{0}, []byte{0xff}, false))
	check(101)
	b = s2.NewBatch()
	b.DeleteSnapshots("evt_1", 0, 101)
	require.NoError(t, s2.Commit(b))
	b.Close()
	require.Empty(t, snapshotParts(t, s2, "evt_1", 100))
}
