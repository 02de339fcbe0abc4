package actors

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"ticketd/ask"
	"ticketd/event"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// faultEnv is a System over a store on a fault-injecting, crashable
// in-memory filesystem: a test arms a fault, then "restarts the process"
// by opening a new store on the crash clone (what the disk kept).
type faultEnv struct {
	t     *testing.T
	mem   *persistence.CrashableFS
	ffs   *persistence.FaultFS
	cfg   Config
	store *persistence.Store
	sys   *System
}

func newFaultEnv(t *testing.T, stall time.Duration) *faultEnv { return newFaultEnvWith(t, stall, nil) }

// newFaultEnvWith is newFaultEnv with tweak applied to the System's
// Config; the System and its store are closed when the test ends.
func newFaultEnvWith(t *testing.T, stall time.Duration, tweak func(*Config)) *faultEnv {
	e := &faultEnv{t: t, mem: persistence.NewCrashableFS()}
	e.ffs = persistence.NewFaultFS(e.mem)
	e.cfg = Config{Event: event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour},
		CloseTimeout: time.Second}
	if tweak != nil {
		tweak(&e.cfg)
	}
	e.open(e.ffs, stall)
	return e
}

func (e *faultEnv) open(fs vfs.FS, stall time.Duration) {
	var err error
	e.store, err = persistence.Open(persistence.Options{Dir: "data", FS: fs, StallTimeout: stall, CloseTimeout: time.Second})
	require.NoError(e.t, err)
	e.sys, err = Open(e.cfg, e.store, snapshots.New(e.store, 2))
	require.NoError(e.t, err)
}

// restart is the supervisor's restart after the process exited: the
// stores of the old incarnation are abandoned, the new one opens on what
// the disk kept.
func (e *faultEnv) restart() {
	crashed := e.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	e.open(crashed, 0)
	e.t.Cleanup(func() {
		require.NoError(e.t, e.sys.Close())
		require.NoError(e.t, e.store.Close())
	})
}

// orderFlood registers from n clients until each gets an error, and
// returns the ids acknowledged (answered without error) and the errors,
// one per client, with the time each errored ask took.
type floodResult struct {
	mu       sync.Mutex
	acked    []string
	errs     []error
	slowest  time.Duration // the slowest ask that answered an error
	afterErr time.Time     // when the first error was answered
}

func orderFlood(sys *System, evt, tt string, n int, started chan<- struct{}) (*floodResult, *sync.WaitGroup) {
	r := &floodResult{}
	var wg sync.WaitGroup
	var once sync.Once
	for c := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				t0 := time.Now()
				res, err := sys.Ask(bg, evt, event.CreateRegistration{Email: fmt.Sprintf("c%d-%d@example.com", c, i), RegistrationTypeID: tt})
				took := time.Since(t0)
				r.mu.Lock()
				if err != nil {
					r.errs = append(r.errs, err)
					r.slowest = max(r.slowest, took)
					if r.afterErr.IsZero() {
						r.afterErr = time.Now()
					}
					r.mu.Unlock()
					return
				}
				r.acked = append(r.acked, res.(event.RegistrationResult).ID)
				if len(r.acked) == 200 {
					once.Do(func() { close(started) })
				}
				r.mu.Unlock()
			}
		}()
	}
	return r, &wg
}

// TestStoreFaultAnswersEveryWaiterAndLosesNothing injects a storage fault
// under an order flood: a failed WAL fsync (EIO) and a full disk (ENOSPC on
// every write). Every caller waiting on a failed batch gets
// ErrUnavailable wrapping persistence.ErrFailed (an HTTP 503 with reason
// STORAGE_UNAVAILABLE), promptly; none of them is acknowledged; the
// System and the store close within their deadlines; and after a restart
// on what the disk kept every acknowledged registration is there and the
// event takes orders again.
func TestStoreFaultAnswersEveryWaiterAndLosesNothing(t *testing.T) {
	for _, fault := range []string{"fsync EIO", "write ENOSPC"} {
		t.Run(fault, func(t *testing.T) {
			e := newFaultEnv(t, 0)
			evt, tt := newFaultEvent(t, e.sys)

			const clients = 32
			started := make(chan struct{})
			r, wg := orderFlood(e.sys, evt, tt, clients, started)
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("the flood did not get going")
			}
			if fault == "fsync EIO" {
				e.ffs.FailSyncs(syscall.EIO)
			} else {
				e.ffs.FailWrites(syscall.ENOSPC)
			}
			armed := time.Now()
			waitDone(t, wg, 5*time.Second, "a client still waits 5 s after the fault")
			t.Logf("%d acknowledged; every client answered within %s of the fault; slowest failed ask %s",
				len(r.acked), time.Since(armed).Round(time.Millisecond), r.slowest.Round(time.Millisecond))

			require.Len(t, r.errs, clients)
			for _, err := range r.errs {
				require.ErrorIs(t, err, ask.ErrUnavailable)
				require.ErrorIs(t, err, persistence.ErrFailed, "the fault, not a timeout, answered")
			}
			require.Less(t, r.slowest, 2*time.Second)
			require.ErrorIs(t, e.store.Err(), persistence.ErrFailed)

			// Told to stop: a new ask is refused at once, reads included.
			t0 := time.Now()
			_, err := e.sys.Ask(bg, evt, event.ListRegistrations{Limit: 1})
			require.ErrorIs(t, err, persistence.ErrFailed)
			_, err = e.sys.CreateUnit(bg, "late")
			require.ErrorIs(t, err, persistence.ErrFailed)
			require.Less(t, time.Since(t0), 100*time.Millisecond)

			t0 = time.Now()
			_ = e.sys.Close()
			require.ErrorIs(t, e.store.Close(), persistence.ErrFailed)
			require.Less(t, time.Since(t0), 3*time.Second, "shutdown after a fault is bounded")

			e.ffs.FailSyncs(nil)
			e.ffs.FailWrites(nil)
			e.restart()
			have := map[string]bool{}
			for _, reg := range registrationsOf(t, e.sys, evt) {
				have[reg.ID] = true
			}
			for _, id := range r.acked {
				require.True(t, have[id], "acknowledged registration %s lost", id)
			}
			t.Logf("after restart: %d registrations, %d acknowledged", len(have), len(r.acked))
			_, err = e.sys.Ask(bg, evt, event.CreateRegistration{Email: "after@example.com", RegistrationTypeID: tt})
			require.NoError(t, err, "the restarted service takes orders")
		})
	}
}

// TestStalledDiskAnswersAndCloses hangs WAL syncs: no error ever comes.
// The store's watchdog must fail it so that the waiting callers are
// answered within seconds, and Close must return although syncs and
// perhaps an actor are stuck in Pebble.
func TestStalledDiskAnswersAndCloses(t *testing.T) {
	e := newFaultEnv(t, 300*time.Millisecond)
	evt, tt := newFaultEvent(t, e.sys)
	started := make(chan struct{})
	r, wg := orderFlood(e.sys, evt, tt, 16, started)
	<-started
	e.ffs.HangSyncs(true)
	defer e.ffs.HangSyncs(false)
	armed := time.Now()
	waitDone(t, wg, 5*time.Second, "a client still waits 5 s after the disk stalled")
	t.Logf("every client answered within %s of the stall", time.Since(armed).Round(time.Millisecond))
	for _, err := range r.errs {
		require.ErrorIs(t, err, persistence.ErrFailed)
	}
	t0 := time.Now()
	_ = e.sys.Close()
	_ = e.store.Close()
	require.Less(t, time.Since(t0), 3*time.Second, "shutdown with a stalled disk is bounded")
}

func newFaultEvent(t *testing.T, sys *System) (string, string) {
	id := sys.NewEventID()
	_, err := sys.CreateEvent(bg, "bu_1", id, event.CreateEvent{Name: "Conf", Timezone: "UTC"})
	require.NoError(t, err)
	res, err := sys.Ask(bg, id, event.CreateTicketType{Name: "GA"})
	require.NoError(t, err)
	tt := res.(event.TicketType).ID
	_, err = sys.Ask(bg, id, event.UpdateTicketType{ID: tt, Status: event.Some("open")})
	require.NoError(t, err)
	return id, tt
}

func registrationsOf(t *testing.T, sys *System, eventID string) []event.Registration {
	var all []event.Registration
	cursor := ""
	for {
		res, err := sys.Ask(bg, eventID, event.ListRegistrations{Limit: 100, Cursor: cursor})
		require.NoError(t, err)
		l := res.(event.List[event.Registration])
		all = append(all, l.Data...)
		if !l.HasMore {
			return all
		}
		cursor = *l.NextCursor
	}
}

func waitDone(t *testing.T, wg *sync.WaitGroup, d time.Duration, msg string) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatal(msg)
	}
}
