package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/actors/index"
	"ticketd/event"
)

// TestPublishedIndexSurvivesRestart: event actors write their event's
// status beside the change that moves it, so after a restart the index
// knows every draft without loading a single event; an event without an
// entry (written before the index existed) stays a candidate until its
// actor runs once.
func TestPublishedIndexSurvivesRestart(t *testing.T) {
	e := newEnv(t, nil)
	starts := event.At(time.Date(2030, 6, 1, 9, 0, 0, 0, time.UTC))
	var drafts, published []string
	for i := 0; i < 6; i++ {
		id := e.sys.NewEventID()
		_, err := e.sys.CreateEvent(bg, "bu_1", id, event.CreateEvent{Name: "Conf", Timezone: "UTC", StartsAt: &starts})
		require.NoError(t, err)
		if i%3 == 0 {
			_, err = e.sys.Ask(bg, id, event.UpdateEvent{Status: event.Some(event.EventPublished)})
			require.NoError(t, err)
			published = append(published, id)
		} else {
			drafts = append(drafts, id)
		}
	}
	other := e.sys.NewEventID()
	_, err := e.sys.CreateEvent(bg, "bu_2", other, event.CreateEvent{Name: "Other", Timezone: "UTC"})
	require.NoError(t, err)

	cand, ok := e.sys.PublishedCandidates("bu_1", "")
	require.True(t, ok)
	require.Equal(t, published, cand)

	e.reopen()
	require.Zero(t, e.sys.Metrics().Active.Load(), "nothing loaded")
	cand, ok = e.sys.PublishedCandidates("bu_1", "")
	require.True(t, ok)
	require.Equal(t, published, cand, "known from the durable entries alone")
	cand, _ = e.sys.PublishedCandidates("bu_1", published[1])
	require.Equal(t, published[:1], cand, "before the cursor")
	_, ok = e.sys.PublishedCandidates("bu_1", other)
	require.False(t, ok, "another unit's event is no cursor")

	// Unpublish one, publish a draft: the entries follow, across a restart.
	_, err = e.sys.Ask(bg, published[0], event.UpdateEvent{Status: event.Some(event.EventDraft)})
	require.NoError(t, err)
	_, err = e.sys.Ask(bg, drafts[0], event.UpdateEvent{Status: event.Some(event.EventPublished)})
	require.NoError(t, err)
	e.reopen()
	cand, _ = e.sys.PublishedCandidates("bu_1", "")
	require.ElementsMatch(t, []string{drafts[0], published[1]}, cand)

	// Entries lost (a store from before the index): unknown events are
	// candidates until their actor has run.
	b := e.store.NewBatch()
	for _, id := range append(drafts, published...) {
		b.Delete(index.PublishedKey(id))
	}
	require.NoError(t, e.store.Commit(b))
	b.Close()
	e.reopen()
	cand, _ = e.sys.PublishedCandidates("bu_1", "")
	require.Len(t, cand, 6)
	_, err = e.sys.Ask(bg, drafts[1], event.GetEvent{})
	require.NoError(t, err)
	cand, _ = e.sys.PublishedCandidates("bu_1", "")
	require.Len(t, cand, 5, "its actor ran: a known draft")
	e.reopen()
	cand, _ = e.sys.PublishedCandidates("bu_1", "")
	require.Len(t, cand, 5, "and it wrote its entry")
}
