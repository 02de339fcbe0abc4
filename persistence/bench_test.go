package persistence

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchRecordLen is about the size of a registration change.
const benchRecordLen = 200

func openBench(b *testing.B, noSync bool) *Store {
	b.Helper()
	s, err := Open(Options{Dir: b.TempDir(), NoSync: noSync})
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func syncModes(b *testing.B, fn func(b *testing.B, noSync bool)) {
	// sync=off is only the reference point for what fsync costs.
	for _, noSync := range []bool{false, true} {
		name := "sync=on"
		if noSync {
			name = "sync=off"
		}
		b.Run(name, func(b *testing.B) { fn(b, noSync) })
	}
}

// BenchmarkCommitSequential commits one record per commit from one goroutine.
func BenchmarkCommitSequential(b *testing.B) {
	syncModes(b, func(b *testing.B, noSync bool) {
		s := openBench(b, noSync)
		rec := make([]byte, benchRecordLen)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			bt := s.NewBatch()
			bt.Append("evt_bench", uint64(i+1), rec)
			if err := s.Commit(bt); err != nil {
				b.Fatal(err)
			}
			bt.Close()
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		st := s.Stats()
		b.ReportMetric(float64(st.WALSyncs)/float64(b.N), "fsyncs/op")
	})
}

// BenchmarkCommitConcurrent runs 64 committers, one record per commit, each
// on its own stream: group commit shares fsyncs among them.
func BenchmarkCommitConcurrent(b *testing.B) {
	const committers = 64
	syncModes(b, func(b *testing.B, noSync bool) {
		s := openBench(b, noSync)
		rec := make([]byte, benchRecordLen)
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ReportAllocs()
		b.ResetTimer()
		for c := range committers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stream := fmt.Sprintf("evt_%d", c)
				for seq := uint64(1); next.Add(1) <= int64(b.N); seq++ {
					bt := s.NewBatch()
					bt.Append(stream, seq, rec)
					if err := s.Commit(bt); err != nil {
						b.Error(err)
						return
					}
					bt.Close()
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		st := s.Stats()
		if st.WALSyncs > 0 {
			b.ReportMetric(float64(st.Commits)/float64(st.WALSyncs), "commits/fsync")
		}
	})
}

// BenchmarkReplay replays one stream of 100,000 records.
func BenchmarkReplay(b *testing.B) {
	const records = 100_000
	s := openBench(b, true)
	rec := make([]byte, benchRecordLen)
	for seq := uint64(1); seq <= records; {
		bt := s.NewBatch()
		for range 1000 {
			bt.Append("evt_bench", seq, rec)
			seq++
		}
		require.NoError(b, s.Commit(bt))
		bt.Close()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		n := 0
		if err := s.Replay("evt_bench", 0, func(uint64, []byte) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != records {
			b.Fatalf("replayed %d records, want %d", n, records)
		}
	}
	b.ReportMetric(float64(b.N*records)/b.Elapsed().Seconds(), "records/s")
}
