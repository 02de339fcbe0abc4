package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/actors"
	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/mail"
	"ticketd/payments"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// Seeder writes a data dir through the actor system in-process, the way
// the service would, but without HTTP in between. The dir must not be in
// use by a running service.
type Seeder struct {
	store *persistence.Store
	sys   *actors.System

	UnitID, SecretKey, PublishableKey string
}

// OpenSeeder opens dir with the given snapshot interval (0: the default)
// and creates a business unit with one key of each type.
func OpenSeeder(dir string, snapshotEvery int) (*Seeder, error) {
	log := slog.New(slog.DiscardHandler)
	// Seeding needs no fsync per commit: the data reaches the files when
	// the store closes, before any measured process starts on them.
	store, err := persistence.Open(persistence.Options{Dir: dir, Logger: log, NoSync: true})
	if err != nil {
		return nil, fmt.Errorf("bench: seed: open store: %w", err)
	}
	sys, err := actors.Open(actors.Config{
		Event:         event.Config{BaseURL: "http://127.0.0.1", OrderHold: 6 * time.Hour, CheckoutSessionTTL: 24 * time.Hour},
		SnapshotEvery: snapshotEvery,
		// Passivate soon: every active actor preallocates its mailbox, and
		// the scale seed touches thousands of events.
		IdleTimeout: 500 * time.Millisecond,
		// Loading a large copied log and encoding its snapshot can take
		// long on a busy machine.
		AskTimeout: 5 * time.Minute,
		Logger:     log,
		// As the service with no webhook endpoint: nothing is queued for
		// webhooks (webhooks.Owed without Want would queue every event
		// type, and the measured service would start by draining that
		// backlog).
		Owed:  []actors.OwedWork{mail.Owed{Logger: log}, payments.Owed{}},
		Links: mail.Owed{Logger: log},
	}, store, snapshots.New(store, 2))
	if err != nil {
		_ = store.Close()
		return nil, fmt.Errorf("bench: seed: actors: %w", err)
	}
	s := &Seeder{store: store, sys: sys}
	ctx := context.Background()
	u, err := sys.CreateUnit(ctx, "Bench")
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("bench: seed: unit: %w", err)
	}
	s.UnitID = u.ID
	if _, s.SecretKey, err = sys.CreateKey(ctx, actors.NewKeySpec{UnitID: u.ID, Type: directory.Secret, Name: "bench", Version: thttp.CurrentVersion}); err != nil {
		s.Close()
		return nil, fmt.Errorf("bench: seed: key: %w", err)
	}
	if _, s.PublishableKey, err = sys.CreateKey(ctx, actors.NewKeySpec{UnitID: u.ID, Type: directory.Publishable, Name: "bench", Version: thttp.CurrentVersion}); err != nil {
		s.Close()
		return nil, fmt.Errorf("bench: seed: key: %w", err)
	}
	return s, nil
}

// Close stops the actors (waiting for snapshot saves), compacts the store
// and closes it. The compaction leaves the data dir at rest, as a store is
// when a long-running service restarts: seeding writes millions of records
// in a minute and a snapshot then trims them, and without it the measured
// process would spend its first seconds compacting that garbage beside the
// recovery it is timed on.
func (s *Seeder) Close() {
	_ = s.sys.Close()
	_ = s.store.DB().Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff, 0xff}, true)
	_ = s.store.Close()
}

// ask sends cmd to the event, retrying while the actor shell is
// unavailable: a request that meets an actor just as it passivates is
// refused ("name exists") and succeeds a moment later.
func (s *Seeder) ask(eventID string, cmd event.Command) (any, error) {
	var err error
	for attempt := range 50 {
		var res any
		res, err = s.sys.Ask(context.Background(), eventID, cmd)
		if !errors.Is(err, actors.ErrUnavailable) {
			return res, err
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	return nil, err
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
	res, err := s.sys.CreateEvent(ctx, s.UnitID, s.sys.NewEventID(), event.CreateEvent{Name: name, Timezone: "UTC", StartsAt: &starts})
	if err != nil {
		return EventSetup{}, fmt.Errorf("bench: seed: event: %w", err)
	}
	e := EventSetup{Capacity: capacity}
	if e.EventID, err = idOf(res); err != nil {
		return e, err
	}
	res, err = s.ask(e.EventID, event.CreateTicketType{Name: "General admission", Capacity: &capacity})
	if err != nil {
		return e, fmt.Errorf("bench: seed: ticket type: %w", err)
	}
	if e.TicketTypeID, err = idOf(res); err != nil {
		return e, err
	}
	if _, err := s.ask(e.EventID, event.UpdateTicketType{ID: e.TicketTypeID, Status: event.Some("open")}); err != nil {
		return e, fmt.Errorf("bench: seed: open ticket type: %w", err)
	}
	if _, err := s.ask(e.EventID, event.UpdateEvent{Status: event.Some("published")}); err != nil {
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
				_, err := s.ask(e.EventID, event.CreateRegistration{
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
// worker has saved it (System.Close would drop a snapshot still queued).
// It returns the snapshot's seq.
func (s *Seeder) Snapshot(e EventSetup) (uint64, error) {
	// The actor may ask for it as it loads (at the seq of the seeded log)
	// or after the rename: either covers every seeded record.
	last, err := s.store.LastSeq(e.EventID)
	if err != nil {
		return 0, err
	}
	if _, err := s.ask(e.EventID, event.UpdateEvent{Name: event.Some("Bench (touched)")}); err != nil {
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

// Availability reads e's ticket type availability through its actor.
func (s *Seeder) Availability(e EventSetup) (Availability, error) {
	res, err := s.ask(e.EventID, event.GetAvailability{ID: e.TicketTypeID})
	if err != nil {
		return Availability{}, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return Availability{}, err
	}
	var a Availability
	err = json.Unmarshal(b, &a)
	return a, err
}
