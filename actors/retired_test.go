package actors

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/ask"
	"ticketd/event"
	"ticketd/persistence"
)

// slowFencedLog is the store's log whose claims of an event, once armed,
// are refused as fenced (another node claimed it meanwhile), the first
// after a while: every claim of one load, its retries after a tail replay
// included.
type slowFencedLog struct {
	persistence.Log
	refuse atomic.Int32 // claims still to refuse
	slow   atomic.Bool  // the next refusal waits first
}

func (l *slowFencedLog) Claim(stream string, last uint64) (persistence.Log, error) {
	if l.refuse.Add(-1) >= 0 {
		if l.slow.CompareAndSwap(true, false) {
			time.Sleep(300 * time.Millisecond)
		}
		return nil, persistence.ErrFenced
	}
	return l.Log.Claim(stream, last)
}

// TestRequestsQueuedBehindAFailedLoadAreAnswered: requests that reached an
// actor while its load was failing are answered by a fresh actor at once,
// not left in the stopped actor's mailbox until their deadline (protoactor
// drops what a stopped actor had queued).
func TestRequestsQueuedBehindAFailedLoadAreAnswered(t *testing.T) {
	fl := &slowFencedLog{}
	e := newEnv(t, func(c *Config) {
		c.Log = fl
		c.AskTimeout = 20 * time.Second
	})
	fl.Log = e.store.Log()
	evt := e.sys.NewEventID()
	starts := event.Time{Time: time.Now().Add(24 * time.Hour).UTC()}
	_, err := e.sys.CreateEvent(bg, "bu_1", evt, event.CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &starts})
	require.NoError(t, err)
	require.Equal(t, 1, e.sys.Evict(func(string) bool { return true }))
	fl.slow.Store(true)
	fl.refuse.Store(1 + claimCatchUps) // the next load's claims are refused

	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	took := make([]time.Duration, n)
	for i := range n {
		wg.Go(func() {
			t0 := time.Now()
			_, errs[i] = Ask(bg, e.sys, evt, event.GetEvent{})
			took[i] = time.Since(t0)
		})
	}
	wg.Wait()
	failed := 0
	for i := range n {
		require.Less(t, took[i], 5*time.Second, "request %d waited for its deadline", i)
		if errs[i] != nil {
			require.ErrorIs(t, errs[i], ask.ErrUnavailable)
			failed++
		}
	}
	// The one request the failing actor handled hears of the failure; the
	// others were queued behind it and are served by its successor.
	require.LessOrEqual(t, failed, 1)
	require.Equal(t, 1, e.sys.ActiveEvents())
}
