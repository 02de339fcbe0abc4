package persistence

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPebbleLogsGoToLogger reopens a store so Pebble logs WAL recovery, and
// checks the lines reach the given logger at debug level and nothing else.
func TestPebbleLogsGoToLogger(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for range 2 {
		s, err := Open(Options{Dir: dir, Logger: logger})
		require.NoError(t, err)
		b := s.NewBatch()
		b.Append("evt_1", 1, []byte("r"))
		require.NoError(t, s.Commit(b))
		b.Close()
		require.NoError(t, s.Close())
	}
	require.Contains(t, buf.String(), "level=DEBUG msg=\"pebble: ")
	require.NotContains(t, buf.String(), "level=ERROR")
}

// TestGroupCommitSharesFsyncs runs many committers on a real disk and checks
// that Pebble's commit pipeline syncs several commits at once.
func TestGroupCommitSharesFsyncs(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	const committers, each = 64, 10
	var wg sync.WaitGroup
	for c := range committers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := uint64(1); seq <= each; seq++ {
				b := s.NewBatch()
				b.Append(fmt.Sprintf("evt_%d", c), seq, []byte("r"))
				assert.NoError(t, s.Commit(b)) // not require: this is not the test goroutine
				b.Close()
			}
		}()
	}
	wg.Wait()
	st := s.Stats()
	require.Equal(t, uint64(committers*each), st.Commits)
	require.Less(t, st.WALSyncs, st.Commits)
	t.Logf("%d commits, %d fsyncs", st.Commits, st.WALSyncs)
}
