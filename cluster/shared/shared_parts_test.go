package shared

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"ticketd/cluster/clustertest"
	"ticketd/cluster/node"
	"ticketd/idempotency"

	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

// TestDirectoryLogConflict: two nodes append at the same place of the
// directory's log; the second is refused (fenced) and writes nothing, and
// after reading the first's record it appends after it.
func TestDirectoryLogConflict(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	d1, d2 := NewDirectory(nodes[0], clustertest.OpenLocal(t)), NewDirectory(nodes[1], clustertest.OpenLocal(t))
	require.NoError(t, d1.Read(bg, nil, func(uint64, []byte) error { return nil }))
	require.NoError(t, d2.Read(bg, nil, func(uint64, []byte) error { return nil }))

	require.NoError(t, d1.Append(bg, 1, [][]byte{[]byte("one")}, []persistence.IndexEntry{{Key: []byte("mail/x"), Value: []byte("v")}}))
	v, ok, err := d1.local.Get([]byte("mail/x"))
	require.NoError(t, err)
	require.True(t, ok, "the writer keeps the entries its record owes")
	require.Equal(t, "v", string(v))
	err = d2.Append(bg, 1, [][]byte{[]byte("two")}, nil)
	require.True(t, errors.Is(err, persistence.ErrFenced), "got %v", err)

	var got []string
	require.NoError(t, d2.Read(bg, nil, func(seq uint64, rec []byte) error {
		require.Equal(t, uint64(len(got)+1), seq)
		got = append(got, string(rec))
		return nil
	}))
	require.Equal(t, []string{"one"}, got, "the refused append wrote nothing")
	require.NoError(t, d2.Append(bg, 2, [][]byte{[]byte("two")}, nil))
	// A stale caller (its state behind the log) is refused before any
	// network call.
	require.True(t, errors.Is(d1.Append(bg, 2, [][]byte{[]byte("x")}, nil), persistence.ErrFenced))

	d3 := NewDirectory(nodes[2], clustertest.OpenLocal(t))
	got = nil
	require.NoError(t, d3.Read(bg, nil, func(seq uint64, rec []byte) error {
		got = append(got, string(rec))
		return nil
	}))
	require.Equal(t, []string{"one", "two"}, got)
}

// TestIdempotencyAcrossNodes: a key claimed on one node is in flight on
// the others, its answer is replayed on the others, another request under
// it is refused, a released key runs again, and the claim of a node that
// died mid-request is taken over once it is stale.
func TestIdempotencyAcrossNodes(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	x1, x2 := NewIdempotency(nodes[0], time.Hour), NewIdempotency(nodes[1], time.Hour)
	now := time.Now()
	fp, other := [32]byte{1}, [32]byte{2}

	st, _ := x1.Begin("key_a", "k1", fp, now)
	require.Equal(t, idempotency.New, st)
	st, _ = x2.Begin("key_a", "k1", fp, now)
	require.Equal(t, idempotency.InFlight, st)
	st, _ = x2.Begin("key_a", "k1", other, now)
	require.Equal(t, idempotency.Mismatch, st)
	// Another scope never sees it.
	st, _ = x2.Begin("key_b", "k1", fp, now)
	require.Equal(t, idempotency.New, st)
	x2.Finish("key_b", "k1", nil, now)

	x1.Finish("key_a", "k1", &idempotency.StoredResponse{Status: 201, ContentType: "application/json", Body: []byte(`{"id":"evt_1"}`)}, now)
	st, resp := x2.Begin("key_a", "k1", fp, now)
	require.Equal(t, idempotency.Replay, st)
	require.Equal(t, 201, resp.Status)
	require.Equal(t, `{"id":"evt_1"}`, string(resp.Body))
	st, _ = x2.Begin("key_a", "k1", other, now)
	require.Equal(t, idempotency.Mismatch, st)
	// Past its TTL the answer is gone.
	st, _ = x2.Begin("key_a", "k1", fp, now.Add(2*time.Hour))
	require.Equal(t, idempotency.New, st)
	x2.Finish("key_a", "k1", nil, now)

	// A failed request (5xx) releases its key.
	st, _ = x1.Begin("key_a", "k2", fp, now)
	require.Equal(t, idempotency.New, st)
	x1.Finish("key_a", "k2", nil, now)
	st, _ = x2.Begin("key_a", "k2", fp, now)
	require.Equal(t, idempotency.New, st)

	// x2 dies with k2 claimed: its claim stands, then is taken over.
	x3 := NewIdempotency(nodes[2], time.Hour)
	st, _ = x3.Begin("key_a", "k2", fp, now.Add(time.Minute))
	require.Equal(t, idempotency.InFlight, st)
	st, _ = x3.Begin("key_a", "k2", fp, now.Add(idemClaimTTL+time.Second))
	require.Equal(t, idempotency.New, st)
}

// TestIdempotencyWithoutMajority: with two nodes of three gone, a key's
// stream can be neither read nor written: Begin refuses the request
// (IdemUnavailable, a 503) at its timeout instead of letting it run again
// unguarded. With a majority back, the same Begin waits out the election
// and replays the first answer.
func TestIdempotencyWithoutMajority(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, cfgs := clustertest.StartCluster(t, 3)
	x := NewIdempotency(nodes[0], time.Hour)
	now := time.Now()
	fp := [32]byte{1}
	st, _ := x.Begin("key_a", "k1", fp, now)
	require.Equal(t, idempotency.New, st)
	x.Finish("key_a", "k1", &idempotency.StoredResponse{Status: 201, ContentType: "application/json", Body: []byte(`{"id":"evt_1"}`)}, now)

	require.NoError(t, nodes[1].Close())
	require.NoError(t, nodes[2].Close())
	// A leader answers from its copy until it finds its majority lost
	// (about 4.5 s, see raft_timing.go): past that, nothing can be read.
	require.Eventually(t, func() bool {
		return !nodes[0].Server().JetStreamIsStreamLeader(node.GlobalAccount, idemStream)
	}, 15*time.Second, 50*time.Millisecond, "the lone node still leads the keys' stream")
	x.timeout = 2 * time.Second
	st, _ = x.Begin("key_a", "k1", fp, now)
	require.Equal(t, idempotency.Unavailable, st, "no majority: the key's first answer cannot be read")

	back, err := node.Start(cfgs[1])
	require.NoError(t, err)
	t.Cleanup(func() { _ = back.Close() })
	x.timeout = 60 * time.Second
	st, resp := x.Begin("key_a", "k1", fp, now)
	require.Equal(t, idempotency.Replay, st, "a majority back: the retry gets the first answer")
	require.Equal(t, `{"id":"evt_1"}`, string(resp.Body))
}

// TestKeyTokens: index keys round-trip through subject tokens.
func TestKeyTokens(t *testing.T) {
	for _, k := range []string{"ev/evt_01J", "audit/bu_1/ffff-0001", "provider-event/stripe/evt.1 x", "a*b>c", "~x"} {
		tok := node.KeyToken([]byte(k))
		require.NotContains(t, tok, ".", k)
		require.NotContains(t, tok, " ", k)
		require.NotContains(t, tok, "*", k)
		back, err := node.TokenKey(tok)
		require.NoError(t, err)
		require.Equal(t, k, string(back))
	}
}

// TestIndexPutOnceAndApplied: nodes racing to make one cluster-wide value
// all get the first one put, and it stays; PutApplied returns once the
// writer's own copy has the entry, and every node's copy follows.
func TestIndexPutOnceAndApplied(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	xs := make([]*Index, len(nodes))
	locals := make([]*persistence.Store, len(nodes))
	for i, n := range nodes {
		locals[i] = clustertest.OpenLocal(t)
		xs[i] = NewIndex(n, locals[i])
		xs[i].Follow(nil)
		t.Cleanup(xs[i].Close)
	}
	// The stream exists (the followers made it) before the race: the
	// race is of the puts.
	for i, x := range xs {
		require.Eventually(t, x.CaughtUp, 60*time.Second, 100*time.Millisecond, "node %d follows the index", i)
	}
	got := make([][]byte, len(xs))
	errs := make(chan error, len(xs))
	for i, x := range xs {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			v, err := x.PutOnce(ctx, []byte("secret/test"), []byte(fmt.Sprintf("made-by-%d", i)))
			got[i] = v
			errs <- err
		}()
	}
	for range xs {
		require.NoError(t, <-errs)
	}
	require.Contains(t, []string{"made-by-0", "made-by-1", "made-by-2"}, string(got[0]))
	for i := range got {
		require.Equal(t, string(got[0]), string(got[i]), "node %d agrees", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := xs[1].PutOnce(ctx, []byte("secret/test"), []byte("later"))
	require.NoError(t, err)
	require.Equal(t, string(got[0]), string(v), "a later try keeps the first value")

	require.NoError(t, xs[2].PutApplied(ctx, []byte("csess/abc"), []byte("v1"), time.Minute))
	lv, ok, err := locals[2].Get([]byte("csess/abc"))
	require.NoError(t, err)
	require.True(t, ok, "the writer's copy has it when PutApplied returns")
	require.Equal(t, "v1", string(lv))
	for i, local := range locals {
		require.Eventually(t, func() bool {
			v, ok, _ := local.Get([]byte("secret/test"))
			return ok && string(v) == string(got[0])
		}, 10*time.Second, 50*time.Millisecond, "node %d's copy of the secret", i)
	}
}
