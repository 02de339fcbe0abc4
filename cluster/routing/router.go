package routing

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/ask"
	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"
	"ticketd/cluster/settle"
	"ticketd/idempotency"

	"github.com/nats-io/nats.go"

	"ticketd/directory"
	"ticketd/event"
	"ticketd/internal/pace"
	"ticketd/persistence"
)

// Router places events on their owners and forwards requests to them.
//
// The owner of an event is the leader of its shard stream. Appends go to
// the stream leader anyway, so the owner's commits take no extra hop; and
// when a node is lost, JetStream elects new leaders among the survivors,
// so ownership moves with the engine and needs no membership protocol of
// its own. Leadership can change under a running actor: the old owner's
// next commit is then refused by the fence in the log (see Log), and a
// request reaching a node that no longer leads is answered "moved" and
// sent again to the new leader. The single-writer guarantee is the fence,
// never this placement.
type Router struct {
	n   *node.Node
	mu  sync.Mutex
	sys Actors
	// encode makes the answer a forwarded keyed write records (NewRouter).
	encode AnswerEncoder
	sub    *nats.Subscription
	sem    chan struct{} // bounds the forwarded requests served at once

	stop, done chan struct{}  // of watchLeaders
	wg         sync.WaitGroup // activations and releases under way, the owed pass
	ctx        context.Context
	cancel     context.CancelFunc // ends the activations' requests at Close

	leaders []string    // per shard, "" unknown
	fetched []time.Time // per shard, when its leader was asked

	owed *settle.Owed // see Own; nil: the entries stay where they were written

	// PrefetchFeed, when set (app: settle.Feeds.Prefetch), fetches an
	// event's change feed (the carried entries and its log tail's) into
	// the local store while its shard is preloaded ahead of a move
	// (preload.go), within ctx, counting the entries it reads in
	// progress. Set before the node serves.
	PrefetchFeed func(ctx context.Context, eventID string, progress *pace.Progress) error

	// leave is the timing of a leaving node's wait for its takers and of
	// a taker's reports (leave.go).
	leave leaveTiming

	alive map[string]aliveCtx // per owner forwarded to: done once it is gone

	// The batches of forwarded requests and answers (asks.go).
	pmu   sync.Mutex
	conns map[*fwdConn]struct{} // open forwarding connections (fwdconn.go)
	// fwdListener takes the forwarding connections (fwdconn.go).
	fwdListener net.Listener
	peers       map[string]*peer        // per owner forwarded to
	ansQueues   map[string]*answerQueue // per node forwarding here
	ansOnce     sync.Once
	ansSub      *nats.Subscription
	ansErr      error
	fwd         fwdStats

	// gen counts each shard's leadership changes seen by watchLeaders: an
	// activation gives up once its shard's changed again.
	gen []atomic.Uint64
	// handing marks the shards this node is handing over (see giveUp):
	// their events are owned by nobody until the other node leads.
	handing []atomic.Bool
	// activating marks the shards whose events this node is activating
	// after a gain (see activate): giveUp refuses to hand those over.
	activating []atomic.Int32
	// activated is, per shard, the gain (gen) whose activation ended last
	// (see takeFor).
	activated []atomic.Uint64
	hsub      *nats.Subscription
	tsub      *nats.Subscription // a leaving node's asks to take its shards (leave.go)

	pre preloader // the shards whose events were built ahead of a move here

	defer_ deferrals // the events whose import waits for their claim (activate.go)

	keys keyImports // the events whose Idempotency-Key records were imported (keys.go)

	// closing: Close began; a forwarded request is answered "moved" (see
	// drain). unanswered counts the forwarded requests read in batches
	// whose answers are not written yet; lastAsk is when the last came
	// (unix nanoseconds).
	closing    atomic.Bool
	unanswered atomic.Int64
	lastAsk    atomic.Int64
}

// askSubj + node name is where a node serves forwarded requests.
const askSubj = "ticketd.ask."

// maxServing bounds the forwarded requests a node serves at once; more
// are answered busy.
const maxServing = 4096

// NewRouter returns the router of node n; encode is the front door's
// answer encoding (package http's EncodeAnswer), which the records of
// forwarded keyed writes hold.
func NewRouter(n *node.Node, encode AnswerEncoder) *Router {
	return &Router{n: n, encode: encode, leaders: make([]string, n.Config().Shards), fetched: make([]time.Time, n.Config().Shards), conns: map[*fwdConn]struct{}{},
		sem: make(chan struct{}, maxServing), alive: map[string]aliveCtx{}, leave: defaultLeaveTiming,
		peers: map[string]*peer{}, ansQueues: map[string]*answerQueue{},
		gen: make([]atomic.Uint64, n.Config().Shards), handing: make([]atomic.Bool, n.Config().Shards),
		activating: make([]atomic.Int32, n.Config().Shards), activated: make([]atomic.Uint64, n.Config().Shards), defer_: deferrals{listed: make([]bool, n.Config().Shards), every: make([]uint64, n.Config().Shards)}}
}

func init() {
	// Commands and results travel by type: every node runs the same
	// build, so the same registry names them.
	for _, t := range event.RegisteredTypes() {
		if t.Kind() == reflect.Interface {
			continue
		}
		gob.Register(reflect.Zero(t).Interface())
	}
	gob.Register(event.Storefront{})
}

// Owner returns the name of the node that owns eventID ("" while its
// shard has no leader, or is being handed over by this node).
func (r *Router) Owner(ctx context.Context, eventID string) (string, error) {
	shard := r.n.Shard(eventID)
	if r.handing[shard].Load() {
		return "", nil
	}
	if r.n.Server().JetStreamIsStreamLeader(node.GlobalAccount, node.StreamName(shard)) {
		return r.n.Config().NodeName, nil
	}
	// The leaders' own word, heard within peerStale, costs no request and
	// follows a change within watchEvery.
	if name := r.n.AnnouncedLeader(shard); name != "" && name != r.n.Config().NodeName {
		return name, nil
	}
	r.mu.Lock()
	name, fresh := r.leaders[shard], time.Since(r.fetched[shard]) < time.Second
	r.mu.Unlock()
	if name != "" && name != r.n.Config().NodeName && fresh {
		return name, nil
	}
	return r.refresh(ctx, shard)
}

// ErrNoEvent is answered by EventOwner for an event that has no log.
var ErrNoEvent = errors.New("cluster: no such event")

// EventOwner is Owner for an event that exists: ErrNoEvent when its
// shard has no log for it (never created). The question goes to the
// shard's leader.
func (r *Router) EventOwner(ctx context.Context, eventID string) (string, error) {
	owner, err := r.Owner(ctx, eventID)
	if err != nil || owner == "" {
		return owner, err
	}
	r.mu.Lock()
	sys := r.sys
	r.mu.Unlock()
	if sys != nil {
		if _, ok := sys.EventUnit(eventID); !ok {
			return "", ErrNoEvent // the event index has it once it is created
		}
	}
	return owner, nil
}

// refreshTimeout bounds asking JetStream for a shard's leader: without
// one (an election) the question waits for nothing, and the caller tries
// again. A leader answers within milliseconds, and the new one announces
// itself in its heartbeat (read first) as soon as it is elected: at 1 s,
// the requests that asked during a planned move's election (tens of
// milliseconds) waited that whole second after it (a 1.37 s write gap
// in TestGracefulStopHandsOver, every client's request 1.4 s).
const refreshTimeout = 250 * time.Millisecond

// refresh asks JetStream who leads the shard's stream.
func (r *Router) refresh(ctx context.Context, shard int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	s, err := r.n.JetStream().Stream(ctx, node.StreamName(shard))
	if err != nil {
		return "", fmt.Errorf("cluster: owner of shard %d: %w", shard, err)
	}
	info := s.CachedInfo()
	leader := ""
	if info.Cluster != nil {
		leader = info.Cluster.Leader
	}
	r.mu.Lock()
	r.leaders[shard] = leader
	r.fetched[shard] = time.Now()
	r.mu.Unlock()
	return leader, nil
}

// wireReq and wireResp are a forwarded request and its answer (wire.go).
type wireReq struct {
	EventID    string
	CreateUnit string
	Cmd        event.Command
	// Keyed is the record the write commits for its Idempotency-Key
	// (ask.Recorder), nil when none.
	Keyed *idempotency.KeyedWrite
}

type wireResp struct {
	Moved  bool // the node does not own the event (any more)
	Result any
	Err    *wireErr
}

// wireErr carries an answer's error so the forwarding node answers it the
// same: its kind, and for a business rejection the whole event.Error.
type wireErr struct {
	Kind  errKind
	Msg   string
	Event *event.Error
}

type errKind uint8

const (
	errOther errKind = iota
	errEvent
	errBusy
	errUnavailable
	errStorage
	errNotFound
	errFenced
	errReplayed // the write was made before: Msg is its record (ask.Replayed)
)

func toWire(err error) *wireErr {
	if err == nil {
		return nil
	}
	var ee *event.Error
	if r, ok := ask.IsReplayed(err); ok {
		return &wireErr{Kind: errReplayed, Msg: string(r.Value)}
	}
	switch {
	case errors.As(err, &ee):
		return &wireErr{Kind: errEvent, Event: ee}
	case errors.Is(err, ask.ErrBusy):
		return &wireErr{Kind: errBusy, Msg: err.Error()}
	case errors.Is(err, persistence.ErrFailed):
		return &wireErr{Kind: errStorage, Msg: err.Error()}
	case errors.Is(err, persistence.ErrFenced):
		return &wireErr{Kind: errFenced, Msg: err.Error()}
	case errors.Is(err, ask.ErrUnavailable):
		return &wireErr{Kind: errUnavailable, Msg: err.Error()}
	case errors.Is(err, directory.ErrNotFound):
		return &wireErr{Kind: errNotFound, Msg: err.Error()}
	}
	return &wireErr{Kind: errOther, Msg: err.Error()}
}

func (w *wireErr) err() error {
	if w == nil {
		return nil
	}
	switch w.Kind {
	case errEvent:
		return w.Event
	case errBusy:
		return ask.ErrBusy
	case errStorage:
		return fmt.Errorf("%w: %w: owner: %s", ask.ErrUnavailable, persistence.ErrFailed, w.Msg)
	case errUnavailable:
		return fmt.Errorf("%w: owner: %s", ask.ErrUnavailable, w.Msg)
	case errNotFound:
		return fmt.Errorf("%w: owner: %s", directory.ErrNotFound, w.Msg)
	case errFenced:
		return fmt.Errorf("%w: %w: owner: %s", ask.ErrUnavailable, persistence.ErrFenced, w.Msg)
	case errReplayed:
		return &ask.Replayed{Value: []byte(w.Msg)}
	}
	return errors.New(w.Msg)
}

// wireCmd is cmd as it travels: a storefront command travels as its
// untyped event.Storefront (the typed wrapper only fixes the result type,
// which the answer carries itself).
func wireCmd(cmd event.Command) event.Command {
	v := reflect.ValueOf(cmd)
	if t := v.Type(); t.Kind() == reflect.Struct && t.NumField() == 1 && t.Field(0).Anonymous &&
		t.Field(0).Type == reflect.TypeFor[event.Storefront]() {
		return v.Field(0).Interface().(event.Storefront)
	}
	return cmd
}

// forwardTimeout bounds a forwarded request without a deadline of its own.
const forwardTimeout = 10 * time.Second

// maxForwardWait bounds the pause between two tries of a forward that found
// no owner: an owner elected is announced within watchEvery, and a try
// that finds nobody listening costs no more than a round trip.
const maxForwardWait = 250 * time.Millisecond

// forwardTry bounds the wait for one forwarded request's answer: the
// owner answers within forwardTimeout, so past that the request or its
// answer was lost.
const forwardTry = forwardTimeout + time.Second

// Forward is actors.Config.Forward: it answers ok false when this node
// owns the event, else the owner's answer. A request is sent again only
// when it was certainly not handled: nobody listening, "moved", or
// refused by the fence (the owner lost the event to a newer claim, and
// nothing of the request was written), until ctx ends; the fence's
// refusal is then answered. A timeout is an unknown outcome, answered
// unavailable like a local one.
func (r *Router) Forward(ctx context.Context, eventID string, cmd event.Command, createUnit string) (any, error, bool) {
	// A deadline, not a context with a timer: a forwarded request's wait
	// ends by its answer, the caller's ctx, the owner's loss or the
	// peer's sweep of the requests past their deadline (asks.go).
	deadline := time.Now().Add(forwardTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	var body []byte // encoded once a request goes out (see wire.go)
	var fenced error
	wait := 100 * time.Millisecond
	for {
		owner, err := r.Owner(ctx, eventID)
		if err == nil && owner == r.n.Config().NodeName {
			if rec := ask.RecorderOf(ctx); retried(rec) {
				r.mu.Lock()
				sys := r.sys
				r.mu.Unlock()
				if sys != nil {
					if err := r.keysFor(ctx, sys, eventID); err != nil {
						return nil, err, true
					}
				}
			}
			return nil, nil, false
		}
		if err == nil && owner != "" {
			if body == nil {
				req := &wireReq{EventID: eventID, CreateUnit: createUnit, Cmd: wireCmd(cmd)}
				if rec := ask.RecorderOf(ctx); rec != nil {
					// The owner commits the key's record with the write.
					req.Keyed, _ = rec.Portable.(*idempotency.KeyedWrite)
				}
				if body, err = encodeReq(req); err != nil {
					return nil, fmt.Errorf("%w: forward %T: %v", ask.ErrUnavailable, cmd, err), true
				}
			}
			sent := time.Now()
			answer, err := r.request(ctx, deadline, owner, body)
			r.fwd.roundNanos.Add(int64(time.Since(sent)))
			r.fwd.roundCount.Add(1)
			if err == nil {
				var resp wireResp
				if err := decodeResp(answer, &resp); err != nil {
					return nil, fmt.Errorf("%w: answer of %s: %v", ask.ErrUnavailable, owner, err), true
				}
				if err := resp.Err.err(); errors.Is(err, persistence.ErrFenced) {
					fenced = err
				} else if !resp.Moved {
					return resp.Result, err, true
				}
			} else if !errors.Is(err, nats.ErrNoResponders) {
				return nil, fmt.Errorf("%w: event %s on %s: %v", ask.ErrUnavailable, eventID, owner, err), true
			}
			r.mu.Lock()
			r.fetched[r.n.Shard(eventID)] = time.Time{} // ask JetStream again
			r.mu.Unlock()
		}
		err = ctx.Err()
		if left := time.Until(deadline); err == nil && left > 0 {
			t := time.NewTimer(min(wait, left))
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-t.C:
			}
			t.Stop()
			wait = min(2*wait, maxForwardWait)
		} else if err == nil {
			err = context.DeadlineExceeded
		}
		if err != nil {
			if fenced != nil {
				return nil, fenced, true
			}
			return nil, fmt.Errorf("%w: event %s: no owner reachable: %v", ask.ErrUnavailable, eventID, err), true
		}
	}
}

// Own makes what the events owe (mail, webhooks, refunds to finish, pages
// to close) follow their ownership (see owed.go): log's commits tell what
// an owner owes, and wake is called when entries were imported into the
// local store (actors.Config.OnOutbox). A node that loses events calls
// each of release with a keep that refuses them, after dropping their
// owed entries: what a sender made of those entries (webhooks' deliveries
// per endpoint) goes too. Call it before Serve.
func (r *Router) Own(log *eventlog.Log, wake func(), release ...func(keep func(eventID string) bool) error) {
	r.owed = &settle.Owed{Node: r.n, Log: log, Store: log.Local(), Wake: wake, Events: map[string]map[string]struct{}{}, Derived: release}
	log.OnIndex = r.owed.NoteIndex
	log.OnClaim = r.claimed
}

// errOwnerGone ends the wait for an answer from an owner that is gone.
var errOwnerGone = errors.New("cluster: owner gone")

// request sends a forwarded request to owner (in a batch: asks.go) and
// waits for its answer, or until the owner is gone (watchOwners): its
// node's subscription left with its routes (a process killed) or its
// heartbeat stopped (a paused one). Either way the outcome is unknown, as
// after a timeout, but it is told within watchEvery or peerStale, not
// forwardTimeout: the clients whose requests were on their way to a lost
// owner retry at once. Nobody listening is nats.ErrNoResponders.
func (r *Router) request(ctx context.Context, deadline time.Time, owner string, body []byte) ([]byte, error) {
	if err := r.listen(); err != nil {
		return nil, err
	}
	if dl := time.Now().Add(forwardTry); deadline.IsZero() || deadline.After(dl) {
		deadline = dl
	}
	return r.peer(owner).ask(ctx, r.ownerCtx(owner), deadline, body)
}

// ownerCtx is done once owner is gone (see request).
func (r *Router) ownerCtx(owner string) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.alive[owner]; ok {
		return c.ctx
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.alive[owner] = aliveCtx{ctx, cancel}
	return ctx
}

type aliveCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// watchOwners ends the ownerCtx of the nodes that are gone.
func (r *Router) watchOwners() {
	acc := r.n.Server().GlobalAccount()
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, c := range r.alive {
		if name == r.n.Config().NodeName {
			continue
		}
		if r.n.SilentFor(name, node.PeerStale) {
			// Gone or paused.
		} else if acc.SubscriptionInterest(askSubj+name) || r.connected(name) {
			// Over a forwarding connection, a lost process breaks it
			// (fwdconn.go): a route between the servers closing for a
			// moment (duplicate routes resolved as a cluster forms) is
			// no loss.
			continue
		}
		c.cancel()
		delete(r.alive, name)
	}
}

// Serve answers the requests other nodes forward to this one with sys,
// and activates the events of every shard this node comes to lead. With
// Own, the entries in the local store of events this node does not lead
// are dropped first (no shard is led yet): the senders start with none of
// another owner's.
func (r *Router) Serve(sys Actors) error {
	r.mu.Lock()
	r.sys = sys
	r.mu.Unlock()
	if r.owed != nil {
		if err := r.owed.Release(r.leads); err != nil {
			return fmt.Errorf("cluster: drop entries of events owned elsewhere: %w", err)
		}
	}
	r.listenForward()
	sub, err := r.n.Conn().Subscribe(askSubj+r.n.Config().NodeName, func(m *nats.Msg) {
		if isBatch(m.Data) {
			r.serveBatch(m)
			return
		}
		// One request, as a node of an earlier build forwards it.
		select {
		case r.sem <- struct{}{}:
		default:
			r.respond(m, &wireResp{Err: toWire(ask.ErrBusy)})
			return
		}
		r.answerAsync(m.Data, forwardTimeout, func(resp *wireResp) {
			<-r.sem
			r.respond(m, resp)
		})
	})
	if err != nil {
		return fmt.Errorf("cluster: serve: %w", err)
	}
	r.sub = sub
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if r.hsub, err = r.n.Conn().Subscribe(handOverSubj+r.n.Config().NodeName, r.giveUp); err != nil {
		_ = sub.Unsubscribe()
		r.sub = nil
		return fmt.Errorf("cluster: serve: %w", err)
	}
	if r.tsub, err = r.n.Conn().Subscribe(takeSubj+r.n.Config().NodeName, r.takeFor); err != nil {
		_ = sub.Unsubscribe()
		_ = r.hsub.Unsubscribe()
		r.sub = nil
		return fmt.Errorf("cluster: serve: %w", err)
	}
	r.n.SetHandOver(r.handOver)
	r.stop = make(chan struct{})
	r.done = make(chan struct{})
	go r.watchLeaders(sys)
	if r.owed != nil {
		r.wg.Add(1)
		go func() { defer r.wg.Done(); r.owed.Run(r.stop) }()
	}
	return nil
}

// leads says whether this node leads shard now.
func (r *Router) leads(shard int) bool {
	return r.n.Server().JetStreamIsStreamLeader(node.GlobalAccount, node.StreamName(shard))
}

// watchLeaders evicts the local actors of a shard whenever this node gains
// or loses its leadership: a node that led before may hold an actor whose
// state another owner has moved on from since. On a gain it activates the
// shard's events (activate); on a loss it drops what they owe from the
// local store (owed.release).
func (r *Router) watchLeaders(sys Actors) {
	defer close(r.done)
	led := make([]bool, r.n.Config().Shards)
	notLed := make([]time.Time, r.n.Config().Shards) // per shard, the last look that saw another leader
	t := time.NewTicker(leaderPoll)
	defer t.Stop()
	for {
		r.watchOwners()
		for i := range led {
			looked := time.Now()
			now := r.n.Server().JetStreamIsStreamLeader(node.GlobalAccount, node.StreamName(i))
			if !now {
				notLed[i] = looked
			}
			if now == led[i] {
				continue
			}
			led[i] = now
			gen := r.gen[i].Add(1)
			if !now {
				r.handing[i].Store(false) // handed over
				r.lost(i)
				r.keysLost(i)
			}
			match := func(id string) bool { return r.n.Shard(id) == i }
			var n int
			if now {
				// An actor still loading, or loaded since the last look
				// that saw another leader, ends with a claim: see
				// EvictLoaded.
				n = sys.EvictLoaded(match, notLed[i])
			} else {
				n = sys.Evict(match)
			}
			if n > 0 {
				r.n.Config().Logger.Info("cluster: shard leadership moved; actors evicted", "stream", node.StreamName(i), "leader", now, "evicted", n)
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				if now {
					r.activate(sys, i, gen)
				} else if r.owed != nil {
					if err := r.owed.Release(r.leads); err != nil {
						r.n.Config().Logger.Warn("cluster: drop entries of a shard lost", "stream", node.StreamName(i), "err", err)
					}
				}
			}()
		}
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
	}
}

// leaderPoll is how often a node looks at which shards it leads.
const leaderPoll = 100 * time.Millisecond

// answerAsync serves the forwarded request data within timeout: done
// gets the answer, from the event's actor as it answers or from here when
// it is known at once (see actors.System.ServeAsync), and must not block. The ownership is this
// node's leadership of the event's shard, asked without a request: a node
// that does not lead it answers "moved", and the forwarding node asks
// JetStream who does.
func (r *Router) answerAsync(data []byte, timeout time.Duration, done func(*wireResp)) {
	var req wireReq
	if err := decodeReq(data, &req); err != nil {
		done(&wireResp{Err: &wireErr{Kind: errUnavailable, Msg: "cluster: bad forwarded request: " + err.Error()}})
		return
	}
	shard := r.n.Shard(req.EventID)
	if r.handing[shard].Load() || r.closing.Load() || !r.leads(shard) {
		done(&wireResp{Moved: true})
		return
	}
	r.mu.Lock()
	sys := r.sys
	r.mu.Unlock()
	var rec *ask.Recorder
	if k := req.Keyed; k != nil {
		enc := r.encode
		rec = &ask.Recorder{Key: k.Key, Value: func(result any) []byte {
			// nil (not encodable, an unknown view): nothing is recorded,
			// as on the request's node.
			return k.RecordOf(result, enc)
		}, Live: idempotency.Live, Look: k.Retried, Portable: k}
	}
	serve := func(timeout time.Duration) {
		sys.ServeAsyncRecorded(req.EventID, req.Cmd, req.CreateUnit, rec, timeout, func(res any, err error) {
			done(&wireResp{Result: res, Err: toWire(err)})
		})
	}
	if !retried(rec) {
		serve(timeout)
		return
	}
	// A retry: decided once the event's records are here (keys.go). Rare,
	// so a goroutine of its own may wait for the read.
	go func() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(r.ctx, timeout)
		err := r.keysFor(ctx, sys, req.EventID)
		cancel()
		if err != nil {
			done(&wireResp{Err: toWire(err)})
			return
		}
		serve(max(timeout-time.Since(start), time.Millisecond))
	}()
}

func (r *Router) respond(m *nats.Msg, resp *wireResp) {
	_ = m.Respond(encodeAnswer(resp))
}

func encodeAnswer(resp *wireResp) []byte {
	body, err := encodeResp(resp)
	if err != nil {
		body, _ = encodeResp(&wireResp{Err: &wireErr{Kind: errUnavailable, Msg: "cluster: encode answer: " + err.Error()}})
	}
	return body
}

// Close stops serving forwarded requests and waits for the activations
// under way (each gives up at once when stopped). The requests forwarded
// to it meanwhile are answered "moved" (sent again to the next owner),
// and its forwarding connections close once the answers of those read
// are written and none came for closeQuiet (at most closeDrain): a
// connection closed under a request leaves its outcome unknown, answered
// 503 to the client.
func (r *Router) Close() {
	if r.sub != nil {
		r.n.SetHandOver(nil)
		r.closing.Store(true)
		r.drain()
		_ = r.sub.Unsubscribe()
		_ = r.hsub.Unsubscribe()
		_ = r.tsub.Unsubscribe()
		if r.ansSub != nil {
			_ = r.ansSub.Unsubscribe()
		}
		r.cancel()
		close(r.stop)
		<-r.done
		if r.fwdListener != nil {
			r.n.FwdAddr.Store("")
			_ = r.fwdListener.Close()
		}
		r.pmu.Lock()
		for fc := range r.conns {
			fc.close()
		}
		r.conns = nil // and those opened from now on (trackConn)
		r.pmu.Unlock()
		r.closeDeferrals()
		r.wg.Wait()
		if r.owed != nil {
			r.owed.Flush()
		}
		r.sub = nil
	}
}

// closeDrain bounds Close's wait for the forwarded requests under way;
// closeQuiet is how long no request must have come before it closes the
// forwarding connections (a forwarder sends to the next owner once it
// hears of it: within a heartbeat's way after Leave's handovers).
const (
	closeDrain = time.Second
	closeQuiet = 50 * time.Millisecond
)

// drain waits until every forwarded request read has its answer written
// and none came for closeQuiet, for at most closeDrain.
func (r *Router) drain() {
	deadline := time.Now().Add(closeDrain)
	for time.Now().Before(deadline) {
		if r.unanswered.Load() <= 0 && time.Since(time.Unix(0, r.lastAsk.Load())) >= closeQuiet {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.n.Config().Logger.Info("cluster: closing with forwarded requests unanswered", "requests", r.unanswered.Load())
}

// A planned move (Node.balance) is a handover: the node taking a shard
// asks its leader (handOverSubj + leader's name) to give it up, and the
// leader (giveUp) stops owning its events (their requests wait, or are
// answered "moved" and sent again), evicts their actors and waits until
// their commits in flight are durable, and only then steps down in favour
// of the taker, which campaigns at once. No commit is then cut by the
// move, and the taker's claims fence nothing in flight: the events' writes
// pause for the election and the taker's activation.
const (
	handOverSubj = "ticketd.handover."
	// handOverDrain bounds the wait for the evicted actors' commits.
	handOverDrain = 2 * time.Second
	// handOverWait bounds the whole handover as the taker waits for it.
	handOverWait = handOverDrain + 3*time.Second
)

// handOver asks from, the leader of shard, to hand it over to this node.
// Its events are preloaded here first (see preload.go).
func (r *Router) handOver(shard int, from, to string) error {
	if err := r.preloadFor(shard); err != nil {
		return err
	}
	err := r.askHandOver(shard, from, to)
	if err != nil {
		r.dropPreloaded(shard)
	}
	return err
}

func (r *Router) askHandOver(shard int, from, to string) error {
	m, err := r.n.Conn().Request(handOverSubj+from, []byte(strconv.Itoa(shard)+" "+to), handOverWait)
	if errors.Is(err, nats.ErrNoResponders) {
		// A node that serves no events: its leadership alone moves.
		return r.n.StepDown(shard, to)
	}
	if err != nil {
		return fmt.Errorf("cluster: hand over %s from %s: %w", node.StreamName(shard), from, err)
	}
	if len(m.Data) > 0 {
		return fmt.Errorf("cluster: hand over %s from %s: %s", node.StreamName(shard), from, m.Data)
	}
	return nil
}

// giveUp hands a shard this node leads over to the node the request
// names, and answers nothing on success, else why.
func (r *Router) giveUp(m *nats.Msg) {
	f, to, _ := strings.Cut(string(m.Data), " ")
	shard, err := strconv.Atoi(f)
	if err != nil || shard < 0 || shard >= r.n.Config().Shards || to == "" {
		_ = m.Respond([]byte("bad request"))
		return
	}
	if !r.leads(shard) {
		_ = m.Respond([]byte("not the leader"))
		return
	}
	if r.activating[shard].Load() > 0 {
		// Its events are loading here: handed over now, the taker loads
		// them again while this node's loads finish for nothing (a
		// survivor of a SIGSTOP moved the hot event's shard on mid-load,
		// which doubled the writes' stop to 19 s). The balancer asks
		// again next round.
		_ = m.Respond([]byte("activating its events"))
		return
	}
	r.mu.Lock()
	sys := r.sys
	r.mu.Unlock()
	// Not in r.wg (Close may be waiting on it already): r.ctx ends the
	// drain at Close, and a step-down after it fails on the closed node.
	go func() {
		start := time.Now()
		r.handing[shard].Store(true)
		ctx, cancel := context.WithTimeout(r.ctx, handOverDrain)
		n := sys.EvictWait(ctx, func(id string) bool { return r.n.Shard(id) == shard })
		cancel()
		if err := r.n.StepDown(shard, to); err != nil {
			r.handing[shard].Store(false)
			_ = m.Respond([]byte(err.Error()))
			return
		}
		// Cleared when watchLeaders sees the loss; if the taker loses the
		// vote, this node may lead on: cleared after a bound either way.
		time.AfterFunc(handOverWait, func() { r.handing[shard].Store(false) })
		r.n.Config().Logger.Info("cluster: shard handed over", "stream", node.StreamName(shard), "to", to, "evicted", n,
			"ms", time.Since(start).Milliseconds())
		_ = m.Respond(nil)
	}()
}
