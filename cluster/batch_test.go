package cluster

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

// sameShardIDs returns n event ids that live in one shard stream.
func sameShardIDs(nd *Node, prefix string, n int) []string {
	var out []string
	want := -1
	for i := 0; len(out) < n; i++ {
		id := fmt.Sprintf("%s_%d", prefix, i)
		if s := nd.shard(id); want < 0 || s == want {
			want = s
			out = append(out, id)
		}
	}
	return out
}

// pending builds the message a writer's next commit of one record sends,
// as Log.send does, for publishBatch.
func pendingFor(t *testing.T, w *writer, seq uint64) *pendingPub {
	t.Helper()
	b := &Batch{}
	b.Append(w.e.id, seq, fmt.Appendf(nil, "r%d", seq))
	p := &pendingPub{w: w, first: seq, last: seq, began: time.Now(), done: make(chan struct{})}
	w.mu.Lock()
	w.msgs++
	id := fmt.Sprintf("%s.%d.%d", w.e.subject, w.epoch, w.msgs)
	expected := w.expected
	w.mu.Unlock()
	p.m = newMsg(w.e.subject, append([]byte{formatV1}, b.ops...), id, expected, seq, seq)
	return p
}

// TestLogBatchesConcurrentEvents: the commits of many events of one
// stream, made at once, go in atomic batches; every event reads back
// exactly its records in order, and a writer fenced meanwhile is refused
// alone while the others carry on.
func TestLogBatchesConcurrentEvents(t *testing.T) {
	nodes, _ := startCluster(t, 3)
	l, other := NewLog(nodes[0], nil), NewLog(nodes[1], nil)
	ids := sameShardIDs(nodes[0], "evt_batch", 12)
	writers := make([]persistence.Log, len(ids))
	for i, id := range ids {
		writers[i] = claim(t, l, id, 0)
	}
	const commits, per = 25, 3
	victim := ids[0]
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	lastOK := make([]uint64, len(ids))
	for i, id := range ids {
		wg.Go(func() {
			for c := range uint64(commits) {
				if id == victim && c == commits/2 {
					// Another node takes this event over, mid-flight.
					if _, err := other.Claim(id, lastOK[i]); err != nil {
						errs[i] = fmt.Errorf("the takeover: %w", err)
						return
					}
				}
				if err := commitRecs(writers[i], id, c*per+1, c*per+per); err != nil {
					errs[i] = err
					return
				}
				lastOK[i] = c*per + per
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		if id == victim {
			require.True(t, errors.Is(errs[i], persistence.ErrFenced), "victim: %v", errs[i])
			continue
		}
		require.NoError(t, errs[i], id)
		got := replayLog(t, other, id)
		require.Len(t, got, commits*per, id)
		for k, r := range got {
			require.Equal(t, logRec{uint64(k + 1), fmt.Sprintf("r%d", k+1)}, r, id)
		}
	}
	// The victim's log ends where its fenced writer stopped.
	got := replayLog(t, other, victim)
	require.Len(t, got, int(lastOK[0]))
	st := l.Stats()
	require.Positive(t, st.Batches, "no commits went together: %+v", st)
	t.Logf("%+v", st)
}

// TestLogBatchFallsBack: a batch holding a fenced writer's message is
// refused whole by the server; sent again message by message, the fenced
// writer is told so and the other message is stored.
func TestLogBatchFallsBack(t *testing.T) {
	nodes, _ := startCluster(t, 3)
	l, other := NewLog(nodes[0], nil), NewLog(nodes[1], nil)
	ids := sameShardIDs(nodes[0], "evt_fb", 2)
	wa := claim(t, l, ids[0], 0).(*claimed).w
	wb := claim(t, l, ids[1], 0).(*claimed).w
	claim(t, other, ids[0], 0) // fences wa
	pa, pb := pendingFor(t, wa, 1), pendingFor(t, wb, 1)
	l.publishBatch([]*pendingPub{pa, pb})
	require.True(t, errors.Is(pa.err, persistence.ErrFenced), "got %v", pa.err)
	require.NoError(t, pb.err)
	require.Equal(t, []logRec{{1, "r1"}}, replayLog(t, other, ids[1]))
	require.Empty(t, replayLog(t, other, ids[0]))
	st := l.Stats()
	require.Equal(t, int64(1), st.Fallbacks)
	require.Zero(t, st.Batches)

	// Two writers of the next commits, unfenced, go as one batch.
	pb2 := pendingFor(t, wb, 2)
	wc := claim(t, l, ids[0], 0).(*claimed).w
	pc := pendingFor(t, wc, 1)
	l.publishBatch([]*pendingPub{pb2, pc})
	require.NoError(t, pb2.err)
	require.NoError(t, pc.err)
	require.Equal(t, int64(1), l.Stats().Batches)
	require.Equal(t, []logRec{{1, "r1"}, {2, "r2"}}, replayLog(t, other, ids[1]))
	require.Equal(t, []logRec{{1, "r1"}}, replayLog(t, other, ids[0]))
	// Each writer's fence moved to its own message's sequence.
	require.Equal(t, pb2.seq, wb.expected)
	require.Equal(t, pc.seq, wc.expected)
	require.Equal(t, pc.seq, pb2.seq+1)
}
