package load

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/snapshots"
)

// TestSeedSnapshotCopy seeds an event without snapshots, snapshots a copy of
// the data dir, and checks both load with every registration.
func TestSeedSnapshotCopy(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "plain")
	sd, err := OpenSeeder(plain, 1<<30)
	require.NoError(t, err)
	e, err := sd.Event("Seed", 1000)
	require.NoError(t, err)
	require.NoError(t, sd.Register(e, "a", 300, 8))
	n, err := sd.Changes(e)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 300)
	sd.Close()

	snap := filepath.Join(t.TempDir(), "snap")
	out, err := exec.Command("cp", "-a", plain, snap).CombinedOutput()
	require.NoError(t, err, "%s", out)
	sd2, err := OpenSeeder(snap, 1)
	require.NoError(t, err)
	at, err := sd2.Snapshot(e)
	require.NoError(t, err)
	require.GreaterOrEqual(t, at, uint64(n), "the snapshot covers every seeded record")
	sd2.Close()

	for _, dir := range []string{plain, snap} {
		sd, err := OpenSeeder(dir, 1<<30)
		require.NoError(t, err)
		seqs, err := snapshots.New(sd.store, 2).List(e.EventID)
		require.NoError(t, err)
		if dir == snap {
			require.Equal(t, []uint64{at}, seqs, "the snapshot copy has its snapshot")
		} else {
			require.Empty(t, seqs, "the plain copy has none")
		}
		got, err := sd.Availability(e)
		require.NoError(t, err, dir)
		require.Equal(t, 300, got.Confirmed, dir)
		sd.Close()
	}
}
