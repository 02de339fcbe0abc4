package actors

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/persistence"
)

// refusedOnceLog is the store's log whose first claim after arm is refused
// as fenced, as when records came after the claimant's replay; it notes
// where each replay starts.
type refusedOnceLog struct {
	persistence.Log
	armed atomic.Bool
	mu    sync.Mutex
	from  []uint64
}

func (l *refusedOnceLog) Claim(stream string, last uint64) (persistence.Log, error) {
	if l.armed.CompareAndSwap(true, false) {
		return nil, persistence.ErrFenced
	}
	return l.Log.Claim(stream, last)
}

func (l *refusedOnceLog) Replay(stream string, after uint64, fn func(uint64, []byte) error) error {
	l.mu.Lock()
	l.from = append(l.from, after)
	l.mu.Unlock()
	return l.Log.Replay(stream, after, fn)
}

// TestRefusedClaimReplaysOnlyTheTail: a load whose claim is refused
// replays the records after its replay and claims again, instead of
// loading the event anew; the event then serves with its whole state.
func TestRefusedClaimReplaysOnlyTheTail(t *testing.T) {
	fl := &refusedOnceLog{}
	e := newEnv(t, func(c *Config) { c.Log = fl })
	fl.Log = e.store.Log()
	evt := e.sys.NewEventID()
	starts := event.Time{Time: time.Now().Add(24 * time.Hour).UTC()}
	_, err := e.sys.CreateEvent(bg, "bu_1", evt, event.CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &starts})
	require.NoError(t, err)
	for i := range 5 {
		_, err := Ask(bg, e.sys, evt, event.CreateTicketType{Name: "T" + string(rune('a'+i))})
		require.NoError(t, err)
	}
	last, err := e.store.Log().LastSeq(evt)
	require.NoError(t, err)
	require.Equal(t, 1, e.sys.Evict(func(string) bool { return true }))

	fl.mu.Lock()
	fl.from = nil
	fl.mu.Unlock()
	fl.armed.Store(true)
	types, err := Ask(bg, e.sys, evt, event.ListTicketTypes{})
	require.NoError(t, err, "the refused claim is retried after the tail's replay")
	require.Len(t, types.Data, 5)
	require.False(t, fl.armed.Load(), "the claim was refused once")
	fl.mu.Lock()
	defer fl.mu.Unlock()
	require.Len(t, fl.from, 2, "one load and one tail replay, no second load: %v", fl.from)
	require.Equal(t, last, fl.from[1], "the tail replay starts after the records already replayed")
}

// blockedClaimLog is the store's log whose claims wait, once armed, until
// release is closed; it counts them.
type blockedClaimLog struct {
	persistence.Log
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	claims  atomic.Int64
}

func (l *blockedClaimLog) Claim(stream string, last uint64) (persistence.Log, error) {
	l.claims.Add(1)
	if l.armed.CompareAndSwap(true, false) {
		close(l.entered)
		<-l.release
	}
	return l.Log.Claim(stream, last)
}

// TestEvictLoadedLeavesALoadRunning: EvictLoaded (a node gaining an
// event's shard) leaves an actor whose load runs, so the event is loaded
// once, and evicts it once it has loaded.
func TestEvictLoadedLeavesALoadRunning(t *testing.T) {
	bl := &blockedClaimLog{entered: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, func(c *Config) { c.Log = bl })
	bl.Log = e.store.Log()
	evt := e.sys.NewEventID()
	starts := event.Time{Time: time.Now().Add(24 * time.Hour).UTC()}
	_, err := e.sys.CreateEvent(bg, "bu_1", evt, event.CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &starts})
	require.NoError(t, err)
	require.Equal(t, 1, e.sys.Evict(func(string) bool { return true }))

	bl.armed.Store(true)
	claims := bl.claims.Load()
	done := make(chan error, 1)
	go func() {
		_, err := Ask(bg, e.sys, evt, event.GetEvent{})
		done <- err
	}()
	<-bl.entered
	require.Zero(t, e.sys.EvictLoaded(func(string) bool { return true }, time.Time{}), "a load running is left")
	close(bl.release)
	require.NoError(t, <-done)
	_, err = Ask(bg, e.sys, evt, event.GetEvent{})
	require.NoError(t, err)
	require.Equal(t, claims+1, bl.claims.Load(), "one load, one claim")
	require.Zero(t, e.sys.EvictLoaded(func(string) bool { return true }, time.Now().Add(-time.Hour)),
		"an actor loaded after the moment given is left")
	require.Equal(t, 1, e.sys.EvictLoaded(func(string) bool { return true }, time.Now()), "an actor loaded before it is evicted")
}
