package actors

import (
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"ticketd/event"
)

// The waiting room's polls (event/waitingroom.go): a waiting entry not
// polled for event.QueuePollTimeout expires. Polls are reads, never
// logged, so the event's actor notes those it answers here (in cluster
// mode every poll reaches it: the owner's), the sale view those it
// answers on the entries' records (actors/saleview.go), and its timer's
// sweep asks the machine to expire the entries not seen for the timeout
// (ExpireWaiters, logged). After a restart or a move the notes start
// afresh: every entry is taken as seen when the actor started.

// waiterSweepEvery is how often the actor looks for unpolled entries.
const waiterSweepEvery = 30 * time.Second

// maxPollNotes bounds the poll notes of one event (the queue's own bound
// is far above; past this, entries not noted count as seen at start).
const maxPollNotes = 4_000_000

// notePoll remembers a poll of a queue entry.
func (a *eventActor) notePoll(cmd event.Command, now time.Time) {
	if sf, ok := cmd.(event.Storefront); ok {
		cmd = sf.Cmd
	}
	g, ok := cmd.(event.GetQueueStatus)
	if !ok {
		return
	}
	if a.polls == nil {
		a.polls = map[string]time.Time{}
	}
	if _, ok := a.polls[g.ID]; ok {
		a.polls[g.ID] = now
	} else if len(a.polls) < maxPollNotes {
		// A copy of its own: the request's id may share the bytes of
		// its whole path (http's hot routes), which the note would keep.
		a.polls[strings.Clone(g.ID)] = now
	}
}

// sweepWaiters expires the waiting entries not polled for the timeout.
func (a *eventActor) sweepWaiters(ctx actor.Context, now time.Time) {
	if now.Sub(a.swept) < waiterSweepEvery {
		return
	}
	a.swept = now
	if a.startedAt.IsZero() {
		a.startedAt = now
	}
	var ids []string
	// polled: the polls the sale view answered, noted on its records.
	a.m.QueueWaiters(func(id string, joined, polled time.Time) bool {
		seen := a.polls[id]
		for _, t := range [...]time.Time{joined, a.startedAt, polled} {
			if t.After(seen) {
				seen = t
			}
		}
		if now.Sub(seen) >= event.QueuePollTimeout {
			ids = append(ids, id)
			delete(a.polls, id)
		}
		return len(ids) < 10_000
	})
	if len(ids) > 0 {
		a.handle(ctx, &request{cmd: event.ExpireWaiters{IDs: ids}}, nil)
	}
}
