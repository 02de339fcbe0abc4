package cluster

import (
	"sync"
	"time"
	_ "unsafe" // go:linkname
)

// nats-server elects a Raft leader after 4 to 9 s without one, heartbeats
// every second, and offers no setting for either: after a node's loss, its
// shards' writes wait for that. ticketd shortens both, once per process,
// before its server makes its first Raft group: a follower campaigns after
// ElectionTimeout to twice that without a heartbeat, and a leader sends one
// at least every ElectionTimeout/4. Safety never depends on these timings
// (the log's fence keeps one writer); too short a timeout on a starved
// machine only elects more often. The names are checked at link time: a
// nats-server that renames them fails the build, never silently.

//go:linkname raftMinElection github.com/nats-io/nats-server/v2/server.minElectionTimeout
var raftMinElection time.Duration

//go:linkname raftMaxElection github.com/nats-io/nats-server/v2/server.maxElectionTimeout
var raftMaxElection time.Duration

//go:linkname raftHeartbeat github.com/nats-io/nats-server/v2/server.hbInterval
var raftHeartbeat time.Duration

var raftTimingOnce sync.Once

// setRaftTiming sets the election timeout of every Raft group of the
// process: the first node started decides (the settings are the server
// package's, shared by every server in the process).
func setRaftTiming(election time.Duration) {
	raftTimingOnce.Do(func() {
		raftMinElection = election
		raftMaxElection = 2 * election
		raftHeartbeat = election / 4
	})
}
