package load

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseProcStatCPU(t *testing.T) {
	// A command name with spaces and parentheses; utime 250 and stime 75
	// ticks are fields 14 and 15.
	line := "4242 (ticket d) (x)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 6 0 100 0 0\n"
	d, err := parseProcStatCPU([]byte(line))
	require.NoError(t, err)
	assert.Equal(t, 3250*time.Millisecond, d)

	_, err = parseProcStatCPU([]byte("4242 ticketd S 1"))
	require.Error(t, err, "no command name")
	_, err = parseProcStatCPU([]byte("4242 (t) S 1 2 3"))
	require.Error(t, err, "too few fields")
	_, err = parseProcStatCPU([]byte("4242 (t) S 1 2 3 4 5 6 7 8 9 10 x 1 2"))
	require.Error(t, err, "utime not a number")
}

// TestProcCPUOfThisProcess reads this process's CPU from /proc and from
// getrusage after burning some: both grow, and agree to the tick.
func TestProcCPUOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	before := SampleCPU(os.Getpid())
	require.True(t, before.ok)
	// Burn CPU until getrusage has counted 150 ms of it (bounded in wall
	// time), so a busy machine makes the loop longer, not the test fail.
	x := 0
	after := before
	for deadline := time.Now().Add(20 * time.Second); after.client-before.client < 150*time.Millisecond; {
		require.True(t, time.Now().Before(deadline), "150 ms of CPU not had in 20 s")
		for i := 0; i < 1_000_000; i++ {
			x++
		}
		after = SampleCPU(os.Getpid())
		require.True(t, after.ok)
	}
	assert.GreaterOrEqual(t, after.server-before.server, 100*time.Millisecond, "spun %d times", x)
	assert.InDelta(t, after.client.Seconds(), after.server.Seconds(), 0.05, "/proc and getrusage disagree")

	var r Result
	r.Requests, r.Seconds = 100, (after.client - before.client).Seconds()
	r.SetCPU(before, after)
	assert.Greater(t, r.ServerCPUUsPerRequest, 1000.0)
	assert.InDelta(t, 1.0, r.ClientCores, 0.5)
	var none Result
	none.SetCPU(cpuSample{}, after)
	assert.Zero(t, none.ServerCPUUsPerRequest, "no figure without a sample before the run")
}
