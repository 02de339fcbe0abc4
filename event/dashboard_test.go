package event

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDashboardCountersSurviveSnapshotAndReplay runs the commands of
// testdata/dashboard.txt, then reads the dashboard of the live machine, of
// a replay of its log and of its decoded snapshot: the counters are kept
// by Apply and rebuilt by the snapshot load, so the three must agree.
func TestDashboardCountersSurviveSnapshotAndReplay(t *testing.T) {
	data, err := os.ReadFile("testdata/dashboard.txt")
	require.NoError(t, err)
	r := newScriptRunner(t)
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if i+1 < len(lines) && lines[i+1] == "----" && !strings.HasPrefix(l, "#") {
			r.run(l)
		}
	}
	now := time.Date(2026, 8, 2, 0, 0, 0, 0, time.UTC)
	live, _, err := r.m.Decide(now, GetDashboard{})
	require.NoError(t, err)
	require.Equal(t, 160*100, int(live.(Dashboard).Revenue), "the script paid 2 x 100 and refunded 40")

	re := NewMachine("evt_1", testConfig(), newSeqIDs(99))
	for _, b := range r.log {
		ch, err := UnmarshalChange(b)
		require.NoError(t, err)
		re.Apply(ch)
	}
	replayed, _, err := re.Decide(now, GetDashboard{})
	require.NoError(t, err)
	require.Equal(t, live, replayed, "replay")

	b, err := MarshalState(r.m.State())
	require.NoError(t, err)
	st, err := UnmarshalState(b)
	require.NoError(t, err)
	snap := NewMachine("evt_1", testConfig(), newSeqIDs(99))
	snap.Restore(st)
	fromSnap, _, err := snap.Decide(now, GetDashboard{})
	require.NoError(t, err)
	require.Equal(t, live, fromSnap, "snapshot")
}
