package event

import (
	"fmt"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"
)

// The organizer's content of an event: what the organizer sets up for
// selling it beyond ticket types and prices, that is registration forms
// (forms.go), promotion codes (promocodes.go), translations
// (translations.go) and the public description (here). This file holds
// what they share: the OrganizerContent record with its snapshot section,
// the JSON body codec of their changes, and the description with SetSite.
// (This was console.go, named for the web console that edits it; the
// log's kind names and the snapshot section's bytes did not change with
// the name.)
//
// Decisions:
//   - The event's description is organizer content set with the site
//     (PATCH .../site {siteUrl?, description?}); null until set.

// OrganizerContent is what the organizer set up for selling one event
// beyond its ticket types (State.Content): the public description,
// registration forms, promotion codes and translations. It is one section
// of a snapshot (appendContent). Maps are created on first use;
// promoByCode is an index rebuilt on decode.
type OrganizerContent struct {
	Description  string                     `json:"description,omitempty"`
	Forms        map[string]*FormRec        `json:"forms,omitempty"`
	Promos       map[string]*PromoRec       `json:"promos,omitempty"`
	PromoOrder   []string                   `json:"promoOrder,omitempty"`
	Translations map[string]*TranslationRec `json:"translations,omitempty"`
	promoByCode  map[string]string
}

// SetSite sets the event's siteUrl and/or description; null clears.
type SetSite struct {
	SiteURL     Opt[string] `json:"siteUrl,omitzero" v:"nullable,maxLen=2000"`
	Description Opt[string] `json:"description,omitzero" v:"nullable,maxLen=5000"`
}

// DescriptionSet sets the event's description ("" clears it).
type DescriptionSet struct {
	At          time.Time `json:"at"`
	Description string    `json:"description,omitempty"`
}

func (SetSite) result(*Event) {}

func (c SetSite) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.setSite(now, c)
}

func sortedKeys[V any](mp map[string]V) []string {
	ks := make([]string, 0, len(mp))
	for k := range mp {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (m *Machine) setSite(now time.Time, c SetSite) (any, []Change, error) {
	if !c.SiteURL.Set && !c.Description.Set {
		return nil, nil, FieldError("siteUrl", "siteUrl or description is required")
	}
	var changes []Change
	v := m.eventView()
	if c.SiteURL.Set {
		u := strings.TrimSpace(c.SiteURL.V)
		if u != "" {
			if err := checkReturnURL("siteUrl", u); err != nil {
				return nil, nil, err
			}
		}
		v.SiteURL = strp(u)
		changes = append(changes, SiteURLSet{At: now, SiteURL: u})
	}
	if c.Description.Set {
		d := strings.TrimSpace(c.Description.V)
		if len(d) > 5000 {
			return nil, nil, FieldError("description", "at most 5000 characters")
		}
		v.Description = strp(d)
		changes = append(changes, DescriptionSet{At: now, Description: d})
	}
	v.UpdatedAt = At(now)
	return v, changes, nil
}

// contentCatalog adds published forms and the translation of lang to a
// catalog.
func (m *Machine) contentCatalog(cat *Catalog, lang string) {
	t := m.translation(lang)
	if t != nil {
		cat.Event.Name = pick(t.Name, cat.Event.Name)
		if t.Description != "" {
			cat.Event.Description = strp(t.Description)
		}
	}
	for _, tts := range [][]CatalogTicketType{cat.TicketTypes, cat.UpcomingTicketTypes} {
		for i := range tts {
			tt := &tts[i]
			tt.Questions = []Question{}
			if f := m.s.Content.Forms[tt.ID]; f != nil && f.PublishedAt != nil {
				tt.Questions = slices.Clone(f.Published)
			}
			if t != nil {
				tt.Name, tt.Description = pick(t.TicketTypes[tt.ID].Name, tt.Name), strp(t.TicketTypes[tt.ID].Description)
			}
		}
	}
	if t == nil {
		return
	}
	for i := range cat.Addons {
		a := &cat.Addons[i]
		a.Name, a.Description = pick(t.Addons[a.ID].Name, a.Name), strp(t.Addons[a.ID].Description)
	}
	for i := range cat.Bundles {
		b := &cat.Bundles[i]
		b.Name, b.Description = pick(t.Bundles[b.ID].Name, b.Name), strp(t.Bundles[b.ID].Description)
	}
	for i := range cat.Agenda {
		s := &cat.Agenda[i]
		s.Title = pick(t.Sessions[s.ID].Name, s.Title)
	}
}

// appendJSONBody encodes a change of organizer content: such changes are rare
// and nested (questions, scopes, maps of texts), so their fields travel as
// one JSON document after the time. Their fields are strings, numbers,
// booleans, slices and maps of those, which always marshal.
func appendJSONBody(e enc, at time.Time, body any) enc {
	b, err := json.Marshal(body)
	if err != nil {
		panic(fmt.Sprintf("event: encode %T: %v", body, err))
	}
	return e.time(at).bytes(b)
}

func readJSONChange[C any](d *dec, setAt func(*C, time.Time)) C {
	var c C
	at := d.time()
	b := d.bytes()
	if d.err != nil {
		return c
	}
	if err := json.Unmarshal(b, &c); err != nil {
		d.fail()
		return c
	}
	setAt(&c, at)
	return c
}

// contentVersion is the version byte of the organizer-content section of a
// snapshot.
const contentVersion = 1

// appendContent appends the organizer-content section: a byte 0 for empty
// content, else the version byte and the OrganizerContent as one JSON document
// (maps sorted by key) as bytes. Snapshots of older builds end before it
// and decode empty content.
func (s *State) appendContent(e enc) enc {
	cs := &s.Content
	if cs.Description == "" && len(cs.Forms) == 0 && len(cs.Promos) == 0 && len(cs.Translations) == 0 {
		return append(e, 0)
	}
	b, err := json.Marshal(cs)
	if err != nil {
		panic(fmt.Sprintf("event: encode console state: %v", err))
	}
	e = append(e, contentVersion)
	return e.bytes(b)
}

func (s *State) decodeContent(d *dec) {
	if len(d.s) == 0 || d.err != nil {
		return
	}
	v := d.s[0]
	d.s = d.s[1:]
	if v == 0 {
		return
	}
	if v != contentVersion {
		d.fail()
		return
	}
	b := d.bytes()
	if d.err != nil {
		return
	}
	var cs OrganizerContent
	if err := json.Unmarshal(b, &cs); err != nil {
		d.fail()
		return
	}
	for i, id := range cs.PromoOrder {
		p := cs.Promos[id]
		if p == nil || p.ID != id {
			d.fail()
			return
		}
		p.Seq = i
	}
	if len(cs.PromoOrder) != len(cs.Promos) || !cs.consistent(s) {
		d.fail()
		return
	}
	s.Content = cs
}

// consistent checks decoded content against itself and the decoded
// orders: no nil records, keys match ids, codes unique, counts not
// negative, every order's promotion code known.
func (cs *OrganizerContent) consistent(s *State) bool {
	codes := map[string]bool{}
	for id, p := range cs.Promos {
		if p == nil || p.ID != id || p.Code == "" || codes[p.Code] || p.Held < 0 || p.Uses < 0 {
			return false
		}
		codes[p.Code] = true
	}
	for id, f := range cs.Forms {
		if f == nil || f.TypeID != id {
			return false
		}
	}
	for lang, t := range cs.Translations {
		if t == nil || t.Lang != lang {
			return false
		}
	}
	for _, o := range s.Orders {
		if o.PromoID != "" && cs.Promos[o.PromoID] == nil {
			return false
		}
	}
	return true
}

// ---- change kinds: each one's log name, body codec and apply

// ChangeKind names the change in the log (its binary tag).
func (DescriptionSet) ChangeKind() string { return "event.description_set" }

func decodeDescriptionSet(d *dec) DescriptionSet {
	return DescriptionSet{At: d.time(), Description: d.str()}
}

func (c DescriptionSet) appendBody(e enc) enc { return e.time(c.At).str(c.Description) }

func (c DescriptionSet) apply(s *State) {
	cs := &s.Content
	cs.Description = c.Description
	s.mustEvent().UpdatedAt = c.At
}
