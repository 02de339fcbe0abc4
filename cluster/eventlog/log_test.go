package eventlog

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"ticketd/cluster/clustertest"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

// TestLogFence: a writer whose event another node claimed is refused
// (ErrFenced) and nothing of its batch lands; the new writer continues
// from what it replayed, and every node reads the same records.
func TestLogFence(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	local1, local2 := clustertest.OpenLocal(t), clustertest.OpenLocal(t)
	l1, l2, l3 := NewLog(nodes[0], local1), NewLog(nodes[1], local2), NewLog(nodes[2], nil)
	const id = "evt_fence"

	require.Empty(t, clustertest.ReplayLog(t, l1, id))
	w1 := clustertest.Claim(t, l1, id, 0)
	require.True(t, errors.Is(clustertest.CommitRecs(l1, id, 1, 1), persistence.ErrFenced), "no append without a claim")
	require.NoError(t, clustertest.CommitRecs(w1, id, 1, 3, "mail/evt_fence/1"))
	require.NoError(t, clustertest.CommitRecs(w1, id, 4, 4))
	last, err := l2.LastSeq(id)
	require.NoError(t, err)
	require.Equal(t, uint64(4), last)
	// The index entries reached the committing node's local store.
	_, ok, err := local1.Get([]byte("mail/evt_fence/1"))
	require.NoError(t, err)
	require.True(t, ok)

	// Node 2 takes the event over.
	require.Len(t, clustertest.ReplayLog(t, l2, id), 4)
	w2 := clustertest.Claim(t, l2, id, 4)
	require.Greater(t, l2.Epoch(id), l1.Epoch(id))

	// The old writer is fenced: error 10071, nothing stored.
	err = clustertest.CommitRecs(w1, id, 5, 5)
	require.True(t, errors.Is(err, persistence.ErrFenced), "got %v", err)
	require.Zero(t, l1.Epoch(id))
	// And stays fenced.
	require.True(t, errors.Is(clustertest.CommitRecs(w1, id, 5, 5), persistence.ErrFenced))

	require.NoError(t, clustertest.CommitRecs(w2, id, 5, 6))
	want := []clustertest.LogRec{{Seq: 1, Rec: "r1"}, {Seq: 2, Rec: "r2"}, {Seq: 3, Rec: "r3"}, {Seq: 4, Rec: "r4"}, {Seq: 5, Rec: "r5"}, {Seq: 6, Rec: "r6"}}
	require.Equal(t, want, clustertest.ReplayLog(t, l3, id))

	// A claim made on a stale replay is refused: records were appended
	// after it.
	_, err = l1.Claim(id, 4)
	require.True(t, errors.Is(err, persistence.ErrFenced), "got %v", err)
	// Two claims of one node (an evicted actor still finishing, and its
	// new incarnation) are two writers: the newer fences the older.
	w3 := clustertest.Claim(t, l3, id, 6)
	w3b := clustertest.Claim(t, l3, id, 6)
	require.True(t, errors.Is(clustertest.CommitRecs(w3, id, 7, 7), persistence.ErrFenced))
	require.NoError(t, clustertest.CommitRecs(w3b, id, 7, 7))
	require.True(t, errors.Is(clustertest.CommitRecs(w2, id, 8, 8), persistence.ErrFenced))
}

// TestRetrySettledByMsgID: a shard message stored whose ack was lost,
// sent again unchanged (same Nats-Msg-Id and fence), is answered as a
// duplicate with its first sequence instead of 10071, and stored once.
func TestRetrySettledByMsgID(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	l := NewLog(nodes[0], nil)
	const id = "evt_dup"
	require.Empty(t, clustertest.ReplayLog(t, l, id))
	w := clustertest.Claim(t, l, id, 0).(*Claimed).Writer
	sw := w.ShardWriter
	sw.Mu.Lock()
	expected := sw.expected
	sw.Mu.Unlock()
	b := &Batch{}
	b.Append(id, 1, []byte("r1"))
	data := append([]byte{FormatV2, 'e'}, AppendField(nil, []byte(id))...)
	data = append(data, b.Ops...)
	s := l.Event(id).Shard
	seq1, err := l.publishShard(s, &flight{data: data, id: "dup-1", expected: expected})
	require.NoError(t, err)
	// The "retry", through another node's connection.
	m := nats.NewMsg(s.subject)
	m.Data = data
	m.Header.Set(jetstream.MsgIDHeader, "dup-1")
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, fmt.Sprint(expected))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a2, err := nodes[2].JetStream().PublishMsg(ctx, m)
	require.NoError(t, err)
	require.True(t, a2.Duplicate)
	require.Equal(t, seq1, a2.Sequence)
	require.Equal(t, []clustertest.LogRec{{Seq: 1, Rec: "r1"}}, clustertest.ReplayLog(t, NewLog(nodes[1], nil), id))
}
