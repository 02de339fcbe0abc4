package event

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkDoorSyncActor is the event actor's CPU per batch of door-sync
// (bench/): 50 devices' batches of 500 offline scans, 20% of them passes
// an earlier batch checked in, with the passes resolved and the check-in
// ids made outside (RecordScans.Passes, CheckinIDs), decided, applied,
// encoded for the log, made into the feed's span and its webhooks, as the
// actor does.
// The first batch (which builds the lazy indexes) is not timed. One op is
// one batch.
func BenchmarkDoorSyncActor(b *testing.B) {
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	var m *Machine
	var regs []string
	var idx *PassIndex
	var enc []byte // the actor's encode and effects buffers, reused (a span is a value of its own)
	var effs []Effect
	run := func(c Command) any {
		res, changes, err := m.Decide(now, c)
		if err != nil {
			b.Fatal(err)
		}
		for _, ch := range changes {
			m.Apply(ch)
			if enc, err = AppendChange(enc[:0], ch); err != nil {
				b.Fatal(err)
			}
			if HasFeedSpan(ch) {
				m.AppendFeedSpan(make([]byte, 0, m.FeedSpanLen(ch)), ch)
			}
			effs = AppendEffects(effs[:0], ch)
		}
		return res
	}
	next, batch := 0, 0
	mk := func() RecordScans {
		c := RecordScans{DeviceID: fmt.Sprintf("dev_%d", batch%50), Doors: []DoorRef{{SubjectType: "event"}}, Scans: make([]Scan, 500),
			CheckinIDs: make([]string, 500)}
		for j := range c.Scans {
			reg := next
			if j%5 == 4 && next > 500 {
				reg = (next * 7919) % (next - 450)
			} else {
				next++
			}
			c.Scans[j] = Scan{ScanID: fmt.Sprintf("s%d-%d", batch, j), RegistrationID: regs[reg], SubjectType: "event",
				ScannedAt: At(now.Add(-time.Hour)), Offline: true}
			c.CheckinIDs[j] = fmt.Sprintf("chk_b%dx%d", batch, j)
		}
		batch++
		return idx.Resolve(m.PassList(), c)
	}
	setup := func() {
		m = NewMachine("evt_1", testConfig(), newSeqIDs(uint64(batch)+1))
		run(CreateEvent{Name: "Conf", Timezone: "UTC"})
		regs = make([]string, n)
		for i := range regs {
			regs[i] = run(CreateRegistration{Email: fmt.Sprintf("p%d@x.io", i)}).(RegistrationResult).ID
		}
		idx, next = &PassIndex{}, 0
		run(mk())
	}
	// The thread's CPU time, not the clock's: the machine is shared, and
	// time spent descheduled is not the actor's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu time.Duration
	b.StopTimer()
	setup()
	for i := 0; i < b.N; i++ {
		if next+500 > n {
			setup()
		}
		c := mk()
		t0 := threadCPU()
		b.StartTimer()
		run(c)
		b.StopTimer()
		cpu += threadCPU() - t0
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/scan")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*500), "thread-cpu-ns/scan")
}

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	const clockThreadCPUTimeID = 3 // CLOCK_THREAD_CPUTIME_ID (Linux)
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
