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
