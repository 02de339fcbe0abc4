package outbox

import (
	"time"

	"ticketd/event"
)

// Owed is a logged change of an event that owes the world something (the
// core's Effects), as a producer of owed work sees it: the event actor
// hands it to each producer (mail, webhooks, payments) while the change's
// batch is open, and the producer writes its entries under its inbox
// prefix into that batch (persistence.KeyWriter), so an entry is exactly
// as durable as the change that owes it.
//
// Owed is valid only during the call it is passed to, on the actor's
// goroutine: Machine is the event's live state after the change was
// applied (read it, never keep or change it), and the actor reuses the
// value for its next change.
type Owed struct {
	EventID string
	// Seq is the change's seq in the event's log: entry keys carry it, so
	// they sort in the order the work was owed.
	Seq uint64
	// Now is the time the change was decided at.
	Now     time.Time
	Machine *event.Machine
	// Effects are the change's effects, in the core's order.
	Effects []event.Effect
	// Feed are the change's change-feed entries; the last one has seq
	// Machine.FeedSeq().
	Feed []event.FeedEntry
	// Unit answers the event's business unit ("" when not known yet).
	Unit func() string
}

// FeedSeq is the change feed's seq of o's feed entry about record id, 0
// when the change wrote none about it.
func (o *Owed) FeedSeq(id string) uint64 {
	first := o.Machine.FeedSeq() - uint64(len(o.Feed)) + 1
	for i, e := range o.Feed {
		if e.ID == id {
			return first + uint64(i)
		}
	}
	return 0
}
