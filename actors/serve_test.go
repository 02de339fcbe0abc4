package actors

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/ask"
	"ticketd/event"
	"ticketd/persistence"
)

// asyncAnswers collects ServeAsync's answers, and counts the answers
// given to each ask (exactly one is right).
type asyncAnswers struct {
	mu     sync.Mutex
	res    []any
	errs   []error
	counts []int
	wg     sync.WaitGroup
}

// serve starts an ask and answers its index.
func (w *asyncAnswers) serve(sys *System, eventID string, cmd event.Command, createUnit string, timeout time.Duration) int {
	i, done := w.next()
	sys.ServeAsync(eventID, cmd, createUnit, timeout, done)
	return i
}

// next makes room for an ask's answer: its index, and its done.
func (w *asyncAnswers) next() (int, func(any, error)) {
	w.mu.Lock()
	i := len(w.res)
	w.res, w.errs, w.counts = append(w.res, nil), append(w.errs, nil), append(w.counts, 0)
	w.mu.Unlock()
	w.wg.Add(1)
	return i, func(res any, err error) {
		w.mu.Lock()
		w.res[i], w.errs[i] = res, err
		w.counts[i]++
		first := w.counts[i] == 1
		w.mu.Unlock()
		if first {
			w.wg.Done()
		}
	}
}

// wait waits for every ask's answer, then a while for second answers.
func (w *asyncAnswers) wait(t *testing.T, d time.Duration) {
	t.Helper()
	waitDone(t, &w.wg, d, "an ask of ServeAsync was not answered")
	time.Sleep(3 * asyncSweep)
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, n := range w.counts {
		require.Equal(t, 1, n, "ask %d answered %d times", i, n)
	}
}

// TestServeAsyncAnswersLikeServe creates an event and orders from it with
// ServeAsync: each ask is answered once, with the actor's answer, and
// what it acknowledged is durable and in the event index.
func TestServeAsyncAnswersLikeServe(t *testing.T) {
	e := newEnv(t, nil)
	var w asyncAnswers
	evt := e.sys.NewEventID()
	w.serve(e.sys, evt, event.CreateEvent{Name: "Conf", Timezone: "UTC"}, "bu_1", time.Second)
	w.wait(t, 5*time.Second)
	require.NoError(t, w.errs[0])
	unit, ok := e.sys.EventUnit(evt)
	require.True(t, ok, "a created event is in the index")
	require.Equal(t, "bu_1", unit)

	i := w.serve(e.sys, evt, event.CreateTicketType{Name: "GA"}, "", time.Second)
	w.wait(t, 5*time.Second)
	require.NoError(t, w.errs[i])
	rt := w.res[i].(event.TicketType).ID
	i = w.serve(e.sys, evt, event.UpdateTicketType{ID: rt, Status: event.Some("open")}, "", time.Second)
	w.wait(t, 5*time.Second)
	require.NoError(t, w.errs[i])

	first := len(w.res)
	for n := range 500 {
		w.serve(e.sys, evt, event.CreateRegistration{Email: fmt.Sprintf("a%d@example.com", n), RegistrationTypeID: rt}, "", 5*time.Second)
	}
	// A business rejection is an answer like any other.
	bad := w.serve(e.sys, evt, event.CreateRegistration{Email: "x@example.com", RegistrationTypeID: "rt_nope"}, "", time.Second)
	w.wait(t, 10*time.Second)
	var be *event.Error
	require.ErrorAs(t, w.errs[bad], &be)
	ids := map[string]bool{}
	for i := first; i < bad; i++ {
		require.NoError(t, w.errs[i])
		ids[w.res[i].(event.RegistrationResult).ID] = true
	}
	require.Len(t, ids, 500)

	e.reopen()
	regs := e.registrations(evt)
	require.Len(t, regs, 500, "every acknowledged registration is durable")
	for _, r := range regs {
		assert.True(t, ids[r.ID])
	}
}

// TestServeAsyncUnderEvictions evicts the event's actor again and again
// under a flood of asks: every ask is answered once, and with success
// (one that meets an actor on its way out is sent to a fresh one; see
// TestServeAsyncRetriesPastARetiredOrStoppedActor).
func TestServeAsyncUnderEvictions(t *testing.T) {
	e := newEnv(t, nil)
	evt, tt := e.newEvent("bu_1", nil)
	var w asyncAnswers
	stop := make(chan struct{})
	var evictions atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			evictions.Add(int64(e.sys.Evict(func(id string) bool { return id == evt })))
			time.Sleep(time.Millisecond)
		}
	}()
	for n := range 2000 {
		w.serve(e.sys, evt, event.CreateRegistration{Email: fmt.Sprintf("b%d@example.com", n), RegistrationTypeID: tt}, "", 10*time.Second)
		if n%50 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	w.wait(t, 20*time.Second)
	close(stop)
	for i, err := range w.errs {
		require.NoError(t, err, "ask %d", i)
	}
	require.Greater(t, evictions.Load(), int64(2), "the actor was evicted under the asks")
	t.Logf("2000 asks answered across %d evictions", evictions.Load())
}

// TestServeAsyncRetriesPastARetiredOrStoppedActor sends an ask to an
// actor that has left the registry (it answers errRetired) and to one
// that has stopped (a dead letter): each is sent again, to a fresh actor,
// and answered once.
func TestServeAsyncRetriesPastARetiredOrStoppedActor(t *testing.T) {
	e := newEnv(t, nil)
	evt, tt := e.newEvent("bu_1", nil)
	s := e.sys
	var w asyncAnswers
	ask := func(sl *slot, n int) {
		_, done := w.next()
		a := &asyncAsk{s: s, eventID: evt, tries: 1, deadline: time.Now().Add(5 * time.Second), done: done,
			req: &request{cmd: event.CreateRegistration{Email: fmt.Sprintf("r%d@example.com", n), RegistrationTypeID: tt}}}
		b, err := s.asyncBoxes.get(s.as)
		require.NoError(t, err)
		a.dispatch(sl, b)
	}

	// Retired: an ask holds the old actor while it is evicted, so it
	// stays, out of the registry, answering errRetired.
	old, err := s.acquire(evt)
	require.NoError(t, err)
	require.Equal(t, 1, s.Evict(func(id string) bool { return id == evt }))
	time.Sleep(50 * time.Millisecond) // the actor takes its evict
	s.mu.Lock()
	old.refs++ // the ask's own hold
	s.mu.Unlock()
	ask(old, 1)
	w.wait(t, 5*time.Second)
	require.NoError(t, w.errs[0])
	s.release(evt, old) // the test's hold: the old actor stops now
	select {
	case <-old.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the retired actor did not stop")
	}

	// Stopped: a message to it is a dead letter.
	s.mu.Lock()
	old.refs++
	s.mu.Unlock()
	ask(old, 2)
	w.wait(t, 5*time.Second)
	require.NoError(t, w.errs[1])
	require.Len(t, e.registrations(evt), 2, "each ask registered once, on the fresh actor")
}

// TestServeAsyncBusy answers ErrBusy at once beyond MailboxSize.
func TestServeAsyncBusy(t *testing.T) {
	e := newFaultEnvWith(t, 30*time.Second, func(c *Config) { c.MailboxSize = 4 })
	evt, tt := newFaultEvent(t, e.sys)
	e.ffs.HangSyncs(true)
	t.Cleanup(func() { e.ffs.HangSyncs(false); _ = e.sys.Close(); _ = e.store.Close() })
	var w asyncAnswers
	for n := range 10 {
		w.serve(e.sys, evt, event.CreateRegistration{Email: fmt.Sprintf("c%d@example.com", n), RegistrationTypeID: tt}, "", 300*time.Millisecond)
	}
	busy := 0
	w.mu.Lock()
	for i, n := range w.counts {
		if n == 1 {
			require.ErrorIs(t, w.errs[i], ask.ErrBusy)
			busy++
		}
	}
	w.mu.Unlock()
	require.Equal(t, 6, busy, "the asks beyond MailboxSize are refused before any wait")
	w.wait(t, 5*time.Second) // the others time out
}

// TestServeAsyncTimeout hangs the disk's syncs (the store's watchdog far
// off): an ask is answered unavailable once its timeout passed (within a
// sweep), and the late answer of its actor is not given a second time.
func TestServeAsyncTimeout(t *testing.T) {
	e := newFaultEnvWith(t, 30*time.Second, nil)
	evt, tt := newFaultEvent(t, e.sys)
	e.ffs.HangSyncs(true)
	t.Cleanup(func() { e.ffs.HangSyncs(false); _ = e.sys.Close(); _ = e.store.Close() })
	var w asyncAnswers
	t0 := time.Now()
	for n := range 20 {
		w.serve(e.sys, evt, event.CreateRegistration{Email: fmt.Sprintf("c%d@example.com", n), RegistrationTypeID: tt}, "", 200*time.Millisecond)
	}
	waitDone(t, &w.wg, 2*time.Second, "an ask still waits 2 s after its timeout")
	took := time.Since(t0)
	require.GreaterOrEqual(t, took, 200*time.Millisecond)
	require.Less(t, took, 200*time.Millisecond+3*asyncSweep)
	for _, err := range w.errs {
		require.ErrorIs(t, err, ask.ErrUnavailable)
		require.NotErrorIs(t, err, persistence.ErrFailed)
	}
	e.ffs.HangSyncs(false) // the actor's answers come now, to nobody
	w.wait(t, time.Second)
	// The slots were given back: the event answers again.
	var again asyncAnswers
	i := again.serve(e.sys, evt, event.ListRegistrations{Limit: 1}, "", 5*time.Second)
	again.wait(t, 5*time.Second)
	require.NoError(t, again.errs[i])
}

// TestServeAsyncStoreFault fails the disk under asks: every ask is
// answered at once with the store's failure, none acknowledged is lost.
func TestServeAsyncStoreFault(t *testing.T) {
	e := newFaultEnvWith(t, 0, nil)
	evt, tt := newFaultEvent(t, e.sys)
	var w asyncAnswers
	order := func(n int) {
		w.serve(e.sys, evt, event.CreateRegistration{Email: fmt.Sprintf("c%d@example.com", n), RegistrationTypeID: tt}, "", 10*time.Second)
	}
	for n := range 100 {
		order(n)
	}
	w.wait(t, 5*time.Second)
	for n := 100; n < 400; n++ {
		order(n)
		if n == 150 {
			e.ffs.FailSyncs(syscall.EIO)
		}
	}
	t0 := time.Now()
	w.wait(t, 5*time.Second)
	require.Less(t, time.Since(t0), 2*time.Second)
	var acked []string
	failed := 0
	for i, err := range w.errs {
		if err == nil {
			acked = append(acked, w.res[i].(event.RegistrationResult).ID)
			continue
		}
		require.ErrorIs(t, err, ask.ErrUnavailable)
		require.ErrorIs(t, err, persistence.ErrFailed, "the fault, not a timeout, answered")
		failed++
	}
	require.GreaterOrEqual(t, len(acked), 100)
	require.Positive(t, failed)
	_ = e.sys.Close()
	_ = e.store.Close()
	e.ffs.FailSyncs(nil)
	e.restart()
	have := map[string]bool{}
	for _, reg := range registrationsOf(t, e.sys, evt) {
		have[reg.ID] = true
	}
	for _, id := range acked {
		require.True(t, have[id], "acknowledged registration %s lost", id)
	}
	t.Logf("%d acknowledged, %d refused", len(acked), failed)
}
