package actors

import (
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/persistence"
	"ticketd/snapshots"
)

func waitSnapshots(t *testing.T, e *env, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return e.sys.Metrics().Snapshots.Load() >= n },
		10*time.Second, 2*time.Millisecond, "snapshot %d was not saved", n)
}

// replayState is the state bytes of a fresh machine that applied the log
// of evt from its start through seq: the reference without snapshots.
func replayState(t *testing.T, e *env, evt string, through uint64) []byte {
	t.Helper()
	m := event.NewMachine(evt, e.cfg.Event, randomIDs{})
	require.NoError(t, e.store.Replay(evt, 0, func(seq uint64, rec []byte) error {
		if seq > through {
			return errStopReplay
		}
		ch, err := event.UnmarshalChange(rec)
		if err != nil {
			return err
		}
		m.Apply(ch)
		return nil
	}))
	b, err := event.MarshalState(m.State())
	require.NoError(t, err)
	return b
}

func TestBackgroundSnapshotIsTheStateAtItsSeq(t *testing.T) {
	// The actor never asks by itself here: the test asks the snapshotter.
	e := newEnv(t, func(c *Config) { c.SnapshotEvery = math.MaxInt32 })
	sd := newLogSeeder(t, e.store, e.cfg.Event)
	sd.register(300)
	s1, want1 := sd.last, sd.state()
	require.Equal(t, want1, replayState(t, e, sd.evt, s1), "the reference machine is the replay")
	sd.register(200) // records after s1: the snapshot must stop at s1

	require.True(t, e.sys.snapper.want(e.sys, sd.evt, s1))
	waitSnapshots(t, e, 1)
	seq, got, ok, err := e.sys.snaps.LoadNewest(sd.evt)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, s1, seq)
	assert.Equal(t, want1, got, "snapshot(s1) == replay of the log through s1")

	// The next one starts from the snapshot: snapshot(s2) = apply(snapshot(s1), log(s1..s2]).
	s2, want2 := sd.last, sd.state()
	sd.register(50)
	require.True(t, e.sys.snapper.want(e.sys, sd.evt, s2))
	waitSnapshots(t, e, 2)
	seq, got, ok, err = e.sys.snaps.LoadNewest(sd.evt)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, s2, seq)
	assert.Equal(t, want2, got)

	// Trimmed only through the older snapshot kept.
	first, err := e.store.FirstSeq(sd.evt)
	require.NoError(t, err)
	assert.Equal(t, s1+1, first, "the log keeps every record after the older snapshot")

	// A request at or behind the newest snapshot saves nothing.
	require.True(t, e.sys.snapper.want(e.sys, sd.evt, s1))
	e.close()
	e.open()
	assert.Equal(t, int64(0), e.sys.Metrics().Snapshots.Load())
	seqs, err := e.sys.snaps.List(sd.evt)
	require.NoError(t, err)
	assert.Equal(t, []uint64{s1, s2}, seqs)
}

// triggerSnapshot registers on evt until the actor asks for a snapshot and
// the worker reaches beforeEncode (reported on started).
func triggerSnapshot(t *testing.T, e *env, evt, tt string, started <-chan uint64) uint64 {
	t.Helper()
	for i := range 500 {
		_, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: fmt.Sprintf("t%d@example.com", i), RegistrationTypeID: tt})
		require.NoError(t, err)
		select {
		case seq := <-started:
			return seq
		case <-time.After(time.Millisecond):
		}
	}
	select {
	case seq := <-started:
		return seq
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot was started")
		return 0
	}
}

func TestActorAnswersWhileASnapshotIsBuilt(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SnapshotEvery = 50 })
	started, release := make(chan uint64, 8), make(chan struct{})
	e.sys.snapper.beforeEncode = func(string, uint64) { started <- 0; <-release }
	releaseOnce := sync.OnceFunc(func() { close(release) })
	// Cleanups run last-in first-out: the worker is released before Close
	// waits for it, even when the test fails.
	t.Cleanup(releaseOnce)
	evt, tt := e.newEvent("bu_1", nil)
	triggerSnapshot(t, e, evt, tt, started)

	// The encode is stalled in the worker; the actor keeps answering.
	for i := range 20 {
		_, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: fmt.Sprintf("during%d@example.com", i), RegistrationTypeID: tt})
		require.NoError(t, err)
	}
	_, err := e.sys.Ask(bg, evt, event.GetEvent{})
	require.NoError(t, err)
	assert.Equal(t, int64(0), e.sys.Metrics().Snapshots.Load(), "answered before the snapshot completed")
	assert.GreaterOrEqual(t, e.sys.Metrics().SnapshotsPending.Load(), int64(1), "the one being built is pending")
	releaseOnce()
	waitSnapshots(t, e, 1)
	require.Eventually(t, func() bool { return e.sys.Metrics().SnapshotsPending.Load() == 0 }, 10*time.Second, time.Millisecond,
		"nothing pending once the worker is done")
}

func TestPassivationDoesNotWaitForASnapshot(t *testing.T) {
	// The snapshotter reads the store, not the actor: an idle actor may
	// retire while its snapshot is built, and a new incarnation loads from
	// the snapshots and log it sees.
	e := newEnv(t, func(c *Config) { c.SnapshotEvery = 50; c.IdleTimeout = 30 * time.Millisecond })
	started, release := make(chan uint64, 8), make(chan struct{})
	e.sys.snapper.beforeEncode = func(string, uint64) { started <- 0; <-release }
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	evt, tt := e.newEvent("bu_1", nil)
	triggerSnapshot(t, e, evt, tt, started)
	require.Eventually(t, func() bool { return e.sys.ActiveEvents() == 0 }, 5*time.Second, 5*time.Millisecond,
		"the actor passivates while its snapshot is in flight")

	_, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: "back@example.com", RegistrationTypeID: tt})
	require.NoError(t, err, "a new incarnation serves meanwhile")
	want := jsonOf(t, e.registrations(evt))
	releaseOnce()
	waitSnapshots(t, e, 1)
	e.reopen()
	seqs, err := e.sys.snaps.List(evt)
	require.NoError(t, err)
	require.NotEmpty(t, seqs)
	assert.Equal(t, want, jsonOf(t, e.registrations(evt)), "snapshot + tail == the state before the restart")
}

func TestAnActorBusyWhenItsIdleTimeoutFiresStillPassivates(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.IdleTimeout = 30 * time.Millisecond })
	evt, _ := e.newEvent("bu_1", nil)
	// A request on its way (counted, not yet sent) when the timeout fires:
	// the actor must not retire then, and must retire once it is idle.
	sl, err := e.sys.acquire(evt)
	require.NoError(t, err)
	time.Sleep(150 * time.Millisecond)
	assert.Equal(t, 1, e.sys.ActiveEvents(), "no retirement with a request on its way")
	e.sys.release(evt, sl)
	require.Eventually(t, func() bool { return e.sys.ActiveEvents() == 0 }, 5*time.Second, 5*time.Millisecond,
		"the timeout is armed again after a refused retirement")
}

func TestCloseWaitsForTheSnapshotInFlightAndDropsTheQueue(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SnapshotEvery = math.MaxInt32 })
	var mu sync.Mutex
	var encoded []string
	started := make(chan struct{}, 2)
	e.sys.snapper.beforeEncode = func(id string, _ uint64) {
		started <- struct{}{}
		time.Sleep(200 * time.Millisecond) // a slow encode
		mu.Lock()
		encoded = append(encoded, id)
		mu.Unlock()
	}
	a, b := newLogSeeder(t, e.store, e.cfg.Event), newLogSeeder(t, e.store, e.cfg.Event)
	a.register(20)
	b.register(30)
	require.True(t, e.sys.snapper.want(e.sys, a.evt, a.last))
	require.True(t, e.sys.snapper.want(e.sys, b.evt, b.last))
	<-started
	e.close()
	assert.Equal(t, []string{a.evt}, encoded, "the running snapshot completed before Close returned, the queued one was dropped")
	e.open()
	seq, got, ok, err := e.sys.snaps.LoadNewest(a.evt)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, a.last, seq)
	assert.Equal(t, a.state(), got)
	_, _, ok, err = e.sys.snaps.LoadNewest(b.evt)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Len(t, e.registrations(b.evt), 30, "a dropped snapshot loses nothing: the log has it all")
}

func TestSnapshotQueueIsBoundedAndMergesRequests(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SnapshotEvery = math.MaxInt32 })
	started, release := make(chan struct{}, 2), make(chan struct{})
	e.sys.snapper.beforeEncode = func(string, uint64) { started <- struct{}{}; <-release }
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	blk, sd := newLogSeeder(t, e.store, e.cfg.Event), newLogSeeder(t, e.store, e.cfg.Event)
	blk.register(1)
	sd.register(5)
	require.True(t, e.sys.snapper.want(e.sys, blk.evt, blk.last))
	<-started // the worker holds blk: what follows stays queued

	require.True(t, e.sys.snapper.want(e.sys, sd.evt, sd.last-2))
	require.True(t, e.sys.snapper.want(e.sys, sd.evt, sd.last), "a queued event moves its seq forward")
	for i := range snapshotQueueMax - 1 {
		require.True(t, e.sys.snapper.want(e.sys, fmt.Sprintf("evt_q%d", i), 1))
	}
	assert.False(t, e.sys.snapper.want(e.sys, "evt_one_more", 1), "a full queue refuses")
	releaseOnce()
	waitSnapshots(t, e, 2) // the unknown events fail (no log) and are logged
	e.close()
	e.open()
	seqs, err := e.sys.snaps.List(sd.evt)
	require.NoError(t, err)
	assert.Equal(t, []uint64{sd.last}, seqs, "one snapshot, at the newest seq asked for")
}

func TestSnapshotScheduleGrowsWithTheEvent(t *testing.T) {
	assert.Equal(t, uint64(100), snapshotDue(100, 0, 0))
	assert.Equal(t, uint64(100), snapshotDue(100, 0, 50))
	assert.Equal(t, uint64(150), snapshotDue(100, 0, 150))
	assert.Equal(t, uint64(1_000_000), snapshotDue(100, 0, 1_000_000))
	// A tail bound caps the interval, never below the least one.
	assert.Equal(t, uint64(150), snapshotDue(100, 300, 150))
	assert.Equal(t, uint64(300), snapshotDue(100, 300, 1_000_000))
	assert.Equal(t, uint64(100), snapshotDue(100, 50, 1_000_000))

	sd, seqs := snapshotsOfABigEvent(t, func(c *Config) { c.SnapshotEvery = 40 }, 1100)
	// The next is due the covered records later, not 40 later (a
	// registration is two changes, so it may land one past).
	require.Len(t, seqs, 2)
	assert.Equal(t, sd.last, seqs[0])
	due := sd.last + snapshotDue(40, 0, sd.last)
	assert.GreaterOrEqual(t, seqs[1], due)
	assert.Less(t, seqs[1], due+2)
}

// snapshotsOfABigEvent seeds an event of 1,000 registrations' records,
// activates it (one snapshot of all), registers more through its actor,
// reopens, and answers the seeder and the snapshots kept.
func snapshotsOfABigEvent(t *testing.T, tweak func(*Config), more int) (*logSeeder, []uint64) {
	t.Helper()
	e := newEnv(t, tweak)
	sd := newLogSeeder(t, e.store, e.cfg.Event)
	sd.register(1000)
	// Activation finds the records and no snapshot: one snapshot of all.
	_, err := e.sys.Ask(bg, sd.evt, event.GetEvent{})
	require.NoError(t, err)
	waitSnapshots(t, e, 1)
	for i := range more {
		_, err := e.sys.Ask(bg, sd.evt, event.CreateRegistration{Email: fmt.Sprintf("g%d@example.com", i), RegistrationTypeID: sd.tt})
		require.NoError(t, err)
	}
	e.reopen()
	seqs, err := e.sys.snaps.List(sd.evt)
	require.NoError(t, err)
	return sd, seqs
}

// TestSnapshotTailMaxBoundsTheInterval: with SnapshotTailMax, a big
// event's next snapshot is due that many changes later, not the covered
// records later.
func TestSnapshotTailMaxBoundsTheInterval(t *testing.T) {
	sd, seqs := snapshotsOfABigEvent(t, func(c *Config) { c.SnapshotEvery, c.SnapshotTailMax = 40, 100 }, 300)
	require.Len(t, seqs, 2)
	assert.Greater(t, seqs[0], sd.last, "snapshots after the first, every 100 changes")
	assert.GreaterOrEqual(t, seqs[1]-seqs[0], uint64(100))
	assert.Less(t, seqs[1]-seqs[0], uint64(102))
}

// TestCrashDuringBackgroundSnapshotsLosesNothing registers from several
// callers on a crashable filesystem while snapshots are built in the
// background, and crashes it (dropping unsynced data) at moments in the
// middle of snapshots and at random: every registration acknowledged
// before a crash is in the state recovered from its clone.
func TestCrashDuringBackgroundSnapshotsLosesNothing(t *testing.T) {
	fs := persistence.NewCrashableFS() // crashes beside snapshot ingests
	cfg := Config{Event: event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour}, SnapshotEvery: 30}
	store, err := persistence.Open(persistence.Options{Dir: "data", FS: fs})
	require.NoError(t, err)
	sys, err := Open(cfg, store, snapshots.New(store, 2))
	require.NoError(t, err)

	type crash struct {
		fs    *vfs.MemFS
		acked []string
	}
	var mu sync.Mutex
	var acked []string
	var crashes []crash
	clone := func() {
		mu.Lock()
		defer mu.Unlock()
		// Everything acknowledged so far is synced, so it is in the clone.
		crashes = append(crashes, crash{acked: append([]string(nil), acked...), fs: fs.CrashClone(vfs.CrashCloneCfg{})})
	}
	sys.snapper.beforeEncode = func(string, uint64) { clone() }

	evt := sys.NewEventID()
	_, err = sys.CreateEvent(bg, "bu_1", evt, event.CreateEvent{Name: "Conf", Timezone: "UTC"})
	require.NoError(t, err)
	res, err := sys.Ask(bg, evt, event.CreateTicketType{Name: "GA"})
	require.NoError(t, err)
	tt := res.(event.TicketType).ID
	_, err = sys.Ask(bg, evt, event.UpdateTicketType{ID: tt, Status: event.Some("open")})
	require.NoError(t, err)

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				res, err := sys.Ask(bg, evt, event.CreateRegistration{Email: fmt.Sprintf("w%d-%d@example.com", w, i), RegistrationTypeID: tt})
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				acked = append(acked, res.(event.RegistrationResult).ID)
				mu.Unlock()
				if w == 0 && i%25 == 12 {
					clone()
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, sys.Close())
	require.NoError(t, store.Close())
	require.Greater(t, len(crashes), 4)

	for i, c := range crashes {
		store, err := persistence.Open(persistence.Options{Dir: "data", FS: c.fs})
		require.NoError(t, err)
		e := &env{t: t, cfg: cfg, store: store}
		e.sys, err = Open(cfg, store, snapshots.New(store, 2))
		require.NoError(t, err)
		have := map[string]bool{}
		for _, r := range e.registrations(evt) {
			have[r.ID] = true
		}
		for _, id := range c.acked {
			require.True(t, have[id], "crash %d lost acknowledged registration %s", i, id)
		}
		e.close()
	}
	t.Logf("%d crashes checked", len(crashes))
}

func TestLoadGCRaisesGOGCForTheSectionOnly(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	gogc := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }

	var a, b loadGC
	exitA := a.enter(0)
	assert.Equal(t, defaultLoadGCPercent, gogc())
	exitA2 := a.enter(0) // nested
	exitB := b.enter(300)
	exitA()
	assert.Equal(t, defaultLoadGCPercent, gogc(), "still loading")
	exitA2()
	assert.Equal(t, 100, gogc(), "a's section ended: its value restored")
	exitB()
	assert.Equal(t, 100, gogc(), "b does not put back a's raise")

	assert.Equal(t, 100, gogc())
	exit := a.enter(-1)
	assert.Equal(t, 100, gogc(), "below 0 leaves GOGC alone")
	exit()
	debug.SetGCPercent(2 * defaultLoadGCPercent)
	exit = a.enter(0)
	assert.Equal(t, 2*defaultLoadGCPercent, gogc(), "a laxer GOGC is kept")
	exit()
	assert.Equal(t, 2*defaultLoadGCPercent, gogc())
}

// The snapshot worker's pacer pauses after each slice of work while the
// System serves requests, and never while it is idle.
func TestPacerPausesOnlyWhileRequestsAreServed(t *testing.T) {
	// A stepped clock: each unit of work takes 100 µs, and a pause takes
	// what it asks for, so the count does not depend on the machine's load.
	work := func(p *pacer, busy bool) (slept time.Duration) {
		clock := time.Unix(0, 0)
		p.start = clock
		p.now = func() time.Time { return clock }
		p.sleep = func(d time.Duration) { slept += d; clock = clock.Add(d) }
		for worked := time.Duration(0); worked < 5*pacerSlice; worked += 100 * time.Microsecond {
			clock = clock.Add(100 * time.Microsecond)
			if busy {
				p.sys.asks.Add(1)
			}
			p.yield()
		}
		return slept
	}
	s := &System{}
	idle := newPacer(s)
	require.Zero(t, work(idle, false), "an idle service's snapshot was slowed down")
	require.Zero(t, idle.pauses)

	busy := newPacer(s)
	slept := work(busy, true)
	require.Equal(t, 5, busy.pauses, "one pause after each slice of work beside live traffic")
	require.Equal(t, time.Duration(busy.pauses)*pacerPause, slept)
}
