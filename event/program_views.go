package event

import (
	"fmt"
	"slices"
	"strings"
)

// ---- views

// Venue is the venue record; PerkIDs is its gate (empty: open to all).
type Venue struct {
	ID        string   `json:"id"`
	EventID   string   `json:"eventId"`
	Name      string   `json:"name"`
	PerkIDs   []string `json:"perkIds"`
	CreatedAt Time     `json:"createdAt"`
	UpdatedAt Time     `json:"updatedAt"`
}

// Session is the agenda session record. GatePerkIDs is the door's whole
// gate: the session's perkIds plus its venue's.
type Session struct {
	ID          string   `json:"id"`
	EventID     string   `json:"eventId"`
	Title       string   `json:"title"`
	StartsAt    Time     `json:"startsAt"`
	EndsAt      Time     `json:"endsAt"`
	VenueID     *string  `json:"venueId"`
	PerkIDs     []string `json:"perkIds"`
	GatePerkIDs []string `json:"gatePerkIds" doc:"The session's perkIds plus its venue's; empty means open to all."`
	CreatedAt   Time     `json:"createdAt"`
	UpdatedAt   Time     `json:"updatedAt"`
}

// Speaker is the speaker record.
type Speaker struct {
	ID             string   `json:"id"`
	EventID        string   `json:"eventId"`
	Name           string   `json:"name"`
	Title          *string  `json:"title"`
	Bio            *string  `json:"bio"`
	RegistrationID *string  `json:"registrationId"`
	SessionIDs     []string `json:"sessionIds"`
	CreatedAt      Time     `json:"createdAt"`
	UpdatedAt      Time     `json:"updatedAt"`
}

// Sponsor is the sponsor record.
type Sponsor struct {
	ID        string  `json:"id"`
	EventID   string  `json:"eventId"`
	Name      string  `json:"name"`
	URL       *string `json:"url"`
	Tier      *string `json:"tier"`
	CreatedAt Time    `json:"createdAt"`
	UpdatedAt Time    `json:"updatedAt"`
}

// PerkBinding answers a perk binding PUT: the ticket type's or code's id
// and the perks now bound to it.
type PerkBinding struct {
	ID      string   `json:"id"`
	PerkIDs []string `json:"perkIds"`
	Perks   []Perk   `json:"perks"`
}

// PerkBindings answers ListPerkBindings: the bound ticket types in their
// order and the bound redemption codes in minting order; More is true
// when codes were left out.
type PerkBindings struct {
	TicketTypes     []PerkBinding     `json:"ticketTypes"`
	RedemptionCodes []CodePerkBinding `json:"redemptionCodes"`
	More            bool              `json:"hasMore"`
	Match           *CodePerkBinding  `json:"match,omitempty"`
}

// CodePerkBinding is a redemption code's binding with the code itself.
type CodePerkBinding struct {
	PerkBinding
	Code string `json:"code"`
}

// EffectivePerk is a perk a registration holds and where it comes from
// (ticket_type, redemption_code, grant).
type EffectivePerk struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description *string  `json:"description"`
	Sources     []string `json:"sources" doc:"ticket_type, redemption_code and/or grant"`
}

// RegistrationPerks answers GetRegistrationPerks: the union of the ticket
// type's perks, the admitting code's perks and individual grants.
type RegistrationPerks struct {
	RegistrationID string          `json:"registrationId"`
	Perks          []EffectivePerk `json:"perks"`
}

// PerkGrantResult answers a grant: the effective perks after it; Created
// is false when the perk was already granted.
type PerkGrantResult struct {
	RegistrationPerks
	Created bool `json:"created"`
}

// Access is a door's advisory perk verdict.
type Access struct {
	Allowed         bool     `json:"allowed"`
	RequiredPerkIDs []string `json:"requiredPerkIds"`
	MissingPerkIDs  []string `json:"missingPerkIds"`
}

// Attendee is one person (email, case-insensitive) with their
// registrations. Status is their standing: confirmed if any registration
// is, else waitlisted, pending, cancelled, rejected in that order.
type Attendee struct {
	Email           string   `json:"email"`
	Name            *string  `json:"name"`
	Status          string   `json:"status" v:"enum=pending|confirmed|waitlisted|rejected|cancelled"`
	RegistrationIDs []string `json:"registrationIds"`
}

// CatalogVenue is a session's room on a sales page.
type CatalogVenue struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// CatalogSession is an agenda entry on a sales page; PerkIDs is its whole
// gate (session plus venue).
type CatalogSession struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	StartsAt Time          `json:"startsAt"`
	EndsAt   Time          `json:"endsAt"`
	Venue    *CatalogVenue `json:"venue"`
	PerkIDs  []string      `json:"perkIds"`
}

// CatalogSpeaker is a speaker on a sales page (no registration link).
type CatalogSpeaker struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Title      *string  `json:"title"`
	Bio        *string  `json:"bio"`
	SessionIDs []string `json:"sessionIds"`
}

// CatalogSponsor is a sponsor on a sales page.
type CatalogSponsor struct {
	ID   string  `json:"id"`
	Name string  `json:"name"`
	URL  *string `json:"url"`
	Tier *string `json:"tier"`
}

func (m *Machine) venueView(v *VenueRec) Venue {
	return Venue{ID: v.ID, EventID: m.s.ID, Name: v.Name, PerkIDs: orEmpty(slices.Clone(v.PerkIDs)),
		CreatedAt: At(v.CreatedAt), UpdatedAt: At(v.UpdatedAt)}
}

func (m *Machine) sessionView(s *SessionRec) Session {
	return Session{ID: s.ID, EventID: m.s.ID, Title: s.Title, StartsAt: At(*s.StartsAt), EndsAt: At(*s.EndsAt),
		VenueID: strp(s.VenueID), PerkIDs: orEmpty(slices.Clone(s.PerkIDs)), GatePerkIDs: orEmpty(m.sessionGate(s)),
		CreatedAt: At(s.CreatedAt), UpdatedAt: At(s.UpdatedAt)}
}

func (m *Machine) speakerView(s *SpeakerRec) Speaker {
	return Speaker{ID: s.ID, EventID: m.s.ID, Name: s.Name, Title: strp(s.Title), Bio: strp(s.Bio), RegistrationID: strp(s.RegID),
		SessionIDs: orEmpty(slices.Clone(s.SessionIDs)), CreatedAt: At(s.CreatedAt), UpdatedAt: At(s.UpdatedAt)}
}

func (m *Machine) sponsorView(s *SponsorRec) Sponsor {
	return Sponsor{ID: s.ID, EventID: m.s.ID, Name: s.Name, URL: strp(s.URL), Tier: strp(s.Tier),
		CreatedAt: At(s.CreatedAt), UpdatedAt: At(s.UpdatedAt)}
}

func perkView(p *PerkRec) Perk {
	return Perk{ID: p.ID, Name: p.Name, Description: strp(p.Description)}
}

// programCatalog fills the sales page's agenda (all sessions in time
// order with their venue and gate), speakers and sponsors.
func (m *Machine) programCatalog(cat *Catalog) {
	cat.Agenda, cat.Speakers, cat.Sponsors = []CatalogSession{}, []CatalogSpeaker{}, []CatalogSponsor{}
	for _, id := range m.s.SessionOrder {
		s := m.s.Sessions[id]
		e := CatalogSession{ID: s.ID, Title: s.Title, StartsAt: At(*s.StartsAt), EndsAt: At(*s.EndsAt), PerkIDs: orEmpty(m.sessionGate(s))}
		if v := m.s.Venues[s.VenueID]; v != nil {
			e.Venue = &CatalogVenue{ID: v.ID, Name: v.Name}
		}
		cat.Agenda = append(cat.Agenda, e)
	}
	for _, id := range m.s.SpeakerOrder {
		s := m.s.Speakers[id]
		cat.Speakers = append(cat.Speakers, CatalogSpeaker{ID: s.ID, Name: s.Name, Title: strp(s.Title), Bio: strp(s.Bio),
			SessionIDs: orEmpty(slices.Clone(s.SessionIDs))})
	}
	for _, id := range m.s.SponsorOrder {
		s := m.s.Sponsors[id]
		cat.Sponsors = append(cat.Sponsors, CatalogSponsor{ID: s.ID, Name: s.Name, URL: strp(s.URL), Tier: strp(s.Tier)})
	}
}

// ---- apply

// applyProgram performs the program's changes; false for a change that is
// not the program's.

// agendaCmp orders sessions by start, end, title, id.
func agendaCmp(a, b *SessionRec) int {
	if c := a.StartsAt.Compare(*b.StartsAt); c != 0 {
		return c
	}
	if c := a.EndsAt.Compare(*b.EndsAt); c != 0 {
		return c
	}
	if c := strings.Compare(a.Title, b.Title); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

func setOrDelete(m map[string][]string, k string, ids []string) {
	if len(ids) == 0 {
		delete(m, k)
		return
	}
	m[k] = ids
}

func removeID(order []string, id string) []string {
	if i := slices.Index(order, id); i >= 0 {
		return slices.Delete(order, i, i+1)
	}
	return order
}

func renumber[T any](order []string, m map[string]*T, set func(*T, int)) {
	for i, id := range order {
		set(m[id], i)
	}
}

// without returns ids without id, sharing nothing with ids (records may be
// shared with views already handed out).
func without(ids []string, id string) []string {
	if !slices.Contains(ids, id) {
		return ids
	}
	out := slices.DeleteFunc(slices.Clone(ids), func(x string) bool { return x == id })
	if len(out) == 0 {
		return nil
	}
	return out
}

func (s *State) deleteProgram(c ProgramDeleted) {
	switch c.Kind {
	case kindVenue:
		mustGet(s.Venues, c.ID, "venue")
		delete(s.Venues, c.ID)
		s.VenueOrder = removeID(s.VenueOrder, c.ID)
		renumber(s.VenueOrder, s.Venues, func(r *VenueRec, i int) { r.Seq = i })
		for _, id := range s.SessionOrder {
			if r := s.Sessions[id]; r.VenueID == c.ID {
				r.VenueID, r.UpdatedAt = "", c.At
			}
		}
	case kindSession:
		mustGet(s.Sessions, c.ID, "session")
		delete(s.Sessions, c.ID)
		s.SessionOrder = removeID(s.SessionOrder, c.ID)
		renumber(s.SessionOrder, s.Sessions, func(r *SessionRec, i int) { r.Seq = i })
		for _, id := range s.SpeakerOrder {
			r := s.Speakers[id]
			r.SessionIDs = without(r.SessionIDs, c.ID)
		}
	case kindSpeaker:
		mustGet(s.Speakers, c.ID, "speaker")
		delete(s.Speakers, c.ID)
		s.SpeakerOrder = removeID(s.SpeakerOrder, c.ID)
		renumber(s.SpeakerOrder, s.Speakers, func(r *SpeakerRec, i int) { r.Seq = i })
	case kindSponsor:
		mustGet(s.Sponsors, c.ID, "sponsor")
		delete(s.Sponsors, c.ID)
		s.SponsorOrder = removeID(s.SponsorOrder, c.ID)
		renumber(s.SponsorOrder, s.Sponsors, func(r *SponsorRec, i int) { r.Seq = i })
	case kindPerk:
		mustGet(s.Perks, c.ID, "perk")
		delete(s.Perks, c.ID)
		s.PerkOrder = removeID(s.PerkOrder, c.ID)
		renumber(s.PerkOrder, s.Perks, func(r *PerkRec, i int) { r.Seq = i })
		for _, id := range s.VenueOrder {
			r := s.Venues[id]
			r.PerkIDs = without(r.PerkIDs, c.ID)
		}
		for _, id := range s.SessionOrder {
			r := s.Sessions[id]
			r.PerkIDs = without(r.PerkIDs, c.ID)
		}
		for _, m := range []map[string][]string{s.TypePerks, s.CodePerks, s.Grants} {
			for k, ids := range m {
				setOrDelete(m, k, without(ids, c.ID))
			}
		}
	default:
		panic(fmt.Sprintf("event: delete of unknown kind %q", c.Kind))
	}
}

// resetAgenda clears the agenda (sessions) and every speaker's sessions.
func (s *State) resetAgenda() {
	s.Sessions = map[string]*SessionRec{}
	s.SessionOrder = nil
	for _, id := range s.SpeakerOrder {
		s.Speakers[id].SessionIDs = nil
	}
}

// ---- change codec (see bincodec.go for the field encodings)

// ---- snapshot sections (after venues, see statecodec.go): perks,
// speakers, sponsors, then the ticket type bindings, code bindings and
// grants, each binding section a uvarint count of (id, perk ids) records
// sorted by id.

func (e enc) perkRec(r *PerkRec) enc {
	return e.str(r.ID).str(r.Name).str(r.Description).time(r.CreatedAt).time(r.UpdatedAt)
}

func (d *dec) perkRec() PerkRec {
	return PerkRec{ID: d.str(), Name: d.str(), Description: d.str(), CreatedAt: d.time(), UpdatedAt: d.time()}
}

func (e enc) speakerRec(r *SpeakerRec) enc {
	return e.str(r.ID).str(r.Name).str(r.Title).str(r.Bio).str(r.RegID).strs(r.SessionIDs).time(r.CreatedAt).time(r.UpdatedAt)
}

func (d *dec) speakerRec() SpeakerRec {
	return SpeakerRec{ID: d.str(), Name: d.str(), Title: d.str(), Bio: d.str(), RegID: d.str(), SessionIDs: d.strs(),
		CreatedAt: d.time(), UpdatedAt: d.time()}
}

func (e enc) sponsorRec(r *SponsorRec) enc {
	return e.str(r.ID).str(r.Name).str(r.URL).str(r.Tier).time(r.CreatedAt).time(r.UpdatedAt)
}

func (d *dec) sponsorRec() SponsorRec {
	return SponsorRec{ID: d.str(), Name: d.str(), URL: d.str(), Tier: d.str(), CreatedAt: d.time(), UpdatedAt: d.time()}
}

func bindingSection(e enc, m map[string][]string) enc {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e = e.uvarintBytes(uint64(len(keys)))
	for _, k := range keys {
		e = record(e, func(e enc) enc { return e.str(k).strs(m[k]) })
	}
	return e
}

func readBindings(d *dec, m map[string][]string) {
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		rd := dec{s: d.str()}
		k, ids := rd.str(), rd.strs()
		if rd.err != nil || len(rd.s) > 0 || len(ids) == 0 {
			d.fail()
			return
		}
		if _, dup := m[k]; dup {
			d.fail()
			return
		}
		m[k] = ids
	}
}

func (s *State) appendProgram(e enc) enc {
	e = section(e, nil, len(s.PerkOrder), byID(s.PerkOrder, s.Perks), enc.perkRec)
	e = section(e, nil, len(s.SpeakerOrder), byID(s.SpeakerOrder, s.Speakers), enc.speakerRec)
	e = section(e, nil, len(s.SponsorOrder), byID(s.SponsorOrder, s.Sponsors), enc.sponsorRec)
	e = bindingSection(e, s.TypePerks)
	e = bindingSection(e, s.CodePerks)
	return bindingSection(e, s.Grants)
}

func (s *State) decodeProgram(d *dec) {
	readSection(d, nil, &s.Perks, &s.PerkOrder, (*dec).perkRec, func(r *PerkRec) string { return r.ID }, func(r *PerkRec, i int) { r.Seq = i })
	readSection(d, nil, &s.Speakers, &s.SpeakerOrder, (*dec).speakerRec, func(r *SpeakerRec) string { return r.ID }, func(r *SpeakerRec, i int) { r.Seq = i })
	readSection(d, nil, &s.Sponsors, &s.SponsorOrder, (*dec).sponsorRec, func(r *SponsorRec) string { return r.ID }, func(r *SponsorRec, i int) { r.Seq = i })
	readBindings(d, s.TypePerks)
	readBindings(d, s.CodePerks)
	readBindings(d, s.Grants)
}

// checkProgram verifies the program's structure and references in a
// decoded snapshot.
func (s *State) checkProgram() error {
	if s.Perks == nil || s.Speakers == nil || s.Sponsors == nil || s.TypePerks == nil || s.CodePerks == nil || s.Grants == nil {
		return fmt.Errorf("missing program collection")
	}
	if err := checkOrder(s.Perks, s.PerkOrder, "perk", func(v *PerkRec) int { return v.Seq }); err != nil {
		return err
	}
	if err := checkOrder(s.Speakers, s.SpeakerOrder, "speaker", func(v *SpeakerRec) int { return v.Seq }); err != nil {
		return err
	}
	if err := checkOrder(s.Sponsors, s.SponsorOrder, "sponsor", func(v *SponsorRec) int { return v.Seq }); err != nil {
		return err
	}
	return s.checkProgramRefs()
}

func (s *State) checkProgramRefs() error {
	perks := func(what, id string, ids []string) error {
		for _, p := range ids {
			if s.Perks[p] == nil {
				return fmt.Errorf("%s %s has unknown perk %s", what, id, p)
			}
		}
		return nil
	}
	for _, id := range s.VenueOrder {
		if err := perks("venue", id, s.Venues[id].PerkIDs); err != nil {
			return err
		}
	}
	for _, id := range s.SessionOrder {
		r := s.Sessions[id]
		if r.StartsAt == nil || r.EndsAt == nil {
			return fmt.Errorf("session %s without times", id)
		}
		if r.VenueID != "" && s.Venues[r.VenueID] == nil {
			return fmt.Errorf("session %s of unknown venue", id)
		}
		if err := perks("session", id, r.PerkIDs); err != nil {
			return err
		}
	}
	for _, id := range s.SpeakerOrder {
		r := s.Speakers[id]
		if r.RegID != "" && s.regs()[r.RegID] == nil {
			return fmt.Errorf("speaker %s of unknown registration", id)
		}
		for _, sid := range r.SessionIDs {
			if s.Sessions[sid] == nil {
				return fmt.Errorf("speaker %s of unknown session %s", id, sid)
			}
		}
	}
	for k, ids := range s.TypePerks {
		if s.Types[k] == nil {
			return fmt.Errorf("perks of unknown ticket type %s", k)
		}
		if err := perks("ticket type", k, ids); err != nil {
			return err
		}
	}
	for k, ids := range s.CodePerks {
		if s.Codes[k] == nil {
			return fmt.Errorf("perks of unknown code %s", k)
		}
		if err := perks("code", k, ids); err != nil {
			return err
		}
	}
	for k, ids := range s.Grants {
		if s.regs()[k] == nil {
			return fmt.Errorf("grants of unknown registration %s", k)
		}
		if err := perks("registration", k, ids); err != nil {
			return err
		}
	}
	return nil
}
