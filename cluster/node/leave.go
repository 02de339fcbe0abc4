package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// Before a graceful stop, the leaders of every stream but the shards'
// (whose moves the router makes with their events: routing.Router.Leave)
// move off the leaving node while it still serves. Left to the server's shutdown, each group steps down to a
// peer picked at random, that peer may not be current (it then drops the
// transfer and nobody campaigns before an election timeout: 2 to 4 s), and
// a request that reached the leaving leader as it shut down is answered by
// nobody: its caller waits its whole try (Config.RequestTimeout, 3 s)
// before it asks the new leader. The new owner of a shard handed over
// reads the change feed's stream inside its claim (settle.Feeds.Import):
// a feed stream led by the leaving node stopped the event's writes for
// 3.1 s (TestGracefulStopHandsOver, 1 run in 4 under load: "feed entries
// imported ... ms=3122", its first read sent to the leader shutting
// down). Moved first, to a current replica, and waited for, those groups
// have their new leaders before any shard changes hands.
const (
	// moveLeadersWait bounds the wait for the groups moved to elect their
	// new leaders; past it the stop goes on (the server's shutdown moves
	// what is left).
	moveLeadersWait = 5 * time.Second
	// moveLeadersPoll is how often the wait looks.
	moveLeadersPoll = 10 * time.Millisecond
)

// MoveOtherLeaders moves the leadership of every stream this node leads
// but the shard streams to the nodes of to (each stream to a replica
// among them that is current, spread over them), and waits until each
// has a leader that is not this node, within ctx and moveLeadersWait. It
// answers how many streams moved, and what failed. The meta group's
// leadership moves with the server's shutdown still: its step-down API
// answers the system account only, and no request of an event's writes
// waits on it (the streams exist before a node is ready).
func (n *Node) MoveOtherLeaders(ctx context.Context, to []string) (int, error) {
	if len(to) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, moveLeadersWait)
	defer cancel()
	var errs []error
	var moving []string
	led, err := n.ledStreams()
	if err != nil {
		return 0, errors.Join(append(errs, err)...)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, s := range led {
		if n.isShardStream(s.Name) {
			continue
		}
		target := currentReplica(s.Cluster, to, i)
		wg.Go(func() {
			err := n.stepDownStream(s.Name, target)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
				return
			}
			moving = append(moving, s.Name)
		})
	}
	wg.Wait()
	left := n.waitLeaders(ctx, moving)
	if len(left) > 0 {
		errs = append(errs, fmt.Errorf("no new leader within %s: %v", moveLeadersWait, left))
	}
	return len(moving) - len(left), errors.Join(errs...)
}

// isShardStream says whether name is one of the shard streams.
func (n *Node) isShardStream(name string) bool {
	s, ok := strings.CutPrefix(name, streamPrefix)
	if !ok {
		return false
	}
	i, err := strconv.Atoi(s)
	return err == nil && i >= 0 && i < n.cfg.Shards
}

// ledStreams lists the streams this node leads, with their replicas as
// the leader knows them.
func (n *Node) ledStreams() ([]server.StreamDetail, error) {
	d, err := n.srv.JszAccount(&server.JSzOptions{Account: GlobalAccount, Streams: true, StreamLeaderOnly: true})
	if err != nil {
		return nil, fmt.Errorf("cluster: streams led: %w", err)
	}
	return slices.DeleteFunc(d.Streams, func(s server.StreamDetail) bool {
		return s.Cluster == nil || s.Cluster.Leader != n.cfg.NodeName
	}), nil
}

// currentReplica picks the replica of a group to lead it next: one of to
// that its leader sees current (one behind drops the leader's transfer,
// and the group waits an election timeout), the i-th such in turn so
// several groups spread; "" (the server picks) when none is.
func currentReplica(ci *server.ClusterInfo, to []string, i int) string {
	var ok []string
	for _, name := range to {
		for _, p := range ci.Replicas {
			if p.Name == name && p.Current && !p.Offline && !slices.Contains(ok, name) {
				ok = append(ok, name)
			}
		}
	}
	if len(ok) == 0 {
		return ""
	}
	return ok[i%len(ok)]
}

// stepDownStream asks stream's leader (this node) to hand its leadership
// to the node named to ("": a peer the server picks).
func (n *Node) stepDownStream(stream, to string) error {
	body := []byte("{}")
	if to != "" {
		body = fmt.Appendf(nil, `{"placement":{"preferred":%q}}`, to)
	}
	m, err := n.nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, body, 2*time.Second)
	if err != nil {
		return err
	}
	var resp struct {
		Success bool                `json:"success"`
		Error   *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return fmt.Errorf("cluster: stepdown answer: %w", err)
	}
	if !resp.Success {
		if resp.Error != nil {
			return resp.Error
		}
		return errors.New("cluster: stepdown refused")
	}
	return nil
}

// waitLeaders waits until each of streams has a leader this node knows
// that is not itself, or ctx ends; it answers those that have none yet. A
// stream whose transfer failed may elect this node again: it is asked to
// step down once more.
func (n *Node) waitLeaders(ctx context.Context, streams []string) []string {
	left := slices.Clone(streams)
	for {
		if len(left) > 0 {
			d, err := n.srv.JszAccount(&server.JSzOptions{Account: GlobalAccount, Streams: true})
			if err == nil {
				leaders := map[string]string{}
				for _, s := range d.Streams {
					if s.Cluster != nil {
						leaders[s.Name] = s.Cluster.Leader
					}
				}
				left = slices.DeleteFunc(left, func(name string) bool {
					switch leaders[name] {
					case "":
						return false
					case n.cfg.NodeName:
						_ = n.stepDownStream(name, "")
						return false
					}
					return true
				})
			}
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return left
		case <-time.After(moveLeadersPoll):
		}
	}
}

// A node that stops takes its vote from every stream it replicates. With
// three replicas a group then needs both others, and one that is not
// current (a node restarted a moment ago, still catching up, or behind
// under load) cannot acknowledge: the group's appends wait until it
// catches up or the stopped node comes back. In a rolling restart
// (TestClusterRollingRestart, bench/results/20261129-moves2.md) an
// event whose shard stayed where it was stopped for 3.0 s as the next
// node stopped, and wrote again the moment that node's server was back.
// So a leaving node, its shards handed over, waits (within
// QuorumWithoutWait) until each stream it replicates but does not lead
// has, by its leader's account, a quorum of current replicas without it.
const (
	// QuorumWithoutWait bounds that wait; past it the stop goes on.
	QuorumWithoutWait = 10 * time.Second
	// quorumWithoutPoll is how often it asks the leaders again.
	quorumWithoutPoll = 50 * time.Millisecond
)

// WaitQuorumsWithout waits until every stream this node replicates and
// another node leads can commit without this node's vote: its leader and
// the replicas it sees current, this node left out, are a majority of
// the group. It ends with ctx or after QuorumWithoutWait, and answers
// the streams still short of it then (a leader that does not answer
// counts as short). waiting, when not nil, is told the streams short at
// the first look, if any.
func (n *Node) WaitQuorumsWithout(ctx context.Context, waiting func(short []string)) []string {
	ctx, cancel := context.WithTimeout(ctx, QuorumWithoutWait)
	defer cancel()
	for first := true; ; first = false {
		short := n.shortWithout(ctx)
		if len(short) == 0 || ctx.Err() != nil {
			return short
		}
		if first && waiting != nil {
			waiting(short)
		}
		select {
		case <-ctx.Done():
			return short
		case <-time.After(quorumWithoutPoll):
		}
	}
}

// shortWithout lists the streams this node replicates, led by another,
// whose leader's current replicas without this node are no majority.
func (n *Node) shortWithout(ctx context.Context) []string {
	d, err := n.srv.JszAccount(&server.JSzOptions{Account: GlobalAccount, Streams: true})
	if err != nil {
		return []string{"(streams: " + err.Error() + ")"}
	}
	var short []string
	for _, s := range d.Streams {
		if s.Cluster == nil || s.Cluster.Leader == n.cfg.NodeName || len(s.Cluster.Replicas) == 0 {
			continue // led here (handed over already, or moving with the shutdown), or one replica
		}
		str, err := n.js.Stream(ctx, s.Name)
		if err != nil {
			short = append(short, s.Name)
			continue
		}
		ci := str.CachedInfo().Cluster
		if ci == nil || ci.Leader == "" || ci.Leader == n.cfg.NodeName {
			short = append(short, s.Name)
			continue
		}
		votes := 1 // the leader
		for _, p := range ci.Replicas {
			if p.Name != n.cfg.NodeName && p.Current && !p.Offline {
				votes++
			}
		}
		if size := len(ci.Replicas) + 1; votes <= size/2 {
			short = append(short, s.Name)
		}
	}
	return short
}
