package index

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

// TestLoadRebuildsUnitsAndStatuses: an index loaded from the entries the
// actors write knows each event's unit, lists a unit's events oldest
// first, and leaves out of the candidates only the known unpublished.
func TestLoadRebuildsUnitsAndStatuses(t *testing.T) {
	s, err := persistence.Open(persistence.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	b := s.NewBatch()
	for _, e := range []struct{ id, unit string }{{"evt_2", "bu_1"}, {"evt_1", "bu_1"}, {"evt_3", "bu_2"}, {"evt_4", "bu_1"}} {
		b.Put(Key(e.id), []byte(e.unit))
	}
	b.Put(PublishedKey("evt_1"), []byte{Published})
	b.Put(PublishedKey("evt_2"), []byte{NotPublished})
	b.Put(PublishedKey("evt_4"), []byte("?")) // not a status: unknown
	require.NoError(t, s.Commit(b))
	b.Close()

	x := New()
	require.NoError(t, x.Load(s))
	u, ok := x.Unit("evt_3")
	require.True(t, ok)
	require.Equal(t, "bu_2", u)
	require.Equal(t, []string{"evt_1", "evt_2", "evt_4"}, x.Events("bu_1"))
	cand, ok := x.Candidates("bu_1", "")
	require.True(t, ok)
	require.Equal(t, []string{"evt_1", "evt_4"}, cand)
	cand, _ = x.Candidates("bu_1", "evt_4")
	require.Equal(t, []string{"evt_1"}, cand)
	_, ok = x.Candidates("bu_2", "evt_1")
	require.False(t, ok, "evt_1 is not bu_2's")

	// A status change drops the unit's candidates; an unchanged one is no news.
	require.True(t, x.NoteStatus("evt_2", Published))
	require.False(t, x.NoteStatus("evt_2", Published))
	cand, _ = x.Candidates("bu_1", "")
	require.Equal(t, []string{"evt_1", "evt_2", "evt_4"}, cand)
	x.Add("evt_0", "bu_1")
	x.Add("evt_0", "bu_2") // the first unit stands
	require.Equal(t, []string{"evt_0", "evt_1", "evt_2", "evt_4"}, x.Events("bu_1"))
	require.ElementsMatch(t, []string{"evt_0", "evt_1", "evt_2", "evt_3", "evt_4"}, x.All())
}
