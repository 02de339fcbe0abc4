package node

import (
	"testing"
	"time"
)

// raftUpgradeHelp says what to do when TestRaftInternals fails.
const raftUpgradeHelp = "nats-server's Raft internals changed (an upgrade?). Read server/raft.go of the new version: " +
	"if it has a setting for the election timeout, heartbeat and lost-quorum interval, use it and delete raft_timing.go; " +
	"else make the go:linkname lines of raft_timing.go name the variables the server reads now, check they are still " +
	"time.Duration read at each election, heartbeat and quorum check, update the defaults in this test, and run " +
	"TestRaftTimingApplied (package routing)"

// TestRaftInternals fails loudly, naming the symbol, when a variable that
// raft_timing.go links into nats-server no longer holds what it held in
// v2.15.2 before ticketd set it: a variable renamed away (the link then
// points at nothing the server reads), retyped (the bytes read as a
// Duration are something else) or given another default (its meaning
// may have changed).
func TestRaftInternals(t *testing.T) {
	want := []struct {
		symbol string
		got    time.Duration
		want   time.Duration
	}{
		{"server.minElectionTimeout", serverRaftTiming.MinElection, 4 * time.Second},
		{"server.maxElectionTimeout", serverRaftTiming.MaxElection, 9 * time.Second},
		{"server.hbInterval", serverRaftTiming.Heartbeat, time.Second},
		{"server.lostQuorumInterval", serverRaftTiming.LostQuorum, 10 * time.Second},
		{"server.lostQuorumCheck", serverRaftTiming.LostQuorumCheck, 10 * time.Second},
	}
	for _, w := range want {
		if w.got != w.want {
			t.Errorf("%s is %v (%d) before ticketd sets it, was %v in nats-server v2.15.2.\n%s", w.symbol, w.got, int64(w.got), w.want, raftUpgradeHelp)
		}
	}
}

// TestRaftTimingSet: a started node sets the five variables from its
// ElectionTimeout (the first node of the process decides).
func TestRaftTimingSet(t *testing.T) {
	t.Parallel()
	startCluster(t, 3)
	const e = 2 * time.Second // Config's default: no test of the package sets another
	got := CurrentRaftTiming()
	want := RaftTiming{MinElection: e, MaxElection: 2 * e, Heartbeat: e / 4, LostQuorum: 2 * e, LostQuorumCheck: e / 4}
	if got != want {
		t.Fatalf("Raft timing %+v after a node started with election timeout %v, want %+v.\n%s", got, e, want, raftUpgradeHelp)
	}
}
