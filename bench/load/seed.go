package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/app"
	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/ops"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// Seeder writes a data dir through the service's own wiring (app.Main)
// in-process, asking its application layer (ops) as the front doors do,
// but without HTTP in between. The dir must not be in use by a running
// service.
type Seeder struct {
	main *app.Main
	ops  *ops.Ops
	// store is the open Main's store, read only: an event's record count
	// and its snapshots.
	store *persistence.Store
	dir   string

	UnitID, SecretKey, PublishableKey string
}

// seedAskTimeout bounds an ask of the seeder: loading a large copied log
// and encoding its snapshot can take minutes on a busy machine.
const seedAskTimeout = 5 * time.Minute

// OpenSeeder opens dir with the given snapshot interval (0: the default)
// and creates a business unit with one key of each type. (On an empty dir
// app.Main first makes its own bootstrap unit, "Default", as the service
// does on a first start; the seeder's unit is "Bench".)
func OpenSeeder(dir string, snapshotEvery int) (*Seeder, error) {
	cfg := app.DefaultConfig()
	cfg.Addr, cfg.DataDir, cfg.BaseURL = "127.0.0.1:0", dir, "http://127.0.0.1"
	cfg.OrderHold, cfg.CheckoutSessionTTL = 6*time.Hour, 24*time.Hour
	if snapshotEvery > 0 {
		cfg.SnapshotEvery = snapshotEvery
	}
	// Passivate soon: every active actor preallocates its mailbox, and
	// the scale seed touches thousands of events.
	cfg.IdleTimeout = 500 * time.Millisecond
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Tune = &app.Tuning{
		// Seeding needs no fsync per commit: the data reaches the files
		// when the store closes, before any measured process starts on
		// them.
		Store:      func(o *persistence.Options) { o.NoSync = true },
		AskTimeout: seedAskTimeout,
	}
	// As the service with no webhook endpoint: nothing is queued for
	// webhooks, so the measured service does not start by draining a
	// backlog.
	m := app.NewMain(cfg, io.Discard)
	if err := m.Open(); err != nil {
		return nil, fmt.Errorf("bench: seed: open: %w", err)
	}
	s := &Seeder{main: m, ops: m.Ops(), store: m.Store(), dir: dir}
	ctx := context.Background()
	u, err := s.ops.CreateUnit(ctx, "Bench")
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("bench: seed: unit: %w", err)
	}
	s.UnitID = u.ID
	if _, s.SecretKey, err = s.ops.CreateKey(ctx, ops.KeySpec{UnitID: u.ID, Type: directory.Secret, Name: "bench", Version: thttp.CurrentVersion}); err != nil {
		s.Close()
		return nil, fmt.Errorf("bench: seed: key: %w", err)
	}
	if _, s.PublishableKey, err = s.ops.CreateKey(ctx, ops.KeySpec{UnitID: u.ID, Type: directory.Publishable, Name: "bench", Version: thttp.CurrentVersion}); err != nil {
		s.Close()
		return nil, fmt.Errorf("bench: seed: key: %w", err)
	}
	return s, nil
}

// Close closes the service (the actors wait for snapshot saves), then
// reopens its store to compact it and closes it again. The compaction
// leaves the data dir at rest, as a store is when a long-running service
// restarts: seeding writes millions of records in a minute and a snapshot
// then trims them, and without it the measured process would spend its
// first seconds compacting that garbage beside the recovery it is timed
// on. (The store flushes its memtable on close, so the reopen replays no
// WAL.)
func (s *Seeder) Close() {
	_ = s.main.Close()
	st, err := persistence.Open(persistence.Options{Dir: s.dir, Logger: slog.New(slog.DiscardHandler), NoSync: true})
	if err != nil {
		return
	}
	_ = st.DB().Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff, 0xff}, true)
	_ = st.Close()
}

// do asks cmd of the event through the application layer, retrying while
// the actor shell is unavailable: a request that meets an actor just as
// it passivates is refused ("name exists") and succeeds a moment later.
func do[R any](s *Seeder, eventID string, cmd event.Op[R]) (R, error) {
	var (
		res R
		err error
	)
	for attempt := range 50 {
		res, err = ops.Do(context.Background(), s.ops, eventID, cmd)
		if !errors.Is(err, ops.ErrUnavailable) {
			return res, err
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	return res, err
}

func idOf(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var o IDOnly
	if err := json.Unmarshal(b, &o); err != nil || o.ID == "" {
		return "", fmt.Errorf("bench: seed: no id in %s", Truncate(b, 200))
	}
	return o.ID, nil
}

// Event creates a published event with one open ticket type of capacity.
func (s *Seeder) Event(name string, capacity int) (EventSetup, error) {
	ctx := context.Background()
	starts := event.Time{Time: time.Date(2027, 6, 1, 9, 0, 0, 0, time.UTC)}
	res, err := s.ops.CreateEvent(ctx, s.UnitID, s.ops.NewEventID(), event.CreateEvent{Name: name, Timezone: "UTC", StartsAt: &starts})
	if err != nil {
		return EventSetup{}, fmt.Errorf("bench: seed: event: %w", err)
	}
	e := EventSetup{Capacity: capacity}
	if e.EventID, err = idOf(res); err != nil {
		return e, err
	}
	tt, err := do(s, e.EventID, event.CreateTicketType{Name: "General admission", Capacity: &capacity})
	if err != nil {
		return e, fmt.Errorf("bench: seed: ticket type: %w", err)
	}
	e.TicketTypeID = tt.ID
	if _, err := do(s, e.EventID, event.UpdateTicketType{ID: e.TicketTypeID, Status: event.Some("open")}); err != nil {
		return e, fmt.Errorf("bench: seed: open ticket type: %w", err)
	}
	if _, err := do(s, e.EventID, event.UpdateEvent{Status: event.Some("published")}); err != nil {
		return e, fmt.Errorf("bench: seed: publish: %w", err)
	}
	return e, nil
}

// Register creates n registrations on e with conc asks in flight.
func (s *Seeder) Register(e EventSetup, prefix string, n, conc int) error {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				_, err := do(s, e.EventID, event.CreateRegistration{
					Email: prefix + strconv.FormatInt(i, 10) + "@bench.example", Name: "Bench", RegistrationTypeID: e.TicketTypeID,
				})
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("bench: seed: registration %d: %w", i, err) })
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// Snapshot sends a change-making command to e (a rename), so an actor over
// a snapshot interval asks for its snapshot, and waits until the snapshot
// worker has saved it (closing the service would drop a snapshot still
// queued).
// It returns the snapshot's seq.
func (s *Seeder) Snapshot(e EventSetup) (uint64, error) {
	// The actor may ask for it as it loads (at the seq of the seeded log)
	// or after the rename: either covers every seeded record.
	last, err := s.store.LastSeq(e.EventID)
	if err != nil {
		return 0, err
	}
	if _, err := do(s, e.EventID, event.UpdateEvent{Name: event.Some("Bench (touched)")}); err != nil {
		return 0, err
	}
	snaps := snapshots.New(s.store, 2)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		seqs, err := snaps.List(e.EventID)
		if err != nil {
			return 0, err
		}
		if n := len(seqs); n > 0 && seqs[n-1] >= last {
			return seqs[n-1], nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("bench: seed: no snapshot of %s at %d within 10m", e.EventID, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Changes counts the records in e's log (after its newest snapshot's trim).
func (s *Seeder) Changes(e EventSetup) (int, error) {
	n := 0
	err := s.store.Replay(e.EventID, 0, func(uint64, []byte) error { n++; return nil })
	return n, err
}

// Availability reads e's ticket type availability through the layer.
func (s *Seeder) Availability(e EventSetup) (Availability, error) {
	a, err := do(s, e.EventID, event.GetAvailability{ID: e.TicketTypeID})
	if err != nil {
		return Availability{}, err
	}
	// An unlimited capacity (nil) reads as 0, as Client.Availability
	// decodes the API's null.
	deref := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	return Availability{Capacity: deref(a.Capacity), Confirmed: a.Confirmed, Waitlisted: a.Waitlisted, Held: a.Held, Remaining: deref(a.Remaining)}, nil
}
