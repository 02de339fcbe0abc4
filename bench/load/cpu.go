package load

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// clockTicks is Linux's USER_HZ, the unit of the CPU times in
// /proc/<pid>/stat; it is 100 on every Linux the harness runs on.
const clockTicks = 100

// procCPU returns the CPU time (user + system, every thread) process pid
// has used, from /proc/<pid>/stat. It is accurate to 10 ms, so over a run
// of seconds to a fraction of a percent.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(b)
}

// parseProcStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may itself hold spaces and parentheses, so the fields are counted from
// the last ')'.
func parseProcStatCPU(b []byte) (time.Duration, error) {
	f, err := procStatFields(b, 13)
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// procStatFields returns the fields of a /proc/<pid>/stat line after the
// command name (f[0] is field 3, the state), at least n of them.
func procStatFields(b []byte, n int) ([][]byte, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("bench: /proc stat: no command name")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < n {
		return nil, fmt.Errorf("bench: /proc stat: %d fields after the name", len(f))
	}
	return f, nil
}

// selfCPU returns the CPU time this process has used.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// cpuSample is the CPU used so far by the server and by this process.
type cpuSample struct {
	server, client time.Duration
	ok             bool
}

// SampleCPU reads the CPU used so far by the server process serverPID and
// by this process.
func SampleCPU(serverPID int) cpuSample {
	if serverPID <= 0 {
		return cpuSample{}
	}
	s, err := procCPU(serverPID)
	if err != nil {
		return cpuSample{}
	}
	c, err := selfCPU()
	if err != nil {
		return cpuSample{}
	}
	return cpuSample{server: s, client: c, ok: true}
}

// SetCPU fills r's CPU figures from the samples before and after its run.
func (r *Result) SetCPU(before, after cpuSample) {
	if !before.ok || !after.ok || r.Requests == 0 || r.Seconds <= 0 {
		return
	}
	srv, cli := after.server-before.server, after.client-before.client
	r.ServerCPUUsPerRequest = float64(srv.Microseconds()) / float64(r.Requests)
	r.ClientCPUUsPerRequest = float64(cli.Microseconds()) / float64(r.Requests)
	r.ServerCores = srv.Seconds() / r.Seconds
	r.ClientCores = cli.Seconds() / r.Seconds
}

// ProcMinorFaults returns the minor page faults process pid has taken
// (field 10 of /proc/<pid>/stat): a page of memory touched for the first
// time, or again after the runtime returned it to the kernel, costs one.
func ProcMinorFaults(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f, err := procStatFields(b, 8)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(f[7]), 10, 64)
}
