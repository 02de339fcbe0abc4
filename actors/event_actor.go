package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"

	"ticketd/actors/feed"
	"ticketd/actors/index"
	"ticketd/ask"
	"ticketd/event"
	"ticketd/outbox"
	"ticketd/persistence"
)

// eventActor is the shell of one event: it owns the event's machine and
// its log stream (named after the event id).
type eventActor struct {
	sys  *System
	id   string
	self *actor.PID

	slot    *slot // its registry entry (see System.detach)
	retired bool  // left the registry: it answers errRetired until stopped
	m       *event.Machine
	com     committer
	loadErr error

	snapSeq   uint64      // seq of the newest snapshot loaded or asked for
	snapWait  bool        // a snapshot request waits for its seq to be durable
	owedDirty bool        // owed work was written into the open batch
	owed      outbox.Owed // reused by carryOut

	timers  *scheduler.TimerScheduler
	cancel  scheduler.CancelFunc
	timerAt time.Time

	enc  []byte         // the change encode buffer
	effs []event.Effect // the effects buffer

	// The change feed (feed.go): the entries buffer, the durable end of the feed and the long polls waiting past it.
	fes        []event.FeedEntry
	feedEnd    uint64
	ring       *feed.Ring // the newest entries, for the readers
	feedWaits  []feedWaiter
	feedWaitID uint64

	published byte // the status last reported to the event index; 0 before the first report

	// the waiting room's poll notes (queue.go)
	polls     map[string]time.Time
	swept     time.Time
	startedAt time.Time

	// the sale view published last and its slot (saleview.go)
	view *event.SaleView
	sale *saleSlot
	// the list of registrations handed out to door batches and its slot
	// (passes.go); nil until the event's first batch of scans
	passes *passSlot

	// recent holds the Recorder records of batches not yet durable, by
	// key: a request claimed again meanwhile finds them (see Recorder).
	recent map[string][]byte
}

// notePublished tells the event index whether the event is published, when
// that changed since the last report, and when the index did not know it
// yet puts its durable entry in the open batch: with the change that moved
// it, or once after the first load of an event without one.
func (a *eventActor) notePublished() {
	e := a.m.State().Event
	if e == nil {
		return // not created (yet)
	}
	st := byte(index.NotPublished)
	if e.Status == event.EventPublished {
		st = index.Published
	}
	if st == a.published {
		return
	}
	a.published = st
	if a.sys.idx.NoteStatus(a.id, st) {
		a.com.put(index.PublishedKey(a.id), []byte{st})
		if x := a.sys.cfg.Index; x != nil {
			id := a.id
			a.com.afterDurable(func() { x.Published(id, st) })
		}
	}
}

// errStopReplay ends a replay early at a gap in the log.
var errStopReplay = errors.New("actors: stop replay")

// evict tells an actor System.Evict took out of the registry to stop.
type evict struct{}

// errRetired answers a request that reached an actor out of the registry
// before it was handled: the ask sends it to a fresh actor.
var errRetired = errors.New("actors: actor retired")

// leave takes the actor out of the registry for good: the requests still
// on their way to it are answered errRetired, and the system stops it once
// none is.
func (a *eventActor) leave() {
	a.releaseFeedWaits()
	a.dropView()
	a.dropPasses()
	a.retired = true
	a.sys.detach(a.id, a.slot)
}

// expireTick is the timer's message: run Expire now.
type expireTick struct{}

func (a *eventActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.start(ctx)
	case *request:
		if a.retired {
			ctx.Send(ctx.Sender(), &response{err: errRetired})
			return
		}
		a.handle(ctx, m, ctx.Sender())
	case *synced:
		if err := a.com.done(ctx, m); err != nil {
			a.crash(ctx, err)
		}
	case *feedTimeout:
		a.feedTimedOut(m.id)
	case *feedReady:
		a.feedLingered(m.id)
	case *expireTick:
		a.cancel, a.timerAt = nil, time.Time{}
		if a.retired {
			return
		}
		now := a.sys.cfg.Now()
		a.handle(ctx, &request{cmd: event.Expire{Now: now}}, nil)
		a.sweepWaiters(ctx, now)
	case *actor.ReceiveTimeout:
		// A snapshot in flight does not keep the actor: the snapshotter
		// works from the store, and a new incarnation loads from the
		// snapshots and log it sees, which are consistent at every point.
		if a.com.idle() && len(a.feedWaits) == 0 && a.sys.retire(a.id, ctx.Self()) {
			ctx.Stop(ctx.Self())
			return
		}
		// protoactor cancels the receive timeout when it fires: arm it
		// again, or an actor that was busy at that moment (a sync slower
		// than the timeout, a request on its way) never passivates.
		ctx.SetReceiveTimeout(a.sys.cfg.IdleTimeout)
	case *evict:
		// Out of the registry already: stop once the answers are out.
		a.com.afterDurable(a.leave)
	case *actor.Stopping:
		if a.cancel != nil {
			a.cancel()
		}
		a.releaseFeedWaits()
		a.dropView()
		a.dropPasses()
	case *actor.Stopped:
		close(a.slot.done)
	}
}

func (a *eventActor) start(ctx actor.Context) {
	self := ctx.Self()
	a.self = self
	root := a.sys.as.Root
	a.com = committer{
		log:    a.sys.log,
		stream: a.id,
		post:   func(msg any) { root.Send(self, msg) },
		wg:     &a.sys.wg,
	}
	a.timers = scheduler.NewTimerScheduler(root)
	a.m = event.NewMachine(a.id, a.sys.cfg.Event, a.sys.cfg.IDs)
	if err := a.load(); err != nil {
		a.loadErr = err
		a.sys.cfg.Logger.Error("event load failed", "event", a.id, "err", err)
		return
	}
	a.sys.mu.Lock()
	a.slot.loaded, a.slot.loadedAt = true, time.Now()
	a.sys.mu.Unlock()
	if a.sys.cfg.IdleTimeout > 0 {
		ctx.SetReceiveTimeout(a.sys.cfg.IdleTimeout)
	}
	a.publishView() // what was loaded is durable
	// Holds that lapsed while the event was not loaded lapse now.
	a.startedAt = a.sys.cfg.Now()
	a.handle(ctx, &request{cmd: event.Expire{Now: a.startedAt}}, nil)
}

// claimCatchUps bounds the claims a load retries after replaying the
// records that came after its replay; past them it fails and the next
// request loads anew.
const claimCatchUps = 3

// slowLoad is the load time from which a load is logged at info level.
const slowLoad = 100 * time.Millisecond

// load restores the newest snapshot and replays the log after it.
func (a *eventActor) load() error {
	// A big state is allocated all at once and all of it stays live:
	// collections during the load would only slow it down.
	exit := a.sys.loadGC.enter(a.sys.cfg.LoadGCPercent)
	var st restoreStats
	var from, last uint64
	var gap bool
	var err error
	preloaded, replayFrom := false, uint64(0)
	if w := a.sys.takePreloaded(a.id); w != nil {
		// Built ahead (see Preload): only the records since.
		t0 := time.Now()
		var next uint64
		if next, gap, err = a.sys.replayAfter(w.m, a.id, w.last, ^uint64(0), nil); err == nil && !gap {
			a.m, from, last, preloaded, replayFrom = w.m, w.from, next, true, w.last
			st.replay = time.Since(t0)
		}
	}
	if !preloaded {
		from, last, gap, err = a.sys.restore(a.m, a.id, ^uint64(0), nil, &st)
		replayFrom = from
	}
	exit()
	if err != nil {
		return err
	}
	// A slow load is worth a line (a restart of a big event); the rest are
	// activations of small ones.
	lvl := slog.LevelDebug
	if st.read+st.decode+st.replay >= slowLoad || preloaded {
		lvl = slog.LevelInfo
	}
	a.sys.cfg.Logger.Log(context.Background(), lvl, "event loaded", "event", a.id, "snapshot_seq", from,
		"snapshot_bytes", st.snapBytes, "replayed", last-replayFrom, "read_ms", st.read.Milliseconds(),
		"decode_ms", st.decode.Milliseconds(), "replay_ms", st.replay.Milliseconds(), "preloaded", preloaded)
	if gap {
		// Answers are released in log order, so nothing after a gap was
		// ever acknowledged: drop it.
		a.sys.cfg.Logger.Warn("log gap: dropping unacknowledged records", "event", a.id, "after", last)
		if err := a.sys.log.TruncateAfter(a.id, last); err != nil {
			return fmt.Errorf("actors: truncate %s after %d: %w", a.id, last, err)
		}
	}
	// From here on a writer that held the event before (a node that lost
	// it) can no longer append: the log refuses its next batch.
	lg, err := a.sys.log.Claim(a.id, last)
	for try := 0; errors.Is(err, persistence.ErrFenced) && try < claimCatchUps; try++ {
		// Records came after the replay: the writer that lost the event
		// finishing its flight, or a new log leader that had not applied
		// every committed message when the replay read it. Replaying just
		// those and claiming again costs far less than loading anew (a big
		// event's whole snapshot and tail: seconds of a failover).
		next, gap, rerr := a.sys.replayAfter(a.m, a.id, last, ^uint64(0), nil)
		if rerr != nil || gap {
			break
		}
		a.sys.cfg.Logger.Info("event claim refused: replayed the records after it", "event", a.id,
			"from", last, "to", next)
		last = next
		lg, err = a.sys.log.Claim(a.id, last)
	}
	if err != nil {
		return fmt.Errorf("actors: claim %s: %w", a.id, err)
	}
	a.com.log = lg
	a.snapSeq = from
	a.com.seq = last
	a.feedEnd = a.m.FeedSeq() // everything loaded is durable
	a.ring = feed.NewRing(a.feedEnd)
	return nil
}

func (a *eventActor) handle(ctx actor.Context, req *request, to *actor.PID) {
	if a.loadErr != nil {
		if to != nil {
			ctx.Send(to, &response{err: fmt.Errorf("%w: %w", ask.ErrUnavailable, a.loadErr)})
		}
		if errors.Is(a.loadErr, persistence.ErrFenced) || a.sys.cfg.Log != nil {
			// Another writer claimed the event meanwhile, or a replicated
			// log failed for a moment (an election): the next request
			// activates it afresh. The Pebble store's own load errors are
			// not transient, so there the actor stays and refuses.
			a.leave()
		}
		return
	}
	if rf, ok := req.cmd.(event.ReadFeed); ok {
		a.readFeed(ctx, rf, to)
		return
	}
	now := a.sys.cfg.Now()
	if e, ok := req.cmd.(event.Expire); ok {
		now = e.Now
	}
	if req.rec != nil {
		if v, err := a.recorded(req.rec); err != nil || v != nil {
			// Made before (its answer was lost): the record answers, once
			// durable; or the store cannot tell, and nothing is decided.
			if err == nil {
				err = &ask.Replayed{Value: v}
			}
			a.com.reply(ctx, to, &response{err: err})
			return
		}
	}
	a.noteScans(req.cmd)
	res, changes, err := a.m.Decide(now, req.cmd)
	a.notePoll(req.cmd, now)
	if err != nil {
		a.com.reply(ctx, to, &response{err: err})
		return
	}
	for _, ch := range changes {
		a.m.Apply(ch)
		// The batch copies the record, so one encode buffer serves all.
		rec, err := event.AppendChange(a.enc[:0], ch)
		a.enc = rec
		if err != nil {
			// Decide produced a change that cannot be encoded: a bug.
			panic(fmt.Sprintf("actors: encode %s of %s: %v", ch.ChangeKind(), a.id, err))
		}
		seq := a.com.append(rec)
		// The change's feed entries and what it owes the world go into
		// the same batch.
		a.fes = event.AppendFeed(a.fes[:0], ch)
		if len(a.fes) > 0 {
			a.writeFeed(ch, a.fes)
		}
		if a.effs = event.AppendEffects(a.effs[:0], ch); len(a.effs) > 0 {
			a.carryOut(now, seq, a.effs, a.fes)
		}
		if f := a.sys.cfg.OnPassChange; f != nil {
			if regs, all := event.PassChanged(ch); all || len(regs) > 0 {
				id := a.id
				a.com.afterDurable(func() { f(id, regs, all) })
			}
		}
	}
	a.notePublished()
	a.publishPasses(req.cmd)
	if len(changes) > 0 {
		a.publishView()
		w := &a.sys.watch
		if wake := w.Waker(a.id); wake != nil {
			a.com.afterDurable(wake)
		}
		// A caught-up door device is answered without the actor
		// (PassVerCaughtUp): keep its stamp current once durable.
		if w.Watched(a.id) {
			ver, id := a.m.State().Door.PassVer, a.id
			a.com.afterDurable(func() { w.NotePassVer(id, ver) })
		}
	}
	if a.owedDirty && a.sys.cfg.OnOwed != nil {
		a.owedDirty = false
		a.com.afterDurable(a.sys.cfg.OnOwed)
	}
	if req.create != "" && len(changes) > 0 {
		a.com.put(index.Key(a.id), []byte(req.create))
	}
	if len(changes) > 0 {
		if k, v := a.com.record(req.rec, res); k != nil {
			if a.recent == nil {
				a.recent = map[string][]byte{}
			}
			key := string(k)
			a.recent[key] = v
			a.com.afterDurable(func() { delete(a.recent, key) })
		}
	}
	a.maybeSnapshot()
	a.com.reply(ctx, to, &response{result: res})
	a.com.kick()
	a.arm()
}

// recorded returns the record of rec a write made before: in a batch not
// yet durable, or, when rec says to look, in the store (where the log
// puts it once durable, and where a new owner imports it in cluster
// mode); nil when there is none.
func (a *eventActor) recorded(rec *ask.Recorder) ([]byte, error) {
	if rec.Key == nil {
		return nil, nil
	}
	v, ok := a.recent[string(rec.Key)]
	if !ok && rec.Look {
		var err error
		if v, ok, err = a.sys.store.Get(rec.Key); err != nil {
			return nil, fmt.Errorf("%w: event %s: idempotency record: %w", ask.ErrUnavailable, a.id, err)
		}
	}
	if !ok || (rec.Live != nil && !rec.Live(v)) {
		return nil, nil
	}
	return v, nil
}

// maybeSnapshot asks the snapshotter for a snapshot at the current seq
// once it is durable, when enough changes have accumulated: at least
// SnapshotEvery, and for a big event as many as the records the last snapshot
// covers (see snapshotGrowthDiv). The actor never encodes its state.
func (a *eventActor) maybeSnapshot() {
	if a.snapWait || a.com.seq-a.snapSeq < snapshotDue(a.sys.cfg.SnapshotEvery, a.sys.cfg.SnapshotTailMax, a.snapSeq) {
		return
	}
	seq := a.com.seq
	a.snapWait = true
	a.com.afterDurable(func() {
		a.snapWait = false
		// A full queue refuses: the next change asks again.
		if a.sys.snapper.want(a.sys, a.id, seq) {
			a.snapSeq = seq
		}
	})
}

// arm keeps one timer armed for the machine's next deadline.
func (a *eventActor) arm() {
	at, ok := a.m.NextDeadline()
	if !ok {
		return
	}
	if a.cancel != nil && !at.Before(a.timerAt) {
		return
	}
	if a.cancel != nil {
		a.cancel()
	}
	d := at.Sub(a.sys.cfg.Now())
	if d < 0 {
		d = 0
	}
	// A few milliseconds late is fine; early would find nothing to expire.
	a.cancel = a.timers.SendOnce(d+5*time.Millisecond, a.self, &expireTick{})
	a.timerAt = at
}

// crash handles a failed sync: the state is ahead of the log, so every
// waiting caller is told the write failed and the actor stops; the next
// request activates it afresh from the log.
func (a *eventActor) crash(ctx actor.Context, err error) {
	a.sys.cfg.Logger.Error("log sync failed", "event", a.id, "err", err)
	a.com.fail(ctx, func() any {
		return &response{err: fmt.Errorf("%w: %w", ask.ErrUnavailable, err)}
	})
	// The batches in flight answer nobody now: their outcome is moot.
	a.com.flying = nil
	a.leave()
}
