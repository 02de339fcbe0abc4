package payments

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"ticketd/persistence"
)

// SeenPrefix is the key prefix of the webhook events a hosted provider
// delivered and the service acted on: "provider-event/" + provider name +
// "/" + the provider's event id (Stripe's evt_...). The value is the
// instant it was recorded, 8 bytes of big-endian Unix nanoseconds. An
// entry is written (synced) after the event's outcome is durable in the
// event's log and before the webhook is answered 2xx, so a redelivery
// finds it and changes nothing; a crash in between makes the redelivery
// act again, which the core makes a no-op. Entries are swept after
// SeenRetention, long past the provider's redeliveries (Stripe's end
// after 3 days). In cluster mode (Share) the entry is on a majority of
// the nodes before the webhook is answered, and every node keeps a copy.
const SeenPrefix = persistence.PrefixProviderEvent

// SeenRetention is how long a delivered event id is remembered.
const SeenRetention = 30 * 24 * time.Hour

// maxEventID bounds a provider event id (Stripe's are about 30 bytes).
const maxEventID = 255

// Seen is the durable record of a hosted provider's delivered webhook
// events. Safe for concurrent use.
type Seen struct {
	store    *persistence.Store
	provider string
	// put and get, when set (Share), are the cluster's shared index.
	put func(ctx context.Context, key, value []byte, ttl time.Duration) error
	get func(ctx context.Context, key []byte) ([]byte, bool, error)
}

// shareTimeout bounds one shared read or write of a record.
const shareTimeout = 10 * time.Second

// Share makes the record the cluster's: Mark stores through put, which
// must keep key = value on a majority of the nodes for ttl and copy it
// into every node's store, and Has reads through get (the entry as the
// cluster has it) when this node's copy lacks the id, so an event
// redelivered to another node moments later is recognised too. Each node
// sweeps its own copy (Sweep). Call it before the record is used.
func (s *Seen) Share(put func(ctx context.Context, key, value []byte, ttl time.Duration) error,
	get func(ctx context.Context, key []byte) ([]byte, bool, error)) {
	s.put, s.get = put, get
}

// NewSeen returns the record of provider's events in store.
func NewSeen(store *persistence.Store, provider string) *Seen {
	return &Seen{store: store, provider: provider}
}

func (s *Seen) key(id string) ([]byte, error) {
	if id == "" || len(id) > maxEventID {
		return nil, errors.New("payments: provider event id of 1 to 255 bytes required")
	}
	return []byte(SeenPrefix + s.provider + "/" + id), nil
}

// Has reports whether event id was acted on already.
func (s *Seen) Has(id string) (bool, error) {
	k, err := s.key(id)
	if err != nil {
		return false, err
	}
	_, ok, err := s.store.Get(k)
	if ok || err != nil || s.get == nil {
		return ok, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), shareTimeout)
	defer cancel()
	if _, ok, err = s.get(ctx, k); err != nil {
		return false, fmt.Errorf("payments: read provider event %s: %w", id, err)
	}
	return ok, nil
}

// Mark records event id as acted on at now, durably.
func (s *Seen) Mark(id string, now time.Time) error {
	k, err := s.key(id)
	if err != nil {
		return err
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(now.UnixNano()))
	if s.put != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shareTimeout)
		defer cancel()
		if err := s.put(ctx, k, v, SeenRetention); err != nil {
			return fmt.Errorf("payments: record provider event %s: %w", id, err)
		}
		return nil
	}
	b := s.store.NewBatch()
	defer b.Close()
	b.Put(k, v)
	if err := s.store.Commit(b); err != nil {
		return fmt.Errorf("payments: record provider event %s: %w", id, err)
	}
	return nil
}

// Sweep forgets the events recorded before now - SeenRetention; it answers
// how many.
func (s *Seen) Sweep(now time.Time) (int, error) {
	cut := now.Add(-SeenRetention).UnixNano()
	var old [][]byte
	err := s.store.Scan([]byte(SeenPrefix+s.provider+"/"), func(key, value []byte) error {
		if len(value) == 8 && int64(binary.BigEndian.Uint64(value)) < cut {
			old = append(old, append([]byte(nil), key...))
		}
		return nil
	})
	if err != nil || len(old) == 0 {
		return 0, err
	}
	b := s.store.NewBatch()
	defer b.Close()
	for _, k := range old {
		b.Delete(k)
	}
	if err := s.store.Commit(b); err != nil {
		return 0, fmt.Errorf("payments: sweep provider events: %w", err)
	}
	return len(old), nil
}
