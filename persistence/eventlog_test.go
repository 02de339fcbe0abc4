package persistence

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type foreignBatch struct{}

func (foreignBatch) Append(string, uint64, []byte) {}
func (foreignBatch) Put([]byte, []byte)            {}
func (foreignBatch) Delete([]byte)                 {}
func (foreignBatch) Close()                        {}

// TestLogAdapter drives the Store through its Log face: records and the
// index entries they owe commit together, and the positions follow.
func TestLogAdapter(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	l, err := s.Log().Claim("evt_1", 0)
	require.NoError(t, err)
	require.Equal(t, 4, l.MaxInFlight())

	b := l.NewBatch()
	b.Append("evt_1", 1, []byte("r1"))
	b.Append("evt_1", 2, []byte("r2"))
	b.Put([]byte("mail/evt_1/1"), []byte("m"))
	wait, err := l.CommitAsync(b)
	require.NoError(t, err)
	require.NoError(t, wait())
	b.Close()

	require.Equal(t, []rec{{1, "r1"}, {2, "r2"}}, replayAll(t, s, "evt_1", 0))
	v, ok, err := s.Get([]byte("mail/evt_1/1"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "m", string(v))
	first, err := l.FirstSeq("evt_1")
	require.NoError(t, err)
	last, err := l.LastSeq("evt_1")
	require.NoError(t, err)
	require.Equal(t, [2]uint64{1, 2}, [2]uint64{first, last})

	require.NoError(t, l.TruncateAfter("evt_1", 1))
	require.Equal(t, []rec{{1, "r1"}}, replayAll(t, s, "evt_1", 0))

	_, err = l.CommitAsync(foreignBatch{})
	require.Error(t, err, "a batch of another log is refused")
}

// TestLogBatchAllocs: the Log face adds no allocation per record to the
// Pebble hot path.
func TestLogBatchAllocs(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	l := s.Log()
	rec := []byte("record")
	var direct, viaLog float64
	{
		b := s.NewBatch()
		seq := uint64(0)
		direct = testing.AllocsPerRun(1000, func() { seq++; b.Append("evt_1", seq, rec) })
		b.Close()
	}
	{
		b := l.NewBatch()
		seq := uint64(0)
		viaLog = testing.AllocsPerRun(1000, func() { seq++; b.Append("evt_1", seq, rec) })
		b.Close()
	}
	require.Equal(t, direct, viaLog)
}
