package main

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
)

// defaultGCPercent is the GOGC of `ticketd serve` unless the GOGC
// environment variable says otherwise. The service's live heap is mostly
// event state that stays live (an event of 100,000 passes and 200,000
// check-ins is about 200 MB the collector marks every cycle, more while
// downloads are in flight), so a cycle costs about as much as the live heap
// is large whatever it frees. Collecting at 4x the live heap instead of 3x (GOGC 200) cuts
// those cycles by a third; door-sync (bench/results/20261130-idle.md), whose
// 200,000 batched scans allocate ~320 MB in about a second: at 200 a cycle
// landed in the timed scans in some runs and cost the run 4-5 µs of CPU a
// scan (6.2 -> 10.8 µs); at GOGC=300 in the environment none did, 3.8-4.0 µs.
// The memory this takes is bounded by the soft limit below.
const defaultGCPercent = 300

// memoryLimitShare is the share of the machine's memory (or of the cgroup's
// limit, when it has one) that `ticketd serve` gives the Go runtime as its
// soft memory limit unless GOMEMLIMIT says otherwise: near it the collector
// runs as often as it must to stay under, whatever GOGC says, so the laxer
// GOGC never costs an out-of-memory kill where GOGC=100 would have fitted.
// The rest is for the page cache Pebble reads through, and the kernel.
const memoryLimitShare = 0.75

// applyGCPolicy sets GOGC and the soft memory limit of `ticketd serve`
// where the environment leaves them to us.
func applyGCPolicy(lookup func(string) (string, bool)) {
	if _, set := lookup("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	if _, set := lookup("GOMEMLIMIT"); !set {
		cg, _ := os.ReadFile("/sys/fs/cgroup/memory.max")
		mi, _ := os.ReadFile("/proc/meminfo")
		if lim := memoryLimit(cg, mi); lim > 0 {
			debug.SetMemoryLimit(lim)
		}
	}
}

// memoryLimit is memoryLimitShare of the smaller of the cgroup's limit
// (cgroup v2 memory.max: a byte count, or "max" for none) and the machine's
// memory (/proc/meminfo's MemTotal); 0 when neither says.
func memoryLimit(cgroupMax, meminfo []byte) int64 {
	total := int64(0)
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == "MemTotal:" {
			if kb, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil && kb > 0 {
				total = kb << 10
			}
			break
		}
	}
	if v, err := strconv.ParseInt(string(bytes.TrimSpace(cgroupMax)), 10, 64); err == nil && v > 0 && (total == 0 || v < total) {
		total = v
	}
	return int64(float64(total) * memoryLimitShare)
}
