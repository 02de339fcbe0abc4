package persistence

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

func putKeys(t testing.TB, s *Store, keys ...string) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	for _, k := range keys {
		b.Put([]byte(k), []byte("v"+k))
	}
	require.NoError(t, s.Commit(b))
}

func deleteKeys(t testing.TB, s *Store, keys ...string) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	for _, k := range keys {
		b.Delete([]byte(k))
	}
	require.NoError(t, s.Commit(b))
}

func scanRange(t *testing.T, s *Store, prefix, after, through string) []string {
	t.Helper()
	var b, th []byte
	if after != "" {
		b = []byte(after)
	}
	if through != "" {
		th = []byte(through)
	}
	var got []string
	require.NoError(t, s.ScanRange([]byte(prefix), b, th, func(k, v []byte) error {
		require.Equal(t, "v"+string(k), string(v))
		got = append(got, string(k))
		return nil
	}))
	return got
}

func TestScanRangeBounds(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	putKeys(t, s, "q/a", "q/b", "q/c", "q/d", "qz", "p/a")

	require.Equal(t, []string{"q/a", "q/b", "q/c", "q/d"}, scanRange(t, s, "q/", "", ""))
	require.Equal(t, []string{"q/c", "q/d"}, scanRange(t, s, "q/", "q/b", ""), "after is exclusive")
	require.Equal(t, []string{"q/b", "q/c", "q/d"}, scanRange(t, s, "q/", "q/a0", ""), "after need not exist")
	require.Equal(t, []string{"q/a", "q/b"}, scanRange(t, s, "q/", "", "q/b"), "through is inclusive")
	require.Equal(t, []string{"q/c"}, scanRange(t, s, "q/", "q/b", "q/c"))
	require.Empty(t, scanRange(t, s, "q/", "q/c", "q/c"))
	require.Empty(t, scanRange(t, s, "q/", "q/d", "q/a"), "an empty range")
	require.Equal(t, []string{"q/a", "q/b", "q/c", "q/d"}, scanRange(t, s, "q/", "a", "z"), "bounds outside the prefix do not widen it")
	require.Empty(t, scanRange(t, s, "q/", "r", ""))

	require.ErrorIs(t, s.ScanRange([]byte("q/"), make([]byte, MaxKeyLen+1), nil, func(k, v []byte) error { return nil }), ErrBadKey)
}

// drain reads the queue in rounds of max, deleting what it read, and
// returns the keys in read order.
func drain(t *testing.T, s *Store, c *Cursor, max int) []string {
	t.Helper()
	var all []string
	for round := 0; ; round++ {
		require.Less(t, round, 10000, "the queue never drains")
		var got []string
		full, err := c.Next(s, []byte("q/"), max, func(k, v []byte) error {
			got = append(got, string(k))
			return nil
		})
		require.NoError(t, err)
		require.LessOrEqual(t, len(got), max)
		require.Equal(t, full, len(got) == max)
		deleteKeys(t, s, got...)
		all = append(all, got...)
		if !full {
			return all
		}
	}
}

func TestCursorDrainsInOrder(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	var want []string
	for i := range 250 {
		want = append(want, fmt.Sprintf("q/%04d", i))
	}
	putKeys(t, s, want...)
	putKeys(t, s, "other/1")

	var c Cursor
	require.Equal(t, want, drain(t, s, &c, 100))
	require.Equal(t, []string{"other/1"}, scanRange(t, s, "", "", ""))

	full, err := c.Next(s, []byte("q/"), 100, func(k, v []byte) error { t.Fatal("the queue is empty"); return nil })
	require.NoError(t, err)
	require.False(t, full)
}

// A queue keyed by stream then sequence grows in many places: an entry
// added behind the cursor is read when the cursor wraps, none twice in a
// round, and one stream's entries in order.
func TestCursorWrapsForEntriesBehindIt(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	putKeys(t, s, "q/a/1", "q/b/1", "q/b/2", "q/c/1")
	var c Cursor
	read := func(max int) (keys []string, full bool) {
		full, err := c.Next(s, []byte("q/"), max, func(k, v []byte) error {
			keys = append(keys, string(k))
			return nil
		})
		require.NoError(t, err)
		return keys, full
	}
	got, full := read(2)
	require.Equal(t, []string{"q/a/1", "q/b/1"}, got)
	require.True(t, full)
	deleteKeys(t, s, got...)
	putKeys(t, s, "q/a/2", "q/b/3") // behind and ahead of the cursor

	got, full = read(10)
	require.Equal(t, []string{"q/b/2", "q/b/3", "q/c/1", "q/a/2"}, got, "ahead first, then wrapped; nothing twice")
	require.False(t, full)

	// An entry left in place (a consumer that could not handle it) comes
	// again on the next pass.
	got, _ = read(10)
	require.Equal(t, []string{"q/a/2", "q/b/2", "q/b/3", "q/c/1"}, got)

	// A failing round leaves the cursor where it was.
	got, _ = read(1)
	require.Equal(t, []string{"q/a/2"}, got)
	boom := errors.New("boom")
	_, err := c.Next(s, []byte("q/"), 10, func(k, v []byte) error { return boom })
	require.ErrorIs(t, err, boom)
	got, _ = read(1)
	require.Equal(t, []string{"q/b/2"}, got)

	c.Reset()
	got, _ = read(1)
	require.Equal(t, []string{"q/a/2"}, got)
}

// BenchmarkQueueDrain drains a backlog of 20,000 entries in rounds of 100,
// deleting each round: with a cursor, and scanning from the start of the
// prefix every round (what the outbox and webhook readers did before),
// which steps over every earlier round's tombstones.
func BenchmarkQueueDrain(b *testing.B) {
	const n, batch = 20_000, 100
	for _, mode := range []string{"cursor", "from-start"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				s, err := Open(Options{Dir: b.TempDir(), NoSync: true})
				require.NoError(b, err)
				bt := s.NewBatch()
				for i := range n {
					bt.Put(fmt.Appendf(nil, "q/%08d", i), []byte("v"))
				}
				require.NoError(b, s.Commit(bt))
				bt.Close()
				b.StartTimer()
				var c Cursor
				for {
					var keys [][]byte
					take := func(k, v []byte) error {
						if len(keys) == batch {
							return errCursorFull
						}
						keys = append(keys, append([]byte(nil), k...))
						return nil
					}
					if mode == "cursor" {
						_, err = c.Next(s, []byte("q/"), batch, take)
					} else if err = s.Scan([]byte("q/"), take); errors.Is(err, errCursorFull) {
						err = nil
					}
					require.NoError(b, err)
					if len(keys) == 0 {
						break
					}
					del := s.NewBatch()
					for _, k := range keys {
						del.Delete(k)
					}
					require.NoError(b, s.Commit(del))
					del.Close()
				}
				b.StopTimer()
				require.NoError(b, s.Close())
				b.StartTimer()
			}
		})
	}
}
