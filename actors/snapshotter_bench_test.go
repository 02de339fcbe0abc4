package actors

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// logSeeder writes the log of an event with one open ticket type straight
// into a store, as the actor would have, without the cost of one ask per
// record. Its machine is the reference state at every seq.
type logSeeder struct {
	tb    testing.TB
	store *persistence.Store
	m     *event.Machine
	evt   string
	tt    string
	last  uint64
	n     int // registrations so far
}

func newLogSeeder(tb testing.TB, store *persistence.Store, cfg event.Config) *logSeeder {
	tb.Helper()
	ids := randomIDs{}
	s := &logSeeder{tb: tb, store: store, evt: ids.New("evt_")}
	s.m = event.NewMachine(s.evt, cfg, ids)
	b := store.NewBatch()
	defer b.Close()
	s.do(b, event.CreateEvent{Name: "Big", Timezone: "UTC"})
	s.tt = s.do(b, event.CreateTicketType{Name: "GA"}).(event.TicketType).ID
	s.do(b, event.UpdateTicketType{ID: s.tt, Status: event.Some("open")})
	require.NoError(tb, store.Commit(b))
	return s
}

func (s *logSeeder) do(b *persistence.Batch, c event.Command) any {
	res, chs, err := s.m.Decide(time.Now(), c)
	require.NoError(s.tb, err)
	for _, ch := range chs {
		s.m.Apply(ch)
		rec, err := event.MarshalChange(ch)
		require.NoError(s.tb, err)
		s.last++
		b.Append(s.evt, s.last, rec)
	}
	return res
}

// register appends n registrations to the log.
func (s *logSeeder) register(n int) {
	s.tb.Helper()
	b := s.store.NewBatch()
	for range n {
		s.do(b, event.CreateRegistration{Email: fmt.Sprintf("seed%d@example.com", s.n), RegistrationTypeID: s.tt})
		s.n++
		if b.Count() >= 5000 {
			require.NoError(s.tb, s.store.Commit(b))
			b.Close()
			b = s.store.NewBatch()
		}
	}
	require.NoError(s.tb, s.store.Commit(b))
	b.Close()
}

// state is the reference state's snapshot bytes.
func (s *logSeeder) state() []byte {
	b, err := event.MarshalState(s.m.State())
	require.NoError(s.tb, err)
	return b
}

// seedLog writes an event of regs registrations into store and returns its
// event and ticket type ids and the seq of its last record.
func seedLog(tb testing.TB, store *persistence.Store, cfg event.Config, regs int) (evt, tt string, last uint64) {
	s := newLogSeeder(tb, store, cfg)
	s.register(regs)
	return s.evt, s.tt, s.last
}

// benchEnv is a System over a real Pebble store for benchmarks (env is
// for tests only).
type benchEnv struct {
	dir   string
	cfg   Config
	store *persistence.Store
	sys   *System
}

func openBench(tb testing.TB, dir string, tweak func(*Config)) *benchEnv {
	tb.Helper()
	e := &benchEnv{dir: dir}
	e.cfg = Config{Event: event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour}}
	if tweak != nil {
		tweak(&e.cfg)
	}
	var err error
	e.store, err = persistence.Open(persistence.Options{Dir: dir})
	require.NoError(tb, err)
	e.sys, err = Open(e.cfg, e.store, snapshots.New(e.store, 2))
	require.NoError(tb, err)
	e.cfg = e.sys.cfg
	return e
}

func (e *benchEnv) close() {
	_ = e.sys.Close()
	_ = e.store.Close()
}

// BenchmarkAskLatencyDuringSnapshot measures the latency of registrations
// asked by 4 concurrent callers while the event, 200,000 registrations
// big, takes a snapshot: the snapshot is due after the first 100 changes.
// With prior=none the event has no snapshot yet (a first snapshot: the
// worker replays the whole log); with prior=snapshot it has one taken where
// the size rule took the last one (see snapshotGrowthDiv: half the log).
// It reports the worst, 99th percentile and median latency, how long the
// asks took and when the snapshot was saved. One run is one scenario, so
// run it with -benchtime=1x -count=5. Under -short (make bench
// BENCHFLAGS=-quick) the event has 20,000 registrations: a smoke run of
// the same path, not figures to compare.
func BenchmarkAskLatencyDuringSnapshot(b *testing.B) {
	regs, asks, callers := 200_000, 4000, 4
	if testing.Short() {
		regs, asks = 20_000, 1000
	}
	for _, prior := range []bool{false, true} {
		name := "prior=none"
		if prior {
			name = "prior=snapshot"
		}
		b.Run(name, func(b *testing.B) {
			// One iteration is a whole scenario (seconds: 200,000
			// registrations seeded, a snapshot taken) and its metrics are
			// per scenario, so a -benchtime=Nx runs it once; repeat with
			// -count.
			for range min(b.N, 1) {
				askDuringSnapshot(b, regs, asks, callers, prior)
			}
		})
	}
}

// snapshotWaitMax bounds the wait for the snapshot of a scenario: go test's
// -timeout does not cover benchmarks, so a snapshot that never comes would
// hang the run.
const snapshotWaitMax = 5 * time.Minute

func askDuringSnapshot(b *testing.B, regs, asks, callers int, prior bool) {
	b.StopTimer()
	e := openBench(b, b.TempDir(), nil)
	sd := newLogSeeder(b, e.store, e.cfg.Event)
	snapSeq := uint64(0)
	if prior {
		// The size rule took the last snapshot once the log since the one
		// before had grown to covered/snapshotGrowthDiv; the next is due
		// when the log since this one has.
		before := regs * snapshotGrowthDiv / (snapshotGrowthDiv + 1)
		sd.register(before)
		snapSeq = sd.last
		require.NoError(b, e.sys.snaps.Save(sd.evt, snapSeq, sd.state()))
		sd.register(regs - before)
	} else {
		sd.register(regs)
	}
	evt, tt, last := sd.evt, sd.tt, sd.last
	sd = nil
	e.close()
	every := int(last-snapSeq) + 100
	require.Equal(b, uint64(every), snapshotDue(every, 0, snapSeq), "the snapshot must be due after the first 100 changes")
	e = openBench(b, e.dir, func(c *Config) { c.SnapshotEvery = every })
	defer e.close()
	_, err := e.sys.Ask(bg, evt, event.GetEvent{})
	require.NoError(b, err)
	runtime.GC()
	b.StartTimer()

	lat := make([]time.Duration, asks)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < asks; i += callers {
				t0 := time.Now()
				_, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: fmt.Sprintf("l%d@example.com", i), RegistrationTypeID: tt})
				lat[i] = time.Since(t0)
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	asked := time.Since(start)
	for e.sys.Metrics().Snapshots.Load() == 0 {
		if time.Since(start) > snapshotWaitMax {
			b.Fatalf("no snapshot saved %v after the asks began (pending %d)", snapshotWaitMax, e.sys.Metrics().SnapshotsPending.Load())
		}
		time.Sleep(time.Millisecond)
	}
	saved := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(asked), "asks-ms")
	b.ReportMetric(ms(saved), "saved-ms")
}

// BenchmarkLoad activates an event of 100,000 registrations (20,000 under
// -short), from its log alone and from a snapshot, with GOGC raised during
// the load (the default) and left alone (LoadGCPercent -1).
func BenchmarkLoad(b *testing.B) {
	regs := 100_000
	if testing.Short() {
		regs = 20_000
	}
	logDir, snapDir := b.TempDir(), b.TempDir()
	e := openBench(b, logDir, nil)
	logEvt, _, _ := seedLog(b, e.store, e.cfg.Event, regs)
	e.close()
	e = openBench(b, snapDir, nil)
	seeded := newLogSeeder(b, e.store, e.cfg.Event)
	seeded.register(regs)
	snapEvt := seeded.evt
	require.NoError(b, e.sys.snaps.Save(snapEvt, seeded.last, seeded.state()))
	e.close()
	seeded = nil

	for _, from := range []struct{ name, dir, evt string }{{"log", logDir, logEvt}, {"snapshot", snapDir, snapEvt}} {
		for _, gc := range []struct {
			name    string
			percent int
		}{{"gc=default", -1}, {"gc=raised", 0}} {
			b.Run(from.name+"/"+gc.name, func(b *testing.B) {
				store, err := persistence.Open(persistence.Options{Dir: from.dir})
				require.NoError(b, err)
				defer store.Close()
				cfg := Config{
					Event:         event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour},
					SnapshotEvery: 1 << 40, // no snapshot: every load is the same
					LoadGCPercent: gc.percent,
				}
				b.ReportAllocs()
				for range b.N {
					b.StopTimer()
					runtime.GC()
					sys, err := Open(cfg, store, snapshots.New(store, 2))
					require.NoError(b, err)
					b.StartTimer()
					_, err = sys.Ask(bg, from.evt, event.GetEvent{})
					b.StopTimer()
					require.NoError(b, err)
					require.NoError(b, sys.Close())
				}
			})
		}
	}
}
