package actors

import (
	"context"
	"strings"
	"ticketd/actors/index"
	"time"
)

// SharedIndex keeps the event index (which events exist, their units, and
// which are published) on every node in cluster mode, where an event's
// own batches reach only its owner's store.
type SharedIndex interface {
	// CreateEvent records that eventID belongs to unitID, durably on a
	// majority, once the event is created and before its creation is
	// answered: an acknowledged event is always in the index (a creation
	// whose index write fails is answered unavailable, and the event it
	// made, never acknowledged, is never listed).
	CreateEvent(ctx context.Context, eventID, unitID string) error
	// EventUnit reads an event's unit from the replicated index, for an
	// event this node has not heard of yet.
	EventUnit(ctx context.Context, eventID string) (unitID string, ok bool, err error)
	// Published records an event's status (index.Published or
	// index.NotPublished) once its change is durable. It must not block:
	// a status lost here is written again by the event's next activation,
	// which finds the index differing.
	Published(eventID string, status byte)
}

// sharedLookupTimeout bounds a read of the replicated index on a miss.
const sharedLookupTimeout = 3 * time.Second

// IndexChanged applies an entry of the replicated event index that another
// node wrote ("ev/" or "evpub/" keys) to this node's view of it.
func (s *System) IndexChanged(key, value []byte) {
	k := string(key)
	switch {
	case strings.HasPrefix(k, index.Prefix):
		s.idx.Add(k[len(index.Prefix):], string(value))
	case strings.HasPrefix(k, index.PublishedPrefix):
		if index.ValidStatus(value) {
			s.idx.NoteStatus(k[len(index.PublishedPrefix):], value[0])
		}
	}
}

// sharedEventUnit is EventUnit's fallback in cluster mode: an event
// created through another node a moment ago is found at once.
func (s *System) sharedEventUnit(eventID string) (string, bool) {
	if s.cfg.Index == nil || !strings.HasPrefix(eventID, "evt_") {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedLookupTimeout)
	defer cancel()
	u, ok, err := s.cfg.Index.EventUnit(ctx, eventID)
	if err != nil {
		s.cfg.Logger.Warn("actors: event index read failed", "event", eventID, "err", err)
		return "", false
	}
	if ok {
		s.idx.Add(eventID, u)
	}
	return u, ok
}
