package persistence

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// TestAgainstModel applies seeded random batches (appends, trims, puts,
// deletes), with occasional reopens, to a Store and to a map model, and
// checks after each step that reads through the Store match the model.
func TestAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	streams := []string{"evt_1", "evt_10", "directory"}
	logs := map[string]map[uint64]string{}
	next := map[string]uint64{}
	index := map[string]string{}
	for _, s := range streams {
		logs[s] = map[uint64]string{}
	}

	fs := vfs.NewMem()
	s := openMem(t, fs)
	defer func() { s.Close() }()
	for step := range 300 {
		b := s.NewBatch()
		for range 1 + rng.IntN(4) {
			st := streams[rng.IntN(len(streams))]
			switch op := rng.IntN(10); {
			case op < 6:
				next[st]++
				v := fmt.Sprintf("%s#%d@%d", st, next[st], step)
				b.Append(st, next[st], []byte(v))
				logs[st][next[st]] = v
			case op < 7:
				through := rng.Uint64N(next[st] + 2)
				b.Trim(st, through)
				for seq := range logs[st] {
					if seq <= through {
						delete(logs[st], seq)
					}
				}
			case op < 9:
				k := fmt.Sprintf("k/%d", rng.IntN(20))
				v := fmt.Sprint(step)
				b.Put([]byte(k), []byte(v))
				index[k] = v
			default:
				k := fmt.Sprintf("k/%d", rng.IntN(20))
				b.Delete([]byte(k))
				delete(index, k)
			}
		}
		require.NoError(t, s.Commit(b), "seed %d step %d", seed, step)
		b.Close()
		if rng.IntN(50) == 0 {
			require.NoError(t, s.Close())
			s = openMem(t, fs)
		}

		for _, st := range streams {
			seqs := slices.Sorted(maps.Keys(logs[st]))
			var want []rec
			for _, seq := range seqs {
				want = append(want, rec{seq, logs[st][seq]})
			}
			require.Equal(t, want, replayAll(t, s, st, 0), "seed %d step %d stream %s", seed, step, st)
			first, err := s.FirstSeq(st)
			require.NoError(t, err)
			last, err := s.LastSeq(st)
			require.NoError(t, err)
			if len(seqs) == 0 {
				require.Zero(t, first)
				require.Zero(t, last)
			} else {
				require.Equal(t, seqs[0], first, "seed %d step %d", seed, step)
				require.Equal(t, seqs[len(seqs)-1], last, "seed %d step %d", seed, step)
			}
		}
		got := map[string]string{}
		require.NoError(t, s.Scan([]byte("k/"), func(k, v []byte) error {
			got[string(k)] = string(v)
			return nil
		}))
		require.Equal(t, index, got, "seed %d step %d", seed, step)
	}
}
