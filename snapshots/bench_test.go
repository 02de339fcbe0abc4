package snapshots

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

// benchStateBytes is about the state of an event with 300,000 registrations.
const benchStateBytes = 50 << 20

func benchStore(b *testing.B) (*Store, []byte) {
	b.Helper()
	db, err := persistence.Open(persistence.Options{Dir: b.TempDir()})
	require.NoError(b, err)
	b.Cleanup(func() { _ = db.Close() })
	return New(db, 2), stateFor(1, benchStateBytes)
}

// BenchmarkSave saves a 50 MB state on a real disk, with retention deleting
// the older ones as it goes.
func BenchmarkSave(b *testing.B) {
	s, state := benchStore(b)
	b.SetBytes(int64(len(state)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := s.Save("evt_bench", uint64(i+1), state); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadNewest loads a 50 MB state back, checksums included.
func BenchmarkLoadNewest(b *testing.B) {
	s, state := benchStore(b)
	require.NoError(b, s.Save("evt_bench", 1, state))
	b.SetBytes(int64(len(state)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_, got, ok, err := s.LoadNewest("evt_bench")
		if err != nil || !ok || len(got) != len(state) {
			b.Fatalf("load: ok=%v len=%d err=%v", ok, len(got), err)
		}
	}
}

// BenchmarkCommitLatencyDuringSave measures what a Save costs the event
// actors meanwhile: the latency of small synced log commits (one record,
// as an actor's group commit) made back to back while a 40 MB state is
// saved, for two part sizes. The parts are ingested as one table, outside
// the commit pipeline; when they were committed as batches (one 256 KiB
// part per batch), a commit queued behind each one's write and sync.
func BenchmarkCommitLatencyDuringSave(b *testing.B) {
	for _, chunk := range []uint32{1 << 20, 256 << 10} {
		b.Run(fmt.Sprintf("chunk=%dKiB", chunk>>10), func(b *testing.B) {
			s, _ := benchStore(b)
			s.chunkBytes = chunk
			state := stateFor(1, 40<<20)
			rec := make([]byte, 200)
			var worst, total time.Duration
			commits := 0
			for i := range b.N {
				done := make(chan error, 1)
				go func() { done <- s.Save("evt_big", uint64(i+1), state) }()
				for saving := true; saving; {
					select {
					case err := <-done:
						require.NoError(b, err)
						saving = false
						continue
					default:
					}
					batch := s.db.NewBatch()
					commits++
					batch.Append("evt_hot", uint64(commits), rec)
					t0 := time.Now()
					require.NoError(b, s.db.Commit(batch))
					d := time.Since(t0)
					batch.Close()
					worst, total = max(worst, d), total+d
				}
			}
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-commit-ms")
			b.ReportMetric(float64(total.Microseconds())/1000/float64(commits), "mean-commit-ms")
		})
	}
}
