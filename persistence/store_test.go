package persistence

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

func openMem(t testing.TB, fs vfs.FS) *Store {
	t.Helper()
	s, err := Open(Options{Dir: "data", FS: fs})
	require.NoError(t, err)
	return s
}

type rec struct {
	seq  uint64
	data string
}

func replayAll(t testing.TB, s *Store, stream string, after uint64) []rec {
	t.Helper()
	var out []rec
	require.NoError(t, s.Replay(stream, after, func(seq uint64, r []byte) error {
		out = append(out, rec{seq, string(r)})
		return nil
	}))
	return out
}

func TestAppendReplayTrim(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()

	last, err := s.LastSeq("evt_1")
	require.NoError(t, err)
	require.Zero(t, last)

	b := s.NewBatch()
	require.True(t, b.Empty())
	for i := uint64(1); i <= 5; i++ {
		b.Append("evt_1", i, []byte(fmt.Sprintf("r%d", i)))
	}
	// A stream whose name extends another must not leak into it.
	b.Append("evt_10", 1, []byte("other"))
	require.Equal(t, 6, b.Count())
	require.False(t, b.Empty())
	require.NoError(t, s.Commit(b))
	require.Error(t, s.Commit(b), "a batch commits once")
	b.Close()
	require.Error(t, s.Commit(b), "a closed batch does not commit")

	require.Equal(t, []rec{{1, "r1"}, {2, "r2"}, {3, "r3"}, {4, "r4"}, {5, "r5"}}, replayAll(t, s, "evt_1", 0))
	require.Equal(t, []rec{{4, "r4"}, {5, "r5"}}, replayAll(t, s, "evt_1", 3))
	require.Empty(t, replayAll(t, s, "evt_1", 5))
	require.Empty(t, replayAll(t, s, "evt_1", ^uint64(0)))
	require.Equal(t, []rec{{1, "other"}}, replayAll(t, s, "evt_10", 0))

	last, err = s.LastSeq("evt_1")
	require.NoError(t, err)
	require.Equal(t, uint64(5), last)
	first, err := s.FirstSeq("evt_1")
	require.NoError(t, err)
	require.Equal(t, uint64(1), first)

	require.NoError(t, s.Trim("evt_1", 3))
	require.Equal(t, []rec{{4, "r4"}, {5, "r5"}}, replayAll(t, s, "evt_1", 0))
	first, err = s.FirstSeq("evt_1")
	require.NoError(t, err)
	require.Equal(t, uint64(4), first)
	require.Equal(t, []rec{{1, "other"}}, replayAll(t, s, "evt_10", 0), "trim of evt_1 touched evt_10")

	require.NoError(t, s.Trim("evt_1", ^uint64(0)))
	last, err = s.LastSeq("evt_1")
	require.NoError(t, err)
	require.Zero(t, last)

	// Survives close and reopen.
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Commit(func() *Batch { b := s.NewBatch(); b.Put([]byte("k"), nil); return b }()), ErrClosed)
}

func TestReopenKeepsRecords(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	b := s.NewBatch()
	b.Append("directory", 1, []byte("unit"))
	b.Put([]byte("key/abc"), []byte("unit-1"))
	require.NoError(t, s.Commit(b))
	b.Close()
	require.NoError(t, s.Close())

	s, err = Open(Options{Dir: dir})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, []rec{{1, "unit"}}, replayAll(t, s, "directory", 0))
	v, ok, err := s.Get([]byte("key/abc"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "unit-1", string(v))
}

func TestIndexPutGetScanDelete(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()

	b := s.NewBatch()
	b.Put([]byte("idem/a"), []byte("1"))
	b.Put([]byte("idem/b"), []byte("2"))
	b.Put([]byte("idemz"), []byte("3"))
	b.Put([]byte("key/x"), []byte("4"))
	require.Zero(t, b.Count(), "index entries are not records")
	require.NoError(t, s.Commit(b))
	b.Close()

	var got []string
	require.NoError(t, s.Scan([]byte("idem/"), func(k, v []byte) error {
		got = append(got, string(k)+"="+string(v))
		return nil
	}))
	require.Equal(t, []string{"idem/a=1", "idem/b=2"}, got)

	got = nil
	require.NoError(t, s.Scan(nil, func(k, v []byte) error {
		got = append(got, string(k))
		return nil
	}))
	require.Equal(t, []string{"idem/a", "idem/b", "idemz", "key/x"}, got)

	stop := errors.New("stop")
	n := 0
	require.ErrorIs(t, s.Scan(nil, func(k, v []byte) error { n++; return stop }), stop)
	require.Equal(t, 1, n)

	b = s.NewBatch()
	b.Delete([]byte("idem/a"))
	require.NoError(t, s.Commit(b))
	b.Close()
	_, ok, err := s.Get([]byte("idem/a"))
	require.NoError(t, err)
	require.False(t, ok)
	v, ok, err := s.Get([]byte("idem/b"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "2", string(v))

	// Index keys never show up as log records, even with a stream-like name.
	b = s.NewBatch()
	b.Put([]byte("evt_1\x00\x00\x00\x00\x00\x00\x00\x00\x01"), []byte("x"))
	require.NoError(t, s.Commit(b))
	b.Close()
	require.Empty(t, replayAll(t, s, "evt_1", 0))
}

func TestBadArgumentsFailCommit(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	cases := map[string]func(b *Batch){
		"empty stream":    func(b *Batch) { b.Append("", 1, nil) },
		"nul in stream":   func(b *Batch) { b.Append("a\x00b", 1, nil) },
		"long stream":     func(b *Batch) { b.Append(string(make([]byte, MaxStreamLen+1)), 1, nil) },
		"empty key":       func(b *Batch) { b.Put(nil, []byte("v")) },
		"huge record":     func(b *Batch) { b.Append("evt", 1, make([]byte, MaxRecordLen+1)) },
		"bad trim stream": func(b *Batch) { b.Trim("", 1) },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			b := s.NewBatch()
			defer b.Close()
			b.Append("evt_ok", 1, []byte("good"))
			mutate(b)
			require.Error(t, s.Commit(b))
			// Nothing of the batch was written, not even its good part.
			require.Empty(t, replayAll(t, s, "evt_ok", 0))
		})
	}
	require.ErrorIs(t, s.Replay("a\x00", 0, nil), ErrBadStream)
	_, err := s.LastSeq("")
	require.ErrorIs(t, err, ErrBadStream)
}

func TestConcurrentCommittersAllDurable(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	const writers, perWriter = 32, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("evt_%d", w)
			for i := uint64(1); i <= perWriter; i++ {
				b := s.NewBatch()
				b.Append(stream, i, []byte(fmt.Sprintf("%s/%d", stream, i)))
				err := s.Commit(b)
				b.Close()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	st := s.Stats()
	require.Equal(t, uint64(writers*perWriter), st.Commits)
	require.Equal(t, uint64(writers*perWriter), st.Records)
	require.Equal(t, uint64(writers*perWriter), st.RecordsPerCommit[0])
	require.NotZero(t, st.WALSyncs)
	require.LessOrEqual(t, st.WALSyncs, st.Commits+8, "more fsyncs than commits")
	t.Logf("commits=%d wal syncs=%d", st.Commits, st.WALSyncs)

	// Everything acknowledged was synced: a crash that keeps only synced
	// data still has every record.
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	require.NoError(t, s.Close())
	s2 := openMem(t, crashed)
	defer s2.Close()
	for w := range writers {
		stream := fmt.Sprintf("evt_%d", w)
		got := replayAll(t, s2, stream, 0)
		require.Len(t, got, perWriter, stream)
		for i, r := range got {
			require.Equal(t, uint64(i+1), r.seq)
			require.Equal(t, fmt.Sprintf("%s/%d", stream, i+1), r.data)
		}
	}
}

func TestStatsBuckets(t *testing.T) {
	var st stats
	for _, n := range []int{0, 1, 2, 3, 4, 5, 8, 9, 1 << 20} {
		st.observe(n, 0)
	}
	var got [batchBuckets]uint64
	for i := range got {
		got[i] = st.buckets[i].Load()
	}
	// 0,1 -> 0; 2 -> 1; 3,4 -> 2; 5,8 -> 3; 9 -> 4; huge -> last.
	require.Equal(t, [batchBuckets]uint64{2, 1, 2, 2, 1, 0, 0, 0, 0, 0, 0, 1}, got)
}

func TestCommitAsyncKeepsOrderAndTruncateAfter(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var waits []func() error
	var batches []*Batch
	for i := uint64(1); i <= 50; i++ {
		b := s.NewBatch()
		b.Append("evt_a", i, []byte{byte(i)})
		w, err := s.CommitAsync(b)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
		batches = append(batches, b)
	}
	for i := len(waits) - 1; i >= 0; i-- { // any order of waiting works
		if err := waits[i](); err != nil {
			t.Fatal(err)
		}
		batches[i].Close()
	}
	var got []uint64
	if err := s.Replay("evt_a", 0, func(seq uint64, rec []byte) error {
		if rec[0] != byte(seq) {
			t.Fatalf("record %d holds %d", seq, rec[0])
		}
		got = append(got, seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 || got[49] != 50 {
		t.Fatalf("replayed %v", got)
	}
	if err := s.TruncateAfter("evt_a", 20); err != nil {
		t.Fatal(err)
	}
	last, err := s.LastSeq("evt_a")
	if err != nil || last != 20 {
		t.Fatalf("last seq %d %v, want 20", last, err)
	}
}

// TestAppendLogKey: the appender writes logKey's bytes after what the
// buffer holds.
func TestAppendLogKey(t *testing.T) {
	for _, tc := range []struct {
		stream string
		seq    uint64
	}{{"evt_1", 0}, {"evt_01m80je06d7aca5stxyc0g1dea", 1}, {"x", 1 << 40}, {"dir", ^uint64(0)}} {
		require.Equal(t, logKey(tc.stream, tc.seq), appendLogKey(nil, tc.stream, tc.seq))
		require.Equal(t, append([]byte("ab"), logKey(tc.stream, tc.seq)...), appendLogKey([]byte("ab"), tc.stream, tc.seq))
	}
}

// TestTablesCompressedWithMinLZ: the store writes its tables with Pebble's
// fastest profile (MinLZ on amd64), and reads them back after a reopen.
func TestTablesCompressedWithMinLZ(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("MinLZ is Pebble's fastest profile on amd64 only")
	}
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	b := s.NewBatch()
	for i := uint64(1); i <= 2000; i++ {
		b.Append("evt_1", i, []byte(fmt.Sprintf(`{"id":"reg_%026d","email":"p%d@example.com","status":"confirmed"}`, i, i)))
	}
	require.NoError(t, s.Commit(b))
	b.Close()
	require.NoError(t, s.DB().Flush())
	levels, err := s.DB().SSTables(pebble.WithProperties())
	require.NoError(t, err)
	n := 0
	for _, tables := range levels {
		for _, tb := range tables {
			n++
			require.Contains(t, tb.Properties.CompressionStats, "MinLZ", "table %s", tb.FileNum)
		}
	}
	require.Positive(t, n, "the flush wrote a table")
	require.NoError(t, s.Close())
	s, err = Open(Options{Dir: dir})
	require.NoError(t, err)
	defer s.Close()
	got := replayAll(t, s, "evt_1", 1990)
	require.Len(t, got, 10)
	require.Equal(t, fmt.Sprintf(`{"id":"reg_%026d","email":"p2000@example.com","status":"confirmed"}`, 2000), got[9].data)
}
