package shared

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"ticketd/cluster/clustertest"
	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/directory"
	"ticketd/event"
	"ticketd/persistence"
)

// dirNode is one node's directory: its shared log and actor system.
type dirNode struct {
	d   *Directory
	sys *actors.System
}

// startDirectory runs a directory actor on nd with a fresh local store,
// its checkpoints due every `every` records.
func startDirectory(t *testing.T, nd *node.Node, every uint64) *dirNode {
	t.Helper()
	st := clustertest.OpenLocal(t)
	d := NewDirectory(nd, st)
	d.every = every
	sys, err := actors.Open(actors.Config{
		Event:         event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour},
		Log:           eventlog.NewLog(nd, st),
		Snapshots:     eventlog.NoSnapshots{},
		SnapshotEvery: 1 << 30,
		Directory:     d,
		Ready:         func() error { return nil },
		Logger:        clustertest.FailLog(t).With("node", nd.Name(), "part", "actors"),
	}, st, nil)
	require.NoError(t, err)
	require.NoError(t, d.Follow(sys.DirectoryChanged))
	t.Cleanup(func() { d.Close(); _ = sys.Close() })
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	require.NoError(t, sys.SyncDirectory(ctx))
	return &dirNode{d: d, sys: sys}
}

// dirStreamState is what TICKETD_DIR holds: the messages and bytes of
// each subject, and the first record of dir.log's first message.
type dirStreamState struct {
	logMsgs, ckptMsgs int
	bytes             uint64
	firstRecord       uint64
}

func readDirStream(t *testing.T, nd *node.Node) dirStreamState {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	s, err := nd.JetStream().Stream(ctx, dirStream)
	require.NoError(t, err)
	info, err := s.Info(ctx, jetstream.WithSubjectFilter("dir.>"))
	require.NoError(t, err)
	first, err := s.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(dirSubject))
	require.NoError(t, err)
	fr, err := strconv.ParseUint(first.Header.Get(eventlog.HdrFirst), 10, 64)
	require.NoError(t, err)
	return dirStreamState{logMsgs: int(info.State.Subjects[dirSubject]), ckptMsgs: int(info.State.Subjects[dirCkptSubject]),
		bytes: info.State.Bytes, firstRecord: fr}
}

// TestDirectoryCheckpoints: after many directory writes (units, keys,
// revocations) from two nodes at once, every acknowledged write is kept,
// checkpoints exist (two kept) and the log before the previous one is
// purged; a node reading the directory from nothing (a fresh store) reads
// the newest checkpoint and the records after it, authenticates every
// key and refuses every revoked one, and holds the same state as the
// writers.
func TestDirectoryCheckpoints(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, cfgs := clustertest.StartCluster(t, 3)
	const every = 25
	a, b := startDirectory(t, nodes[0], every), startDirectory(t, nodes[1], every)
	ctx, cancel := context.WithTimeout(bg, 3*time.Minute)
	defer cancel()

	var units []string
	for i := range 3 {
		u, err := a.sys.CreateUnit(ctx, fmt.Sprintf("Unit %d", i))
		require.NoError(t, err)
		units = append(units, u.ID)
	}
	// Two nodes write at once: keys, every third revoked.
	var mu sync.Mutex
	active, revoked := map[string]string{}, map[string]string{} // secret -> key id
	var wg sync.WaitGroup
	for w, nd := range []*dirNode{a, b} {
		wg.Go(func() {
			for i := range 60 {
				k, secret, err := nd.sys.CreateKey(ctx, actors.NewKeySpec{UnitID: units[i%3], Type: directory.Secret, Name: fmt.Sprintf("w%d-%d", w, i)})
				if err != nil {
					t.Logf("create key (not acknowledged): %v", err)
					continue
				}
				if i%3 == 0 {
					if _, err := nd.sys.RevokeKey(ctx, k.ID); err != nil {
						// Its outcome is unknown: checked in neither set.
						t.Logf("revoke (not acknowledged): %v", err)
						continue
					}
					mu.Lock()
					revoked[secret] = k.ID
					mu.Unlock()
					continue
				}
				mu.Lock()
				active[secret] = k.ID
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Greater(t, len(active), 60, "most writes acknowledged")
	require.Greater(t, len(revoked), 30)

	st := readDirStream(t, nodes[0])
	t.Logf("after %d units, %d keys, %d revocations: dir.log %d messages from record %d, dir.ckpt %d messages, %d bytes in %s",
		len(units), len(active)+len(revoked), len(revoked), st.logMsgs, st.firstRecord, st.ckptMsgs, st.bytes, dirStream)
	require.Equal(t, 2, st.ckptMsgs, "the newest checkpoint and the one before")
	require.Greater(t, st.firstRecord, uint64(every), "the log is purged before the previous checkpoint")
	require.LessOrEqual(t, st.logMsgs, 3*every, "the records after the previous checkpoint")

	// A node restarted on an empty data dir reads from nothing: the
	// checkpoint, then the tail.
	require.NoError(t, nodes[2].Close())
	cfgs[2].DataDir = t.TempDir()
	fresh, err := node.Start(cfgs[2])
	require.NoError(t, err)
	t.Cleanup(func() { _ = fresh.Close() })
	rctx, rcancel := context.WithTimeout(bg, 60*time.Second)
	require.NoError(t, fresh.WaitReady(rctx))
	rcancel()
	c := startDirectory(t, fresh, every)
	require.Greater(t, c.d.ckpt, uint64(0), "it started from a checkpoint")
	view := c.sys.Directory()
	for secret, id := range active {
		k, ok := view.Lookup(secret)
		require.True(t, ok, "key %s known", id)
		require.True(t, k.Active(time.Now()), "key %s authenticates", id)
	}
	for secret, id := range revoked {
		k, ok := view.Lookup(secret)
		require.True(t, ok, "key %s known", id)
		require.False(t, k.Active(time.Now()), "revoked key %s refused", id)
	}
	require.NoError(t, a.sys.SyncDirectory(ctx))
	want, err := a.sys.Directory().MarshalSnapshot()
	require.NoError(t, err)
	got, err := view.MarshalSnapshot()
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "the same state as a writer's")

	// It writes on after them, and they read it.
	u, err := c.sys.CreateUnit(ctx, "After")
	require.NoError(t, err)
	require.NoError(t, b.sys.SyncDirectory(ctx))
	_, ok := b.sys.Directory().Unit(u.ID)
	require.True(t, ok)
}

// TestDirectoryCheckpointFenced: a checkpoint is refused once a record
// was appended after the one it reflects; of two nodes checkpointing the
// same record at once, one checkpoint lands; a fresh reader restores the
// checkpoint and reads the records after it.
func TestDirectoryCheckpointFenced(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	d1, d2 := NewDirectory(nodes[0], clustertest.OpenLocal(t)), NewDirectory(nodes[1], clustertest.OpenLocal(t))
	d1.every, d2.every = 1, 1
	none := func(uint64, []byte) error { return nil }
	require.NoError(t, d1.Read(bg, none, none))
	require.NoError(t, d2.Read(bg, none, none))
	require.NoError(t, d1.Append(bg, 1, [][]byte{[]byte("one")}, nil))
	require.NoError(t, d2.Read(bg, none, none))
	require.NoError(t, d2.Append(bg, 2, [][]byte{[]byte("two")}, nil))
	require.NoError(t, d1.Read(bg, none, none))
	require.NoError(t, d2.Append(bg, 3, [][]byte{[]byte("three")}, nil))

	// d1's state is at 2, the log at 3.
	err := d1.Checkpoint(bg, 2, []byte("stale"))
	require.ErrorIs(t, err, persistence.ErrFenced)
	require.NoError(t, d1.Read(bg, none, none))

	// Both at 3, at once: one checkpoint lands.
	var wg sync.WaitGroup
	for i, d := range []*Directory{d1, d2} {
		wg.Go(func() {
			if err := d.Checkpoint(bg, 3, []byte("state at 3")); err != nil {
				t.Logf("checkpoint %d: %v", i+1, err)
			}
		})
	}
	wg.Wait()
	st := readDirStream(t, nodes[2])
	require.Equal(t, 1, st.ckptMsgs)

	require.NoError(t, d2.Append(bg, 4, [][]byte{[]byte("four")}, nil))
	d3 := NewDirectory(nodes[2], clustertest.OpenLocal(t))
	restored, recs := readCheckpointed(t, d3)
	require.Equal(t, "3:state at 3", restored)
	require.Equal(t, []string{"four"}, recs)

	// d3 falls behind two checkpoints: the records after its last one
	// read are purged, so it restores the newest checkpoint and reads on.
	for seq := uint64(5); seq <= 7; seq++ {
		require.NoError(t, d2.Append(bg, seq, [][]byte{fmt.Appendf(nil, "r%d", seq)}, nil))
		if seq < 7 {
			require.NoError(t, d2.Checkpoint(bg, seq, fmt.Appendf(nil, "state at %d", seq)))
		}
	}
	st = readDirStream(t, nodes[2])
	require.Equal(t, 2, st.ckptMsgs)
	require.Equal(t, uint64(6), st.firstRecord, "purged through the previous checkpoint (5)")
	restored, recs = readCheckpointed(t, d3)
	require.Equal(t, "6:state at 6", restored)
	require.Equal(t, []string{"r7"}, recs)
}

// readCheckpointed reads d on: the checkpoint it restored ("seq:state", ""
// when none) and the records after it.
func readCheckpointed(t *testing.T, d *Directory) (restored string, recs []string) {
	t.Helper()
	require.NoError(t, d.Read(bg, func(seq uint64, state []byte) error {
		restored = fmt.Sprintf("%d:%s", seq, state)
		return nil
	}, func(seq uint64, rec []byte) error {
		recs = append(recs, string(rec))
		return nil
	}))
	return restored, recs
}
