package persistence

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatsCountFlushesAndCompactions writes to a log tail and an index,
// flushes twice and compacts everything, and checks that the background
// work counters follow what Pebble did.
func TestStatsCountFlushesAndCompactions(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	write := func(from uint64) {
		b := s.NewBatch()
		defer b.Close()
		rec := make([]byte, 100)
		for seq := from; seq < from+1000; seq++ {
			b.Append("evt_stats", seq, rec)
			b.Put(fmt.Appendf(nil, "feed/evt_stats/%016x", seq), rec)
		}
		require.NoError(t, s.Commit(b))
	}
	st := s.Stats()
	require.Zero(t, st.FlushedBytes)
	require.Zero(t, st.CompactedBytes)

	write(1)
	require.NoError(t, s.DB().Flush())
	st = s.Stats()
	require.GreaterOrEqual(t, st.FlushesDone, int64(1))
	// 2,000 entries of 100 B: the tables hold at least their compressed size.
	require.Greater(t, st.FlushedBytes, uint64(1000))
	require.GreaterOrEqual(t, st.L0Files, int64(1))
	require.GreaterOrEqual(t, st.L0Sublevels, int64(1))
	flushed := st.FlushedBytes

	write(1001)
	require.NoError(t, s.DB().Flush())
	st = s.Stats()
	require.Greater(t, st.FlushedBytes, flushed)
	require.GreaterOrEqual(t, st.L0Sublevels, int64(2), "two overlapping flushes stack in level 0")

	require.NoError(t, s.DB().Compact(context.Background(), []byte{0}, []byte{0xff}, false))
	st = s.Stats()
	require.GreaterOrEqual(t, st.CompactionsDone, int64(1))
	require.Greater(t, st.CompactedBytes, uint64(1000))
	require.GreaterOrEqual(t, st.CompactionReadBytes, st.FlushedBytes, "the compaction read both flushed tables")
	require.Greater(t, st.CompactionNanos, uint64(0))
	require.Zero(t, st.L0Files)
	require.Zero(t, st.L0Sublevels)
	require.Equal(t, int64(0), st.Flushes+st.Compactions, "nothing in progress after Compact returns")
}
