// Package pace paces background work by its own process's load, and
// counts the work's progress.
//
// A cluster node builds the state of an event it is about to take over
// (actors.System.Preload) and fetches its change feed
// (cluster/settle.Feeds.Prefetch) while the event's owner still serves
// it. That work must never make the node's own requests wait, but in
// production the taker is another machine, usually idle: a fixed duty
// cycle (it was 2 ms of work, 2 ms asleep) only made a planned move
// slower (a 1.2M-order event's preload and feed prefetch took 126 s,
// longer than the leaving owner waited: bench/results/20261129-moves2.md,
// run 9). A Pacer instead runs at full speed while nothing else in its
// process waits for a core, and pauses while something does: it reads
// the Go scheduler's latencies (runtime/metrics /sched/latencies:seconds,
// how long runnable goroutines waited for a P, which includes the wait
// for the operating system to run the thread that serves it, so a core
// taken by another process shows too) and the goroutines runnable now,
// and Next, a pure function, grows the pause after each slice of work
// while they say the process is contended (2 ms, then 4 ms after each 2
// ms of work: a third of a core) and shrinks it to nothing while they say
// it is idle. Time the caller spent waiting between two yields (a read
// over the network) is not work: it starts a new slice.
//
// Progress counts what a piece of background work has done (snapshot
// chunks read and decode steps, log records replayed, feed entries read)
// for a waiter that keeps waiting only while it advances: a leaving owner
// waits for its taker's preload as long as the taker reports progress
// (cluster/routing, leave.go).
//
// # Concurrency
//
// A Pacer belongs to one goroutine. Progress is safe for concurrent use.
package pace
