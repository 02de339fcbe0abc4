package event

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The program and perks: venues, sessions, speakers, sponsors and perks of
// an event (console records), perk bindings to ticket types and redemption
// codes, individual grants, and the reads that depend on them (effective
// perks, door verdicts, attendees, the storefront agenda).
//
// Decisions:
//   - Deletes detach references instead of refusing: deleting a perk removes
//     it from every venue and session gate, ticket type and code binding and
//     grant; deleting a venue leaves its sessions without a venue; deleting
//     a session removes it from speakers' sessionIds. Check-ins recorded at
//     a deleted door stay (they are history).
//   - SessionOrder is kept in agenda order (startsAt, endsAt, title, id), so
//     the agenda list pages by position like every other list.
//   - A session or venue door needs an existing subjectId (400 on
//     subjectId otherwise); the perk verdict is advisory (Access), the only
//     hard stop stays "not confirmed".

// Bounds on program records per event and on id lists per record.
const (
	maxVenues   = 500
	maxSessions = 2000
	maxSpeakers = 2000
	maxSponsors = 500
	maxPerks    = 500
	maxPerkIDs  = 50
	// maxListedCodeBindings bounds ListPerkBindings' code list.
	maxListedCodeBindings = 500
	maxSessionRefs        = 100
)

// Perk sources, the wire values of EffectivePerk.Sources.
const (
	SourceTicketType     = "ticket_type"
	SourceRedemptionCode = "redemption_code"
	SourceGrant          = "grant"
)

// ---- records

// PerkRec is a perk of the event.
type PerkRec struct {
	ID          string    `json:"id"`
	Seq         int       `json:"seq"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// SpeakerRec is a speaker of the line-up.
type SpeakerRec struct {
	ID         string    `json:"id"`
	Seq        int       `json:"seq"`
	Name       string    `json:"name"`
	Title      string    `json:"title,omitempty"`
	Bio        string    `json:"bio,omitempty"`
	RegID      string    `json:"regId,omitempty"`
	SessionIDs []string  `json:"sessionIds,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// SponsorRec is a sponsor of the event.
type SponsorRec struct {
	ID        string    `json:"id"`
	Seq       int       `json:"seq"`
	Name      string    `json:"name"`
	URL       string    `json:"url,omitempty"`
	Tier      string    `json:"tier,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ---- commands

// CreateVenue creates a venue (a room); PerkIDs is its gate.
type CreateVenue struct {
	Name    string   `json:"name" v:"required,minLen=1,maxLen=200"`
	PerkIDs []string `json:"perkIds,omitempty" v:"maxItems=50" doc:"The venue's gate; empty means open to all."`
}

// UpdateVenue patches a venue.
type UpdateVenue struct {
	ID      string        `json:"-"`
	Name    Opt[string]   `json:"name,omitzero" v:"minLen=1,maxLen=200"`
	PerkIDs Opt[[]string] `json:"perkIds,omitzero" v:"nullable,maxItems=50"`
}

// GetVenue reads a venue.
type GetVenue struct {
	ID string `json:"-"`
}

// ListVenues lists venues in creation order.
type ListVenues struct {
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// DeleteVenue deletes a venue; its sessions keep no venue.
type DeleteVenue struct {
	ID string `json:"-"`
}

// CreateSession creates an agenda session; EndsAt must be after StartsAt.
type CreateSession struct {
	Title    string   `json:"title" v:"required,minLen=1,maxLen=200"`
	StartsAt *Time    `json:"startsAt" v:"required"`
	EndsAt   *Time    `json:"endsAt" v:"required"`
	VenueID  string   `json:"venueId,omitempty" v:"maxLen=100"`
	PerkIDs  []string `json:"perkIds,omitempty" v:"maxItems=50" doc:"The session's own gate; its venue's gate applies on top."`
}

// UpdateSession patches a session; venueId null removes the venue.
type UpdateSession struct {
	ID       string        `json:"-"`
	Title    Opt[string]   `json:"title,omitzero" v:"minLen=1,maxLen=200"`
	StartsAt Opt[Time]     `json:"startsAt,omitzero"`
	EndsAt   Opt[Time]     `json:"endsAt,omitzero"`
	VenueID  Opt[string]   `json:"venueId,omitzero" v:"nullable,maxLen=100"`
	PerkIDs  Opt[[]string] `json:"perkIds,omitzero" v:"nullable,maxItems=50"`
}

// GetSession reads a session.
type GetSession struct {
	ID string `json:"-"`
}

// ListSessions lists the agenda in time order.
type ListSessions struct {
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// DeleteSession deletes a session; speakers lose it from sessionIds.
type DeleteSession struct {
	ID string `json:"-"`
}

// CreateSpeaker creates a speaker; RegistrationID and SessionIDs must be of
// this event.
type CreateSpeaker struct {
	Name           string   `json:"name" v:"required,minLen=1,maxLen=200"`
	Title          string   `json:"title,omitempty" v:"maxLen=200"`
	Bio            string   `json:"bio,omitempty" v:"maxLen=5000"`
	RegistrationID string   `json:"registrationId,omitempty" v:"maxLen=100"`
	SessionIDs     []string `json:"sessionIds,omitempty" v:"maxItems=100"`
}

// UpdateSpeaker patches a speaker; null clears an optional field.
type UpdateSpeaker struct {
	ID             string        `json:"-"`
	Name           Opt[string]   `json:"name,omitzero" v:"minLen=1,maxLen=200"`
	Title          Opt[string]   `json:"title,omitzero" v:"nullable,maxLen=200"`
	Bio            Opt[string]   `json:"bio,omitzero" v:"nullable,maxLen=5000"`
	RegistrationID Opt[string]   `json:"registrationId,omitzero" v:"nullable,maxLen=100"`
	SessionIDs     Opt[[]string] `json:"sessionIds,omitzero" v:"nullable,maxItems=100"`
}

// GetSpeaker reads a speaker.
type GetSpeaker struct {
	ID string `json:"-"`
}

// ListSpeakers lists the line-up in creation order.
type ListSpeakers struct {
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// DeleteSpeaker deletes a speaker.
type DeleteSpeaker struct {
	ID string `json:"-"`
}

// CreateSponsor creates a sponsor.
type CreateSponsor struct {
	Name string `json:"name" v:"required,minLen=1,maxLen=200"`
	URL  string `json:"url,omitempty" v:"format=uri,maxLen=2000"`
	Tier string `json:"tier,omitempty" v:"maxLen=64"`
}

// UpdateSponsor patches a sponsor; null clears url or tier.
type UpdateSponsor struct {
	ID   string      `json:"-"`
	Name Opt[string] `json:"name,omitzero" v:"minLen=1,maxLen=200"`
	URL  Opt[string] `json:"url,omitzero" v:"nullable,format=uri,maxLen=2000"`
	Tier Opt[string] `json:"tier,omitzero" v:"nullable,maxLen=64"`
}

// GetSponsor reads a sponsor.
type GetSponsor struct {
	ID string `json:"-"`
}

// ListSponsors lists sponsors in creation order.
type ListSponsors struct {
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// DeleteSponsor deletes a sponsor.
type DeleteSponsor struct {
	ID string `json:"-"`
}

// CreatePerk creates a perk.
type CreatePerk struct {
	Name        string `json:"name" v:"required,minLen=1,maxLen=200"`
	Description string `json:"description,omitempty" v:"maxLen=2000"`
}

// UpdatePerk patches a perk; description null clears it.
type UpdatePerk struct {
	ID          string      `json:"-"`
	Name        Opt[string] `json:"name,omitzero" v:"minLen=1,maxLen=200"`
	Description Opt[string] `json:"description,omitzero" v:"nullable,maxLen=2000"`
}

// GetPerk reads a perk.
type GetPerk struct {
	ID string `json:"-"`
}

// ListPerks lists perks in creation order.
type ListPerks struct {
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// DeletePerk deletes a perk and every gate, binding and grant of it.
type DeletePerk struct {
	ID string `json:"-"`
}

// SetTicketTypePerks replaces the perks a ticket type carries.
type SetTicketTypePerks struct {
	TypeID  string   `json:"-"`
	PerkIDs []string `json:"perkIds" v:"required,maxItems=50"`
}

// SetCodePerks replaces the perks a redemption code adds to its admission.
type SetCodePerks struct {
	CodeID  string   `json:"-"`
	PerkIDs []string `json:"perkIds" v:"required,maxItems=50"`
}

// ListPerkBindings reads which perks each ticket type and redemption code
// carries: every bound ticket type, and the first maxListedCodeBindings
// bound codes in minting order (More says some were left out). Code, when
// given, also looks one code up by its text (Match), bound or not, so a
// form can bind a code people know by its text rather than its id.
type ListPerkBindings struct {
	Code string `json:"-" query:"code" v:"maxLen=64"`
}

// GrantPerk grants one perk to one registration; a repeat grant changes
// nothing (Created false).
type GrantPerk struct {
	RegistrationID string `json:"-"`
	PerkID         string `json:"perkId" v:"required,minLen=1,maxLen=100"`
}

// RevokePerk removes an individual grant.
type RevokePerk struct {
	RegistrationID string `json:"-"`
	PerkID         string `json:"-"`
}

// GetRegistrationPerks reads a registration's effective perks.
type GetRegistrationPerks struct {
	ID string `json:"-"`
}

// ListAttendees lists people (one entry per email, case-insensitive) in the
// order of their first registration.
type ListAttendees struct {
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// ---- changes

// VenueSaved creates a venue or replaces its fields.
type VenueSaved struct {
	At      time.Time `json:"at"`
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	PerkIDs []string  `json:"perks,omitempty"`
}

// SessionSaved creates a session or replaces its fields.
type SessionSaved struct {
	At       time.Time `json:"at"`
	ID       string    `json:"id"`
	Title    string    `json:"title"`
	StartsAt time.Time `json:"startsAt"`
	EndsAt   time.Time `json:"endsAt"`
	VenueID  string    `json:"venue,omitempty"`
	PerkIDs  []string  `json:"perks,omitempty"`
}

// SpeakerSaved creates a speaker or replaces its fields.
type SpeakerSaved struct {
	At         time.Time `json:"at"`
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Title      string    `json:"title,omitempty"`
	Bio        string    `json:"bio,omitempty"`
	RegID      string    `json:"reg,omitempty"`
	SessionIDs []string  `json:"sessions,omitempty"`
}

// SponsorSaved creates a sponsor or replaces its fields.
type SponsorSaved struct {
	At   time.Time `json:"at"`
	ID   string    `json:"id"`
	Name string    `json:"name"`
	URL  string    `json:"url,omitempty"`
	Tier string    `json:"tier,omitempty"`
}

// PerkSaved creates a perk or replaces its fields.
type PerkSaved struct {
	At          time.Time `json:"at"`
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"desc,omitempty"`
}

// ProgramDeleted deletes a venue, session, speaker, sponsor or perk (Kind
// is "venue", "session", "speaker", "sponsor" or "perk") and detaches
// references to it.
type ProgramDeleted struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	ID   string    `json:"id"`
}

// PerksBound replaces the perks bound to a ticket type (Kind
// "ticket_type") or a redemption code (Kind "redemption_code").
type PerksBound struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	ID      string    `json:"id"`
	PerkIDs []string  `json:"perks,omitempty"`
}

// PerkGranted grants (Revoke false) or revokes an individual perk.
type PerkGranted struct {
	At     time.Time `json:"at"`
	RegID  string    `json:"reg"`
	PerkID string    `json:"perk"`
	Revoke bool      `json:"revoke,omitempty"`
}

// Kinds of ProgramDeleted.
const (
	kindVenue   = "venue"
	kindSession = "session"
	kindSpeaker = "speaker"
	kindSponsor = "sponsor"
	kindPerk    = "perk"
)

// ---- decide

func (CreateVenue) result(*Venue) {}

func (c CreateVenue) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.saveVenue(now, "", Some(c.Name), Some(c.PerkIDs))
}

func (UpdateVenue) result(*Venue) {}

func (c UpdateVenue) decide(m *Machine, now time.Time) (any, []Change, error) {
	if _, err := m.venue(c.ID); err != nil {
		return nil, nil, err
	}
	return m.saveVenue(now, c.ID, c.Name, c.PerkIDs)
}

func (GetVenue) result(*Venue) {}

func (c GetVenue) decide(m *Machine, now time.Time) (any, []Change, error) {
	v, err := m.venue(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return m.venueView(v), nil, nil
}

func (ListVenues) result(*List[Venue]) {}

func (c ListVenues) decide(m *Machine, now time.Time) (any, []Change, error) {
	l, err := pageOf(m.s.VenueOrder, m.s.Venues, func(v *VenueRec) int { return v.Seq }, c.Cursor, c.Limit, false, nil, m.venueView)
	return l, nil, err
}

func (DeleteVenue) result(*Venue) {}

func (c DeleteVenue) decide(m *Machine, now time.Time) (any, []Change, error) {
	v, err := m.venue(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return m.venueView(v), []Change{ProgramDeleted{At: now, Kind: kindVenue, ID: v.ID}}, nil
}

func (CreateSession) result(*Session) {}

func (c CreateSession) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.createSession(now, c)
}

func (UpdateSession) result(*Session) {}

func (c UpdateSession) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.updateSession(now, c)
}

func (GetSession) result(*Session) {}

func (c GetSession) decide(m *Machine, now time.Time) (any, []Change, error) {
	v, err := m.session(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return m.sessionView(v), nil, nil
}

func (ListSessions) result(*List[Session]) {}

func (c ListSessions) decide(m *Machine, now time.Time) (any, []Change, error) {
	l, err := pageOf(m.s.SessionOrder, m.s.Sessions, func(v *SessionRec) int { return v.Seq }, c.Cursor, c.Limit, false, nil, m.sessionView)
	return l, nil, err
}

func (DeleteSession) result(*Session) {}

func (c DeleteSession) decide(m *Machine, now time.Time) (any, []Change, error) {
	v, err := m.session(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return m.sessionView(v), []Change{ProgramDeleted{At: now, Kind: kindSession, ID: v.ID}}, nil
}

func (CreateSpeaker) result(*Speaker) {}

func (c CreateSpeaker) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.saveSpeaker(now, "", UpdateSpeaker{Name: Some(c.Name), Title: Some(c.Title), Bio: Some(c.Bio),
		RegistrationID: Some(c.RegistrationID), SessionIDs: Some(c.SessionIDs)})
}

func (UpdateSpeaker) result(*Speaker) {}

func (c UpdateSpeaker) decide(m *Machine, now time.Time) (any, []Change, error) {
	if _, err := m.speaker(c.ID); err != nil {
		return nil, nil, err
	}
	return m.saveSpeaker(now, c.ID, c)
}

func (GetSpeaker) result(*Speaker) {}

func (c GetSpeaker) decide(m *Machine, now time.Time) (any, []Change, error) {
	v, err := m.speaker(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return m.speakerView(v), nil, nil
}

func (ListSpeakers) result(*List[Speaker]) {}

func (c ListSpeakers) decide(m *Machine, now time.Time) (any, []Change, error) {
	l, err := pageOf(m.s.SpeakerOrder, m.s.Speakers, func(v *SpeakerRec) int { return v.Seq }, c.Cursor, c.Limit, false, nil, m.speakerView)
	return l, nil, err
}

func (DeleteSpeaker) result(*Speaker) {}

func (c DeleteSpeaker) decide(m *Machine, now time.Time) (any, []Change, error) {
	v, err := m.speaker(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return m.speakerView(v), []Change{ProgramDeleted{At: now, Kind: kindSpeaker, ID: v.ID}}, nil
}

func (CreateSponsor) result(*Sponsor) {}

func (c CreateSponsor) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.saveSponsor(now, "", UpdateSponsor{Name: Some(c.Name), URL: Some(c.URL), Tier: Some(c.Tier)})
}

func (UpdateSponsor) result(*Sponsor) {}

func (c UpdateSponsor) decide(m *Machine, now time.Time) (any, []Change, error) {
	if _, err := m.sponsor(c.ID); err != nil {
		return nil, nil, err
	}
	return m.saveSponsor(now, c.ID, c)
}

func (GetSponsor) result(*Sponsor) {}

func (c GetSponsor) decide(m *Machine, now time.Time) (any, []Change, error) {
	v, err := m.sponsor(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return m.sponsorView(v), nil, nil
}

func (ListSponsors) result(*List[Sponsor]) {}

func (c ListSponsors) decide(m *Machine, now time.Time) (any, []Change, error) {
	l, err := pageOf(m.s.SponsorOrder, m.s.Sponsors, func(v *SponsorRec) int { return v.Seq }, c.Cursor, c.Limit, false, nil, m.sponsorView)
	return l, nil, err
}

func (DeleteSponsor) result(*Sponsor) {}

func (c DeleteSponsor) decide(m *Machine, now time.Time) (any, []Change, error) {
	v, err := m.sponsor(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return m.sponsorView(v), []Change{ProgramDeleted{At: now, Kind: kindSponsor, ID: v.ID}}, nil
}

func (CreatePerk) result(*Perk) {}

func (c CreatePerk) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.savePerk(now, "", UpdatePerk{Name: Some(c.Name), Description: Some(c.Description)})
}

func (UpdatePerk) result(*Perk) {}

func (c UpdatePerk) decide(m *Machine, now time.Time) (any, []Change, error) {
	if _, err := m.perk(c.ID); err != nil {
		return nil, nil, err
	}
	return m.savePerk(now, c.ID, c)
}

func (GetPerk) result(*Perk) {}

func (c GetPerk) decide(m *Machine, now time.Time) (any, []Change, error) {
	v, err := m.perk(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return perkView(v), nil, nil
}

func (ListPerks) result(*List[Perk]) {}

func (c ListPerks) decide(m *Machine, now time.Time) (any, []Change, error) {
	l, err := pageOf(m.s.PerkOrder, m.s.Perks, func(v *PerkRec) int { return v.Seq }, c.Cursor, c.Limit, false, nil, perkView)
	return l, nil, err
}

func (DeletePerk) result(*Perk) {}

func (c DeletePerk) decide(m *Machine, now time.Time) (any, []Change, error) {
	v, err := m.perk(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return perkView(v), []Change{ProgramDeleted{At: now, Kind: kindPerk, ID: v.ID}}, nil
}

func (SetTicketTypePerks) result(*PerkBinding) {}

func (c SetTicketTypePerks) decide(m *Machine, now time.Time) (any, []Change, error) {
	t, err := m.ticketType(c.TypeID)
	if err != nil {
		return nil, nil, err
	}
	ids, err := m.checkPerkIDs("perkIds", c.PerkIDs)
	if err != nil {
		return nil, nil, err
	}
	return PerkBinding{ID: t.ID, PerkIDs: orEmpty(ids), Perks: m.perksOf(ids)},
		[]Change{PerksBound{At: now, Kind: SourceTicketType, ID: t.ID, PerkIDs: ids}}, nil
}

func (SetCodePerks) result(*PerkBinding) {}

func (c SetCodePerks) decide(m *Machine, now time.Time) (any, []Change, error) {
	code, ok := m.s.Codes[c.CodeID]
	if !ok {
		return nil, nil, Errorf(NotFound, "redemption code not found")
	}
	ids, err := m.checkPerkIDs("perkIds", c.PerkIDs)
	if err != nil {
		return nil, nil, err
	}
	return PerkBinding{ID: code.ID, PerkIDs: orEmpty(ids), Perks: m.perksOf(ids)},
		[]Change{PerksBound{At: now, Kind: SourceRedemptionCode, ID: code.ID, PerkIDs: ids}}, nil
}

func (ListPerkBindings) result(*PerkBindings) {}

func (c ListPerkBindings) decide(m *Machine, now time.Time) (any, []Change, error) {
	out := PerkBindings{TicketTypes: []PerkBinding{}, RedemptionCodes: []CodePerkBinding{}}
	if c.Code != "" {
		id, ok := m.s.idx.codeByCode[normCode(c.Code)]
		if !ok {
			return nil, nil, Errorf(NotFound, "redemption code not found")
		}
		ids := m.s.CodePerks[id]
		out.Match = &CodePerkBinding{PerkBinding: PerkBinding{ID: id, PerkIDs: orEmpty(ids), Perks: m.perksOf(ids)}, Code: m.s.Codes[id].Code}
	}
	for _, id := range m.s.TypeOrder {
		if ids := m.s.TypePerks[id]; len(ids) > 0 {
			out.TicketTypes = append(out.TicketTypes, PerkBinding{ID: id, PerkIDs: ids, Perks: m.perksOf(ids)})
		}
	}
	// Bound codes are few next to minted ones, so walk the bindings, not
	// the codes, and order them by minting sequence.
	codes := make([]*CodeRec, 0, len(m.s.CodePerks))
	for id := range m.s.CodePerks {
		codes = append(codes, m.s.Codes[id])
	}
	slices.SortFunc(codes, func(a, b *CodeRec) int { return a.Seq - b.Seq })
	if len(codes) > maxListedCodeBindings {
		codes, out.More = codes[:maxListedCodeBindings], true
	}
	for _, code := range codes {
		ids := m.s.CodePerks[code.ID]
		out.RedemptionCodes = append(out.RedemptionCodes, CodePerkBinding{PerkBinding: PerkBinding{ID: code.ID, PerkIDs: ids, Perks: m.perksOf(ids)}, Code: code.Code})
	}
	return out, nil, nil
}

func (GrantPerk) result(*PerkGrantResult) {}

func (c GrantPerk) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.grantPerk(now, c.RegistrationID, c.PerkID, false)
}

func (RevokePerk) result(*PerkGrantResult) {}

func (c RevokePerk) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.grantPerk(now, c.RegistrationID, c.PerkID, true)
}

func (GetRegistrationPerks) result(*RegistrationPerks) {}

func (c GetRegistrationPerks) decide(m *Machine, now time.Time) (any, []Change, error) {
	r, err := m.registration(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return m.effectivePerks(r), nil, nil
}

func (ListAttendees) result(*List[Attendee]) {}

func (c ListAttendees) decide(m *Machine, now time.Time) (any, []Change, error) {
	l, err := m.attendees(c)
	return l, nil, err
}

func (m *Machine) venue(id string) (*VenueRec, error) {
	if v, ok := m.s.Venues[id]; ok {
		return v, nil
	}
	return nil, Errorf(NotFound, "venue not found")
}

func (m *Machine) session(id string) (*SessionRec, error) {
	if v, ok := m.s.Sessions[id]; ok {
		return v, nil
	}
	return nil, Errorf(NotFound, "session not found")
}

func (m *Machine) speaker(id string) (*SpeakerRec, error) {
	if v, ok := m.s.Speakers[id]; ok {
		return v, nil
	}
	return nil, Errorf(NotFound, "speaker not found")
}

func (m *Machine) sponsor(id string) (*SponsorRec, error) {
	if v, ok := m.s.Sponsors[id]; ok {
		return v, nil
	}
	return nil, Errorf(NotFound, "sponsor not found")
}

func (m *Machine) perk(id string) (*PerkRec, error) {
	if v, ok := m.s.Perks[id]; ok {
		return v, nil
	}
	return nil, Errorf(NotFound, "perk not found")
}

// checkIDs trims ids, drops duplicates (keeping the first) and refuses an
// id that known does not accept, naming it by its index.
func checkIDs(field string, ids []string, max int, what string, known func(string) bool) ([]string, error) {
	if len(ids) > max {
		return nil, FieldError(field, fmt.Sprintf("at most %d ids", max))
	}
	var out []string
	for i, id := range ids {
		id = strings.TrimSpace(id)
		if !known(id) {
			return nil, FieldError(fmt.Sprintf("%s[%d]", field, i), "unknown "+what)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

func (m *Machine) checkPerkIDs(field string, ids []string) ([]string, error) {
	return checkIDs(field, ids, maxPerkIDs, "perk", func(id string) bool { return m.s.Perks[id] != nil })
}

// reqName trims a required name and refuses an empty one.
func reqName(field string, o Opt[string], cur string) (string, error) {
	if !o.Set {
		return cur, nil
	}
	v := strings.TrimSpace(o.V)
	if o.Null || v == "" {
		return "", FieldError(field, "must not be empty")
	}
	return v, nil
}

// optStr resolves an optional string field of a PATCH: null clears it.
func optStr(o Opt[string], cur string) string {
	if !o.Set {
		return cur
	}
	return strings.TrimSpace(o.V)
}

func full(n, max int, what string) error {
	if n >= max {
		return Reasonf(FailedPrecondition, ReasonEventLimitReached, "an event has at most %d %s", max, what)
	}
	return nil
}

func (m *Machine) saveVenue(now time.Time, id string, nm Opt[string], perks Opt[[]string]) (any, []Change, error) {
	var cur VenueRec
	if id == "" {
		if err := full(len(m.s.VenueOrder), maxVenues, "venues"); err != nil {
			return nil, nil, err
		}
		cur.CreatedAt = now
	} else {
		cur = *m.s.Venues[id]
	}
	ch := VenueSaved{At: now, ID: id, PerkIDs: cur.PerkIDs}
	var err error
	if ch.Name, err = reqName("name", nm, cur.Name); err != nil {
		return nil, nil, err
	}
	if perks.Set {
		if ch.PerkIDs, err = m.checkPerkIDs("perkIds", perks.V); err != nil {
			return nil, nil, err
		}
	}
	if id == "" {
		// Ids are drawn only for a valid record.
		id = m.newID("ven_")
	}
	ch.ID = id
	rec := VenueRec{ID: id, Name: ch.Name, PerkIDs: ch.PerkIDs, CreatedAt: cur.CreatedAt, UpdatedAt: now}
	return m.venueView(&rec), []Change{ch}, nil
}

func (m *Machine) createSession(now time.Time, c CreateSession) (any, []Change, error) {
	if err := full(len(m.s.SessionOrder), maxSessions, "sessions"); err != nil {
		return nil, nil, err
	}
	if c.StartsAt == nil {
		return nil, nil, FieldError("startsAt", "required")
	}
	if c.EndsAt == nil {
		return nil, nil, FieldError("endsAt", "required")
	}
	u := UpdateSession{Title: Some(c.Title), StartsAt: Some(*c.StartsAt), EndsAt: Some(*c.EndsAt), PerkIDs: Some(c.PerkIDs)}
	if c.VenueID != "" {
		u.VenueID = Some(c.VenueID)
	}
	return m.saveSession(now, SessionRec{CreatedAt: now}, u)
}

func (m *Machine) updateSession(now time.Time, c UpdateSession) (any, []Change, error) {
	s, err := m.session(c.ID)
	if err != nil {
		return nil, nil, err
	}
	if (c.StartsAt.Set && c.StartsAt.Null) || (c.EndsAt.Set && c.EndsAt.Null) {
		field := "startsAt"
		if c.EndsAt.Null {
			field = "endsAt"
		}
		return nil, nil, FieldError(field, "must not be null")
	}
	return m.saveSession(now, *s, c)
}

func (m *Machine) saveSession(now time.Time, cur SessionRec, c UpdateSession) (any, []Change, error) {
	ch := SessionSaved{At: now, ID: cur.ID, VenueID: cur.VenueID, PerkIDs: cur.PerkIDs}
	var err error
	if ch.Title, err = reqName("title", c.Title, cur.Title); err != nil {
		return nil, nil, err
	}
	starts, ends := optTime(c.StartsAt, cur.StartsAt), optTime(c.EndsAt, cur.EndsAt)
	if starts == nil || ends == nil {
		return nil, nil, FieldError("startsAt", "required")
	}
	if !ends.After(*starts) {
		return nil, nil, FieldError("endsAt", "must be after startsAt")
	}
	ch.StartsAt, ch.EndsAt = *starts, *ends
	if c.VenueID.Set {
		ch.VenueID = strings.TrimSpace(c.VenueID.V)
		if ch.VenueID != "" && m.s.Venues[ch.VenueID] == nil {
			return nil, nil, FieldError("venueId", "unknown venue")
		}
	}
	if c.PerkIDs.Set {
		if ch.PerkIDs, err = m.checkPerkIDs("perkIds", c.PerkIDs.V); err != nil {
			return nil, nil, err
		}
	}
	if ch.ID == "" {
		ch.ID = m.newID("ses_")
	}
	rec := SessionRec{ID: ch.ID, Title: ch.Title, StartsAt: &ch.StartsAt, EndsAt: &ch.EndsAt, VenueID: ch.VenueID,
		PerkIDs: ch.PerkIDs, CreatedAt: cur.CreatedAt, UpdatedAt: now}
	return m.sessionView(&rec), []Change{ch}, nil
}

func (m *Machine) saveSpeaker(now time.Time, id string, c UpdateSpeaker) (any, []Change, error) {
	var cur SpeakerRec
	if id == "" {
		if err := full(len(m.s.SpeakerOrder), maxSpeakers, "speakers"); err != nil {
			return nil, nil, err
		}
		cur.CreatedAt = now
	} else {
		cur = *m.s.Speakers[id]
	}
	ch := SpeakerSaved{At: now, ID: id, Title: optStr(c.Title, cur.Title), Bio: optStr(c.Bio, cur.Bio),
		RegID: optStr(c.RegistrationID, cur.RegID), SessionIDs: cur.SessionIDs}
	var err error
	if ch.Name, err = reqName("name", c.Name, cur.Name); err != nil {
		return nil, nil, err
	}
	if ch.RegID != "" && m.s.regs()[ch.RegID] == nil {
		return nil, nil, FieldError("registrationId", "unknown registration")
	}
	if c.SessionIDs.Set {
		ch.SessionIDs, err = checkIDs("sessionIds", c.SessionIDs.V, maxSessionRefs, "session", func(id string) bool { return m.s.Sessions[id] != nil })
		if err != nil {
			return nil, nil, err
		}
	}
	if id == "" {
		// Ids are drawn only for a valid record.
		id = m.newID("spk_")
	}
	ch.ID = id
	rec := SpeakerRec{ID: id, Name: ch.Name, Title: ch.Title, Bio: ch.Bio, RegID: ch.RegID, SessionIDs: ch.SessionIDs,
		CreatedAt: cur.CreatedAt, UpdatedAt: now}
	return m.speakerView(&rec), []Change{ch}, nil
}

func (m *Machine) saveSponsor(now time.Time, id string, c UpdateSponsor) (any, []Change, error) {
	var cur SponsorRec
	if id == "" {
		if err := full(len(m.s.SponsorOrder), maxSponsors, "sponsors"); err != nil {
			return nil, nil, err
		}
		cur.CreatedAt = now
	} else {
		cur = *m.s.Sponsors[id]
	}
	ch := SponsorSaved{At: now, ID: id, URL: optStr(c.URL, cur.URL), Tier: optStr(c.Tier, cur.Tier)}
	var err error
	if ch.Name, err = reqName("name", c.Name, cur.Name); err != nil {
		return nil, nil, err
	}
	if ch.URL != "" && !(strings.HasPrefix(ch.URL, "https://") || strings.HasPrefix(ch.URL, "http://")) {
		return nil, nil, FieldError("url", "must be an absolute http(s) URL")
	}
	if id == "" {
		// Ids are drawn only for a valid record.
		id = m.newID("spn_")
	}
	ch.ID = id
	rec := SponsorRec{ID: id, Name: ch.Name, URL: ch.URL, Tier: ch.Tier, CreatedAt: cur.CreatedAt, UpdatedAt: now}
	return m.sponsorView(&rec), []Change{ch}, nil
}

func (m *Machine) savePerk(now time.Time, id string, c UpdatePerk) (any, []Change, error) {
	var cur PerkRec
	if id == "" {
		if err := full(len(m.s.PerkOrder), maxPerks, "perks"); err != nil {
			return nil, nil, err
		}
		cur.CreatedAt = now
	} else {
		cur = *m.s.Perks[id]
	}
	ch := PerkSaved{At: now, ID: id, Description: optStr(c.Description, cur.Description)}
	var err error
	if ch.Name, err = reqName("name", c.Name, cur.Name); err != nil {
		return nil, nil, err
	}
	if id == "" {
		// Ids are drawn only for a valid record.
		id = m.newID("prk_")
	}
	ch.ID = id
	rec := PerkRec{ID: id, Name: ch.Name, Description: ch.Description, CreatedAt: cur.CreatedAt, UpdatedAt: now}
	return perkView(&rec), []Change{ch}, nil
}

// grantPerk grants or revokes an individual perk. Granting a perk already
// granted, or revoking one not granted, changes nothing and answers the
// effective perks with Created false.
func (m *Machine) grantPerk(now time.Time, regID, perkID string, revoke bool) (any, []Change, error) {
	r, err := m.registration(regID)
	if err != nil {
		return nil, nil, err
	}
	perkID = strings.TrimSpace(perkID)
	if m.s.Perks[perkID] == nil {
		if revoke {
			return nil, nil, Errorf(NotFound, "perk not found")
		}
		return nil, nil, FieldError("perkId", "unknown perk")
	}
	has := slices.Contains(m.s.Grants[r.ID], perkID)
	if has != revoke {
		return PerkGrantResult{RegistrationPerks: m.effectivePerks(r)}, nil, nil
	}
	grants := slices.Clone(m.s.Grants[r.ID])
	if revoke {
		grants = slices.DeleteFunc(grants, func(id string) bool { return id == perkID })
	} else {
		grants = append(grants, perkID)
	}
	return PerkGrantResult{RegistrationPerks: m.effectivePerksWith(r, grants), Created: true},
		[]Change{PerkGranted{At: now, RegID: r.ID, PerkID: perkID, Revoke: revoke}}, nil
}

// ---- rules read by other features

// sourcesOf reports which perks a registration holds and from where, with
// grants given explicitly (so a decision can show them before Apply).
func (m *Machine) sourcesOf(r *RegistrationRec, grants []string) map[string][]string {
	src := map[string][]string{}
	add := func(ids []string, source string) {
		for _, id := range ids {
			if !slices.Contains(src[id], source) {
				src[id] = append(src[id], source)
			}
		}
	}
	if r.TypeID != "" {
		add(m.s.TypePerks[r.TypeID], SourceTicketType)
	}
	if r.CodeID != "" {
		add(m.s.CodePerks[r.CodeID], SourceRedemptionCode)
	}
	add(grants, SourceGrant)
	return src
}

func (m *Machine) effectivePerks(r *RegistrationRec) RegistrationPerks {
	return m.effectivePerksWith(r, m.s.Grants[r.ID])
}

func (m *Machine) effectivePerksWith(r *RegistrationRec, grants []string) RegistrationPerks {
	src := m.sourcesOf(r, grants)
	out := RegistrationPerks{RegistrationID: r.ID, Perks: []EffectivePerk{}}
	for _, id := range m.s.PerkOrder {
		if s, ok := src[id]; ok {
			p := m.s.Perks[id]
			out.Perks = append(out.Perks, EffectivePerk{ID: p.ID, Name: p.Name, Description: strp(p.Description), Sources: s})
		}
	}
	return out
}

// gate is the perk gate of a door: a venue's perks, or a session's perks
// plus its venue's. ok is false for an unknown door.
func (m *Machine) gate(subjectType, subjectID string) (ids []string, ok bool) {
	switch subjectType {
	case "event":
		return nil, true
	case "venue":
		v, ok := m.s.Venues[subjectID]
		if !ok {
			return nil, false
		}
		return v.PerkIDs, true
	case "session":
		s, ok := m.s.Sessions[subjectID]
		if !ok {
			return nil, false
		}
		return m.sessionGate(s), true
	}
	return nil, false
}

func (m *Machine) sessionGate(s *SessionRec) []string {
	ids := slices.Clone(s.PerkIDs)
	if v := m.s.Venues[s.VenueID]; v != nil {
		for _, id := range v.PerkIDs {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// checkDoor refuses a session or venue door that does not exist.
func (m *Machine) checkDoor(subjectType, subjectID string) error {
	if _, ok := m.gate(subjectType, subjectID); !ok {
		return FieldError("subjectId", "unknown "+subjectType)
	}
	return nil
}

// access is the advisory verdict of a door for a registration: allowed when
// it holds every perk of the door's gate (an empty gate is open to all). A
// door deleted since a check-in has an empty gate.
func (m *Machine) access(r *RegistrationRec, subjectType, subjectID string) *Access {
	gate, _ := m.gate(subjectType, subjectID)
	src := m.sourcesOf(r, m.s.Grants[r.ID])
	a := &Access{Allowed: true, RequiredPerkIDs: orEmpty(slices.Clone(gate)), MissingPerkIDs: []string{}}
	for _, id := range gate {
		if _, ok := src[id]; !ok {
			a.Allowed = false
			a.MissingPerkIDs = append(a.MissingPerkIDs, id)
		}
	}
	return a
}

// admissionPerks are the perks an admission through code carries: the
// code's own and its ticket type's, in perk order.
func (m *Machine) admissionPerks(code *CodeRec) []Perk {
	ids := slices.Clone(m.s.TypePerks[code.TypeID])
	for _, id := range m.s.CodePerks[code.ID] {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return m.perksOf(ids)
}

// perksOf returns the perks of ids in perk creation order.
func (m *Machine) perksOf(ids []string) []Perk {
	out := []Perk{}
	if len(ids) == 0 {
		return out
	}
	for _, id := range m.s.PerkOrder {
		if slices.Contains(ids, id) {
			out = append(out, perkView(m.s.Perks[id]))
		}
	}
	return out
}

// attendeeRank orders standing statuses: a person stands by their best
// registration.
var attendeeRank = map[string]int{RegConfirmed: 5, RegWaitlisted: 4, RegPending: 3, RegCancelled: 2, RegRejected: 1}

// attendees groups registrations by person (normalized email) in the
// order of each person's first registration. The cursor is the last
// person's normalized email. It walks every registration: a page costs
// O(registrations), bounded by the event's size.
func (m *Machine) attendees(c ListAttendees) (List[Attendee], error) {
	limit := clampLimit(c.Limit)
	out := List[Attendee]{Data: []Attendee{}}
	after := ""
	if c.Cursor != "" {
		e, ok := decodeCursor(c.Cursor)
		if !ok || e == "" {
			return out, FieldError("cursor", "unknown cursor")
		}
		after = e
	}
	byEmail := map[string]*Attendee{}
	var order []string
	for _, id := range m.s.RegOrder {
		r := m.s.regs()[id]
		k := normEmail(r.Email)
		a, ok := byEmail[k]
		if !ok {
			a = &Attendee{Email: r.Email, RegistrationIDs: []string{}}
			byEmail[k] = a
			order = append(order, k)
		}
		a.RegistrationIDs = append(a.RegistrationIDs, r.ID)
		if attendeeRank[r.Status] > attendeeRank[a.Status] {
			a.Status = r.Status
		}
		if r.Name != "" {
			a.Name = strp(r.Name)
		}
	}
	i := 0
	if after != "" {
		i = slices.Index(order, after) + 1
		if i == 0 {
			return out, FieldError("cursor", "unknown cursor")
		}
	}
	for ; i < len(order); i++ {
		if len(out.Data) == limit {
			out.HasMore = true
			cur := encodeCursor(order[i-1])
			out.NextCursor = &cur
			break
		}
		out.Data = append(out.Data, *byEmail[order[i]])
	}
	return out, nil
}

func orEmpty(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// ---- change kinds: each one's log name, body codec and apply

// ChangeKind names the change in the log (its binary tag).
func (VenueSaved) ChangeKind() string { return "venue.saved" }

func decodeVenueSaved(d *dec) VenueSaved {
	return VenueSaved{At: d.time(), ID: d.str(), Name: d.str(), PerkIDs: d.strs()}
}

func (c VenueSaved) appendBody(e enc) enc { return e.time(c.At).str(c.ID).str(c.Name).strs(c.PerkIDs) }

func (c VenueSaved) apply(s *State) {
	s.mustEvent()
	v, ok := s.Venues[c.ID]
	if !ok {
		v = &VenueRec{ID: c.ID, Seq: len(s.VenueOrder), CreatedAt: c.At}
		s.Venues[c.ID] = v
		s.VenueOrder = append(s.VenueOrder, c.ID)
	}
	v.Name, v.PerkIDs, v.UpdatedAt = c.Name, c.PerkIDs, c.At
}

// ChangeKind names the change in the log (its binary tag).
func (SessionSaved) ChangeKind() string { return "session.saved" }

func decodeSessionSaved(d *dec) SessionSaved {
	return SessionSaved{At: d.time(), ID: d.str(), Title: d.str(), StartsAt: d.time(), EndsAt: d.time(), VenueID: d.str(), PerkIDs: d.strs()}
}

func (c SessionSaved) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).str(c.Title).time(c.StartsAt).time(c.EndsAt).str(c.VenueID).strs(c.PerkIDs)
}

func (c SessionSaved) apply(s *State) {
	s.mustEvent()
	r, ok := s.Sessions[c.ID]
	if !ok {
		r = &SessionRec{ID: c.ID, CreatedAt: c.At}
		s.Sessions[c.ID] = r
	} else {
		s.SessionOrder = removeID(s.SessionOrder, c.ID)
	}
	starts, ends := c.StartsAt, c.EndsAt
	r.Title, r.StartsAt, r.EndsAt, r.VenueID, r.PerkIDs, r.UpdatedAt = c.Title, &starts, &ends, c.VenueID, c.PerkIDs, c.At
	i, _ := slices.BinarySearchFunc(s.SessionOrder, r, func(id string, r *SessionRec) int { return agendaCmp(s.Sessions[id], r) })
	s.SessionOrder = slices.Insert(s.SessionOrder, i, c.ID)
	renumber(s.SessionOrder, s.Sessions, func(r *SessionRec, i int) { r.Seq = i })
}

// ChangeKind names the change in the log (its binary tag).
func (SpeakerSaved) ChangeKind() string { return "speaker.saved" }

func decodeSpeakerSaved(d *dec) SpeakerSaved {
	return SpeakerSaved{At: d.time(), ID: d.str(), Name: d.str(), Title: d.str(), Bio: d.str(), RegID: d.str(), SessionIDs: d.strs()}
}

func (c SpeakerSaved) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).str(c.Name).str(c.Title).str(c.Bio).str(c.RegID).strs(c.SessionIDs)
}

func (c SpeakerSaved) apply(s *State) {
	s.mustEvent()
	r, ok := s.Speakers[c.ID]
	if !ok {
		r = &SpeakerRec{ID: c.ID, Seq: len(s.SpeakerOrder), CreatedAt: c.At}
		s.Speakers[c.ID] = r
		s.SpeakerOrder = append(s.SpeakerOrder, c.ID)
	}
	r.Name, r.Title, r.Bio, r.RegID, r.SessionIDs, r.UpdatedAt = c.Name, c.Title, c.Bio, c.RegID, c.SessionIDs, c.At
}

// ChangeKind names the change in the log (its binary tag).
func (SponsorSaved) ChangeKind() string { return "sponsor.saved" }

func decodeSponsorSaved(d *dec) SponsorSaved {
	return SponsorSaved{At: d.time(), ID: d.str(), Name: d.str(), URL: d.str(), Tier: d.str()}
}

func (c SponsorSaved) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).str(c.Name).str(c.URL).str(c.Tier)
}

func (c SponsorSaved) apply(s *State) {
	s.mustEvent()
	r, ok := s.Sponsors[c.ID]
	if !ok {
		r = &SponsorRec{ID: c.ID, Seq: len(s.SponsorOrder), CreatedAt: c.At}
		s.Sponsors[c.ID] = r
		s.SponsorOrder = append(s.SponsorOrder, c.ID)
	}
	r.Name, r.URL, r.Tier, r.UpdatedAt = c.Name, c.URL, c.Tier, c.At
}

// ChangeKind names the change in the log (its binary tag).
func (PerkSaved) ChangeKind() string { return "perk.saved" }

func decodePerkSaved(d *dec) PerkSaved {
	return PerkSaved{At: d.time(), ID: d.str(), Name: d.str(), Description: d.str()}
}

func (c PerkSaved) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).str(c.Name).str(c.Description)
}

func (c PerkSaved) apply(s *State) {
	s.mustEvent()
	r, ok := s.Perks[c.ID]
	if !ok {
		r = &PerkRec{ID: c.ID, Seq: len(s.PerkOrder), CreatedAt: c.At}
		s.Perks[c.ID] = r
		s.PerkOrder = append(s.PerkOrder, c.ID)
	}
	r.Name, r.Description, r.UpdatedAt = c.Name, c.Description, c.At
}

// ChangeKind names the change in the log (its binary tag).
func (ProgramDeleted) ChangeKind() string { return "program.deleted" }

func decodeProgramDeleted(d *dec) ProgramDeleted {
	return ProgramDeleted{At: d.time(), Kind: d.str(), ID: d.str()}
}

func (c ProgramDeleted) appendBody(e enc) enc { return e.time(c.At).str(c.Kind).str(c.ID) }

func (c ProgramDeleted) apply(s *State) {
	s.deleteProgram(c)
}

// ChangeKind names the change in the log (its binary tag).
func (PerksBound) ChangeKind() string { return "perks.bound" }

func decodePerksBound(d *dec) PerksBound {
	return PerksBound{At: d.time(), Kind: d.str(), ID: d.str(), PerkIDs: d.strs()}
}

func (c PerksBound) appendBody(e enc) enc { return e.time(c.At).str(c.Kind).str(c.ID).strs(c.PerkIDs) }

func (c PerksBound) apply(s *State) {
	m := s.TypePerks
	switch c.Kind {
	case SourceTicketType:
		s.mustType(c.ID)
	case SourceRedemptionCode:
		s.mustCode(c.ID)
		m = s.CodePerks
	default:
		panic(fmt.Sprintf("event: perks bound to unknown kind %q", c.Kind))
	}
	setOrDelete(m, c.ID, c.PerkIDs)
	// Every pass of the type or code shows the new perks (door.go).
	if c.Kind == SourceTicketType {
		s.touchPassesWhere(func(r *RegistrationRec) bool { return r.TypeID == c.ID })
	} else {
		s.touchPassesWhere(func(r *RegistrationRec) bool { return r.CodeID == c.ID })
	}
}

// ChangeKind names the change in the log (its binary tag).
func (PerkGranted) ChangeKind() string { return "perk.granted" }

func decodePerkGranted(d *dec) PerkGranted {
	return PerkGranted{At: d.time(), RegID: d.str(), PerkID: d.str(), Revoke: d.bool()}
}

func (c PerkGranted) appendBody(e enc) enc {
	return e.time(c.At).str(c.RegID).str(c.PerkID).bool(c.Revoke)
}

func (c PerkGranted) apply(s *State) {
	s.mustReg(c.RegID)
	mustGet(s.Perks, c.PerkID, "perk")
	g := s.Grants[c.RegID]
	if c.Revoke {
		g = slices.DeleteFunc(slices.Clone(g), func(id string) bool { return id == c.PerkID })
	} else if !slices.Contains(g, c.PerkID) {
		g = append(slices.Clone(g), c.PerkID)
	}
	setOrDelete(s.Grants, c.RegID, g)
	s.touchPass(s.mustReg(c.RegID))
}
