package outbox_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/outbox"
	"ticketd/persistence"
)

func TestBackoffIsBoundedAndJittered(t *testing.T) {
	for n := 1; n <= 40; n++ {
		d := outbox.Backoff(n, 100*time.Millisecond, time.Second)
		want := min(100*time.Millisecond<<min(n-1, 20), time.Second)
		require.GreaterOrEqual(t, d, want/2, "n=%d", n)
		require.LessOrEqual(t, d, want, "n=%d", n)
	}
}

func openStore(t *testing.T, dir string) *persistence.Store {
	t.Helper()
	s, err := persistence.Open(persistence.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return s
}

func commit(t *testing.T, s *persistence.Store, fn func(b *persistence.Batch)) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	fn(b)
	require.NoError(t, s.Commit(b))
}

// TestQueueStatesSurviveARestart walks entries through every state on a
// real store, reopens it, and finds each where it was.
func TestQueueStatesSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	q, err := outbox.NewQueue(s, "test", "in/")
	require.NoError(t, err)
	for _, id := range []string{"a/1", "b/1", "c/1", "d/1"} {
		commit(t, s, func(b *persistence.Batch) { b.Put([]byte("in/"+id), []byte("value of "+id)) })
	}
	var fresh []outbox.Entry
	full, err := q.Fresh(10, func(e outbox.Entry) { fresh = append(fresh, e) })
	require.NoError(t, err)
	require.False(t, full)
	require.Len(t, fresh, 4)
	now := time.Unix(1_800_000_000, 0)
	commit(t, s, func(b *persistence.Batch) {
		q.Done(b, fresh[0])
		_, err := q.Retry(b, fresh[1], now.Add(time.Minute), now, "450 greylisted")
		require.NoError(t, err)
		_, err = q.Park(b, fresh[2], now, "550 no such user")
		require.NoError(t, err)
	})
	require.NoError(t, s.Close())

	s = openStore(t, dir)
	defer s.Close()
	q, err = outbox.NewQueue(s, "test", "in/")
	require.NoError(t, err)
	all, err := q.List("", 10)
	require.NoError(t, err)
	require.Len(t, all, 3)
	require.Equal(t, "b/1", all[0].ID)
	require.Equal(t, outbox.Retrying, all[0].State)
	require.Equal(t, 1, all[0].Attempts)
	require.True(t, all[0].NextAt.Equal(now.Add(time.Minute)))
	require.Equal(t, "450 greylisted", all[0].LastError)
	require.Equal(t, "value of b/1", string(all[0].Value))
	require.Equal(t, outbox.Parked, all[1].State)
	require.Equal(t, "550 no such user", all[1].LastError)
	require.Equal(t, outbox.Pending, all[2].State)
	page, err := q.List("b/1", 1)
	require.NoError(t, err)
	require.Equal(t, []string{"c/1"}, []string{page[0].ID})

	next, ok, err := q.NextDue()
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, next.Equal(now.Add(time.Minute)))
	due, _, err := q.Due(now, 10)
	require.NoError(t, err)
	require.Empty(t, due, "not due yet")
	due, _, err = q.Due(now.Add(time.Minute), 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, "b/1", due[0].ID)

	_, err = q.Requeue("b/1", now)
	require.ErrorIs(t, err, outbox.ErrNotParked)
	_, err = q.Requeue("zz", now)
	require.ErrorIs(t, err, outbox.ErrNotFound)
	e, err := q.Requeue("c/1", now)
	require.NoError(t, err)
	require.Equal(t, outbox.Retrying, e.State)
	due, _, err = q.Due(now, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, "c/1", due[0].ID)
	require.Equal(t, 1, due[0].Attempts, "a requeue keeps the count")

	// Deferring moves the time without counting; Done clears every key.
	commit(t, s, func(b *persistence.Batch) {
		_, err := q.Defer(b, due[0], now.Add(time.Hour))
		require.NoError(t, err)
	})
	got, err := q.Get("c/1")
	require.NoError(t, err)
	require.Equal(t, 1, got.Attempts)
	require.True(t, got.NextAt.Equal(now.Add(time.Hour)))
	commit(t, s, func(b *persistence.Batch) { q.Done(b, got) })
	n := 0
	require.NoError(t, s.Scan([]byte(outbox.Prefix+"test/"), func(k, _ []byte) error {
		if string(k) != outbox.Prefix+"test/s/b/1" && string(k[:len(outbox.Prefix)+7]) != outbox.Prefix+"test/d/" {
			n++
		}
		return nil
	}))
	require.Zero(t, n, "Done left keys behind")
	dueAll, _, err := q.Due(now.Add(48*time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, dueAll, 1, "only b/1 is still scheduled")
}

// TestLoopRunsWhenWokenAndDueAndBacksOffOnFailure: wakes and due times
// start rounds; a failing round backs the loop off and wakes do not cut
// the backoff short, so a failing sender never spins.
func TestLoopRunsWhenWokenAndDueAndBacksOffOnFailure(t *testing.T) {
	var rounds atomic.Int64
	var fail atomic.Bool
	var next atomic.Int64 // unix ns of the next due time, 0 for none
	l, err := outbox.NewLoop(outbox.LoopConfig{Name: "test", BackoffMin: 50 * time.Millisecond, BackoffMax: 100 * time.Millisecond},
		func(ctx context.Context) (outbox.Round, error) {
			rounds.Add(1)
			if fail.Load() {
				return outbox.Round{}, errors.New("relay down")
			}
			if ns := next.Swap(0); ns != 0 {
				return outbox.Round{Next: time.Unix(0, ns)}, nil
			}
			return outbox.Round{}, nil
		})
	require.NoError(t, err)
	l.Start()
	defer l.Close()
	require.Eventually(t, func() bool { return rounds.Load() == 1 }, time.Second, time.Millisecond, "a first round at start")
	l.Wake()
	require.Eventually(t, func() bool { return rounds.Load() == 2 }, time.Second, time.Millisecond, "a round when woken")

	next.Store(time.Now().Add(100 * time.Millisecond).UnixNano())
	l.Wake()
	require.Eventually(t, func() bool { return rounds.Load() == 3 }, time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	require.EqualValues(t, 3, rounds.Load(), "not before its time")
	require.Eventually(t, func() bool { return rounds.Load() == 4 }, time.Second, time.Millisecond, "a round when due")

	fail.Store(true)
	before, start := rounds.Load(), time.Now()
	for range 300 {
		l.Wake()
		time.Sleep(time.Millisecond)
	}
	// One round, then one per backoff (at least 25 ms each), never one
	// per wake.
	limit := int64(time.Since(start)/(25*time.Millisecond)) + 2
	require.LessOrEqual(t, rounds.Load()-before, limit, "a failing sender spins")
	fail.Store(false)
	require.NoError(t, l.Close())
	n := rounds.Load()
	l.Wake()
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, n, rounds.Load(), "no round after Close")
}
