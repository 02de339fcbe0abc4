package snapshots

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

// sizeFor varies state sizes from empty to 30 parts of 10 bytes.
func sizeFor(seq uint64) int { return int(seq*13) % 300 }

// TestCrashRecoveryInvariant runs the actor's pattern (append records, every
// few records SaveAndTrim) on several streams, crashes the filesystem at a
// random moment keeping a random part of unsynced data, and checks what
// recovery relies on: every acknowledged snapshot and record survives, a
// loaded snapshot is exactly the state that was saved (never a torn one),
// and the log continues right after it with no gap.
func TestCrashRecoveryInvariant(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6, 7, uint64(time.Now().UnixNano())} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("seed %d", seed)
			crashOnce(t, seed)
		})
	}
}

func crashOnce(t *testing.T, seed uint64) {
	const streams = 4
	const every = 7
	fs := persistence.NewCrashableFS() // crashes beside ingests
	db := openDB(t, fs)
	s := small(db, 2)

	var ackedRec, ackedSnap [streams]atomic.Uint64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("evt_%d", w)
			for seq := uint64(1); !stop.Load(); seq++ {
				b := db.NewBatch()
				b.Append(stream, seq, []byte(fmt.Sprint(seq)))
				err := db.Commit(b)
				b.Close()
				if err != nil {
					return
				}
				ackedRec[w].Store(seq)
				if seq%every == 0 {
					if _, err := s.SaveAndTrim(stream, seq, stateFor(seq, sizeFor(seq))); err != nil {
						return
					}
					ackedSnap[w].Store(seq)
				}
			}
		}()
	}

	rng := rand.New(rand.NewPCG(seed, seed))
	wait := time.Duration(5+rng.IntN(40)) * time.Millisecond
	time.Sleep(wait)
	var wantRec, wantSnap [streams]uint64
	for w := range streams {
		wantRec[w], wantSnap[w] = ackedRec[w].Load(), ackedSnap[w].Load()
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rng})
	stop.Store(true)
	wg.Wait()
	require.NoError(t, db.Close())

	db2 := openDB(t, crashed)
	defer db2.Close()
	s2 := New(db2, 2)
	for w := range streams {
		stream := fmt.Sprintf("evt_%d", w)
		seq, state, ok, err := s2.LoadNewest(stream)
		require.NoError(t, err, stream)
		require.GreaterOrEqual(t, seq, wantSnap[w], "%s lost an acknowledged snapshot", stream)
		if ok {
			require.Equal(t, stateFor(seq, sizeFor(seq)), state, "%s snapshot %d is not what was saved", stream, seq)
		}
		next := seq + 1
		require.NoError(t, db2.Replay(stream, seq, func(got uint64, rec []byte) error {
			require.Equal(t, next, got, "%s log has a gap after snapshot %d", stream, seq)
			require.Equal(t, fmt.Sprint(got), string(rec))
			next++
			return nil
		}))
		require.GreaterOrEqual(t, next-1, wantRec[w], "%s lost acknowledged records", stream)
		t.Logf("%s: snapshot %d, records through %d (acked %d/%d)", stream, seq, next-1, wantSnap[w], wantRec[w])
	}
}

// TestCrashBetweenPartsAndHeader crashes once the payload parts of a save
// are durable (ingested) and its header is not, and after the header, for a
// new seq and for a re-save of an existing one, and checks that recovery
// always finds a snapshot that was fully saved and the log right after it.
func TestCrashBetweenPartsAndHeader(t *testing.T) {
	for _, keep := range []int{1, 2} {
		for _, next := range []uint64{20, 10} {
			t.Run(fmt.Sprintf("keep=%d/seq=%d", keep, next), func(t *testing.T) {
				fs := vfs.NewCrashableMem()
				db := openDB(t, fs)
				s := small(db, keep)
				b := db.NewBatch()
				for seq := uint64(1); seq <= 30; seq++ {
					b.Append("evt_1", seq, []byte(fmt.Sprint(seq)))
				}
				require.NoError(t, db.Commit(b))
				b.Close()
				first := stateFor(10, 95)
				_, err := s.SaveAndTrim("evt_1", 10, first)
				require.NoError(t, err)

				var clones []*vfs.MemFS
				s.afterParts = func() { clones = append(clones, fs.CrashClone(vfs.CrashCloneCfg{})) }
				second := stateFor(next+1, 95) // differs from first even at the same seq
				_, err = s.SaveAndTrim("evt_1", next, second)
				require.NoError(t, err)
				clones = append(clones, fs.CrashClone(vfs.CrashCloneCfg{}))
				require.NoError(t, db.Close())

				for i, c := range clones {
					db2 := openDB(t, c)
					seq, state, ok, err := New(db2, keep).LoadNewest("evt_1")
					require.NoError(t, err, "crash point %d", i)
					require.True(t, ok, "crash point %d", i)
					last := i == len(clones)-1
					switch {
					case last:
						require.Equal(t, next, seq)
						require.Equal(t, second, state)
					default:
						require.Equal(t, uint64(10), seq)
						require.Equal(t, first, state)
					}
					want := seq + 1
					require.NoError(t, db2.Replay("evt_1", seq, func(got uint64, _ []byte) error {
						require.Equal(t, want, got)
						want++
						return nil
					}))
					require.Equal(t, uint64(31), want, "crash point %d: log does not reach 30", i)
					require.NoError(t, db2.Close())
				}
				if next == 10 {
					require.Equal(t, 1, len(clones), "a re-save must not write parts before its header")
				} else {
					require.Equal(t, 2, len(clones), "one crash point after the ingested parts, one after the header")
				}
			})
		}
	}
}
