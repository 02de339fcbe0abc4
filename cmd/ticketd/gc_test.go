package main

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMemoryLimit(t *testing.T) {
	meminfo := []byte("MemTotal:       24684084 kB\nMemFree:         1234567 kB\n")
	machine := int64(24684084) << 10
	// No cgroup limit ("max", or no cgroup v2 file): 3/4 of the machine.
	require.Equal(t, int64(float64(machine)*0.75), memoryLimit([]byte("max\n"), meminfo))
	require.Equal(t, int64(float64(machine)*0.75), memoryLimit(nil, meminfo))
	// A container's limit below the machine's memory is what the process has.
	require.Equal(t, int64(3<<30), memoryLimit([]byte("4294967296\n"), meminfo))
	// A limit above the machine's memory says nothing more.
	require.Equal(t, int64(float64(machine)*0.75), memoryLimit([]byte("99999999999999\n"), meminfo))
	// Only the cgroup says: its limit.
	require.Equal(t, int64(3<<30), memoryLimit([]byte("4294967296"), nil))
	// Neither says (not Linux, unreadable, garbage): no limit set.
	require.Zero(t, memoryLimit(nil, nil))
	require.Zero(t, memoryLimit([]byte("garbage"), []byte("MemTotal: lots kB")))
}

func TestGCPolicyLeavesTheEnvironmentsChoice(t *testing.T) {
	prevPercent := debug.SetGCPercent(100)
	prevLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})
	none := func(string) (string, bool) { return "", false }
	both := func(k string) (string, bool) { return "x", k == "GOGC" || k == "GOMEMLIMIT" }

	// Set in the environment (the runtime already read them): left alone.
	debug.SetGCPercent(50)
	debug.SetMemoryLimit(1 << 40)
	applyGCPolicy(both)
	require.Equal(t, 50, debug.SetGCPercent(50))
	require.Equal(t, int64(1<<40), debug.SetMemoryLimit(-1))

	// Unset: ticketd's policy.
	applyGCPolicy(none)
	require.Equal(t, defaultGCPercent, debug.SetGCPercent(100))
	require.Equal(t, 100, defaultGCPercent, "Go's own default (see gc.go)")
	cg, _ := os.ReadFile("/sys/fs/cgroup/memory.max")
	mi, _ := os.ReadFile("/proc/meminfo")
	want := memoryLimit(cg, mi)
	if want == 0 { // neither readable here: the limit stays as it was
		want = 1 << 40
	}
	require.Equal(t, want, debug.SetMemoryLimit(-1))
}
