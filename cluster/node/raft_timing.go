package node

import (
	"sync"
	"time"
	_ "unsafe" // go:linkname
)

// nats-server elects a Raft leader after 4 to 9 s without one, heartbeats
// every second, and offers no setting for either (checked in v2.15.2:
// they are package variables of server/raft.go, read by no option): after
// a node's loss, its shards' writes wait for that. ticketd shortens both,
// once per process, before its server makes its first Raft group: a
// follower campaigns after ElectionTimeout to twice that without a
// heartbeat, and a leader sends one at least every ElectionTimeout/4.
// Safety never depends on these timings (the log's fence keeps one
// writer); too short a timeout on a starved machine only elects more
// often. A leader cut off from its followers (a network partition) steps
// down once it has heard from no majority for lostQuorumInterval, looked
// at every lostQuorumCheck: 10 s and 10 s by default, so for up to 20 s it
// still took itself for the leader while the majority had elected
// another, and its node kept owning the shard's events (appends failing)
// and answering the directory's reads from its own copy. ticketd sets
// them to the longest election timeout and a heartbeat: it steps down
// about when the others elect (TestPartitionedOwner).
//
// go:linkname checks no type and no meaning, and a variable the server
// drops fails the build only if the linker finds no symbol. What catches
// an upgrade: TestRaftInternals (this package) asserts the five
// variables' defaults as this process read them before setting any, so a
// renamed, retyped or re-defaulted variable fails it by name; and
// TestRaftTimingApplied (package routing) measures elections and
// step-downs against the server's own timing, so a server that keeps the
// variables but stops reading them fails it.

//go:linkname raftMinElection github.com/nats-io/nats-server/v2/server.minElectionTimeout
var raftMinElection time.Duration

//go:linkname raftMaxElection github.com/nats-io/nats-server/v2/server.maxElectionTimeout
var raftMaxElection time.Duration

//go:linkname raftHeartbeat github.com/nats-io/nats-server/v2/server.hbInterval
var raftHeartbeat time.Duration

//go:linkname raftLostQuorum github.com/nats-io/nats-server/v2/server.lostQuorumInterval
var raftLostQuorum time.Duration

//go:linkname raftLostQuorumCheck github.com/nats-io/nats-server/v2/server.lostQuorumCheck
var raftLostQuorumCheck time.Duration

// RaftTiming is the Raft timing of every server in the process, as the
// variables raft_timing.go links hold it.
type RaftTiming struct {
	MinElection, MaxElection, Heartbeat, LostQuorum, LostQuorumCheck time.Duration
}

func currentRaftTiming() RaftTiming {
	return RaftTiming{raftMinElection, raftMaxElection, raftHeartbeat, raftLostQuorum, raftLostQuorumCheck}
}

// serverRaftTiming is the timing as nats-server initialised it, read
// before any node of the process sets it (package variables are
// initialised after those of the packages they import).
var serverRaftTiming = currentRaftTiming()

// CurrentRaftTiming answers the Raft timing in effect in the process.
func CurrentRaftTiming() RaftTiming { return currentRaftTiming() }

var raftTimingOnce sync.Once

// setRaftTiming sets the election timeout of every Raft group of the
// process: the first node started decides (the settings are the server
// package's, shared by every server in the process).
func setRaftTiming(election time.Duration) {
	raftTimingOnce.Do(func() {
		raftMinElection = election
		raftMaxElection = 2 * election
		raftHeartbeat = election / 4
		raftLostQuorum = 2 * election
		raftLostQuorumCheck = election / 4
	})
}
