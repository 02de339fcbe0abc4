package actors

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// BenchmarkScanBatch500 asks the event's actor, over a real Pebble store
// (without fsync: the commit's CPU counts, not the disk's latency),
// batches of 500 door scans as door-sync sends them: 400 passes new to
// the door and 100 repeats of passes another device checked in earlier
// (20% duplicates across devices). An event of 100,000 registrations
// (20,000 under -short); one op is one batch, asked one after the other,
// so ns/scan is the actor's and the commit's time per scan and
// cpu-ns/scan the process's CPU per scan (the benchmark's own building
// of the commands included, a small share). Run it with -benchtime=Nx,
// N at most regs/400.
func BenchmarkScanBatch500(b *testing.B) {
	regs := 100_000
	if testing.Short() {
		regs = 20_000
	}
	if (b.N+1)*400 > regs {
		b.Skipf("-benchtime=%dx needs %d passes; the event has %d: use at most %dx", b.N, (b.N+1)*400, regs, regs/400-1)
	}
	b.StopTimer()
	e := openBench(b, b.TempDir(), nil)
	sd := newLogSeeder(b, e.store, e.cfg.Event)
	sd.register(regs)
	evt := sd.evt
	ids := make([]string, 0, regs)
	list, _, err := event.DecideOp(sd.m, time.Now(), event.ListPasses{Limit: event.PassPageMax})
	require.NoError(b, err)
	for {
		for _, p := range list.Data {
			ids = append(ids, p.RegistrationID)
		}
		if !list.HasMore {
			break
		}
		list, _, err = event.DecideOp(sd.m, time.Now(), event.ListPasses{Limit: event.PassPageMax, Cursor: list.NextCursor})
		require.NoError(b, err)
	}
	require.Len(b, ids, regs)
	sd = nil
	e.close()
	e = openBenchNoSync(b, e.dir, func(c *Config) { c.SnapshotEvery = 1 << 30 })
	defer e.close()
	_, err = e.sys.Ask(bg, evt, event.GetEvent{})
	require.NoError(b, err)
	doors := []event.DoorRef{{SubjectType: "event"}}
	scannedAt := event.At(time.Now().Add(-time.Hour))
	// The first batch is not timed: it builds the lazy indexes a loaded
	// event makes on its first door read.
	batches := make([]event.RecordScans, b.N+1)
	next := 0
	for i := range batches {
		c := event.RecordScans{DeviceID: fmt.Sprintf("dev_%d", i%50), Doors: doors, Scans: make([]event.Scan, 500)}
		for j := range c.Scans {
			reg := next
			if j%5 == 4 && next > 500 {
				reg = (next * 7919) % (next - 450) // a pass checked in by an earlier batch
			} else {
				next++
			}
			c.Scans[j] = event.Scan{ScanID: fmt.Sprintf("s%d-%d", i, j), RegistrationID: ids[reg], SubjectType: "event",
				ScannedAt: scannedAt, Offline: true}
		}
		batches[i] = c
	}
	ask := func(c event.RecordScans) {
		res, err := Ask(bg, e.sys, evt, c)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Results) != 500 {
			b.Fatalf("%d results", len(res.Results))
		}
	}
	ask(batches[0])
	runtime.GC()
	cpu0 := cpuTime()
	b.StartTimer()
	for _, c := range batches[1:] {
		ask(c)
	}
	b.StopTimer()
	scans := float64(b.N * 500)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/scans, "ns/scan")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/scans, "cpu-ns/scan")
}

// openBenchNoSync is openBench over a store that skips the fsync.
func openBenchNoSync(tb testing.TB, dir string, tweak func(*Config)) *benchEnv {
	tb.Helper()
	e := &benchEnv{dir: dir}
	e.cfg = Config{Event: event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour}}
	tweak(&e.cfg)
	var err error
	e.store, err = persistence.Open(persistence.Options{Dir: dir, NoSync: true})
	require.NoError(tb, err)
	e.sys, err = Open(e.cfg, e.store, snapshots.New(e.store, 2))
	require.NoError(tb, err)
	e.cfg = e.sys.cfg
	return e
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
