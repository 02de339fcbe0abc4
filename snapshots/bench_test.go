package snapshots

import (
	"testing"

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
