package event

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// setupProgram gives the simulation perks, venues, sessions, a speaker, a
// sponsor and bindings to act on.
func (s *sim) setupProgram() {
	s.must(CreatePerk{Name: "Workshop"})
	s.must(CreatePerk{Name: "Lounge"})
	s.must(CreateVenue{Name: "Hall"})
	s.must(CreateVenue{Name: "Lounge", PerkIDs: []string{"prk_2"}})
	at := func(h int) *Time { return &Time{time.Date(2026, 9, 1, h, 0, 0, 0, time.UTC)} }
	s.must(CreateSession{Title: "Keynote", StartsAt: at(9), EndsAt: at(10), VenueID: "ven_1"})
	s.must(CreateSession{Title: "Workshop", StartsAt: at(10), EndsAt: at(12), VenueID: "ven_2", PerkIDs: []string{"prk_1"}})
	s.must(CreateSpeaker{Name: "Rob", SessionIDs: []string{"ses_1"}})
	s.must(CreateSponsor{Name: "Acme", Tier: "gold"})
	s.must(SetTicketTypePerks{TypeID: "tt_1", PerkIDs: []string{"prk_1"}})
	s.must(SetCodePerks{CodeID: "rc_1", PerkIDs: []string{"prk_2"}})
}

// doors lists the session or venue ids to check in at, plus an unknown one.
func (s *sim) doors(kind string) []string {
	st := s.m.State()
	if kind == "session" {
		return append(slices.Clone(st.SessionOrder), "ses_404")
	}
	return append(slices.Clone(st.VenueOrder), "ven_404")
}

// randomProgramCommand edits the program, bindings and grants, and moves
// the event's start (an agenda reset when confirmed).
func (s *sim) randomProgramCommand() Command {
	st := s.m.State()
	perks := append(slices.Clone(st.PerkOrder), "prk_404")
	somePerks := func() []string {
		var ids []string
		for range s.rng.IntN(3) {
			ids = append(ids, s.pick(perks))
		}
		return ids
	}
	h := s.rng.IntN(20)
	at := func(h int) *Time { return &Time{time.Date(2026, 9, 1, h, 0, 0, 0, time.UTC)} }
	switch s.rng.IntN(14) {
	case 0:
		return CreatePerk{Name: fmt.Sprint("perk ", s.rng.IntN(100))}
	case 1:
		return DeletePerk{ID: s.pick(perks)}
	case 2:
		return CreateVenue{Name: "Room", PerkIDs: somePerks()}
	case 3:
		return UpdateVenue{ID: s.pick(st.VenueOrder), PerkIDs: Some(somePerks())}
	case 4:
		return DeleteVenue{ID: s.pick(st.VenueOrder)}
	case 5:
		return CreateSession{Title: "Talk", StartsAt: at(h), EndsAt: at(h + s.rng.IntN(3)), VenueID: s.pick(append(slices.Clone(st.VenueOrder), ""))}
	case 6:
		return UpdateSession{ID: s.pick(st.SessionOrder), StartsAt: Some(*at(h)), EndsAt: Some(*at(h + 1)), PerkIDs: Some(somePerks())}
	case 7:
		return DeleteSession{ID: s.pick(st.SessionOrder)}
	case 8:
		return UpdateSpeaker{ID: s.pick(st.SpeakerOrder), SessionIDs: Some([]string{s.pick(st.SessionOrder)}), RegistrationID: Some(s.pick(st.RegOrder))}
	case 9:
		return SetTicketTypePerks{TypeID: s.pick(simTypes), PerkIDs: somePerks()}
	case 10:
		return SetCodePerks{CodeID: s.pick(st.CodeOrder), PerkIDs: somePerks()}
	case 11:
		if s.rng.IntN(3) == 0 {
			return RevokePerk{RegistrationID: s.pick(st.RegOrder), PerkID: s.pick(perks)}
		}
		return GrantPerk{RegistrationID: s.pick(st.RegOrder), PerkID: s.pick(perks)}
	case 12:
		if s.rng.IntN(2) == 0 {
			return CreateSpeaker{Name: "Ann", SessionIDs: []string{s.pick(st.SessionOrder)}}
		}
		return DeleteSpeaker{ID: s.pick(st.SpeakerOrder)}
	default:
		start := Time{st.Event.StartsAt.Add(time.Duration(s.rng.IntN(3)) * 24 * time.Hour)}
		return UpdateEvent{StartsAt: Some(start), ConfirmAgendaReset: s.rng.IntN(2) == 0}
	}
}

// checkProgram checks the program's invariants: references resolve, the
// agenda is in time order, and effective perks and door verdicts agree
// with the bindings and grants recomputed from the records.
func (s *sim) checkProgram() {
	t, st := s.t, s.m.State()
	require.NoError(t, st.checkProgram(), "program references")
	for i := 1; i < len(st.SessionOrder); i++ {
		require.Negative(t, agendaCmp(st.Sessions[st.SessionOrder[i-1]], st.Sessions[st.SessionOrder[i]]), "agenda order")
	}
	for _, id := range st.RegOrder {
		r := st.regs()[id]
		want := map[string]bool{}
		for _, p := range st.TypePerks[r.TypeID] {
			want[p] = true
		}
		if r.CodeID != "" {
			for _, p := range st.CodePerks[r.CodeID] {
				want[p] = true
			}
		}
		for _, p := range st.Grants[id] {
			want[p] = true
		}
		res, _, err := s.m.Decide(s.now, GetRegistrationPerks{ID: id})
		require.NoError(t, err)
		got := map[string]bool{}
		for _, p := range res.(RegistrationPerks).Perks {
			got[p.ID] = true
		}
		require.Equal(t, want, got, "effective perks of %s", id)
		for _, sid := range st.SessionOrder {
			gate := slices.Clone(st.Sessions[sid].PerkIDs)
			if v := st.Venues[st.Sessions[sid].VenueID]; v != nil {
				gate = append(gate, v.PerkIDs...)
			}
			allowed := true
			for _, p := range gate {
				allowed = allowed && want[p]
			}
			require.Equal(t, allowed, s.m.access(r, "session", sid).Allowed, "verdict of %s at %s", id, sid)
		}
	}
}

// TestProgramSnapshotCompat: a snapshot of a build before the program
// sections (it ends after the venues) still decodes, with empty program
// collections, and a program snapshot round-trips.
func TestProgramSnapshotCompat(t *testing.T) {
	s := &sim{t: t, m: NewMachine("evt_c", Config{BaseURL: "http://t"}, newSeqIDs(1)), now: time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC), errs: map[string]int{}}
	start := Time{s.now.Add(24 * time.Hour)}
	s.must(CreateEvent{Name: "C", Timezone: "UTC", StartsAt: &start})
	old, err := MarshalState(s.m.State())
	require.NoError(t, err)
	// Six empty program sections: perks, speakers, sponsors, three bindings.
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0}, old[len(old)-6:])
	st, err := UnmarshalState(old[:len(old)-6])
	require.NoError(t, err)
	require.NotNil(t, st.Perks)
	require.NotNil(t, st.Grants)

	s.must(CreateTicketType{Name: "GA"})
	s.must(UpdateTicketType{ID: "tt_1", Status: Some(SellOpen)})
	s.must(CreatePerk{Name: "P"})
	s.must(SetTicketTypePerks{TypeID: "tt_1", PerkIDs: []string{"prk_1"}})
	s.must(CreateRegistration{Email: "a@x.io", RegistrationTypeID: "tt_1"})
	s.must(GrantPerk{RegistrationID: "reg_1", PerkID: "prk_1"})
	b, err := MarshalState(s.m.State())
	require.NoError(t, err)
	st, err = UnmarshalState(b)
	require.NoError(t, err)
	again, err := MarshalState(st)
	require.NoError(t, err)
	require.Equal(t, b, again)
	require.Equal(t, []string{"prk_1"}, st.Grants["reg_1"])
	require.Equal(t, []string{"prk_1"}, st.TypePerks["tt_1"])
	// A binding of an unknown perk is a corrupt snapshot, not a panic later.
	st.TypePerks["tt_1"] = []string{"prk_9"}
	bad, err := MarshalState(st)
	require.NoError(t, err)
	_, err = UnmarshalState(bad)
	require.ErrorContains(t, err, "unknown perk")
}
