package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/directory"
	"ticketd/event"
	"ticketd/ops"
	"ticketd/persistence"
)

// memLog is a directory log in memory that several nodes share, as the
// cluster's (actors.SharedLog): appends fenced on its end.
type memLog struct {
	mu   sync.Mutex
	recs [][]byte
}

// memReader is one node's handle on a memLog; while fail is set its reads
// fail, as a node's do when it cannot reach the log's leader (no
// majority, an election, a timeout).
type memReader struct {
	log  *memLog
	pos  uint64
	fail atomic.Bool
}

var errNoLeader = errors.New("memlog: temporarily unavailable")

func (r *memReader) Read(_ context.Context, _ func(uint64, []byte) error, fn func(uint64, []byte) error) error {
	if r.fail.Load() {
		return errNoLeader
	}
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	for ; r.pos < uint64(len(r.log.recs)); r.pos++ {
		if err := fn(r.pos+1, r.log.recs[r.pos]); err != nil {
			return err
		}
	}
	return nil
}

func (r *memReader) Append(_ context.Context, first uint64, records [][]byte, _ []persistence.IndexEntry) error {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	if first != uint64(len(r.log.recs))+1 {
		return fmt.Errorf("memlog: append at %d after %d: %w", first, len(r.log.recs), persistence.ErrFenced)
	}
	r.log.recs = append(r.log.recs, records...)
	r.pos = uint64(len(r.log.recs))
	return nil
}

func (r *memReader) CheckpointDue() bool                              { return false }
func (r *memReader) Checkpoint(context.Context, uint64, []byte) error { return nil }

var _ actors.SharedLog = (*memReader)(nil)

// clock is a Config.Now a test moves.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// sharedNode opens an actor system whose directory is r.
func sharedNode(t *testing.T, r *memReader, now func() time.Time) *actors.System {
	t.Helper()
	store, err := persistence.Open(persistence.Options{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	sys, err := actors.Open(actors.Config{
		Event:     event.Config{BaseURL: "http://x", OrderHold: time.Minute, CheckoutSessionTTL: time.Hour},
		Directory: r,
		Now:       now,
		Logger:    slog.New(slog.DiscardHandler),
	}, store, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = sys.Close()
		_ = store.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, sys.SyncDirectory(ctx))
	return sys
}

// TestAuthCannotTellIsNotUnknown: in cluster mode a node that cannot read
// the directory's log never calls a key unknown (the 401) when it may
// have been made on another node: it answers "cannot tell" (the server's
// 503 DIRECTORY_UNAVAILABLE), and the key authenticates once the log can
// be read. A key it knows stops being accepted once its view is older
// than actors.DirectoryStaleAfter and it still cannot read (a revocation
// elsewhere may be missing), and a revocation is seen at the next read.
func TestAuthCannotTellIsNotUnknown(t *testing.T) {
	log := &memLog{}
	clk := newClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	ra, rb := &memReader{log: log}, &memReader{log: log}
	a, b := sharedNode(t, ra, clk.now), sharedNode(t, rb, clk.now)
	authB := newDirectoryAuth(layer(t, b))
	authB.wait = 300 * time.Millisecond // each "cannot tell" waits this long
	ctx := context.Background()

	unit, err := a.CreateUnit(ctx, "Shared")
	require.NoError(t, err)
	k, secret, err := a.CreateKey(ctx, actors.NewKeySpec{UnitID: unit.ID, Type: directory.Secret, Name: "made on a"})
	require.NoError(t, err)

	// B cannot read the log: the key made on A is neither accepted nor
	// refused.
	rb.fail.Store(true)
	p, err := authB.Authenticate(secret, clk.now())
	require.Error(t, err, "a key made on another node, checked while the log cannot be read")
	require.Nil(t, p)
	// Nor is a token nobody made: B cannot know that either.
	p, err = authB.Authenticate("sk_nobody", clk.now())
	require.Error(t, err)
	require.Nil(t, p)

	// B reads again: the key authenticates; a token nobody made is unknown.
	rb.fail.Store(false)
	p, err = authB.Authenticate(secret, clk.now())
	require.NoError(t, err)
	require.NotNil(t, p)
	require.Equal(t, k.ID, p.KeyID)
	p, err = authB.Authenticate("sk_nobody", clk.now())
	require.NoError(t, err)
	require.Nil(t, p)

	// A revokes the key while B cannot read: B's view is fresh for
	// DirectoryStaleAfter, then B cannot tell any more.
	rb.fail.Store(true)
	_, err = a.RevokeKey(ctx, k.ID)
	require.NoError(t, err)
	p, err = authB.Authenticate(secret, clk.now())
	require.NoError(t, err)
	require.NotNil(t, p, "within DirectoryStaleAfter of the last read, the view answers")
	clk.add(actors.DirectoryStaleAfter + time.Second)
	p, err = authB.Authenticate(secret, clk.now())
	require.Error(t, err, "a view older than DirectoryStaleAfter accepted a key")
	require.Nil(t, p)

	// B reads again: the revocation is seen.
	rb.fail.Store(false)
	p, err = authB.Authenticate(secret, clk.now())
	require.NoError(t, err)
	require.Nil(t, p, "the key revoked on A, checked on B after a read")
	require.False(t, b.DirectoryStale())
}

// TestPreflightOriginMadeOnAnotherNode: a CORS preflight on B for the
// origin of a publishable key made on A a moment ago (B not told yet) is
// allowed: B reads the directory's log before it says no. An origin no key
// lists stays refused, and so does every origin while B cannot read.
func TestPreflightOriginMadeOnAnotherNode(t *testing.T) {
	log := &memLog{}
	clk := newClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	ra, rb := &memReader{log: log}, &memReader{log: log}
	a, b := sharedNode(t, ra, clk.now), sharedNode(t, rb, clk.now)
	authB := newDirectoryAuth(layer(t, b))
	authB.wait = 300 * time.Millisecond
	ctx := context.Background()

	unit, err := a.CreateUnit(ctx, "Shop")
	require.NoError(t, err)
	_, _, err = a.CreateKey(ctx, actors.NewKeySpec{UnitID: unit.ID, Type: directory.Publishable, Name: "storefront",
		Origins: []string{"https://shop.example"}})
	require.NoError(t, err)

	rb.fail.Store(true)
	require.False(t, authB.OriginAllowed("https://shop.example"), "B cannot read the log: no CORS")
	rb.fail.Store(false)
	require.True(t, authB.OriginAllowed("https://shop.example"), "a key made on A a moment ago")
	require.False(t, authB.OriginAllowed("https://evil.example"))
}

// layer is the application layer over sys alone (what directoryAuth asks).
func layer(t *testing.T, sys *actors.System) *ops.Ops {
	t.Helper()
	o, err := ops.New(ops.Config{System: sys})
	require.NoError(t, err)
	return o
}
