package routing

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ticketd/cluster/clustertest"
	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// benchSeconds is how long each load of TestThroughputRatios runs.
const benchSeconds = 5

// newSellableEvent creates a published event with one open ticket type of
// a capacity no load reaches, through sys.
func newSellableEvent(t *testing.T, sys *actors.System) (string, string) {
	t.Helper()
	evt := sys.NewEventID()
	return evt, sellable(t, sys, evt, 100_000_000)
}

// drive runs clients placing orders for benchSeconds; client i sends to
// systems[i%len] for target(i). It answers durable orders per second.
func drive(t *testing.T, systems []*actors.System, clients int, target func(i int) (string, string)) float64 {
	return driveEach(t, clients, func(i int) (*actors.System, string, string) {
		evt, tt := target(i)
		return systems[i%len(systems)], evt, tt
	})
}

// driveEach runs clients placing orders for benchSeconds, client i
// through the system and for the event and ticket type target(i) answers.
func driveEach(t *testing.T, clients int, target func(i int) (*actors.System, string, string)) float64 {
	var ok, failed atomic.Int64
	var perSecond [benchSeconds + 1]atomic.Int64 // durable orders by second of the run
	var firstErr atomic.Value
	var wg sync.WaitGroup
	began := time.Now()
	stop := began.Add(benchSeconds * time.Second)
	for i := range clients {
		sys, evt, tt := target(i)
		wg.Go(func() {
			for n := 0; time.Now().Before(stop); n++ {
				ctx, cancel := context.WithTimeout(bg, 10*time.Second)
				_, err := placeOrder(ctx, sys, evt, tt, i*1_000_000+n)
				cancel()
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ok.Add(1)
				perSecond[min(int(time.Since(began)/time.Second), benchSeconds)].Add(1)
			}
		})
	}
	wg.Wait()
	var seconds []int64
	for i := range perSecond {
		seconds = append(seconds, perSecond[i].Load())
	}
	t.Logf("durable orders by second: %v (the last: after the end, %v)", seconds, time.Since(stop).Round(time.Millisecond))
	if failed.Load() > 0 {
		// Counted, not fatal: a refusal (503) under load is an answer.
		t.Logf("%d orders refused, the first: %v", failed.Load(), firstErr.Load())
	}
	return float64(ok.Load()) / benchSeconds
}

// TestThroughputRatios measures durable orders per second of the single
// node on Pebble and of a 3-node cluster in the same run, as ratios: a
// hot event (64 clients, one event, spread over the nodes), and a drop
// of 64 events (16 clients each). It runs when TICKETD_CLUSTER_BENCH=1;
// with -count=N, each run also reports the median of the runs so far (a
// single run's ratio moves a lot on 2 cores: GC and the scheduler move
// the single node's own rate by up to 2x). The single node is closed
// before the cluster starts: in one process they share a heap, and the
// other's state would cost each its marking.
var benchRuns struct {
	hot, drop []float64
}

func TestThroughputRatios(t *testing.T) {
	if os.Getenv("TICKETD_CLUSTER_BENCH") == "" {
		t.Skip("set TICKETD_CLUSTER_BENCH=1")
	}
	const clients = 64
	store, err := persistence.Open(persistence.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	single, err := actors.Open(actors.Config{Event: event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour}},
		store, snapshots.New(store, 2))
	require.NoError(t, err)
	only := os.Getenv("TICKETD_CLUSTER_BENCH_ONLY") // "hot" or "drop": that load alone
	// The drop's clients per event (16 by default, a drop's crowd): each
	// has one order in flight, so with one or a few per event the drop
	// measures the latency of a durable order more than the throughput a
	// node can take.
	perEvent := 16
	if v, err := strconv.Atoi(os.Getenv("TICKETD_CLUSTER_BENCH_DROP_PER_EVENT")); err == nil && v > 0 {
		perEvent = v
	}
	runs := func(load string) bool { return only == "" || only == load }
	var singleHot, singleDrop, clusterHot, clusterDrop float64
	if runs("hot") {
		evt, tt := newSellableEvent(t, single)
		m := startMeter(t, nil, "single-hot")
		singleHot = drive(t, []*actors.System{single}, clients, func(int) (string, string) { return evt, tt })
		m.log(t, "single node, hot event", singleHot)
	}
	drop := make([][2]string, clients)
	if runs("drop") {
		for i := range drop {
			drop[i][0], drop[i][1] = newSellableEvent(t, single)
		}
		m := startMeter(t, nil, "single-drop")
		singleDrop = drive(t, []*actors.System{single}, clients*perEvent, func(i int) (string, string) {
			return drop[i%clients][0], drop[i%clients][1]
		})
		m.log(t, "single node, 64-event drop", singleDrop)
	}
	require.NoError(t, single.Close())
	require.NoError(t, store.Close())

	// The events spread over as many shard streams as ticketd's cluster
	// has by default, or TICKETD_CLUSTER_BENCH_SHARDS.
	shards := node.DefaultShards
	if v, err := strconv.Atoi(os.Getenv("TICKETD_CLUSTER_BENCH_SHARDS")); err == nil && v > 0 {
		shards = v
	}
	stacks := startStacksShards(t, 3, shards)
	// Measure once the leaders are spread: a move evicts actors.
	deadline := time.Now().Add(60 * time.Second)
	for !balanced(stacks) {
		require.True(t, time.Now().Before(deadline), "leaders not spread")
		time.Sleep(200 * time.Millisecond)
	}
	systems := []*actors.System{stacks[0].sys, stacks[1].sys, stacks[2].sys}
	// route is where client i sends: spread over the nodes like a load
	// balancer would, or (TICKETD_CLUSTER_BENCH_DIRECT=1) to the event's
	// owner like a client that knows the placement.
	route := func(evt string) []*actors.System {
		if os.Getenv("TICKETD_CLUSTER_BENCH_DIRECT") != "" {
			return []*actors.System{stacks[ownerIndex(t, stacks, evt)].sys}
		}
		return systems
	}
	if runs("hot") {
		evt, tt := newSellableEvent(t, stacks[0].sys)
		m := startMeter(t, stacks, "hot")
		clusterHot = drive(t, route(evt), clients, func(int) (string, string) { return evt, tt })
		m.log(t, "cluster, hot event", clusterHot)
	}
	if runs("drop") {
		for i := range drop {
			drop[i][0], drop[i][1] = newSellableEvent(t, stacks[i%3].sys)
		}
		m := startMeter(t, stacks, "drop")
		clusterDrop = driveEach(t, clients*perEvent, func(i int) (*actors.System, string, string) {
			d := drop[i%clients]
			return route(d[0])[i%len(route(d[0]))], d[0], d[1]
		})
		m.log(t, "cluster, 64-event drop", clusterDrop)
	}

	report := fmt.Sprintf("hot event: single %.0f/s, cluster %.0f/s, ratio %.2f; 64-event drop (%d clients per event): single %.0f/s, cluster %.0f/s, ratio %.2f",
		singleHot, clusterHot, clusterHot/singleHot, perEvent, singleDrop, clusterDrop, clusterDrop/singleDrop)
	t.Log(report)
	if runs("hot") {
		benchRuns.hot = append(benchRuns.hot, clusterHot/singleHot)
	}
	if runs("drop") {
		benchRuns.drop = append(benchRuns.drop, clusterDrop/singleDrop)
	}
	t.Logf("after %d run(s): hot event ratio %s; 64-event drop ratio %s", max(len(benchRuns.hot), len(benchRuns.drop)),
		medianOf(benchRuns.hot), medianOf(benchRuns.drop))
}

// medianOf says the median of ratios, and their range when more than one.
func medianOf(ratios []float64) string {
	if len(ratios) == 0 {
		return "-"
	}
	r := slices.Clone(ratios)
	slices.Sort(r)
	mid := r[len(r)/2]
	if len(r)%2 == 0 {
		mid = (r[len(r)/2-1] + r[len(r)/2]) / 2
	}
	if len(r) == 1 {
		return fmt.Sprintf("%.2f", mid)
	}
	return fmt.Sprintf("median %.2f (%.2f-%.2f)", mid, r[0], r[len(r)-1])
}

// meter measures a cluster load: the process's CPU time against the wall
// clock, and what the nodes' logs appended.
type meter struct {
	stacks  []*stack
	began   time.Time
	cpu     time.Duration
	stats   []eventlog.LogStats
	fwd     [][8]int64 // per stack: forwarded requests, their batches, answers, theirs, fwdStats' times, and batches over connections
	profile *os.File
}

func startMeter(t *testing.T, stacks []*stack, load string) *meter {
	m := &meter{stacks: stacks, began: time.Now(), cpu: processCPU()}
	if path := os.Getenv("TICKETD_CLUSTER_BENCH_CPU"); path != "" {
		// The CPU profile of the whole process (every node and the load)
		// during this load, in path.<load>.
		f, err := os.Create(path + "." + load)
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(f))
		m.profile = f
	}
	if path := os.Getenv("TICKETD_CLUSTER_BENCH_TRACE"); path != "" {
		// An execution trace (go tool trace) of this load's first second,
		// in path.<load>: where a forwarded order waits.
		f, err := os.Create(path + "." + load)
		require.NoError(t, err)
		require.NoError(t, trace.Start(f))
		time.AfterFunc(time.Second, func() { trace.Stop(); _ = f.Close() })
	}
	for _, s := range stacks {
		m.stats = append(m.stats, s.log.Stats())
		f := &s.router.fwd
		m.fwd = append(m.fwd, [8]int64{f.requests.Load(), f.batches.Load(), f.answers.Load(), f.answerBatches.Load(),
			f.roundNanos.Load(), f.roundCount.Load(), f.serveNanos.Load(), f.connBatches.Load()})
	}
	return m
}

func (m *meter) log(t *testing.T, what string, perSecond float64) {
	if m.profile != nil {
		pprof.StopCPUProfile()
		_ = m.profile.Close()
	}
	wall := time.Since(m.began)
	cpu := processCPU() - m.cpu
	orders := perSecond * benchSeconds
	line := fmt.Sprintf("%s: %.0f orders/s; the process used %.2f cores, %.0f µs of CPU per order",
		what, perSecond, cpu.Seconds()/wall.Seconds(), float64(cpu.Microseconds())/max(orders, 1))
	if len(m.stacks) == 0 {
		t.Log(line)
		return
	}
	var d eventlog.LogStats
	var reqs, batches, answers, answerBatches, round, rounds, serve, overConn int64
	for i, s := range m.stacks {
		reqs += s.router.fwd.requests.Load() - m.fwd[i][0]
		batches += s.router.fwd.batches.Load() - m.fwd[i][1]
		answers += s.router.fwd.answers.Load() - m.fwd[i][2]
		answerBatches += s.router.fwd.answerBatches.Load() - m.fwd[i][3]
		round += s.router.fwd.roundNanos.Load() - m.fwd[i][4]
		rounds += s.router.fwd.roundCount.Load() - m.fwd[i][5]
		serve += s.router.fwd.serveNanos.Load() - m.fwd[i][6]
		overConn += s.router.fwd.connBatches.Load() - m.fwd[i][7]
		st := s.log.Stats()
		d.Messages += st.Messages - m.stats[i].Messages
		d.Bytes += st.Bytes - m.stats[i].Bytes
		d.Records += st.Records - m.stats[i].Records
		d.AckWait += st.AckWait - m.stats[i].AckWait
		d.Linger += st.Linger - m.stats[i].Linger
		d.Retries += st.Retries - m.stats[i].Retries
		d.Claims += st.Claims - m.stats[i].Claims
		d.Commits += st.Commits - m.stats[i].Commits
	}
	t.Logf("%s; %.0f shard messages/s, %.1f records and %.1f commits per message, %.0f bytes a record, %v from a message's send to its ack, %v held for commits to come back, %d publishes retried, %d claims",
		line, float64(d.Messages)/wall.Seconds(), float64(d.Records)/float64(max(d.Messages, 1)),
		float64(d.Commits)/float64(max(d.Messages, 1)), float64(d.Bytes)/float64(max(d.Records, 1)),
		(d.AckWait / time.Duration(max(d.Messages, 1))).Round(10*time.Microsecond),
		(d.Linger / time.Duration(max(d.Messages, 1))).Round(10*time.Microsecond), d.Retries, d.Claims)
	t.Logf("%s: %.0f requests forwarded/s, %.1f per message, %.0f%% of the messages over forwarding connections; %.1f answers per message; %v from a request's send to its answer, %v of it on the owner (from its batch's arrival)", what,
		float64(reqs)/wall.Seconds(), float64(reqs)/float64(max(batches, 1)), 100*float64(overConn)/float64(max(batches, 1)), float64(answers)/float64(max(answerBatches, 1)),
		(time.Duration(round) / time.Duration(max(rounds, 1))).Round(10*time.Microsecond),
		(time.Duration(serve) / time.Duration(max(answers, 1))).Round(10*time.Microsecond))
}

// processCPU is the user and system time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// balanced reports whether the shards' leaders are spread over the stacks.
func balanced(stacks []*stack) bool {
	nodes := make([]*node.Node, len(stacks))
	for i, s := range stacks {
		nodes[i] = s.node
	}
	return clustertest.Spread(nodes)
}
