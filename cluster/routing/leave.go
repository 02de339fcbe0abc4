package routing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	// leaving node: "<shard> <from>".
	takeSubj = "ticketd.take."
	// LeaveWait bounds a whole Leave: what is not handed over by then
	// moves with the server's shutdown, as after a loss (its events
	// loaded by the next owner while their writes wait). It covers the
	// taker's preload of a big event (the chaos run's hot event's, and
	// what a shorter bound cost: bench/results/20261129-cluster-history.md). A
	// supervisor's stop timeout must exceed it (systemd's
	// TimeoutStopSec is 90 s; Kubernetes' terminationGracePeriodSeconds,
	// 30 s by default, must be raised).
	LeaveWait = 60 * time.Second
	// takeRetry is the pause between a taker's handover tries (its first
	// are refused while it preloads).
	takeRetry = 100 * time.Millisecond
	// takeCurrentWait bounds a taker's wait for its replica of the shard
	// to be current before it asks the handover.
	takeCurrentWait = 2 * time.Second
)

// Leave hands every shard this node leads over to the other ready nodes
// (the ones leading fewest first), each as a planned move, within ctx
// (at most LeaveWait), and marks the node as leaving: it is no longer
// ready. Call it before Close; Close alone still works (the shards move
// as after a loss).
func (r *Router) Leave(ctx context.Context) {
	r.n.Leaving.Store(true)
	ctx, cancel := context.WithTimeout(ctx, LeaveWait)
	defer cancel()
	start := time.Now()
	// Last, this node's vote: the streams it follows must commit without
	// it (node.WaitQuorumsWithout).
	defer r.waitQuorumsWithout(ctx, start)
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
// within ctx.
func (r *Router) askTake(ctx context.Context, shard int, to string) error {
	body := []byte(strconv.Itoa(shard) + " " + r.n.Config().NodeName)
	m, err := r.n.Conn().RequestWithContext(ctx, takeSubj+to, body)
	if err != nil {
		return err
	}
	if len(m.Data) > 0 {
		return errors.New(string(m.Data))
	}
	return nil
}

// takeFor serves a leaving node's ask for a shard: the handover of a planned
// move, asked again while its events preload or the giver refuses (it
// activates them), until the ask's deadline.
func (r *Router) takeFor(m *nats.Msg) {
	f, from, _ := strings.Cut(string(m.Data), " ")
	shard, err := strconv.Atoi(f)
	if err != nil || shard < 0 || shard >= r.n.Config().Shards || from == "" {
		_ = m.Respond([]byte("bad request"))
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		deadline := time.Now().Add(LeaveWait)
		gen := r.gen[shard].Load()
		for {
			err := r.preloadFor(shard)
			if err == nil {
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
