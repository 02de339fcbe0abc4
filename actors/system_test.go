package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/directory"
	"ticketd/event"
	"ticketd/mail"
	"ticketd/payments"
	"ticketd/persistence"
	"ticketd/snapshots"
	"ticketd/webhooks"
)

// env is a System over a real Pebble store in a temp dir that a test can
// close and reopen to check what survived.
type env struct {
	t     *testing.T
	dir   string
	cfg   Config
	store *persistence.Store
	sys   *System
}

func newEnv(t *testing.T, tweak func(*Config)) *env {
	e := &env{t: t, dir: t.TempDir()}
	e.cfg = Config{Event: event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour},
		Owed: owedWith(webhooks.Owed{}), Links: mail.Owed{}}
	if tweak != nil {
		tweak(&e.cfg)
	}
	e.open()
	t.Cleanup(e.close)
	return e
}

func (e *env) open() {
	var err error
	e.store, err = persistence.Open(persistence.Options{Dir: e.dir})
	require.NoError(e.t, err)
	e.sys, err = Open(e.cfg, e.store, snapshots.New(e.store, 2))
	require.NoError(e.t, err)
}

func (e *env) close() {
	if e.sys != nil {
		require.NoError(e.t, e.sys.Close())
		require.NoError(e.t, e.store.Close())
		e.sys, e.store = nil, nil
	}
}

func (e *env) reopen() { e.close(); e.open() }

var bg = context.Background()

// owedWith is the owed work app.Main wires, with hooks for the webhooks.
func owedWith(hooks webhooks.Owed) []OwedWork {
	return []OwedWork{mail.Owed{}, hooks, payments.Owed{}}
}

// newEvent creates an event with one open ticket type of the given
// capacity (nil = unlimited) and returns their ids.
func (e *env) newEvent(unit string, capacity *int) (string, string) {
	id := e.sys.NewEventID()
	_, err := e.sys.CreateEvent(bg, unit, id, event.CreateEvent{Name: "Conf", Timezone: "UTC"})
	require.NoError(e.t, err)
	res, err := e.sys.Ask(bg, id, event.CreateTicketType{Name: "GA", Capacity: capacity})
	require.NoError(e.t, err)
	tt := res.(event.TicketType).ID
	_, err = e.sys.Ask(bg, id, event.UpdateTicketType{ID: tt, Status: event.Some("open")})
	require.NoError(e.t, err)
	return id, tt
}

func (e *env) registrations(eventID string) []event.Registration {
	var all []event.Registration
	cursor := ""
	for {
		res, err := e.sys.Ask(bg, eventID, event.ListRegistrations{Limit: 100, Cursor: cursor})
		require.NoError(e.t, err)
		l := res.(event.List[event.Registration])
		all = append(all, l.Data...)
		if !l.HasMore {
			return all
		}
		cursor = *l.NextCursor
	}
}

func intp(n int) *int { return &n }

func jsonOf(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestConcurrentRegistrationsShareSyncsAndSurviveRestart(t *testing.T) {
	e := newEnv(t, nil)
	evt, tt := e.newEvent("bu_1", intp(50))
	before := e.store.Stats()

	const n = 200
	var wg sync.WaitGroup
	var mu sync.Mutex
	confirmed, soldOut := map[string]bool{}, 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: fmt.Sprintf("p%d@example.com", i), RegistrationTypeID: tt})
			mu.Lock()
			defer mu.Unlock()
			var be *event.Error
			switch {
			case err == nil:
				r := res.(event.RegistrationResult)
				assert.Equal(t, "confirmed", r.Status)
				confirmed[r.ID] = true
			case errors.As(err, &be) && be.Code == event.FailedPrecondition:
				soldOut++
			default:
				t.Errorf("registration %d: %v", i, err)
			}
		}(i)
	}
	wg.Wait()
	assert.Len(t, confirmed, 50)
	assert.Equal(t, n-50, soldOut)
	after := e.store.Stats()
	t.Logf("store stats before %+v after %+v", before, after)

	e.reopen()
	regs := e.registrations(evt)
	require.Len(t, regs, 50, "every acknowledged registration survives, nothing over capacity")
	for _, r := range regs {
		assert.True(t, confirmed[r.ID], "registration %s was acknowledged", r.ID)
	}
	res, err := e.sys.Ask(bg, evt, event.GetAvailability{ID: tt})
	require.NoError(t, err)
	av := res.(event.Availability)
	assert.Equal(t, 50, av.Confirmed)
	assert.Equal(t, 0, *av.Remaining)
}

func TestSnapshotsBoundReplayAndRecoverState(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SnapshotEvery = 20 })
	evt, tt := e.newEvent("bu_1", nil)
	for i := 0; i < 95; i++ {
		_, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: fmt.Sprintf("s%d@example.com", i), RegistrationTypeID: tt})
		require.NoError(t, err)
	}
	want := e.registrations(evt)
	e.close() // waits for snapshot saves in flight
	e.open()
	seqs, err := snapshots.New(e.store, 2).List(evt)
	require.NoError(t, err)
	require.NotEmpty(t, seqs, "snapshots were taken")
	assert.LessOrEqual(t, len(seqs), 2, "retention keeps two")
	first := uint64(0)
	require.NoError(t, e.store.Replay(evt, 0, func(seq uint64, _ []byte) error {
		if first == 0 {
			first = seq
		}
		return nil
	}))
	assert.Greater(t, first, uint64(1), "the log is trimmed behind the older snapshot")

	assert.Equal(t, jsonOf(t, want), jsonOf(t, e.registrations(evt)), "snapshot + tail == live state")
	_, err = e.sys.Ask(bg, evt, event.CreateRegistration{Email: "after@example.com", RegistrationTypeID: tt})
	require.NoError(t, err)
	e.reopen()
	assert.Len(t, e.registrations(evt), 96, "records appended after recovery continue the stream")
}

func TestIdleActorsPassivateAndReactivate(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.IdleTimeout = 30 * time.Millisecond })
	evt, tt := e.newEvent("bu_1", nil)
	_, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: "a@example.com", RegistrationTypeID: tt})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return e.sys.ActiveEvents() == 0 }, 5*time.Second, 10*time.Millisecond)
	assert.GreaterOrEqual(t, e.sys.Metrics().Passivations.Load(), int64(1))

	assert.Len(t, e.registrations(evt), 1, "a passivated event comes back from disk")
	assert.GreaterOrEqual(t, e.sys.Metrics().Activations.Load(), int64(2))
}

func TestEventIndexIsDurable(t *testing.T) {
	e := newEnv(t, nil)
	a, _ := e.newEvent("bu_a", nil)
	b, _ := e.newEvent("bu_b", nil)
	e.reopen()
	u, ok := e.sys.EventUnit(a)
	assert.True(t, ok)
	assert.Equal(t, "bu_a", u)
	assert.Equal(t, []string{b}, e.sys.UnitEvents("bu_b"))
	_, ok = e.sys.EventUnit("evt_nope")
	assert.False(t, ok)
}

func TestDirectoryIsDurableAndRevocationImmediate(t *testing.T) {
	e := newEnv(t, nil)
	u, err := e.sys.CreateUnit(bg, "Acme")
	require.NoError(t, err)
	k, secret, err := e.sys.CreateKey(bg, NewKeySpec{UnitID: u.ID, Type: directory.Secret, Version: "2026-08-22"})
	require.NoError(t, err)
	found, ok := e.sys.Directory().Lookup(secret)
	require.True(t, ok, "the view is published once the key is durable")
	assert.Equal(t, k.ID, found.ID)

	_, _, err = e.sys.CreateKey(bg, NewKeySpec{UnitID: "bu_nope", Type: directory.Secret})
	assert.ErrorIs(t, err, ErrNotFound)

	e.reopen()
	found, ok = e.sys.Directory().Lookup(secret)
	require.True(t, ok)
	assert.True(t, found.Active(time.Now()))
	_, err = e.sys.RevokeKey(bg, k.ID)
	require.NoError(t, err)
	found, _ = e.sys.Directory().Lookup(secret)
	assert.False(t, found.Active(time.Now()), "revocation is effective at once")
	e.reopen()
	found, _ = e.sys.Directory().Lookup(secret)
	assert.False(t, found.Active(time.Now()))
	assert.Len(t, e.sys.Directory().Units(), 1)
}

func TestTicketMailIsWrittenToTheMailInboxWithTheChange(t *testing.T) {
	woke := make(chan struct{}, 10)
	e := newEnv(t, func(c *Config) { c.OnOwed = func() { woke <- struct{}{} } })
	evt, tt := e.newEvent("bu_1", nil)
	res, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: "m@example.com", Name: "Mo", RegistrationTypeID: tt})
	require.NoError(t, err)
	reg := res.(event.RegistrationResult)
	select {
	case <-woke:
	case <-time.After(5 * time.Second):
		t.Fatal("the mailer was not woken")
	}
	e.reopen()
	var got []mail.TicketMail
	require.NoError(t, e.store.Scan([]byte(mail.InboxPrefix), func(k, v []byte) error {
		var m mail.TicketMail
		require.NoError(t, json.Unmarshal(v, &m))
		assert.Equal(t, string(k), m.Key)
		assert.True(t, mail.ValidInboxKey(m.Key), "listing cursors accept the keys written")
		got = append(got, m)
		return nil
	}))
	require.Len(t, got, 1)
	assert.Equal(t, reg.ID, got[0].RegistrationID)
	assert.Equal(t, "m@example.com", got[0].Email)
	assert.Equal(t, "Mo", got[0].Name)
	assert.Equal(t, "GA", got[0].TicketName)
	assert.Equal(t, "Conf", got[0].EventName)
	assert.Equal(t, reg.PassURL, got[0].PassURL)
	assert.Equal(t, reg.CheckinCode, got[0].CheckinCode)
}

func TestReplayStopsAtAGapAndDropsTheUnacknowledgedTail(t *testing.T) {
	e := newEnv(t, nil)
	evt, tt := e.newEvent("bu_1", nil)
	_, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: "a@example.com", RegistrationTypeID: tt})
	require.NoError(t, err)
	e.close()

	// A record two past the end: as if a later batch reached the disk and
	// an earlier one did not (never acknowledged, by construction).
	st, err := persistence.Open(persistence.Options{Dir: e.dir})
	require.NoError(t, err)
	last, err := st.LastSeq(evt)
	require.NoError(t, err)
	b := st.NewBatch()
	b.Append(evt, last+2, []byte("not even a change"))
	require.NoError(t, st.Commit(b))
	b.Close()
	require.NoError(t, st.Close())

	e.open()
	assert.Len(t, e.registrations(evt), 1, "state up to the gap")
	got, err := e.store.LastSeq(evt)
	require.NoError(t, err)
	assert.Equal(t, last, got, "the records after the gap are gone")
	_, err = e.sys.Ask(bg, evt, event.CreateRegistration{Email: "b@example.com", RegistrationTypeID: tt})
	require.NoError(t, err)
	e.reopen()
	assert.Len(t, e.registrations(evt), 2)
}

func TestNoWebhookEventIsQueuedWhenNobodyListens(t *testing.T) {
	count := func(e *env) int {
		n := 0
		require.NoError(t, e.store.Scan([]byte(webhooks.InboxPrefix), func(k, v []byte) error { n++; return nil }))
		return n
	}
	for _, listening := range []bool{false, true} {
		e := newEnv(t, func(c *Config) {
			c.Owed = owedWith(webhooks.Owed{Want: func(unit, typ string) bool { return listening && typ == webhooks.HookCheckinCreated }})
		})
		evt, tt := e.newEvent("bu_1", nil)
		res, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: "h@example.com", RegistrationTypeID: tt})
		require.NoError(t, err)
		_, err = e.sys.Ask(bg, evt, event.RecordCheckin{RegistrationID: res.(event.RegistrationResult).ID, SubjectType: "event"})
		require.NoError(t, err)
		want := 0
		if listening {
			want = 1 // only the subscribed type
		}
		assert.Equal(t, want, count(e), "listening=%v", listening)
	}
}

func TestACreatedUnitIsInTheDirectoryViewWhenItIsAnswered(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 200 {
		u, err := e.sys.CreateUnit(bg, fmt.Sprintf("unit %d", i))
		require.NoError(t, err)
		_, ok := e.sys.Directory().Unit(u.ID)
		require.True(t, ok, "unit %d answered before its view was published", i)
	}
}
