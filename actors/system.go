package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"ticketd/actors/doorwatch"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"ticketd/actors/index"
	"ticketd/actors/mailbox"
	"ticketd/ask"
	"ticketd/directory"
	"ticketd/event"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// Config configures the actor shell.
type Config struct {
	// Event is handed to every event machine.
	Event event.Config
	// SnapshotEvery is the least number of changes between snapshots of an
	// event; for a big event the interval grows with the event (see
	// snapshotGrowthDiv). Snapshots are built off the actor.
	SnapshotEvery int
	// SnapshotTailMax, when above 0, bounds the changes after an event's
	// last snapshot before the next is due, whatever the event's size
	// (never below SnapshotEvery): the records a recovery replays after
	// the snapshot. 0 lets the interval grow with the event (a single
	// node, whose restart replays from its own disk); cluster mode bounds
	// it, since a failover's replay comes over the network while the
	// event's writes wait.
	SnapshotTailMax int
	// LoadGCPercent is the GOGC in force while an event actor loads its
	// state (0: 1600; below 0: GOGC is left alone).
	LoadGCPercent int
	// IdleTimeout passivates an event actor that received nothing for this
	// long; 0 keeps actors active until shutdown.
	IdleTimeout time.Duration
	// AskTimeout bounds how long a caller waits for an actor's answer.
	AskTimeout time.Duration
	// Log is the event log (nil: the Pebble store's own, Store.Log). The
	// directory and the indexes stay in the store either way.
	Log persistence.Log
	// Snapshots keeps event snapshots (nil: the snapshots.Store handed to
	// Open). It must trim Log, not the store, when they differ.
	Snapshots SnapshotStore
	// Forward, when set, sends a request for an event this node does not
	// own to the event's owner and answers what the owner answered (ok
	// true), or answers ok false when this node owns the event (cluster
	// mode; nil: every event is local).
	Forward func(ctx context.Context, eventID string, cmd event.Command, createUnit string) (res any, err error, ok bool)
	// Ready, when set, says whether this node can serve writes besides its
	// store (cluster mode: the node has joined); nil: ready.
	Ready func() error
	// Directory, when set, is the directory's log shared by every node
	// (cluster mode; nil: the directory stream of the store).
	Directory SharedLog
	// Index, when set, keeps the event index on every node (cluster
	// mode; nil: the store's "ev/" and "evpub/" entries).
	Index SharedIndex
	// CloseTimeout bounds Close (0: 3 s): an actor stuck in a store call
	// that never returns (a wedged disk) must not hold the shutdown.
	CloseTimeout time.Duration
	// MailboxSize bounds the requests on their way to one event actor;
	// beyond it Ask answers ErrBusy at once. (The mailbox itself is
	// unbounded: a bounded protoactor mailbox preallocates its whole ring,
	// megabytes per actor.)
	MailboxSize int
	Logger      *slog.Logger
	Now         func() time.Time
	// IDs overrides the random id source (tests).
	IDs event.IDs
	// Owed carries out what changes owe the world (the core's Effects):
	// each writes its entries into the batch that logs the change. app.Main
	// wires mail, webhooks and payments; none: nothing is owed.
	Owed []OwedWork
	// Links, if set, mails console links (invitations, reset links) in
	// the batch of the directory change that makes them; nil: links are
	// made without mail.
	Links LinkMail
	// OnOwed, if set, is called (from an actor; it must not block) when
	// owed work that asked for a wake (OwedWork.Owe, Links) is durable.
	OnOwed func()
	// OnPassChange, if set, is called (from an actor; it must not block)
	// once a change that alters wallet passes is durable: registrations
	// regIDs, or with all every pass of the event (event.PassChanged).
	OnPassChange func(eventID string, regIDs []string, all bool)
}

// Validate fills defaults and checks the configuration.
func (c *Config) Validate() error {
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = 50_000
	}
	if c.SnapshotEvery < 0 {
		return errors.New("actors: snapshot interval must be positive")
	}
	if c.AskTimeout == 0 {
		c.AskTimeout = 10 * time.Second
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = 3 * time.Second
	}
	if c.MailboxSize == 0 {
		c.MailboxSize = 100_000
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.IDs == nil {
		c.IDs = randomIDs{}
	}
	if c.Event.OrderHold <= 0 || c.Event.CheckoutSessionTTL <= 0 {
		return errors.New("actors: order hold and checkout session ttl must be positive")
	}
	return nil
}

// SnapshotStore keeps the snapshots of event states: *snapshots.Store on
// Pebble, or a replicated one in cluster mode. SaveAndTrim trims the event's
// log only through the older snapshot kept.
type SnapshotStore interface {
	LoadNewestWith(stream string, readers int) (seq uint64, state []byte, ok bool, err error)
	SaveAndTrim(stream string, seq uint64, state []byte) (trimmedThrough uint64, err error)
}

// PacedSnapshotStore is a SnapshotStore that can read a snapshot as
// background work: pace is called between its parts (cluster mode's
// object store, read over the network: a preload's or the snapshot
// worker's read is paced like the rest of their work).
type PacedSnapshotStore interface {
	SnapshotStore
	LoadNewestPaced(stream string, pace func()) (seq uint64, state []byte, ok bool, err error)
}

// System owns the actor system, the event registry and the directory.
type System struct {
	cfg   Config
	as    *actor.ActorSystem
	store *persistence.Store
	snaps *snapshots.Store
	wg    sync.WaitGroup // syncs and the snapshot worker
	// watch: the door's watchers, devices seen and pass stamps (doorwatch).
	watch doorwatch.Watch
	disp  *mailbox.Dispatcher // runs the event actors' mailboxes
	reply *mailbox.ReplyPool  // answer slots of Ask

	asyncBoxes asyncBoxPool // answer slots of ServeAsync
	asyncs     asyncAsks    // its asks waiting for their answers

	log  persistence.Log // the event log: cfg.Log or store.Log()
	snap SnapshotStore   // event snapshots: cfg.Snapshots or snaps

	snapper  snapshotter // builds and saves snapshots off the actors
	loadGC   loadGC      // raises GOGC while states load
	preloads preloads    // states built ahead of a planned move (Preload)

	mu      sync.Mutex
	slots   map[string]*slot
	closing bool
	spawns  uint64 // numbers actor names: a retiring actor may still hold its old name

	idx *index.Index // the event index

	// sales are the events' published sale views (saleview.go): event id
	// -> *saleSlot.
	sales sync.Map
	// passes are the lists of registrations the event actors that took
	// door batches hand out (passes.go): event id -> *passSlot.
	passes sync.Map
	door   doorStats

	dirPID  *actor.PID
	dirView atomic.Pointer[directory.State]
	// Cluster mode: whether the shared directory log was read once, and
	// the reads SyncDirectory shares.
	dirRead    atomic.Bool
	dirReadAt  atomic.Pointer[time.Time] // when the last read that succeeded started
	dirNoticed atomic.Bool               // a DirectoryChanged notice waits in the mailbox
	dirSyncs   coalescer

	metrics Metrics
	// asks counts the requests sent to event actors: the snapshot worker
	// paces itself while it moves (see pacer).
	asks atomic.Uint64
}

// slot is an event actor in the registry, and the asks holding it (refs).
// A slot taken out of the registry while asks hold it (gone: evicted, or
// the actor failed) keeps its actor until the last of them is answered:
// protoactor drops the messages left in a stopped actor's mailbox without
// a word, so a request sent before the stop would wait its whole timeout.
type slot struct {
	pid      *actor.PID
	refs     int
	gone     bool
	stopped  bool
	loaded   bool          // its load (and claim) succeeded: see EvictLoaded
	loadedAt time.Time     // when its load ended
	done     chan struct{} // closed once the actor has stopped
}

// Metrics are counters the /metrics endpoint exposes.
type Metrics struct {
	Activations  atomic.Int64
	Passivations atomic.Int64
	Snapshots    atomic.Int64
	Active       atomic.Int64
	// SnapshotsPending counts the snapshots asked for and not yet saved
	// (queued or being built): background work a measurement can wait out.
	SnapshotsPending atomic.Int64
}

// Mailbox dispatch: messages one actor handles before its worker yields,
// and the long-lived workers kept (see dispatcher).
const (
	dispatchThroughput = 300
	dispatchWorkers    = 64
	// replyPoolSize bounds the idle answer slots kept for Ask: about the
	// requests in flight at once.
	replyPoolSize = 4096
)

// Open starts the actor system over store: it loads the directory and the
// event index. Event actors start lazily on first use.
func Open(cfg Config, store *persistence.Store, snaps *snapshots.Store) (*System, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &System{
		cfg:   cfg,
		store: store,
		snaps: snaps,
		log:   cfg.Log,
		snap:  cfg.Snapshots,
		slots: map[string]*slot{},
		disp:  mailbox.NewDispatcher(dispatchThroughput, dispatchWorkers),
		idx:   index.New(),
	}
	s.watch.Forwarded = cfg.Forward != nil
	if s.log == nil {
		s.log = store.Log()
	}
	s.dirSyncs.fn = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.AskTimeout)
		defer cancel()
		_, err := s.askDirectory(ctx, &dirSync{})
		return err
	}
	if s.snap == nil {
		s.snap = snaps
	}
	s.as = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return cfg.Logger.With("component", "protoactor")
	}))
	s.reply = mailbox.NewReplyPool(s.as, replyPoolSize)
	if err := s.idx.Load(store); err != nil {
		return nil, err
	}
	if err := s.startDirectory(); err != nil {
		return nil, err
	}
	if r, ok := s.snap.(SnapshotRequester); ok {
		r.RequestSnapshotsWith(s.WantSnapshot) // see snapshotter.go
	}
	return s, nil
}

// PublishedCandidates returns, oldest first, the unit's events that may be
// published (see package actors/index) and were created before the event
// after (all of them for ""). ok is false when after is not an event of
// the unit. The slice is shared: do not modify it.
func (s *System) PublishedCandidates(unitID, after string) (ids []string, ok bool) {
	return s.idx.Candidates(unitID, after)
}

// EventUnit returns the business unit that owns eventID.
func (s *System) EventUnit(eventID string) (string, bool) {
	u, ok := s.idx.Unit(eventID)
	if !ok {
		return s.sharedEventUnit(eventID)
	}
	return u, ok
}

// UnitEvents returns the unit's event ids, oldest first.
func (s *System) UnitEvents(unitID string) []string {
	return s.idx.Events(unitID)
}

// Metrics returns the shell's counters.
func (s *System) Metrics() *Metrics { return &s.metrics }

// Store returns the persistence store (for metrics).
func (s *System) Store() *persistence.Store { return s.store }

// request is the message an event actor handles.
type request struct {
	cmd    event.Command
	create string        // unit id when cmd creates the event
	rec    *ask.Recorder // the request's own entry with its changes (WithRecorder)
}

// response is an event actor's answer.
type response struct {
	result any
	err    error
}

// Ask sends cmd to the event's actor, activating it if needed, and waits
// for the answer, which is released only once durable. The caller must
// have checked that the event exists and is visible to its key.
func (s *System) Ask(ctx context.Context, eventID string, cmd event.Command) (any, error) {
	return s.ask(ctx, eventID, &request{cmd: cmd, rec: ask.RecorderOf(ctx)})
}

// Ask is System.Ask with the command's own result type: the answer of a
// command declared as an event.Op[R] is an R. An answer of another type
// (an unregistered result, a bug of the core) is ErrUnavailable, never a
// panic of the caller.
func Ask[R any](ctx context.Context, s *System, eventID string, cmd event.Op[R]) (R, error) {
	res, err := s.Ask(ctx, eventID, cmd)
	return resultAs[R](eventID, res, err)
}

func resultAs[R any](eventID string, res any, err error) (R, error) {
	if err != nil {
		var zero R
		return zero, err
	}
	v, ok := res.(R)
	if !ok {
		return v, fmt.Errorf("%w: event %s answered %T, not %T", ask.ErrUnavailable, eventID, res, v)
	}
	return v, nil
}

// CreateEvent creates a new event owned by unitID: cmd must be the core's
// create command for eventID (see NewEventID).
func (s *System) CreateEvent(ctx context.Context, unitID, eventID string, cmd event.Command) (any, error) {
	res, err := s.ask(ctx, eventID, &request{cmd: cmd, create: unitID, rec: ask.RecorderOf(ctx)})
	if _, made := ask.IsReplayed(err); made {
		// Created before, its answer lost: perhaps before the event index
		// had it too (the put is idempotent).
		if s.cfg.Index != nil {
			if ierr := s.cfg.Index.CreateEvent(ctx, eventID, unitID); ierr != nil {
				return nil, fmt.Errorf("%w: event index: %w", ask.ErrUnavailable, ierr)
			}
		}
		s.idx.Add(eventID, unitID)
		return nil, err
	}
	if err == nil && s.cfg.Index != nil {
		if err := s.cfg.Index.CreateEvent(ctx, eventID, unitID); err != nil {
			return nil, fmt.Errorf("%w: event index: %w", ask.ErrUnavailable, err)
		}
	}
	if err == nil {
		s.idx.Add(eventID, unitID)
	}
	return res, err
}

// NewEventID returns a fresh event id.
// OrderHold is how long a placed order holds its places.
func (s *System) OrderHold() time.Duration { return s.cfg.Event.OrderHold }

func (s *System) NewEventID() string { return s.cfg.IDs.New("evt_") }

func (s *System) ask(ctx context.Context, eventID string, req *request) (any, error) {
	if s.cfg.Forward == nil {
		return s.askLocal(ctx, eventID, req)
	}
	for try := 1; ; try++ {
		if res, err, ok := s.cfg.Forward(ctx, eventID, req.cmd, req.create); ok {
			return res, err
		}
		res, err := s.askLocal(ctx, eventID, req)
		// Fenced: another node claimed the event (its ownership moved), and
		// nothing of this request was written: its new owner is asked.
		if !errors.Is(err, persistence.ErrFenced) || try == maxFencedTries || ctx.Err() != nil {
			return res, err
		}
		time.Sleep(time.Duration(try) * 100 * time.Millisecond)
	}
}

// maxFencedTries bounds the tries of a request refused by the fence.
const maxFencedTries = 3

// Serve handles a request forwarded by another node for an event this node
// owns: System.Ask (or CreateEvent, with createUnit) without forwarding
// again, so a request is forwarded at most once; the log's fence keeps a
// node that no longer owns the event from writing.
func (s *System) Serve(ctx context.Context, eventID string, cmd event.Command, createUnit string) (any, error) {
	res, err := s.askLocal(ctx, eventID, &request{cmd: cmd, create: createUnit})
	if err == nil && createUnit != "" {
		s.idx.Add(eventID, createUnit)
	}
	return res, err
}

// Ready reports why the System cannot serve writes, nil when it can.
func (s *System) Ready() error {
	if err := s.store.Err(); err != nil {
		return err
	}
	if s.cfg.Ready != nil {
		return s.cfg.Ready()
	}
	return nil
}

func (s *System) askLocal(ctx context.Context, eventID string, req *request) (any, error) {
	if err := s.store.Err(); err != nil {
		// Nothing can become durable, and what the actors hold may not
		// be: answer at once rather than activate an actor to fail.
		return nil, fmt.Errorf("%w: event %s: %w", ask.ErrUnavailable, eventID, err)
	}
	req = s.resolvePasses(eventID, req)
	for range maxActorTries {
		sl, err := s.acquire(eventID)
		if err != nil {
			return nil, err
		}
		timeout := s.cfg.AskTimeout
		if d, ok := ctx.Deadline(); ok {
			timeout = time.Until(d)
		}
		s.asks.Add(1)
		res, err := s.reply.Request(ctx, sl.pid, req, timeout, s.store.Failed())
		s.release(eventID, sl)
		if errors.Is(err, actor.ErrDeadLetter) {
			continue // the actor stopped (storage failure); activate afresh
		}
		if err != nil {
			return nil, s.unavailable("event "+eventID, err)
		}
		res, err, again := answerOf(eventID, res)
		if again {
			continue
		}
		return res, err
	}
	return nil, errKeepsStopping(eventID)
}

// answerOf reads an event actor's answer m to a request: its result and
// error, or again when the request must go to a fresh actor (the one
// asked had stopped, a dead letter, or had left the registry before
// handling it, errRetired).
func answerOf(eventID string, m any) (res any, err error, again bool) {
	if _, dead := m.(*actor.DeadLetterResponse); dead {
		return nil, nil, true
	}
	r, ok := m.(*response)
	if !ok {
		return nil, fmt.Errorf("%w: event %s answered %T", ask.ErrUnavailable, eventID, m), false
	}
	if r.err == errRetired {
		return nil, nil, true
	}
	return r.result, r.err, false
}

// maxActorTries bounds the actors a request is sent to when each it meets
// has stopped.
const maxActorTries = 3

// errKeepsStopping answers a request whose tries all met a stopped actor.
func errKeepsStopping(eventID string) error {
	return fmt.Errorf("%w: event %s keeps stopping", ask.ErrUnavailable, eventID)
}

func (s *System) acquire(eventID string) (*slot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, fmt.Errorf("%w: shutting down", ask.ErrUnavailable)
	}
	sl, ok := s.slots[eventID]
	if !ok {
		sl = &slot{done: make(chan struct{})}
		props := actor.PropsFromProducer(func() actor.Actor {
			return &eventActor{sys: s, id: eventID, slot: sl}
		}, actor.WithDispatcher(s.disp))
		// A passivated actor leaves the registry before it has stopped, so
		// the new incarnation gets a name of its own. The old one holds no
		// request and nothing unsynced (see retire), so the two never
		// overlap in effect.
		s.spawns++
		pid, err := s.as.Root.SpawnNamed(props, fmt.Sprintf("event-%s-%d", eventID, s.spawns))
		if err != nil {
			return nil, fmt.Errorf("%w: spawn event %s: %v", ask.ErrUnavailable, eventID, err)
		}
		sl.pid = pid
		s.slots[eventID] = sl
		s.metrics.Activations.Add(1)
		s.metrics.Active.Add(1)
	}
	if sl.refs >= s.cfg.MailboxSize {
		return nil, ask.ErrBusy
	}
	sl.refs++
	return sl, nil
}

func (s *System) release(eventID string, sl *slot) {
	s.mu.Lock()
	sl.refs--
	stop := sl.gone && sl.refs == 0 && !sl.stopped
	sl.stopped = sl.stopped || stop
	s.mu.Unlock()
	if stop {
		s.as.Root.Stop(sl.pid)
	}
}

// retire removes an idle actor from the registry if no request is on its
// way to it; the actor stops itself only when this answers true.
func (s *System) retire(eventID string, pid *actor.PID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, ok := s.slots[eventID]
	if !ok || sl.pid != pid || sl.refs > 0 {
		return false
	}
	delete(s.slots, eventID)
	s.metrics.Passivations.Add(1)
	s.metrics.Active.Add(-1)
	return true
}

// detach takes sl's actor out of the registry (after a failure, or once
// an evicted one's answers are out) and stops it once no ask holds it: the
// actor answers errRetired meanwhile, and the ask tries a fresh one.
func (s *System) detach(eventID string, sl *slot) {
	s.mu.Lock()
	if cur, ok := s.slots[eventID]; ok && cur == sl {
		delete(s.slots, eventID)
		s.metrics.Active.Add(-1)
	}
	sl.gone = true
	stop := sl.refs == 0 && !sl.stopped
	sl.stopped = sl.stopped || stop
	s.mu.Unlock()
	if stop {
		s.as.Root.Stop(sl.pid)
	}
}

// Evict stops the actors of the events match selects, without waiting for
// them: in cluster mode, when the ownership of events moves, a copy of
// their state here may be stale (the other owner wrote meanwhile), so the
// next request activates them afresh from the log. An evicted actor stops
// once what it appended is durable, so its callers get their answers; a
// new incarnation may meanwhile load, and the log's fence refuses
// whichever of the two writes second. It answers how many were evicted.
func (s *System) Evict(match func(eventID string) bool) int {
	return s.evict(match, false, time.Time{})
}

// EvictLoaded is Evict of the actors that have loaded their state: one
// still loading is left to finish. In cluster mode a node that gains an
// event's shard evicts what it may hold from an earlier ownership, but an
// actor whose load runs (spawned by a request that reached the new owner
// before it saw its gain) has no state yet, and its load ends with a
// claim the log refuses unless it replayed every record: evicting it
// made a second actor load the same event beside it (a planned move of a
// 96k-record event: two loads of 14 and 18 s, the slower one's claim
// refused).
//
// Only the actors that loaded before before (zero: all) go: the node
// gaining a shard passes the last moment it saw itself not leading it,
// since an actor that loaded after that loaded for the gain (its claim
// came after every record of the earlier owner, whose next write it
// fences): evicting it made a preloaded event load a second time from its
// snapshot (see cluster/preload.go).
func (s *System) EvictLoaded(match func(eventID string) bool, before time.Time) int {
	return s.evict(match, true, before)
}

func (s *System) evict(match func(eventID string) bool, loadedOnly bool, before time.Time) int {
	s.mu.Lock()
	var pids []*actor.PID
	for id, sl := range s.slots {
		if match(id) && (!loadedOnly || sl.loaded && (before.IsZero() || sl.loadedAt.Before(before))) {
			pids = append(pids, sl.pid)
			delete(s.slots, id)
			sl.gone = true
			s.metrics.Active.Add(-1)
		}
	}
	s.mu.Unlock()
	for _, pid := range pids {
		s.as.Root.Send(pid, &evict{})
	}
	return len(pids)
}

// EvictWait is Evict, then waits until the evicted actors have stopped
// (their answers out) or ctx ends: a node handing events over to another
// lets their commits in flight end before the other claims them.
func (s *System) EvictWait(ctx context.Context, match func(eventID string) bool) int {
	s.mu.Lock()
	var dones []chan struct{}
	for id, sl := range s.slots {
		if match(id) {
			dones = append(dones, sl.done)
		}
	}
	s.mu.Unlock()
	n := s.Evict(match)
	for _, d := range dones {
		select {
		case <-d:
		case <-ctx.Done():
			return n
		}
	}
	return n
}

// ActiveEvents returns the number of live event actors.
func (s *System) ActiveEvents() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.slots)
}

// unavailable wraps a failed ask: with the store's fault when there is
// one, so the caller can tell a storage fault from a slow actor.
func (s *System) unavailable(what string, err error) error {
	if f := s.store.Err(); f != nil {
		return fmt.Errorf("%w: %s: %w", ask.ErrUnavailable, what, f)
	}
	return fmt.Errorf("%w: %s: %v", ask.ErrUnavailable, what, err)
}

// Close stops every actor after it has handled what is in its mailbox,
// waits for syncs and snapshot saves in flight, and shuts the actor system
// down, all within Config.CloseTimeout: an actor or a sync stuck in the
// store (a disk that stopped answering) is left behind, with an error,
// for the process exit to end. The store stays open: its owner closes it.
func (s *System) Close() error {
	s.mu.Lock()
	s.closing = true
	pids := make([]*actor.PID, 0, len(s.slots)+1)
	for _, sl := range s.slots {
		pids = append(pids, sl.pid)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// All at once: the actors drain their mailboxes in parallel.
		futs := make([]actor.Future, 0, len(pids))
		for _, pid := range pids {
			futs = append(futs, s.as.Root.PoisonFuture(pid))
		}
		for _, f := range futs {
			_ = f.Wait()
		}
		if s.dirPID != nil {
			_ = s.as.Root.PoisonFuture(s.dirPID).Wait()
		}
		s.wg.Wait()
	}()
	// After a storage fault the mailboxes drain at once (every answer is
	// a refusal), and what is still busy is stuck in the store for good.
	timeout := s.cfg.CloseTimeout
	if s.store.Err() != nil {
		timeout = min(timeout, 500*time.Millisecond)
	}
	var err error
	select {
	case <-done:
	case <-time.After(timeout):
		err = fmt.Errorf("actors: close: actors or syncs still busy after %s", timeout)
		if f := s.store.Err(); f != nil {
			err = fmt.Errorf("%w: %w", err, f)
		}
		s.cfg.Logger.Error("actors: close timed out; leaving stuck actors to the process exit", "err", err)
	}
	s.as.Shutdown()
	s.disp.Close()
	return err
}

// Watch is this node's memory of the door's watchers (package doorwatch):
// the event actors wake it once their changes are durable.
func (s *System) Watch() *doorwatch.Watch { return &s.watch }
