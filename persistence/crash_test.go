package persistence

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// batchLen is the number of records in batch j (0-based) of a writer, so the
// checker knows every batch boundary without sharing state with writers.
func batchLen(j int) int { return j%4 + 1 }

// TestCrashKeepsAcknowledgedBatchesWhole commits batches from concurrent
// writers, crashes the filesystem mid-load keeping a random part of the
// unsynced data, and checks on the reopened clone that every acknowledged
// batch is there, in order, and that no batch is partly visible: the log
// ends on a batch boundary and the index entry written in the same batch
// agrees with it.
func TestCrashKeepsAcknowledgedBatchesWhole(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, uint64(time.Now().UnixNano())} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("seed %d", seed)
			crashOnce(t, seed)
		})
	}
}

func crashOnce(t *testing.T, seed uint64) {
	const writers = 8
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)

	var acked [writers]atomic.Uint64 // highest seq whose Commit returned nil
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("evt_%d", w)
			seq := uint64(0)
			for j := 0; !stop.Load(); j++ {
				b := s.NewBatch()
				for range batchLen(j) {
					seq++
					b.Append(stream, seq, []byte(fmt.Sprintf("%s/%d", stream, seq)))
				}
				b.Put([]byte("last/"+stream), binary.BigEndian.AppendUint64(nil, seq))
				err := s.Commit(b)
				b.Close()
				if err != nil {
					return // the store closed under us
				}
				acked[w].Store(seq)
			}
		}()
	}

	rng := rand.New(rand.NewPCG(seed, seed))
	deadline := time.Now().Add(2 * time.Second)
	for acked[0].Load() < 50+rng.Uint64N(200) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	var want [writers]uint64
	for w := range want {
		want[w] = acked[w].Load()
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rng})
	stop.Store(true)
	wg.Wait()
	require.NoError(t, s.Close())

	s2 := openMem(t, crashed)
	defer s2.Close()
	for w := range writers {
		stream := fmt.Sprintf("evt_%d", w)
		got := replayAll(t, s2, stream, 0)
		require.GreaterOrEqual(t, uint64(len(got)), want[w], "%s lost acknowledged records", stream)
		for i, r := range got {
			require.Equal(t, uint64(i+1), r.seq, stream)
			require.Equal(t, fmt.Sprintf("%s/%d", stream, i+1), r.data)
		}
		end := 0
		for j := 0; end < len(got); j++ {
			end += batchLen(j)
		}
		require.Equal(t, len(got), end, "%s ends inside a batch", stream)
		v, ok, err := s2.Get([]byte("last/" + stream))
		require.NoError(t, err)
		if len(got) == 0 {
			require.False(t, ok)
			continue
		}
		require.True(t, ok)
		require.Equal(t, uint64(len(got)), binary.BigEndian.Uint64(v), "%s index and log disagree", stream)
	}
}
