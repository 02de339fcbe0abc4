package routing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/cluster/node"

	"github.com/nats-io/nats.go"
)

// A graceful stop (a rolling restart) is a planned move of every shard
// the node leads: Leave hands each over as the leaders' spreading does
// (the taker preloads the shard's events, then asks this node to drain
// and step down in its favour), instead of letting the server's shutdown
// move the leaderships with the actors already gone, which left the
// taker to load every event (a big event's snapshot) while its writes
// waited. The leaving node says it is not ready from the start (its
// heartbeat and /readyz), so no balancer moves a shard back to it and a
// load balancer stops sending it clients, but it serves its events until
// each is handed over.
const (
	// takeSubj + node name asks that node to take a shard from the
	// leaving node: "<shard> <from>". An ask with the hdrTakeProgress
	// header is answered progress reports (that header set to the taker's
	// progress) every takeReportEvery until the final answer (no header:
	// empty when taken, else why not); an older taker answers the final
	// answer alone.
	takeSubj        = "ticketd.take."
	hdrTakeProgress = "Ticketd-Take-Progress"
	// LeaveStall: the leaving node waits for a taker that reports
	// progress (its preload's snapshot chunks read and decode steps,
	// records replayed, change feed entries read; a new stage of the
	// take) as long as the progress goes on, and gives up once none came
	// for LeaveStall: the shard then moves with the server's shutdown, as
	// after a loss. A fixed bound (60 s) was cut short by the chaos run's
	// 1.2M-order event, whose paced preload and feed prefetch took 126 s
	// (bench/results/20261129-moves2.md, run 9: 42 s without writes).
	LeaveStall = 10 * time.Second
	// LeaveWait bounds the wait for a taker that reports no progress at
	// all (a build from before the reports).
	LeaveWait = 60 * time.Second
	// LeaveMax bounds the handovers of a whole Leave, progress or not;
	// LeaveBound a whole Leave (the quorum wait after them included).
	// A supervisor's stop timeout must exceed LeaveBound and the
	// shutdown after it (app: 9 s more): systemd's TimeoutStopSec
	// (90 s by default) and Kubernetes' terminationGracePeriodSeconds (30 s
	// by default) must be raised, to 210 s say (the README).
	LeaveMax   = 3 * time.Minute
	LeaveBound = LeaveMax + node.QuorumWithoutWait
	// takeReportEvery is how often a taker reports its progress.
	takeReportEvery = time.Second
	// takeRetry is the pause between a taker's handover tries (its first
	// are refused while it preloads).
	takeRetry = 100 * time.Millisecond
	// takeCurrentWait bounds a taker's wait for its replica of the shard
	// to be current before it asks the handover.
	takeCurrentWait = 2 * time.Second
)

// leaveTiming is a router's LeaveStall, LeaveWait, LeaveMax and
// takeReportEvery (tests shorten them).
type leaveTiming struct{ stall, silent, max, report time.Duration }

var defaultLeaveTiming = leaveTiming{stall: LeaveStall, silent: LeaveWait, max: LeaveMax, report: takeReportEvery}

// Errors of a take the leaving node gave up on.
var (
	errTakeStalled = errors.New("cluster: the taker reported no progress for too long")
	errTakeSilent  = errors.New("cluster: the taker reported no progress at all")
	errTakeTooLong = errors.New("cluster: the take outlasted the leave's bound")
)

// takeWatch is the leaving node's view of one take: when it was asked,
// the taker's last report and when that report last changed. It decides
// alone (check), from the times it is given.
type takeWatch struct {
	lt           leaveTiming
	start, moved time.Time
	last         string
	reported     bool
}

// report notes a progress report at now: a report that differs from the
// last (the counters only grow) is progress.
func (w *takeWatch) report(now time.Time, progress string) {
	if !w.reported || progress != w.last {
		w.moved = now
	}
	w.reported, w.last = true, progress
}

// check answers why the leaving node stops waiting at now, or nil: past
// max in all, past stall since the taker's last progress, or past silent
// for a taker that never reported.
func (w *takeWatch) check(now time.Time) error {
	switch {
	case now.Sub(w.start) >= w.lt.max:
		return errTakeTooLong
	case !w.reported && now.Sub(w.start) >= w.lt.silent:
		return errTakeSilent
	case w.reported && now.Sub(w.moved) >= w.lt.stall:
		return errTakeStalled
	}
	return nil
}

// Leave hands every shard this node leads over to the other ready nodes
// (the ones leading fewest first), each as a planned move, within ctx:
// for each, as long as its taker reports progress (takeWatch), at most
// LeaveMax; then waits until the streams it follows keep a quorum
// without it (at most LeaveBound in all). It marks the node as leaving:
// it is no longer ready, but serves its events until each is handed
// over. Call it before Close; Close alone still works (the shards move
// as after a loss).
func (r *Router) Leave(ctx context.Context) {
	r.n.Leaving.Store(true)
	start := time.Now()
	// Last, this node's vote: the streams it follows must commit without
	// it (node.WaitQuorumsWithout), whether the handovers ended in time
	// or not (run 9: skipped once the wait for a taker had used the
	// leave's whole bound).
	defer r.waitQuorumsWithout(ctx, start)
	ctx, cancel := context.WithTimeout(ctx, r.leave.max)
	defer cancel()
	led := r.n.Led()
	// The other streams' leaders first (node.MoveOtherLeaders): the takers'
	// claims below read the change feed's stream, and a read sent to a
	// leader as it shuts down waits a whole try.
	if peers := slices.Compact(slices.Sorted(slices.Values(r.n.LeaveTargets(r.n.Config().Shards)))); len(peers) > 0 {
		moved, err := r.n.MoveOtherLeaders(ctx, peers)
		if err != nil {
			r.n.Config().Logger.Warn("cluster: stream leaders not moved before leaving", "moved", moved, "err", err)
		} else if moved > 0 {
			r.n.Config().Logger.Info("cluster: stream leaders moved before leaving", "moved", moved,
				"ms", time.Since(start).Milliseconds())
		}
	}
	if len(led) == 0 {
		return
	}
	targets := r.n.LeaveTargets(len(led))
	if len(targets) == 0 {
		r.n.Config().Logger.Info("cluster: leaving with no ready node to take its shards", "shards", len(led))
		return
	}
	var wg sync.WaitGroup
	for i, shard := range led {
		to := targets[i%len(targets)]
		wg.Go(func() {
			err := r.askTake(ctx, shard, to)
			if err != nil {
				r.n.Config().Logger.Warn("cluster: shard not handed over before leaving", "stream", node.StreamName(shard), "to", to, "err", err)
				return
			}
			leader := r.waitLeader(ctx, shard)
			r.n.Config().Logger.Info("cluster: shard handed over before leaving", "stream", node.StreamName(shard), "to", to,
				"leader", leader, "ms", time.Since(start).Milliseconds())
		})
	}
	wg.Wait()
}

// waitQuorumsWithout waits until every stream this node follows keeps
// a quorum without it, and says so when that took a wait.
func (r *Router) waitQuorumsWithout(ctx context.Context, start time.Time) {
	t0 := time.Now()
	waited := false
	left := r.n.WaitQuorumsWithout(ctx, func(short []string) {
		waited = true
		r.n.Config().Logger.Info("cluster: leaving waits for replicas to be current", "streams", short)
	})
	switch {
	case len(left) > 0:
		r.n.Config().Logger.Warn("cluster: leaving while streams need this node for a quorum", "streams", left,
			"ms", time.Since(t0).Milliseconds())
	case waited:
		r.n.Config().Logger.Info("cluster: streams keep a quorum without this node", "waited_ms", time.Since(t0).Milliseconds(),
			"leave_ms", time.Since(start).Milliseconds())
	}
}

// takenWait bounds the wait, once a shard was handed over, for its new
// leader's announcement. The step-down answers before the taker has won
// its vote: a node that stopped then, its router's forwarding connections
// closed, cut the requests forwarders still sent it meanwhile (503s, the
// outcome unknown), and had the taker dropped the transfer, the shard
// waited an election timeout with one voter fewer.
const takenWait = 2 * time.Second

// waitLeader waits until another node announces it leads shard, within
// ctx and takenWait, and answers it ("" if none did).
func (r *Router) waitLeader(ctx context.Context, shard int) string {
	ctx, cancel := context.WithTimeout(ctx, takenWait)
	defer cancel()
	for {
		if l := r.n.AnnouncedLeader(shard); l != "" && l != r.n.Config().NodeName && !r.leads(shard) {
			return l
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// takeActivateWait bounds a taker's wait for the activation of a shard a
// leaving node handed it before it answers the leaving node. The new
// owner's claims read the change feed's stream and the shard's log
// (settle.Feeds.Import); answered at once, the leaving node shut its
// server down while they ran: the meta group's leader and the routes
// move with it, and a read that meets that waits.
const takeActivateWait = 5 * time.Second

// waitActivated waits, for at most takeActivateWait, until this node has
// led shard since a change after its gen-th and that gain's activation
// has ended (or, after a second, while it does not lead it).
func (r *Router) waitActivated(shard int, gen uint64) {
	start := time.Now()
	for time.Since(start) < takeActivateWait {
		if g := r.activated[shard].Load(); g > gen && g == r.gen[shard].Load() {
			return
		}
		if time.Since(start) > time.Second && !r.leads(shard) {
			return // another node won the vote
		}
		if r.stopped(10 * time.Millisecond) {
			return
		}
	}
}

// askTake asks node to to take shard from this node, and waits for it
// within ctx while the taker reports progress (takeWatch).
func (r *Router) askTake(ctx context.Context, shard int, to string) error {
	nc := r.n.Conn()
	inbox := nats.NewInbox()
	answers := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	ask := nats.NewMsg(takeSubj + to)
	ask.Reply = inbox
	ask.Data = []byte(strconv.Itoa(shard) + " " + r.n.Config().NodeName)
	ask.Header.Set(hdrTakeProgress, "1")
	if err := nc.PublishMsg(ask); err != nil {
		return err
	}
	w := &takeWatch{lt: r.leave, start: time.Now()}
	tick := time.NewTicker(min(r.leave.stall, r.leave.silent) / 10)
	defer tick.Stop()
	for {
		select {
		case m := <-answers:
			if p := m.Header.Get(hdrTakeProgress); p != "" {
				w.report(time.Now(), p)
				continue
			}
			if len(m.Data) == 0 && m.Header.Get("Status") == "503" { // nats.go's no-responders status
				return nats.ErrNoResponders
			}
			if len(m.Data) > 0 {
				return errors.New(string(m.Data))
			}
			return nil
		case now := <-tick.C:
			if err := w.check(now); err != nil {
				return fmt.Errorf("%w (last report %q)", err, w.last)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// takeFor serves a leaving node's ask for a shard: the handover of a planned
// move, asked again while its events preload or the giver refuses (it
// activates them), until the ask's deadline. While it runs it reports its
// progress to a leaving node that asked for the reports.
func (r *Router) takeFor(m *nats.Msg) {
	f, from, _ := strings.Cut(string(m.Data), " ")
	shard, err := strconv.Atoi(f)
	if err != nil || shard < 0 || shard >= r.n.Config().Shards || from == "" {
		_ = m.Respond([]byte("bad request"))
		return
	}
	// stage: 0 preloading, 1 catching up and handing over, 2 activating
	// (a new stage is progress too: a handover moves no counter).
	var stage atomic.Int64
	reports := m.Header.Get(hdrTakeProgress) != "" && m.Reply != ""
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if reports {
			stop := make(chan struct{})
			defer close(stop)
			r.wg.Go(func() { r.reportTake(m.Reply, shard, &stage, stop) })
		}
		deadline := time.Now().Add(r.leave.max)
		gen := r.gen[shard].Load()
		for {
			err := r.preloadFor(shard)
			if err == nil {
				stage.Store(1)
				// Behind the leader (under load), this node would drop the
				// step-down's transfer and the shard would wait an election
				// timeout for a leader: the handover is asked once it is
				// current, as the leaders' spreading does (for at most
				// takeCurrentWait: a replica never seen current asks after).
				since := time.Now()
				for time.Since(since) < takeCurrentWait &&
					!r.n.Server().JetStreamIsStreamCurrent(node.GlobalAccount, node.StreamName(shard)) {
					time.Sleep(10 * time.Millisecond)
				}
				if err = r.askHandOver(shard, from, r.n.Config().NodeName); err != nil {
					r.dropPreloaded(shard)
				}
			}
			if err == nil || r.leads(shard) {
				if err == nil {
					stage.Store(2)
					r.waitActivated(shard, gen)
				}
				_ = m.Respond(nil)
				return
			}
			if strings.Contains(err.Error(), "not the leader") {
				_ = m.Respond([]byte("moved already"))
				return
			}
			if time.Now().After(deadline) {
				_ = m.Respond(fmt.Appendf(nil, "%v", err))
				return
			}
			select {
			case <-r.stop:
				_ = m.Respond([]byte("closing"))
				return
			case <-time.After(takeRetry):
			}
		}
	}()
}

// reportTake sends the leaving node's inbox the progress of shard's take
// every report interval until stop: "<stage> <steps> <entries>", the
// steps and feed entries of the shard's preloads here so far (counters
// that only grow).
func (r *Router) reportTake(inbox string, shard int, stage *atomic.Int64, stop <-chan struct{}) {
	t := time.NewTicker(r.leave.report)
	defer t.Stop()
	for {
		steps, entries := r.pre.progressOf(shard).Done()
		m := nats.NewMsg(inbox)
		m.Header.Set(hdrTakeProgress, fmt.Sprintf("%d %d %d", stage.Load(), steps, entries))
		_ = r.n.Conn().PublishMsg(m)
		select {
		case <-stop:
			return
		case <-r.stop:
			return
		case <-t.C:
		}
	}
}
