package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/cluster/clustertest"
	"ticketd/cluster/node"

	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

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

// commitAsync starts a commit of records from..to of id (record "<id>/r<seq>")
// with an index entry per record, and returns its wait.
func commitAsync(t *testing.T, l persistence.Log, id string, from, to uint64) func() error {
	t.Helper()
	b := l.NewBatch()
	for s := from; s <= to; s++ {
		b.Append(id, s, fmt.Appendf(nil, "%s/r%d", id, s))
		b.Put(fmt.Appendf(nil, "mail/%s/%d", id, s), []byte("v"))
	}
	wait, err := l.CommitAsync(b)
	require.NoError(t, err)
	return func() error { defer b.Close(); return wait() }
}

func wantRecs(id string, from, to uint64) []clustertest.LogRec {
	var out []clustertest.LogRec
	for s := from; s <= to; s++ {
		out = append(out, clustertest.LogRec{Seq: s, Rec: fmt.Sprintf("%s/r%d", id, s)})
	}
	return out
}

// TestShardLogGroupsEvents: the commits of several events of a shard
// waiting together go in one message; every event replays exactly its
// records in order, its index entries reach the local store, and a commit
// above maxMessageBytes is split over messages and replays whole.
func TestShardLogGroupsEvents(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	local := clustertest.OpenLocal(t)
	l := NewLog(nodes[0], local)
	ids := sameShardIDs(nodes[0], "evt_group", 8)
	ws := make([]persistence.Log, len(ids))
	for i, id := range ids {
		require.Empty(t, clustertest.ReplayLog(t, l, id))
		ws[i] = clustertest.Claim(t, l, id, 0)
	}
	before := l.Stats()
	const rounds, per = 10, 3
	var waits []func() error
	for r := range uint64(rounds) {
		for i, id := range ids {
			// Interleaved: every event's commits queued behind the others'.
			waits = append(waits, commitAsync(t, ws[i], id, r*per+1, r*per+per))
		}
		if r%2 == 1 {
			// A few commits in flight at once per event (MaxInFlight).
			for _, w := range waits {
				require.NoError(t, w())
			}
			waits = nil
		}
	}
	for _, w := range waits {
		require.NoError(t, w())
	}
	st := l.Stats()
	commits, msgs := st.Commits-before.Commits, st.Messages-before.Messages
	require.Equal(t, int64(rounds*len(ids)), commits)
	require.Less(t, msgs, commits/2, "commits of several events share messages: %+v", st)
	t.Logf("%d commits in %d messages", commits, msgs)

	other := NewLog(nodes[1], nil)
	for _, id := range ids {
		require.Equal(t, wantRecs(id, 1, rounds*per), clustertest.ReplayLog(t, other, id), id)
		last, err := other.LastSeq(id)
		require.NoError(t, err)
		require.Equal(t, uint64(rounds*per), last)
		first, err := other.FirstSeq(id)
		require.NoError(t, err)
		require.Equal(t, uint64(1), first)
		_, ok, err := local.Get(fmt.Appendf(nil, "mail/%s/%d", id, rounds*per))
		require.NoError(t, err)
		require.True(t, ok, "index entries applied")
	}

	// A commit of 5 MiB: split, stored, replayed whole.
	big := strings.Repeat("x", 1<<20)
	b := ws[0].NewBatch()
	for s := uint64(rounds*per + 1); s <= rounds*per+5; s++ {
		b.Append(ids[0], s, []byte(big))
	}
	m0 := l.Stats().Messages
	wait, err := ws[0].CommitAsync(b)
	require.NoError(t, err)
	require.NoError(t, wait())
	b.Close()
	require.GreaterOrEqual(t, l.Stats().Messages-m0, int64(2), "split")
	n := 0
	require.NoError(t, other.Replay(ids[0], rounds*per, func(seq uint64, rec []byte) error {
		n++
		require.Equal(t, uint64(rounds*per+n), seq)
		require.Len(t, rec, 1<<20)
		return nil
	}))
	require.Equal(t, 5, n)
}

// TestShardLogLingers: the commits a message answered, each event's next
// sent at once (a drop: one commit in flight per event), go together in
// the next message: the writer holds it until they are back instead of
// sending the first alone and leaving the rest a whole flight behind.
func TestShardLogLingers(t *testing.T) {
	nodes, _ := clustertest.StartCluster(t, 3)
	l := NewLog(nodes[0], nil)
	ids := sameShardIDs(nodes[0], "evt_linger", 8)
	ws := make([]persistence.Log, len(ids))
	for i, id := range ids {
		ws[i] = clustertest.Claim(t, l, id, 0)
	}
	const rounds = 20
	before := l.Stats()
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		// One client per event, each sending its next commit once the
		// last is answered.
		wg.Go(func() {
			for r := range uint64(rounds) {
				if errs[i] = commitAsync(t, ws[i], id, r+1, r+1)(); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	st := l.Stats()
	msgs := st.Messages - before.Messages
	t.Logf("%d commits of %d events in %d messages, %v held", rounds*len(ids), len(ids), msgs, st.Linger-before.Linger)
	// A few messages may go short (a client late past the linger), most
	// carry every event.
	require.LessOrEqual(t, msgs, int64(rounds+rounds/2))
	other := NewLog(nodes[1], nil)
	for _, id := range ids {
		require.Equal(t, wantRecs(id, 1, rounds), clustertest.ReplayLog(t, other, id), id)
	}
}

// TestShardLogFence: another node's claim of one event fences the first
// node's writer of the shard for every event: its commits in flight and
// later answer ErrFenced and nothing of them is stored; the new owner's
// replay has every acknowledged record. On one node, a newer claim fences
// the older incarnation alone.
func TestShardLogFence(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	l1, l2 := NewLog(nodes[0], nil), NewLog(nodes[1], nil)
	ids := sameShardIDs(nodes[0], "evt_sfence", 2)
	a, b := ids[0], ids[1]
	wa, wb := clustertest.Claim(t, l1, a, 0), clustertest.Claim(t, l1, b, 0)
	require.NoError(t, commitAsync(t, wa, a, 1, 2)())
	require.NoError(t, commitAsync(t, wb, b, 1, 2)())

	// Node 2 takes a over.
	require.Equal(t, wantRecs(a, 1, 2), clustertest.ReplayLog(t, l2, a))
	wa2 := clustertest.Claim(t, l2, a, 2)
	require.Greater(t, l2.Epoch(a), l1.Epoch(a))
	// Node 1's writer of the shard is fenced, for b too: nothing stored.
	errA, errB := commitAsync(t, wa, a, 3, 3)(), commitAsync(t, wb, b, 3, 3)()
	require.True(t, errors.Is(errA, persistence.ErrFenced) || errors.Is(errB, persistence.ErrFenced), "%v %v", errA, errB)
	require.True(t, errors.Is(commitAsync(t, wb, b, 3, 3)(), persistence.ErrFenced))
	require.True(t, errors.Is(commitAsync(t, wa, a, 3, 3)(), persistence.ErrFenced))
	require.Zero(t, l1.Epoch(a))
	require.Zero(t, l1.Epoch(b))
	require.NoError(t, commitAsync(t, wa2, a, 3, 4)())
	require.Equal(t, wantRecs(a, 1, 4), clustertest.ReplayLog(t, NewLog(nodes[2], nil), a))
	require.Equal(t, wantRecs(b, 1, 2), clustertest.ReplayLog(t, NewLog(nodes[2], nil), b))

	// Node 1 claims b again (a new writer): a claim on a replay that
	// misses records is refused, one on the current replay wins.
	_, err := l1.Claim(b, 1)
	require.True(t, errors.Is(err, persistence.ErrFenced), "got %v", err)
	require.Equal(t, wantRecs(b, 1, 2), clustertest.ReplayLog(t, l1, b))
	wb2 := clustertest.Claim(t, l1, b, 2)
	// Two incarnations of b on node 1: the newer fences the older alone;
	// the older's commit queued before the newer claim makes that claim
	// fail (records after its replay).
	wb3 := clustertest.Claim(t, l1, b, 2)
	require.True(t, errors.Is(commitAsync(t, wb2, b, 3, 3)(), persistence.ErrFenced))
	require.NoError(t, commitAsync(t, wb3, b, 3, 3)())
	wait := commitAsync(t, wb3, b, 4, 4)
	_, err = l1.Claim(b, 3)
	require.True(t, errors.Is(err, persistence.ErrFenced), "got %v", err)
	require.NoError(t, wait())
	// Node 2's writer, fenced by node 1's claims, refuses a's next commit.
	require.True(t, errors.Is(commitAsync(t, wa2, a, 5, 5)(), persistence.ErrFenced))
	require.Equal(t, wantRecs(b, 1, 4), clustertest.ReplayLog(t, l2, b))
	require.Equal(t, wantRecs(a, 1, 4), clustertest.ReplayLog(t, l2, a))
}

// TestShardLogTrim: a trim purges only the messages no event needs: an
// event without a snapshot known holds it back, and every event replays
// every record after its older snapshot kept.
func TestShardLogTrim(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	l := NewLog(nodes[0], nil)
	ids := sameShardIDs(nodes[0], "evt_trim", 2)
	a, b := ids[0], ids[1]
	wa, wb := clustertest.Claim(t, l, a, 0), clustertest.Claim(t, l, b, 0)
	for r := range uint64(10) {
		require.NoError(t, commitAsync(t, wa, a, r*2+1, r*2+2)())
		if r < 3 {
			require.NoError(t, commitAsync(t, wb, b, r+1, r+1)())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	firstMsg := func() uint64 {
		st, err := nodes[0].JetStream().Stream(ctx, node.StreamName(nodes[0].Shard(a)))
		require.NoError(t, err)
		info, err := st.Info(ctx)
		require.NoError(t, err)
		return info.State.FirstSeq
	}
	sh := l.Event(b).Shard
	sh.vmu.Lock()
	bFirst := sh.events[b].marks[0].sseq
	sh.vmu.Unlock()
	// a is covered through 16; b has no snapshot: b's first message holds
	// the trim (what is before it goes).
	require.NoError(t, l.Trim(ctx, a, 16))
	start := firstMsg()
	require.Equal(t, bFirst, start, "b holds the trim")
	require.Equal(t, wantRecs(b, 1, 3), clustertest.ReplayLog(t, NewLog(nodes[2], nil), b))
	// b covered through 2: the messages before b's record 3 and a's 17 go.
	require.NoError(t, l.Trim(ctx, b, 2))
	require.Greater(t, firstMsg(), start)
	other := NewLog(nodes[1], nil)
	var got []clustertest.LogRec
	require.NoError(t, other.Replay(a, 16, func(seq uint64, rec []byte) error {
		got = append(got, clustertest.LogRec{Seq: seq, Rec: string(rec)})
		return nil
	}))
	require.Equal(t, wantRecs(a, 17, 20), got)
	got = nil
	require.NoError(t, other.Replay(b, 2, func(seq uint64, rec []byte) error {
		got = append(got, clustertest.LogRec{Seq: seq, Rec: string(rec)})
		return nil
	}))
	require.Equal(t, wantRecs(b, 3, 3), got)
	first, err := other.FirstSeq(b)
	require.NoError(t, err)
	require.LessOrEqual(t, first, uint64(3))
	first, err = other.FirstSeq(a)
	require.NoError(t, err)
	require.LessOrEqual(t, first, uint64(17))
	last, err := other.LastSeq(a)
	require.NoError(t, err)
	require.Equal(t, uint64(20), last)
}

// TestReplaySharedPass: the replays of a shard's events made at once share
// read passes, and each gets exactly its records.
func TestReplaySharedPass(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	l := NewLog(nodes[0], nil)
	ids := sameShardIDs(nodes[0], "evt_pass", 16)
	for _, id := range ids {
		w := clustertest.Claim(t, l, id, 0)
		require.NoError(t, commitAsync(t, w, id, 1, 5)())
	}
	other := NewLog(nodes[1], nil)
	var wg sync.WaitGroup
	got := make([][]clustertest.LogRec, len(ids))
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Go(func() {
			errs[i] = other.Replay(id, 0, func(seq uint64, rec []byte) error {
				got[i] = append(got[i], clustertest.LogRec{Seq: seq, Rec: string(rec)})
				return nil
			})
		})
	}
	wg.Wait()
	for i, id := range ids {
		require.NoError(t, errs[i])
		require.Equal(t, wantRecs(id, 1, 5), got[i], id)
	}
	st := other.Stats()
	require.Less(t, st.Passes, int64(len(ids)), "replays shared passes: %+v", st)
	t.Logf("%d replays in %d passes, %d messages read", len(ids), st.Passes, st.Reads)
}

// TestHolders: the trimmer settles the events that hold the trim more
// than lag messages back and are idle or small; a busy big event, or one
// whose records after its older snapshot are recent, is left alone.
func TestHolders(t *testing.T) {
	s := &shardLog{viewed: true, seen: 1000, events: map[string]*evView{
		// never snapshotted, idle since message 10
		"idle": {last: 5, marks: []mark{{1, 3, 5}, {4, 5, 10}}},
		// small, still changing: its first records hold the trim
		"small": {last: 40, marks: []mark{{1, 20, 20}, {21, 40, 990}}},
		// big and busy: its older snapshot's records are far back
		"busy": {last: 500_000, keep: 100_000, marks: []mark{{99_000, 100_200, 30}, {100_201, 500_000, 999}}},
		// big, idle since message 300
		"bigidle": {last: 400_000, keep: 300_000, marks: []mark{{299_000, 300_100, 40}, {300_101, 400_000, 300}}},
		// settled: every record covered
		"settled": {last: 9, keep: 9, marks: []mark{{1, 9, 2}}},
		// holds, but not by more than lag
		"recent": {last: 3, marks: []mark{{1, 3, 950}}},
	}}
	seen, hs := s.Holders(100, 10_000, 16)
	require.Equal(t, uint64(1000), seen)
	var got []string
	for _, h := range hs {
		got = append(got, h.Event)
	}
	require.Equal(t, []string{"idle", "small", "bigidle"}, got, "oldest need first")
	require.Equal(t, Holder{Event: "idle", Last: 5, Need: 5}, hs[0])
	_, hs = s.Holders(100, 10_000, 2)
	require.Len(t, hs, 2)
}
