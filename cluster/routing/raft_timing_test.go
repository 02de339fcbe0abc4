package routing

import (
	"testing"
	"time"

	"ticketd/cluster/node"

	"github.com/stretchr/testify/require"
)

// TestRaftTimingApplied fails loudly when nats-server stops reading the
// variables raft_timing.go sets by go:linkname (a rename already fails
// the build; this catches a server that keeps the names but no longer
// uses them). A shard's leader is cut off from the other two by a network
// partition: with ticketd's timing (ElectionTimeout 2 s: a follower
// campaigns after 2 to 4 s without a heartbeat) the majority elects a new
// leader within electedWithin, and the cut leader steps down once it has
// heard from no majority for 2 × ElectionTimeout (lostQuorum). With
// nats-server's own, no follower campaigns before 4 s (4 to 9 s), and the
// cut leader keeps leading for 10 to 20 s.
func TestRaftTimingApplied(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, pn := startPartitionable(t)
	require.Equal(t, 2*time.Second, node.CurrentRaftTiming().MinElection, "the package's tests run with the default ElectionTimeout")
	leader := -1
	for i, nd := range nodes {
		if nd.Server().JetStreamIsStreamLeader(node.GlobalAccount, node.StreamName(0)) {
			leader = i
		}
	}
	require.GreaterOrEqual(t, leader, 0, "shard 0 has a leader")
	cut := time.Now()
	pn.isolate(nodes[leader].Name())
	// The two followers each campaign after 2 to 4 s: the first of them,
	// at 2 to 4 s (2.7 on average); the default's first is at 4 s or later.
	const electedWithin = 4 * time.Second
	var elected time.Duration
	require.Eventually(t, func() bool {
		for i, nd := range nodes {
			if i != leader && nd.Server().JetStreamIsStreamLeader(node.GlobalAccount, node.StreamName(0)) {
				elected = time.Since(cut)
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the majority elects a leader")
	var stepped time.Duration
	require.Eventually(t, func() bool {
		if nodes[leader].Server().JetStreamIsStreamLeader(node.GlobalAccount, node.StreamName(0)) {
			return false
		}
		stepped = time.Since(cut)
		return true
	}, 40*time.Second, 20*time.Millisecond, "the cut leader steps down")
	t.Logf("a new leader %s after the cut; the cut one stepped down after %s", elected.Round(time.Millisecond), stepped.Round(time.Millisecond))
	require.Less(t, elected, electedWithin, "the majority elected later than ticketd's election timeout allows: is nats-server still reading minElectionTimeout/maxElectionTimeout?")
	require.Less(t, stepped, 8*time.Second, "the cut leader led on: is nats-server still reading lostQuorumInterval/lostQuorumCheck?")
	pn.heal()
}
