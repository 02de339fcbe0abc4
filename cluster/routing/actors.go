package routing

import (
	"context"
	"time"

	"ticketd/ask"
	"ticketd/event"
	"ticketd/internal/pace"
	"ticketd/persistence"
)

// Actors is what the router needs of the node's local actor runtime (app
// passes its *actors.System): serving a forwarded request on its event's
// actor, activating, preloading and evicting the events of the shards the
// node gains and loses, and the local store the event index is read from.
type Actors interface {
	// Serve asks eventID's actor, activating it first (createUnit: the
	// unit of an event the command creates).
	Serve(ctx context.Context, eventID string, cmd event.Command, createUnit string) (any, error)
	// ServeAsyncRecorded hands cmd to eventID's actor and calls done with
	// its answer within timeout, without a goroutine waiting for it; rec
	// is the request's Idempotency-Key record, or nil.
	ServeAsyncRecorded(eventID string, cmd event.Command, createUnit string, rec *ask.Recorder, timeout time.Duration, done func(res any, err error))
	// Store is the node's local store.
	Store() *persistence.Store
	// Preload builds an event's state ahead of a handover, answering the
	// last record it holds, counting its steps in progress.
	Preload(ctx context.Context, id string, progress *pace.Progress) (uint64, error)
	// DropPreloaded drops the states built by Preload that match.
	DropPreloaded(match func(eventID string) bool)
	// EventUnit is the unit of an event the node knows.
	EventUnit(eventID string) (string, bool)
	// Evict stops the actors of the events that match, answering how many.
	Evict(match func(eventID string) bool) int
	// EvictLoaded is Evict of the actors that finished loading before.
	EvictLoaded(match func(eventID string) bool, before time.Time) int
	// EvictWait is Evict that waits for the actors' commits in flight.
	EvictWait(ctx context.Context, match func(eventID string) bool) int
}

// AnswerEncoder encodes a write's result as the front door answers it
// (package http's EncodeAnswer): the record a forwarded keyed write
// commits on its owner holds that answer.
type AnswerEncoder func(result any) ([]byte, bool)
