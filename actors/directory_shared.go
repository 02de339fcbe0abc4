package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"ticketd/ask"
	"ticketd/directory"
	"ticketd/persistence"
)

// SharedLog is the directory's log in cluster mode: one log that the
// directory actor of every node reads and appends to, so units, keys and
// members are the same on every node.
//
// Every node may write: a node decides a change against its state read
// from the log and appends it only if the log still ends where that state
// does (optimistic concurrency, the log's own compare-and-set). Directory
// writes are rare (a key, a unit, a member), so a conflict, which costs a
// read and a new decision, is rare too, and no node needs to be elected
// or asked: a write succeeds on any node that reaches a majority. The
// state machine and its read views are the Pebble mode's.
//
// The log is bounded by checkpoints: the directory's whole state at a
// record (directory.State.MarshalSnapshot), stored by the node that
// appended once the log after the last one is long enough, after which
// the log may drop the records before the previous checkpoint. A reader
// starts from the newest checkpoint.
type SharedLog interface {
	// Read calls fn for each record after the last one read (or
	// appended) through this log, in order. At the first read, and when
	// the records after the last one read are gone, it calls restore
	// first with a checkpoint (the state at record seq) and then fn from
	// seq+1; restore replaces the reader's state.
	Read(ctx context.Context, restore func(seq uint64, state []byte) error, fn func(seq uint64, record []byte) error) error
	// Append appends records as seqs first, first+1... with the index
	// entries they owe, only if the log's last record is first-1: else
	// it answers an error wrapping persistence.ErrFenced and appends
	// nothing. Any other error leaves the outcome unknown (a later Read
	// tells).
	Append(ctx context.Context, first uint64, records [][]byte, index []persistence.IndexEntry) error
	// CheckpointDue reports whether a checkpoint is due.
	CheckpointDue() bool
	// Checkpoint stores state as the checkpoint at seq, the last record
	// read or appended, only if the log still ends there; else it
	// answers an error wrapping persistence.ErrFenced and stores nothing.
	Checkpoint(ctx context.Context, seq uint64, state []byte) error
}

// KeyedLog is a SharedLog that keeps a keyed write's Idempotency-Key
// record with the write (decisions §20): AppendKeyed appends as Append
// does and stores key = value (the record, kept until the expiry it
// holds) in the same atomic write, all or nothing; Keyed reads a record
// so stored, from a majority (a retry on any node finds it).
type KeyedLog interface {
	AppendKeyed(ctx context.Context, first uint64, records [][]byte, index []persistence.IndexEntry, key, value []byte) error
	Keyed(ctx context.Context, key []byte) (value []byte, ok bool, err error)
}

// sharedAttempts bounds the decisions of one directory write that keep
// meeting another node's append.
const sharedAttempts = 8

// sharedTimeout bounds one read or append of the shared log.
const sharedTimeout = 8 * time.Second

// DirectoryStaleAfter bounds how old the directory's view may be when
// it accepts a key in cluster mode: the view is as of the start of the
// last read of the shared log that succeeded (every second when all is
// well: the cluster's poll, and at once on another node's notice). Past
// it, a key is checked only after a read (DirectoryStale), so a node cut
// off from the log stops accepting a key revoked elsewhere within this
// bound plus one read's wait, and answers "cannot tell" instead.
const DirectoryStaleAfter = 5 * time.Second

// dirSync asks the directory actor to read what other nodes appended.
type dirSync struct{}

// startShared starts the directory actor of cluster mode: empty, it reads
// the shared log at once and on every dirSync (System.DirectoryChanged,
// SyncDirectory).
func (s *System) startShared() error {
	st := directory.New()
	s.dirView.Store(st.Clone())
	props := actor.PropsFromProducer(func() actor.Actor {
		return &dirActor{sys: s, st: st, shared: s.cfg.Directory}
	})
	pid, err := s.as.Root.SpawnNamed(props, "directory")
	if err != nil {
		return fmt.Errorf("actors: spawn directory: %w", err)
	}
	s.dirPID = pid
	s.as.Root.Send(pid, &dirSync{})
	return nil
}

// catchUp applies what the shared log holds past the actor's state and
// publishes the view when anything changed.
func (a *dirActor) catchUp() error {
	start := a.sys.cfg.Now()
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	n := 0
	restore := func(seq uint64, state []byte) error {
		st, err := directory.UnmarshalSnapshot(state)
		if err != nil {
			return fmt.Errorf("actors: directory checkpoint at %d: %w", seq, err)
		}
		a.st, a.seq = st, seq
		n++
		return nil
	}
	err := a.shared.Read(ctx, restore, func(seq uint64, rec []byte) error {
		if seq != a.seq+1 {
			return fmt.Errorf("actors: directory log: record %d after %d", seq, a.seq)
		}
		ch, err := directory.Unmarshal(rec)
		if err != nil {
			return fmt.Errorf("actors: directory record %d: %w", seq, err)
		}
		a.st.Apply(ch)
		a.seq = seq
		n++
		return nil
	})
	if n > 0 {
		a.sys.dirView.Store(a.st.Clone())
	}
	if err == nil {
		a.sys.dirReadAt.Store(&start)
		a.sys.dirRead.Store(true)
	}
	return err
}

// decideShared is decideOwing in cluster mode: read the log, decide,
// append if the log has not moved meanwhile, else read and decide again.
// The state changes only by what the log holds, so an append whose outcome
// is unknown (a timeout) is applied by the next read if it was stored.
//
// A keyed write (rec) on a KeyedLog appends its Idempotency-Key record
// with its change, in one atomic write (decisions §20), and a key claimed
// before (rec.Look) is looked for first: found, the write was made before
// and its record answers (ask.Replayed).
func (a *dirActor) decideShared(ctx actor.Context, rec *ask.Recorder, fn func() (any, directory.Change, error), owe func(seq uint64)) {
	kl, _ := a.shared.(KeyedLog)
	if kl == nil || rec == nil || rec.Key == nil || rec.Value == nil {
		rec = nil
	}
	if rec != nil && rec.Look {
		if err := a.keyed(kl, rec); err != nil {
			ctx.Respond(&response{err: err})
			return
		}
	}
	for attempt := 1; ; attempt++ {
		if err := a.catchUp(); err != nil {
			ctx.Respond(&response{err: fmt.Errorf("%w: directory: %w", ask.ErrUnavailable, err)})
			return
		}
		res, ch, err := fn()
		if err != nil || ch == nil {
			ctx.Respond(&response{result: resolved(a.st, res, ch), err: err})
			return
		}
		enc, err := directory.Marshal(ch)
		if err != nil {
			panic(fmt.Sprintf("actors: encode directory change: %v", err))
		}
		seq := a.seq + 1
		a.pending = a.pending[:0]
		if owe != nil {
			owe(seq)
		}
		// A keyed write's record is made of the result after the change:
		// the change is applied before the append, and undone when the
		// append is refused or its outcome unknown.
		var prev *directory.State
		var key, value []byte
		if rec != nil {
			prev = a.st.Clone()
			a.st.Apply(ch)
			res = resolved(a.st, res, ch)
			if value = rec.Value(res); value != nil {
				key = rec.Key
			}
		}
		actx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		if key != nil {
			err = kl.AppendKeyed(actx, seq, [][]byte{enc}, a.pending, key, value)
		} else {
			err = a.shared.Append(actx, seq, [][]byte{enc}, a.pending)
		}
		cancel()
		if err != nil && prev != nil {
			a.st = prev
			if key != nil && errors.Is(err, persistence.ErrFenced) && rec.Release != nil {
				rec.Release() // nothing committed: the next decision records
			}
		}
		if errors.Is(err, persistence.ErrFenced) && attempt < sharedAttempts {
			continue // another node appended first: decide again on its change
		}
		if err != nil {
			ctx.Respond(&response{err: fmt.Errorf("%w: directory: %w", ask.ErrUnavailable, err)})
			return
		}
		if prev == nil {
			a.st.Apply(ch)
			res = resolved(a.st, res, ch)
		}
		a.seq = seq
		a.sys.dirView.Store(a.st.Clone())
		if len(a.pending) > 0 && a.sys.cfg.OnOwed != nil {
			a.sys.cfg.OnOwed()
		}
		ctx.Respond(&response{result: res})
		a.checkpoint()
		return
	}
}

// keyed looks for rec's record among the shared log's: found and live,
// it answers ask.Replayed with it; a log that cannot be read answers
// ask.ErrUnavailable (whether the write was made cannot be told); nil
// when there is none.
func (a *dirActor) keyed(kl KeyedLog, rec *ask.Recorder) error {
	rctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	v, ok, err := kl.Keyed(rctx, rec.Key)
	switch {
	case err != nil:
		return fmt.Errorf("%w: directory: idempotency record: %w", ask.ErrUnavailable, err)
	case !ok || (rec.Live != nil && !rec.Live(v)):
		return nil
	}
	return &ask.Replayed{Value: v}
}

// checkpoint stores the state as the shared log's checkpoint when one is
// due: written from the state at the last record appended, and fenced on
// it, so it is the state at its seq. A refused or failed one is tried
// again after the next append.
func (a *dirActor) checkpoint() {
	if !a.shared.CheckpointDue() {
		return
	}
	state, err := a.st.MarshalSnapshot()
	if err != nil {
		a.sys.cfg.Logger.Error("directory: encode checkpoint", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	err = a.shared.Checkpoint(ctx, a.seq, state)
	switch {
	case errors.Is(err, persistence.ErrFenced):
		a.sys.cfg.Logger.Debug("directory: checkpoint refused: the log moved", "seq", a.seq)
	case err != nil:
		a.sys.cfg.Logger.Warn("directory: checkpoint failed", "seq", a.seq, "err", err)
	}
}

// resolved is a decision's answer as decideOwing makes it: a result read
// after the change, or for none the key a revocation names.
func resolved(st *directory.State, res any, ch directory.Change) any {
	if f, ok := res.(func() any); ok {
		res = f()
	}
	if res == nil {
		if r, ok := ch.(directory.KeyRevoked); ok {
			res, _ = st.Key(r.KeyID)
		}
	}
	return res
}

// put adds an index entry to the change being decided: to the open batch,
// or in cluster mode to the shared log's append.
func (a *dirActor) put(key, value []byte) {
	if a.shared != nil {
		a.pending = append(a.pending, persistence.IndexEntry{Key: key, Value: value})
		return
	}
	a.com.put(key, value)
}

// DirectoryChanged tells the directory that another node appended to the
// shared log (cluster mode): it reads it. It never blocks.
func (s *System) DirectoryChanged() {
	// One notice waits at most: while the log cannot be read (no
	// majority), notices must not pile up in the mailbox.
	if s.cfg.Directory != nil && s.dirPID != nil && s.dirNoticed.CompareAndSwap(false, true) {
		s.as.Root.Send(s.dirPID, &dirSync{})
	}
}

// DirectoryRead reports whether the directory has read the shared log
// once since the start (always true on a single node).
func (s *System) DirectoryRead() bool { return s.cfg.Directory == nil || s.dirRead.Load() }

// DirectoryShared reports whether the directory is the cluster's shared
// log (cluster mode): then a key missing from the view may have been made
// on another node a moment ago (SyncDirectory).
func (s *System) DirectoryShared() bool { return s.cfg.Directory != nil }

// DirectoryStale reports whether the view may miss what another node
// appended more than DirectoryStaleAfter ago (a revocation): the last read
// of the shared log that succeeded started longer ago than that, or there
// was none (by Config.Now). Never on a single node.
func (s *System) DirectoryStale() bool {
	if s.cfg.Directory == nil {
		return false
	}
	at := s.dirReadAt.Load()
	return at == nil || s.cfg.Now().Sub(*at) > DirectoryStaleAfter
}

// errNotShared: SyncDirectory has nothing to read on a single node.
var errNotShared = errors.New("actors: the directory is not shared")

// SyncDirectory reads what other nodes appended to the directory up to at
// least the moment of the call, and answers once the read view holds it:
// a key created on another node a moment ago authenticates here at once.
// Callers at the same time share one read that starts after they called.
// An error (the log could not be read: no majority, an election, a
// timeout) says nothing of what the log holds: the caller must not treat
// a key missing from the view as unknown. On a single node it answers an
// error at once: the view is always current there.
func (s *System) SyncDirectory(ctx context.Context) error {
	if s.cfg.Directory == nil {
		return errNotShared
	}
	return s.dirSyncs.do(ctx)
}

// coalescer runs fn on one goroutine at a time; callers that arrive while
// it runs share the next run, which starts after they arrived, so a burst
// of callers costs two runs and none is answered by a run that started
// before it.
type coalescer struct {
	fn      func() error
	mu      sync.Mutex
	running bool
	next    *call
}

type call struct {
	done chan struct{}
	err  error
}

func (c *coalescer) do(ctx context.Context) error {
	c.mu.Lock()
	if c.next == nil {
		c.next = &call{done: make(chan struct{})}
	}
	nx := c.next
	if !c.running {
		c.running = true
		go c.loop()
	}
	c.mu.Unlock()
	select {
	case <-nx.done:
		return nx.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *coalescer) loop() {
	for {
		c.mu.Lock()
		nx := c.next
		c.next = nil
		if nx == nil {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		nx.err = c.fn()
		close(nx.done)
	}
}

// errHasUnits: FirstUnit found the directory not empty.
var errHasUnits = errors.New("actors: the directory has units")

// FirstUnit creates a unit named name only if the directory has none
// (decided against the log's latest state, so of nodes asking at once one
// creates it), and reports whether it did.
func (s *System) FirstUnit(ctx context.Context, name string) (directory.Unit, bool, error) {
	id := s.cfg.IDs.New("bu_")
	res, err := s.askDirectory(ctx, &dirDecide{fn: func(st *directory.State, now time.Time) (any, directory.Change, error) {
		if len(st.Units()) > 0 {
			return nil, nil, errHasUnits
		}
		ch, err := st.CreateUnit(id, name, now)
		if err != nil {
			return nil, nil, err
		}
		return ch.(directory.UnitCreated).Unit, ch, nil
	}})
	if errors.Is(err, errHasUnits) {
		return directory.Unit{}, false, nil
	}
	if err != nil {
		return directory.Unit{}, false, err
	}
	return res.(directory.Unit), true, nil
}
