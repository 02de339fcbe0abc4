package routing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/cluster/clustertest"
	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"
	"ticketd/cluster/settle"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"ticketd/actors"
)

// gotMsg is what a read hands on of one message.
type gotMsg struct {
	seq  uint64
	data string
}

// readOneByOne reads subject from through end one message per request
// from the leader: the read before batching, the reference.
func readOneByOne(t *testing.T, nd *node.Node, stream, subject string, from, end uint64) []gotMsg {
	t.Helper()
	var out []gotMsg
	for next := from; next <= end; {
		m, err := node.LeaderGet(bg, nd.Conn(), stream, node.MsgGetRequest{Seq: next, NextFor: subject})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		require.NoError(t, err)
		if m.Sequence > end {
			break
		}
		next = m.Sequence + 1
		out = append(out, gotMsg{m.Sequence, string(m.Data)})
	}
	return out
}

func readBatched(t *testing.T, nd *node.Node, stream, subject string, from, end uint64) []gotMsg {
	t.Helper()
	var out []gotMsg
	require.NoError(t, node.ReadThrough(bg, nd.Conn(), stream, subject, from, end, 5*time.Second, true, func(m *jetstream.RawStreamMsg) error {
		out = append(out, gotMsg{m.Sequence, string(m.Data)})
		return nil
	}))
	return out
}

// TestReadThroughEqualsOneByOne: the batched direct read of a subject
// hands on exactly the messages, in order, that a read one message at a
// time from the leader does: with more messages than a batch holds (by
// count and by bytes), another subject's messages between them, from the
// middle, up to an end before the last, after a purge of the subject's
// start, and on a stream without direct gets (the leader alone).
func TestReadThroughEqualsOneByOne(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(bg, 2*time.Minute)
	defer cancel()
	for _, direct := range []bool{true, false} {
		name := fmt.Sprintf("TEST_DG_%v", direct)
		_, err := nodes[0].JetStream().CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"},
			Storage: jetstream.FileStorage, Replicas: 3, AllowDirect: direct, MaxMsgSize: node.MaxMessageBytes})
		require.NoError(t, err)
		a, b := name+".a", name+".b"
		const total = 2*node.DirectBatch + 600
		big := strings.Repeat("x", 3<<20)
		var acks []jetstream.PubAckFuture
		for i := range total {
			subj := a
			if i%3 == 2 {
				subj = b
			}
			data := fmt.Sprintf("m%d", i)
			if i%400 == 10 {
				data += big // a few past the batch's bytes
			}
			f, err := nodes[0].JetStream().PublishAsync(subj, []byte(data))
			require.NoError(t, err)
			acks = append(acks, f)
			if len(acks) == 256 {
				for _, f := range acks {
					select {
					case <-f.Ok():
					case err := <-f.Err():
						require.NoError(t, err)
					}
				}
				acks = acks[:0]
			}
		}
		for _, f := range acks {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				require.NoError(t, err)
			}
		}
		// The reference is read once: the leader answers it whichever
		// node's connection asks (it was read through each node, 2/3 of
		// the test's 60 s); each node's batched read is compared with it.
		end, err := node.LeaderLast(ctx, nodes[0].Conn(), name, a)
		require.NoError(t, err)
		want := readOneByOne(t, nodes[0], name, a, 1, end)
		require.Len(t, want, total-total/3)
		wantMid := readOneByOne(t, nodes[0], name, a, 1500, end-40)
		for _, nd := range nodes {
			ndEnd, err := node.LeaderLast(ctx, nd.Conn(), name, a)
			require.NoError(t, err)
			require.Equal(t, end, ndEnd)
			require.Equal(t, want, readBatched(t, nd, name, a, 1, end))
			require.Equal(t, wantMid, readBatched(t, nd, name, a, 1500, end-40))
		}
		// The subject purged below a sequence: both start at its first
		// message kept.
		st, err := nodes[0].JetStream().Stream(ctx, name)
		require.NoError(t, err)
		require.NoError(t, st.Purge(ctx, jetstream.WithPurgeSubject(a), jetstream.WithPurgeSequence(1000)))
		end, err = node.LeaderLast(ctx, nodes[0].Conn(), name, a)
		require.NoError(t, err)
		want = readOneByOne(t, nodes[0], name, a, 1, end)
		require.Greater(t, want[0].seq, uint64(999))
		for _, nd := range nodes {
			require.Equal(t, want, readBatched(t, nd, name, a, 1, end))
		}
	}
}

// TestReplayRate writes 100k records of one event (commits of 30 records,
// each its own message, as in the chaos run) and times replays of them by
// fresh logs of another node: batched direct reads against one message per
// request from the leader (the read before), in the same run, and checks
// they replay the same records. It logs the rates and asserts no time. It
// runs when TICKETD_CLUSTER_BENCH=1.
func TestReplayRate(t *testing.T) {
	if os.Getenv("TICKETD_CLUSTER_BENCH") == "" {
		t.Skip("set TICKETD_CLUSTER_BENCH=1")
	}
	const records, per = 100_000, 30
	nodes, _ := clustertest.StartCluster(t, 3)
	l := eventlog.NewLog(nodes[0], nil)
	id := "evt_replay_rate"
	w := clustertest.Claim(t, l, id, 0)
	pad := strings.Repeat("o", 200) // about an order's record
	began := time.Now()
	for from := uint64(1); from <= records; from += per {
		b := w.NewBatch()
		for s := from; s < from+per && s <= records; s++ {
			b.Append(id, s, fmt.Appendf(nil, "%s/r%d/%s", id, s, pad))
		}
		wait, err := w.CommitAsync(b)
		require.NoError(t, err)
		require.NoError(t, wait())
		b.Close()
	}
	t.Logf("wrote %d records in %d messages in %v", records, l.Stats().Messages, time.Since(began).Round(time.Millisecond))
	var want []clustertest.LogRec
	for round, oneByOne := range []bool{false, true, false, true} {
		r := eventlog.NewLog(nodes[1], nil)
		r.OneByOne = oneByOne
		var got []clustertest.LogRec
		began := time.Now()
		require.NoError(t, r.Replay(id, 0, func(seq uint64, rec []byte) error {
			got = append(got, clustertest.LogRec{Seq: seq, Rec: string(rec)})
			return nil
		}))
		took := time.Since(began)
		require.Len(t, got, records)
		if round == 0 {
			want = got
		} else {
			require.Equal(t, want, got)
		}
		t.Logf("replay (one by one from the leader: %v): %d records, %d messages in %v: %.0f records/s",
			oneByOne, len(got), r.Stats().Reads, took.Round(time.Millisecond), float64(len(got))/took.Seconds())
	}
	// A snapshot of 60 MiB read back through another node.
	state := make([]byte, 60<<20)
	for i := range state {
		state[i] = byte(i*7 + i/1000)
	}
	_, err := settle.NewSnapshots(l).SaveAndTrim("evt_replay_rate_snap", 1, state)
	require.NoError(t, err)
	for range 2 {
		began := time.Now()
		_, got, ok, err := settle.NewSnapshots(eventlog.NewLog(nodes[2], nil)).LoadNewestWith("evt_replay_rate_snap", 0)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, len(state), len(got))
		t.Logf("snapshot read of %d MiB: %v", len(got)>>20, time.Since(began).Round(time.Millisecond))
	}
}

// TestSnapshotCadenceCost drives one hot event through a 3-node cluster
// for a while with the interval growing with the event (the single
// node's rule) and with it bounded (SnapshotTailMax), scaled down
// (SnapshotEvery 5,000, bound 10,000: the ratio of cluster mode's 50,000
// and 100,000), in turn in the same run, and logs the durable orders per
// second and the snapshots taken. It asserts no time. It runs when
// TICKETD_CLUSTER_BENCH=1.
func TestSnapshotCadenceCost(t *testing.T) {
	if os.Getenv("TICKETD_CLUSTER_BENCH") == "" {
		t.Skip("set TICKETD_CLUSTER_BENCH=1")
	}
	const clients, seconds = 32, 40
	for _, tailMax := range []int{0, 10_000, 0, 10_000} {
		t.Run(fmt.Sprintf("tailmax=%d", tailMax), func(t *testing.T) {
			stacks := startStacks(t, 3, func(c *actors.Config) {
				c.SnapshotEvery, c.SnapshotTailMax = 5_000, tailMax
				c.Snapshots = nil // the replicated store
			})
			evt := stacks[0].sys.NewEventID()
			tt := sellable(t, stacks[0].sys, evt, 100_000_000)
			owner := stacks[ownerIndex(t, stacks, evt)]
			var ok atomic.Int64
			stop := time.Now().Add(seconds * time.Second)
			var wg sync.WaitGroup
			for i := range clients {
				sys := stacks[i%3].sys
				wg.Go(func() {
					for n := 0; time.Now().Before(stop); n++ {
						ctx, cancel := context.WithTimeout(bg, 10*time.Second)
						_, err := placeOrder(ctx, sys, evt, tt, i*10_000_000+n)
						cancel()
						if err == nil {
							ok.Add(1)
						}
					}
				})
			}
			wg.Wait()
			last, err := owner.log.LastSeq(evt)
			require.NoError(t, err)
			t.Logf("tail bound %d: %.0f durable orders/s over %d s, %d records, %d snapshots taken by the owner",
				tailMax, float64(ok.Load())/seconds, seconds, last, owner.sys.Metrics().Snapshots.Load())
		})
	}
}

// TestReplayReadsASmallEventsFewMessages: in a shard whose log a small
// event's first record holds back from the trim, a node with a view of
// the shard replays that event from its few messages and what came after
// the view, not from the shard's first message on; the records are the
// same, and the big event's replay still reads all of its own.
func TestReplayReadsASmallEventsFewMessages(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	l := eventlog.NewLog(nodes[0], nil)
	ids := sameShardIDs(nodes[0], "evt_sparse", 2)
	small, big := ids[0], ids[1]
	ws := clustertest.Claim(t, l, small, 0)
	wb := clustertest.Claim(t, l, big, 0)
	require.NoError(t, clustertest.CommitRecs(ws, small, 1, 1))
	const msgs = 200
	for i := range uint64(msgs) {
		require.NoError(t, clustertest.CommitRecs(wb, big, i*2+1, i*2+2))
	}
	require.NoError(t, clustertest.CommitRecs(ws, small, 2, 2))

	r := eventlog.NewLog(nodes[1], nil)
	last, err := r.LastSeq(big) // the view, read once through the shard
	require.NoError(t, err)
	require.Equal(t, uint64(2*msgs), last)
	before := r.Stats().Reads
	require.Equal(t, plainRecs(1, 2), clustertest.ReplayLog(t, r, small))
	require.LessOrEqual(t, r.Stats().Reads-before, int64(2), "the small event's two messages alone")

	for i := uint64(msgs); i < msgs+10; i++ {
		require.NoError(t, clustertest.CommitRecs(wb, big, i*2+1, i*2+2))
	}
	before = r.Stats().Reads
	require.Equal(t, plainRecs(1, 2), clustertest.ReplayLog(t, r, small))
	require.LessOrEqual(t, r.Stats().Reads-before, int64(12), "its messages and the 10 after the view")
	require.Equal(t, plainRecs(1, 2*(msgs+10)), clustertest.ReplayLog(t, r, big))
}

// plainRecs are the records commitRecs writes, from..to.
func plainRecs(from, to uint64) []clustertest.LogRec {
	var out []clustertest.LogRec
	for s := from; s <= to; s++ {
		out = append(out, clustertest.LogRec{Seq: s, Rec: fmt.Sprintf("r%d", s)})
	}
	return out
}

// TestLeaderLastWithoutMetaLeader: while JetStream answers a leader's
// message get with "temporarily unavailable" (10008: no meta leader, or
// the stream's group has none), the last sequence comes from a replica's
// direct get, not an error: a failover's load goes on (the claim's fence
// settles a lagging answer). Any other refusal stays an error. The
// JetStream API is played by subscriptions on a plain NATS server, so
// each answer is the one under test.
func TestLeaderLastWithoutMetaLeader(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	srv.Start()
	t.Cleanup(srv.Shutdown)
	require.True(t, srv.ReadyForConnections(5*time.Second))
	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)

	var apiErr atomic.Int64
	apiErr.Store(10008)
	_, err = nc.Subscribe("$JS.API.STREAM.MSG.GET.S", func(m *nats.Msg) {
		_ = m.Respond(fmt.Appendf(nil, `{"type":"io.nats.jetstream.api.v1.stream_msg_get_response","error":{"code":503,"err_code":%d,"description":"refused"}}`, apiErr.Load()))
	})
	require.NoError(t, err)
	_, err = nc.Subscribe("$JS.API.DIRECT.GET.S.ev.0.log", func(m *nats.Msg) {
		r := nats.NewMsg(m.Reply)
		r.Header.Set(jetstream.SequenceHeader, "42")
		r.Header.Set(jetstream.StreamHeader, "S")
		r.Data = []byte("x")
		_ = m.RespondMsg(r)
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	last, err := node.LeaderLast(bg, nc, "S", "ev.0.log")
	require.NoError(t, err)
	require.Equal(t, uint64(42), last, "the replica's last")

	apiErr.Store(10003) // a bad request: no fallback
	_, err = node.LeaderLast(bg, nc, "S", "ev.0.log")
	require.Error(t, err)
}

// sameShardIDs returns n event ids that live in one shard.
func sameShardIDs(nd *node.Node, prefix string, n int) []string {
	var out []string
	want := -1
	for i := 0; len(out) < n; i++ {
		id := fmt.Sprintf("%s_%d", prefix, i)
		if s := nd.Shard(id); want < 0 || s == want {
			want = s
			out = append(out, id)
		}
	}
	return out
}
