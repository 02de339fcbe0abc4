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

	// FeedSeq's positions of a long Feed by record id (the first entry
	// about each), for the change of seq feedFor.
	feedAt  map[string]int
	feedFor uint64
}

// feedScanMax is the longest Feed FeedSeq searches entry by entry: a
// batch of door scans is one change with up to 500 check-ins, each with
// its webhook asking for its seq.
const feedScanMax = 16

// FeedSeq is the change feed's seq of o's first feed entry about record
// id, 0 when the change wrote none about it.
func (o *Owed) FeedSeq(id string) uint64 {
	first := o.Machine.FeedSeq() - uint64(len(o.Feed)) + 1
	if len(o.Feed) > feedScanMax {
		if o.feedAt == nil || o.feedFor != o.Seq {
			o.indexFeed()
		}
		if i, ok := o.feedAt[id]; ok {
			return first + uint64(i)
		}
		return 0
	}
	for i, e := range o.Feed {
		if e.ID == id {
			return first + uint64(i)
		}
	}
	return 0
}

// indexFeed maps each record id of o.Feed to its first entry. The value is
// reused for the next change, whose seq differs.
func (o *Owed) indexFeed() {
	if o.feedAt == nil {
		o.feedAt = make(map[string]int, len(o.Feed))
	}
	clear(o.feedAt)
	for i, e := range o.Feed {
		if _, ok := o.feedAt[e.ID]; !ok {
			o.feedAt[e.ID] = i
		}
	}
	o.feedFor = o.Seq
}
