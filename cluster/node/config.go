package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"
)

// DefaultShards is the default number of shard streams: one per node of
// the usual 3-node cluster. Each message of a shard's log costs its Raft
// group a few fsyncs on every replica, whatever it carries, so fewer
// shards carry more commits per fsync, and a drop of many events ran
// faster with 3 than with 6 or 8 (measured: bench/results/20261129-cluster-history.md).
const DefaultShards = 3

// Config configures one node of the cluster.
type Config struct {
	// NodeName names this node; unique in the cluster, it is the JetStream
	// server name and what the owner endpoints answer.
	NodeName string
	// Addr is this node's cluster (route) listen address, host:port.
	Addr string
	// Peers are the cluster addresses of every node, this one included.
	Peers []string
	// ForwardAddr is where the node takes the requests other nodes forward
	// to it (fwdconn.go): host:port, "off" for none (they come over NATS).
	// Default: Addr's host, any free port; none when Addr's host is
	// unspecified (0.0.0.0), as nobody could dial it.
	ForwardAddr string
	// Advertise is the cluster address the other nodes are told to reach
	// this one at (a proxy's or a NAT's; default: Addr).
	Advertise string
	// NoS2 (tests) makes the node act as an earlier build that neither
	// reads nor writes compressed shard messages.
	NoS2 bool
	// ActivateMax bounds the events a node activates at once per shard it
	// comes to lead (default 10,000; the rest wait for their first
	// request); -1: none. Tests set it.
	ActivateMax int
	// Replicas is how many nodes keep each stream (1 to 5, at most the
	// peers; default 3 or the number of peers when fewer).
	Replicas int
	// Shards is the number of streams the events are spread over
	// (DefaultShards): each has its own Raft group and leader. It is fixed
	// when the cluster is made: a node set otherwise does not join
	// (ensureStreams).
	Shards int
	// DataDir is the node's data dir: JetStream keeps its files in
	// DataDir/jetstream.
	DataDir string
	// Name is the cluster's name (default "ticketd"); nodes of two
	// clusters never join.
	Name string
	// RequestTimeout bounds one try of a JetStream request (default 3 s).
	// A request sent while its stream elects a leader is answered by
	// nobody, and one in flight when leadership moves loses its answer:
	// a publish is tried again (its Nats-Msg-Id settles a stored one), an
	// activation too, so a short try ends such a wait sooner. A long one
	// held every request queued behind a commit for its whole length.
	RequestTimeout time.Duration
	// ElectionTimeout is how long a shard's followers wait without a
	// heartbeat before electing a new leader, hence an owner: 1 to 2 times
	// it (default 2 s; nats-server's own is 4 to 9 s). The first node of a
	// process sets it for all (see raft_timing.go).
	ElectionTimeout time.Duration
	// SettleLag is how many messages of its shard an event may hold the
	// log's trim back before the trimmer settles it (settle.go; default
	// 10,000): the log a shard keeps beyond what its busy events' own
	// snapshots need, and how rarely a small event that still changes is
	// snapshotted for it (once per SettleLag messages of its shard at
	// most). 100 to 10,000,000.
	SettleLag int
	// SettleSmall: an event with at most this many records is settled even
	// while it still changes (its snapshot is cheap); a bigger one only
	// once idle (default 10,000). 1 to 10,000,000.
	SettleSmall int
	// SettleEvery is how often the trimmer looks at the shards this node
	// leads (default 10 s; tests shorten it).
	SettleEvery time.Duration
	Logger      *slog.Logger
}

// Validate fills defaults and checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.NodeName == "" || strings.ContainsAny(c.NodeName, " .*>\t\n") {
		errs = append(errs, fmt.Errorf("cluster: node name %q: must be set, without spaces, dots or wildcards", c.NodeName))
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("cluster: addr %q: %w", c.Addr, err))
	}
	if len(c.Peers) == 0 {
		errs = append(errs, errors.New("cluster: peers: at least one"))
	}
	if a := c.ForwardAddr; a != "" && a != "off" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("cluster: forward addr %q: %w", a, err))
		}
	}
	for _, p := range c.Peers {
		if _, _, err := net.SplitHostPort(p); err != nil {
			errs = append(errs, fmt.Errorf("cluster: peer %q: %w", p, err))
		}
	}
	if c.Replicas == 0 {
		c.Replicas = min(3, max(len(c.Peers), 1))
	}
	if c.Replicas < 1 || c.Replicas > 5 || (len(c.Peers) > 0 && c.Replicas > len(c.Peers)) {
		errs = append(errs, fmt.Errorf("cluster: replicas %d: must be 1 to 5 and at most the %d peers", c.Replicas, len(c.Peers)))
	}
	if c.Shards == 0 {
		c.Shards = DefaultShards
	}
	if c.Shards < 1 || c.Shards > 256 {
		errs = append(errs, fmt.Errorf("cluster: shards %d: must be 1 to 256", c.Shards))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("cluster: data dir: must be set"))
	}
	if c.Name == "" {
		c.Name = "ticketd"
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 3 * time.Second
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = 2 * time.Second
	}
	if c.ElectionTimeout < 500*time.Millisecond || c.ElectionTimeout > 10*time.Second {
		errs = append(errs, fmt.Errorf("cluster: election timeout %s: must be 500ms to 10s", c.ElectionTimeout))
	}
	if c.SettleLag == 0 {
		c.SettleLag = settleLag
	}
	if c.SettleLag < 100 || c.SettleLag > 10_000_000 {
		errs = append(errs, fmt.Errorf("cluster: settle lag %d: must be 100 to 10000000", c.SettleLag))
	}
	if c.SettleSmall == 0 {
		c.SettleSmall = settleSmall
	}
	if c.SettleSmall < 1 || c.SettleSmall > 10_000_000 {
		errs = append(errs, fmt.Errorf("cluster: settle small %d: must be 1 to 10000000", c.SettleSmall))
	}
	if c.SettleEvery == 0 {
		c.SettleEvery = settleEvery
	}
	if c.SettleEvery < 0 {
		errs = append(errs, fmt.Errorf("cluster: settle every %s: must be positive", c.SettleEvery))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return errors.Join(errs...)
}

// Defaults of the settling (the trimmer, package settle).
const (
	// settleLag is the default of Config.SettleLag: how many shard
	// messages an event may hold the trim back before the trimmer settles
	// it: the log a shard keeps beyond what its busy events' own snapshots
	// need, and how rarely a small event that still changes now and then
	// is snapshotted for it (once per settleLag messages of its shard at
	// most).
	settleLag = 10_000
	// settleEvery is the default of Config.SettleEvery: how often the
	// trimmer looks at the shards this node leads (the view is in memory,
	// and brought up to the shard's last message by one request to its
	// leader, this node).
	settleEvery = 10 * time.Second
	// settleSmall is the default of Config.SettleSmall: an event with at
	// most this many records is settled even while it still changes (its
	// snapshot is cheap); a bigger one only once it is idle (no record in
	// the last settleLag messages), since a busy big event holds the log
	// back by design (the records after its older snapshot kept) and its
	// own snapshots move it.
	settleSmall = 10_000
)
