package main

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
)

// defaultGCPercent is the GOGC of `ticketd serve` unless the GOGC
// environment variable says otherwise: Go's own 100. The service's live heap
// is mostly event state that stays live (two events of 100,000 passes with
// their check-ins are ~350-450 MB the collector marks every cycle), so a
// laxer GOGC makes cycles rarer but the heap 1 + GOGC/100 times the live
// heap. 300 was tried (2026-11-29/30, bench/results/20261130-door-batch.md):
// the heap ran to 1.2-1.7 GB, and a cycle that landed in door-sync's second
// of 200,000 batched scans cost 9-13 µs of CPU a scan instead of 4-5 (the
// collector's span scan a fifth of the service's samples, tens of thousands
// of page faults on the grown heap): 3 of 10 runs missed the target. At
// 100 a cycle lands in most runs and costs 1-4 µs a scan: 13 of 13 met
// (10.2-18.9x). The request path measured the same at both (flash sale
// 0.23-0.24 x ceiling against 0.22, check-in 0.34-0.35 against 0.30).
const defaultGCPercent = 100

// memoryLimitShare is the share of the machine's memory (or of the cgroup's
// limit, when it has one) that `ticketd serve` gives the Go runtime as its
// soft memory limit unless GOMEMLIMIT says otherwise: near it the collector
// runs as often as it must to stay under, whatever GOGC says, so a GOGC set
// laxer in the environment never costs an out-of-memory kill.
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
