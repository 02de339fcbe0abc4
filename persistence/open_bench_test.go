package persistence

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fillStore appends records of benchRecordLen bytes to one stream, 1000 per
// commit, and returns the open store.
func fillStore(tb testing.TB, dir string, records int) *Store {
	tb.Helper()
	s, err := Open(Options{Dir: dir})
	require.NoError(tb, err)
	rec := make([]byte, benchRecordLen)
	for seq := uint64(1); seq <= uint64(records); {
		b := s.NewBatch()
		for i := 0; i < 1000 && seq <= uint64(records); i++ {
			rec[0] = byte(seq)
			b.Append("evt_bench", seq, rec)
			seq++
		}
		require.NoError(tb, s.Commit(b))
		b.Close()
	}
	return s
}

// copyDir copies the files of src into dst (one level of directories), as
// a kill -9 leaves them: what was synced is there.
func copyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	require.NoError(tb, filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}))
}

// crashImage copies the files of the open store s in dir, as a kill -9
// would leave them, at a moment no flush or compaction changed them.
func crashImage(tb testing.TB, s *Store, dir string) string {
	tb.Helper()
	for range 100 {
		m := s.DB().Metrics()
		if m.Compact.NumInProgress > 0 || m.Flush.NumInProgress > 0 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		img := tb.TempDir()
		copyDir(tb, dir, img)
		after := s.DB().Metrics()
		if after.Compact.Count == m.Compact.Count && after.Flush.Count == m.Flush.Count &&
			after.Compact.NumInProgress == 0 && after.Flush.NumInProgress == 0 {
			return img
		}
	}
	tb.Fatal("no quiet moment to copy the store")
	return ""
}

// BenchmarkOpen measures Store.Open over a log of records (about 200 bytes
// each): after a graceful Close, and over the files a kill -9 leaves
// (a copy of the directory of a store still open), where the unflushed
// WAL must be replayed. It also reports the first replay after opening.
// -short leaves out the larger log.
func BenchmarkOpen(b *testing.B) {
	sizes := []int{100_000, 1_000_000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, records := range sizes {
		closed := b.TempDir()
		s := fillStore(b, closed, records)
		crashed := crashImage(b, s, closed)
		require.NoError(b, s.Close())
		for _, c := range []struct{ name, dir string }{{"closed", closed}, {"crashed", crashed}} {
			b.Run(fmt.Sprintf("records=%d/%s", records, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					// Each open starts from the same files: a crashed
					// image is replayed, not the one the last open left.
					b.StopTimer()
					dir := b.TempDir()
					copyDir(b, c.dir, dir)
					b.StartTimer()
					s, err := Open(Options{Dir: dir})
					require.NoError(b, err)
					b.StopTimer()
					require.NoError(b, s.Close())
					b.StartTimer()
				}
			})
		}
	}
}
