package snapshots

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

func openDB(t testing.TB, fs vfs.FS) *persistence.Store {
	t.Helper()
	db, err := persistence.Open(persistence.Options{Dir: "data", FS: fs})
	require.NoError(t, err)
	return db
}

// stateFor is a deterministic state of seq, n bytes long.
func stateFor(seq uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seq, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// small returns a Store whose parts are 10 bytes, so a 100-byte state spans
// 10 parts.
func small(db *persistence.Store, keep int) *Store {
	s := New(db, keep)
	s.chunkBytes = 10
	return s
}

func TestSaveLoadRoundTrip(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	s := small(db, 2)

	_, _, ok, err := s.LoadNewest("evt_1")
	require.NoError(t, err)
	require.False(t, ok)

	for _, n := range []int{0, 1, 9, 10, 11, 100, 101} {
		seq := uint64(1000 + n)
		want := stateFor(seq, n)
		require.NoError(t, s.Save("evt_1", seq, want))
		got, state, ok, err := s.LoadNewest("evt_1")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, seq, got)
		require.True(t, bytes.Equal(want, state), "state of %d bytes differs", n)
	}
	// Another stream, including one whose name extends this one, is apart.
	_, _, ok, err = s.LoadNewest("evt_10")
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, s.Save("evt_10", 5, []byte("ten")))
	seq, _, _, err := s.LoadNewest("evt_1")
	require.NoError(t, err)
	require.Equal(t, uint64(1101), seq)
}

func TestRetention(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	s := small(db, 3)
	for seq := uint64(10); seq <= 60; seq += 10 {
		require.NoError(t, s.Save("evt_1", seq, stateFor(seq, 25)))
	}
	seqs, err := s.List("evt_1")
	require.NoError(t, err)
	require.Equal(t, []uint64{40, 50, 60}, seqs)

	// Deleted snapshots leave no parts behind.
	require.NoError(t, db.ViewSnapshots("evt_1", func(it *pebble.Iterator) error {
		for valid := it.First(); valid; valid = it.Next() {
			seq, _, ok := persistence.ParseSnapshotKey("evt_1", it.Key())
			require.True(t, ok)
			require.GreaterOrEqual(t, seq, uint64(40))
		}
		return nil
	}))

	// keep below 1 keeps one.
	one := small(db, 0)
	require.NoError(t, one.Save("evt_1", 70, []byte("x")))
	seqs, err = one.List("evt_1")
	require.NoError(t, err)
	require.Equal(t, []uint64{70}, seqs)
}

func TestSaveAndTrim(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	s := small(db, 2)
	b := db.NewBatch()
	for seq := uint64(1); seq <= 30; seq++ {
		b.Append("evt_1", seq, []byte{byte(seq)})
	}
	require.NoError(t, db.Commit(b))
	b.Close()

	through, err := s.SaveAndTrim("evt_1", 10, []byte("s10"))
	require.NoError(t, err)
	require.Equal(t, uint64(10), through, "the first snapshot is the oldest kept")
	through, err = s.SaveAndTrim("evt_1", 20, []byte("s20"))
	require.NoError(t, err)
	require.Equal(t, uint64(10), through, "the log behind the older kept snapshot stays")
	first, err := db.FirstSeq("evt_1")
	require.NoError(t, err)
	require.Equal(t, uint64(11), first)

	through, err = s.SaveAndTrim("evt_1", 30, []byte("s30"))
	require.NoError(t, err)
	require.Equal(t, uint64(20), through)
	first, err = db.FirstSeq("evt_1")
	require.NoError(t, err)
	require.Equal(t, uint64(21), first)
	last, err := db.LastSeq("evt_1")
	require.NoError(t, err)
	require.Equal(t, uint64(30), last)
}

// corrupt overwrites one stored part of a snapshot, bypassing Save.
func corrupt(t *testing.T, db *persistence.Store, stream string, seq uint64, part uint32, value []byte) {
	t.Helper()
	key, err := persistence.SnapshotKey(stream, seq, part)
	require.NoError(t, err)
	require.NoError(t, db.DB().Set(key, value, pebble.Sync))
}

func TestCorruptNewestFallsBack(t *testing.T) {
	cases := map[string]func(t *testing.T, db *persistence.Store, seq uint64){
		"flipped payload byte": func(t *testing.T, db *persistence.Store, seq uint64) {
			part := stateFor(seq, 25)[10:20]
			part[3] ^= 1
			corrupt(t, db, "evt_1", seq, 2, part)
		},
		"short part": func(t *testing.T, db *persistence.Store, seq uint64) {
			corrupt(t, db, "evt_1", seq, 3, []byte("abc"))
		},
		"missing part": func(t *testing.T, db *persistence.Store, seq uint64) {
			key, _ := persistence.SnapshotKey("evt_1", seq, 2)
			require.NoError(t, db.DB().Delete(key, pebble.Sync))
		},
		"flipped header byte": func(t *testing.T, db *persistence.Store, seq uint64) {
			h := appendHeader(nil, header{seq: seq, length: 25, chunkBytes: 10})
			h[14] ^= 1
			corrupt(t, db, "evt_1", seq, 0, h)
		},
		"unknown version": func(t *testing.T, db *persistence.Store, seq uint64) {
			corrupt(t, db, "evt_1", seq, 0, withVersion(appendHeader(nil, header{seq: seq, length: 25, chunkBytes: 10}), 2))
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			db := openDB(t, vfs.NewMem())
			defer db.Close()
			s := small(db, 3)
			for _, seq := range []uint64{10, 20, 30} {
				require.NoError(t, s.Save("evt_1", seq, stateFor(seq, 25)))
			}
			damage(t, db, 30)
			seq, state, ok, err := s.LoadNewest("evt_1")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, uint64(20), seq)
			require.Equal(t, stateFor(20, 25), state)

			// With every snapshot bad, LoadNewest refuses rather than
			// pretending there is none.
			damage(t, db, 20)
			damage(t, db, 10)
			_, _, ok, err = s.LoadNewest("evt_1")
			require.Error(t, err)
			require.False(t, ok)
		})
	}
}

// withVersion rewrites the version byte of a header and reseals its checksum,
// as a future format would write it.
func withVersion(h []byte, v byte) []byte {
	h[4] = v
	return binary.BigEndian.AppendUint32(h[:29], crc32.Checksum(h[:29], castagnoli))
}

func TestEnvelopeRoundTrip(t *testing.T) {
	env, err := EncodeEnvelope(42, []byte("state"))
	require.NoError(t, err)
	seq, payload, err := DecodeEnvelope(env)
	require.NoError(t, err)
	require.Equal(t, uint64(42), seq)
	require.Equal(t, "state", string(payload))

	_, _, err = DecodeEnvelope(env[:len(env)-1])
	require.ErrorIs(t, err, ErrCorrupt)
	bad := append([]byte(nil), env...)
	bad[len(bad)-1] ^= 0x80
	_, _, err = DecodeEnvelope(bad)
	require.ErrorIs(t, err, ErrCorrupt)
	future := append(withVersion(append([]byte(nil), env[:HeaderLen]...), 9), env[HeaderLen:]...)
	_, _, err = DecodeEnvelope(future)
	require.ErrorIs(t, err, ErrVersion)
	_, _, err = DecodeEnvelope([]byte("TKSN"))
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestBadStream(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	s := New(db, 1)
	require.Error(t, s.Save("a\x00b", 1, nil))
	_, _, _, err := s.LoadNewest("")
	require.ErrorIs(t, err, persistence.ErrBadStream)
}

func TestClosedStoreErrors(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	s := New(db, 1)
	require.NoError(t, s.Save("evt_1", 1, []byte("x")))
	require.NoError(t, db.Close())
	require.ErrorIs(t, s.Save("evt_1", 2, []byte("y")), persistence.ErrClosed)
	_, _, _, err := s.LoadNewest("evt_1")
	require.ErrorIs(t, err, persistence.ErrClosed)
}

func TestSnapshotsOfAnOlderChunkSizeStayReadable(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	old := New(db, 2)
	old.chunkBytes = 1 << 20 // the layout before 256 KiB parts
	state := stateFor(7, 3<<20+5)
	require.NoError(t, old.Save("evt_1", 7, state))

	s := New(db, 2)
	seq, got, ok, err := s.LoadNewest("evt_1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(7), seq)
	assert.Equal(t, state, got)

	// A newer snapshot in the new layout sits beside it; both load.
	require.NoError(t, s.Save("evt_1", 9, stateFor(9, 1<<20)))
	seq, got, _, err = s.LoadNewest("evt_1")
	require.NoError(t, err)
	assert.Equal(t, uint64(9), seq)
	assert.Equal(t, stateFor(9, 1<<20), got)
	seqs, err := s.List("evt_1")
	require.NoError(t, err)
	assert.Equal(t, []uint64{7, 9}, seqs)
}

// Reading the parts with several goroutines gives the same bytes, and
// damage in any reader's range makes the snapshot fall back like the
// single reader does.
func TestLoadNewestWithReaders(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	s := small(db, 2)
	for _, n := range []int{0, 9, 79, 80, 81, 200, 1001} {
		seq := uint64(2000 + n)
		want := stateFor(seq, n)
		require.NoError(t, s.Save("evt_1", seq, want))
		for _, readers := range []int{0, 1, 2, 3, 5, 64} {
			got, state, ok, err := s.LoadNewestWith("evt_1", readers)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, seq, got)
			require.True(t, bytes.Equal(want, state), "%d bytes with %d readers differ", n, readers)
		}
	}

	// 200 bytes are 20 parts: with 3 readers, parts 1-7, 8-14 and 15-20.
	damages := map[string]func(db *persistence.Store, seq uint64){
		"missing part of the last reader": func(db *persistence.Store, seq uint64) {
			key, _ := persistence.SnapshotKey("evt_2", seq, 16)
			require.NoError(t, db.DB().Delete(key, pebble.Sync))
		},
		"short part of the second reader": func(db *persistence.Store, seq uint64) {
			corrupt(t, db, "evt_2", seq, 9, []byte("abc"))
		},
		"flipped byte in the last part": func(db *persistence.Store, seq uint64) {
			part := stateFor(seq, 200)[190:200]
			part[0] ^= 1
			corrupt(t, db, "evt_2", seq, 20, part)
		},
		"the last part missing": func(db *persistence.Store, seq uint64) {
			key, _ := persistence.SnapshotKey("evt_2", seq, 20)
			require.NoError(t, db.DB().Delete(key, pebble.Sync))
		},
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			for _, seq := range []uint64{10, 20} {
				require.NoError(t, s.Save("evt_2", seq, stateFor(seq, 200)))
			}
			damage(db, 20)
			seq, state, ok, err := s.LoadNewestWith("evt_2", 3)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, uint64(10), seq)
			require.Equal(t, stateFor(10, 200), state)
		})
	}
}
