package actors

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"

	"ticketd/actors/event"
)

// eventActor is the shell of one event: it owns the event's machine and
// its log stream (named after the event id).
type eventActor struct {
	sys  *System
	id   string
	self *actor.PID

	m       *event.Machine
	com     committer
	loadErr error

	sinceSnap   int  // changes since the last snapshot was taken
	snapping    bool // a snapshot save is in flight
	outboxDirty bool // outbox entries were written into the open batch

	timers  *scheduler.TimerScheduler
	cancel  scheduler.CancelFunc
	timerAt time.Time
}

// errStopReplay ends a replay early at a gap in the log.
var errStopReplay = errors.New("actors: stop replay")

// expireTick is the timer's message: run Expire now.
type expireTick struct{}

// snapshotSaved reports the end of a snapshot save.
type snapshotSaved struct {
	seq uint64
	err error
}

func (a *eventActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.start(ctx)
	case *request:
		a.handle(ctx, m, ctx.Sender())
	case *synced:
		if err := a.com.done(ctx, m); err != nil {
			a.crash(ctx, err)
		}
	case *expireTick:
		a.cancel, a.timerAt = nil, time.Time{}
		a.handle(ctx, &request{cmd: event.Expire{Now: a.sys.cfg.Now()}}, nil)
	case *snapshotSaved:
		a.snapping = false
		if m.err != nil {
			a.sys.cfg.Logger.Error("snapshot failed", "event", a.id, "seq", m.seq, "err", m.err)
		}
	case *actor.ReceiveTimeout:
		if a.com.idle() && !a.snapping && a.sys.retire(a.id, ctx.Self()) {
			ctx.Stop(ctx.Self())
		}
	case *actor.Stopping:
		if a.cancel != nil {
			a.cancel()
		}
	}
}

func (a *eventActor) start(ctx actor.Context) {
	self := ctx.Self()
	a.self = self
	root := a.sys.as.Root
	a.com = committer{
		store:  a.sys.store,
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
	if a.sys.cfg.IdleTimeout > 0 {
		ctx.SetReceiveTimeout(a.sys.cfg.IdleTimeout)
	}
	// Holds that lapsed while the event was not loaded lapse now.
	a.handle(ctx, &request{cmd: event.Expire{Now: a.sys.cfg.Now()}}, nil)
}

// load restores the newest snapshot and replays the log after it.
func (a *eventActor) load() error {
	seq, snap, ok, err := a.sys.snaps.LoadNewest(a.id)
	if err != nil {
		return fmt.Errorf("actors: load snapshot of %s: %w", a.id, err)
	}
	if ok {
		st, err := event.UnmarshalState(snap)
		if err != nil {
			return fmt.Errorf("actors: decode snapshot %d of %s: %w", seq, a.id, err)
		}
		a.m.Restore(st)
	}
	// The log must continue right after the snapshot: a gap would be
	// silent data loss, so it is an error instead.
	if first, err := a.sys.store.FirstSeq(a.id); err != nil {
		return fmt.Errorf("actors: first seq of %s: %w", a.id, err)
	} else if first != 0 && first > seq+1 {
		return fmt.Errorf("actors: log of %s starts at %d, after snapshot %d: records are missing", a.id, first, seq)
	}
	last := seq
	gap := false
	err = a.sys.store.Replay(a.id, seq, func(s uint64, rec []byte) error {
		if s != last+1 {
			// Answers are released in log order, so nothing after a gap
			// was ever acknowledged: stop here and drop the rest below.
			gap = true
			return errStopReplay
		}
		ch, err := event.UnmarshalChange(rec)
		if err != nil {
			return fmt.Errorf("record %d: %w", s, err)
		}
		a.m.Apply(ch)
		last = s
		a.sinceSnap++
		return nil
	})
	if err != nil && !errors.Is(err, errStopReplay) {
		return fmt.Errorf("actors: replay %s: %w", a.id, err)
	}
	if gap {
		a.sys.cfg.Logger.Warn("log gap: dropping unacknowledged records", "event", a.id, "after", last)
		if err := a.sys.store.TruncateAfter(a.id, last); err != nil {
			return fmt.Errorf("actors: truncate %s after %d: %w", a.id, last, err)
		}
	}
	a.com.seq = last
	return nil
}

func (a *eventActor) handle(ctx actor.Context, req *request, to *actor.PID) {
	if a.loadErr != nil {
		if to != nil {
			ctx.Send(to, &response{err: fmt.Errorf("%w: %v", ErrUnavailable, a.loadErr)})
		}
		return
	}
	now := a.sys.cfg.Now()
	if e, ok := req.cmd.(event.Expire); ok {
		now = e.Now
	}
	res, changes, err := a.m.Decide(now, req.cmd)
	if err != nil {
		a.com.reply(ctx, to, &response{err: err})
		return
	}
	for _, ch := range changes {
		a.m.Apply(ch)
		rec, err := event.MarshalChange(ch)
		if err != nil {
			// Decide produced a change that cannot be encoded: a bug.
			panic(fmt.Sprintf("actors: encode %s of %s: %v", ch.ChangeKind(), a.id, err))
		}
		seq := a.com.append(rec)
		if t, ok := ch.(event.TicketIssued); ok {
			a.outboxTickets(now, seq, t)
		}
		a.hookChange(now, seq, ch)
	}
	if a.outboxDirty && a.sys.cfg.OnOutbox != nil {
		a.outboxDirty = false
		a.com.afterDurable(a.sys.cfg.OnOutbox)
	}
	if req.create != "" && len(changes) > 0 {
		a.com.put([]byte(indexPrefix+a.id), []byte(req.create))
	}
	a.sinceSnap += len(changes)
	a.maybeSnapshot()
	a.com.reply(ctx, to, &response{result: res})
	a.com.kick()
	a.arm()
}

// maybeSnapshot encodes the state once enough changes have accumulated and
// saves it once the records it covers are durable.
func (a *eventActor) maybeSnapshot() {
	if a.snapping || a.sinceSnap < a.sys.cfg.SnapshotEvery {
		return
	}
	state, err := event.MarshalState(a.m.State())
	if err != nil {
		a.sys.cfg.Logger.Error("snapshot encode failed", "event", a.id, "err", err)
		return
	}
	seq := a.com.seq
	a.snapping = true
	a.sinceSnap = 0
	self := a.com.post
	a.com.afterDurable(func() {
		a.sys.wg.Add(1)
		go func() {
			defer a.sys.wg.Done()
			// The log is trimmed only through the oldest snapshot kept, so
			// an unreadable newest snapshot still has an older one and the
			// records after it.
			_, err := a.sys.snaps.SaveAndTrim(a.id, seq, state)
			if err == nil {
				a.sys.metrics.Snapshots.Add(1)
			}
			self(&snapshotSaved{seq: seq, err: err})
		}()
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
		return &response{err: fmt.Errorf("%w: %v", ErrUnavailable, err)}
	})
	a.sys.forget(a.id, ctx.Self())
	ctx.Stop(ctx.Self())
}
