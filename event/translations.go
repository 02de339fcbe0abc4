package event

import (
	"fmt"
	"strings"
	"time"
)

// Translations: an event's names and descriptions in other languages.
//
// Decisions:
//   - Translations are per BCP 47 tag (canonical case: zh-CN, de). A lang
//     with no translation falls back entirely to the default texts, and each
//     missing field of a translation falls back on its own; never an error.

// Bounds of translations.
const (
	maxLangs      = 30
	maxTranslated = 500
)

// TranslatedText is a translated name and description; empty falls back.
type TranslatedText struct {
	Name        string `json:"name,omitempty" v:"maxLen=200"`
	Description string `json:"description,omitempty" v:"maxLen=5000"`
}

// TranslationText is everything one language translates.
type TranslationText struct {
	Name        string                    `json:"name,omitempty" v:"maxLen=200"`
	Description string                    `json:"description,omitempty" v:"maxLen=5000"`
	TicketTypes map[string]TranslatedText `json:"ticketTypes,omitempty"`
	Addons      map[string]TranslatedText `json:"addons,omitempty"`
	Bundles     map[string]TranslatedText `json:"bundles,omitempty"`
	Sessions    map[string]TranslatedText `json:"sessions,omitempty"`
}

// TranslationRec is one language of the event.
type TranslationRec struct {
	Lang      string          `json:"lang"`
	Text      TranslationText `json:"text"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// PutTranslation replaces one language's texts.
type PutTranslation struct {
	Lang string `json:"-"`
	TranslationText
}

// GetTranslation reads one language.
type GetTranslation struct {
	Lang string `json:"-"`
}

// ListTranslations lists the event's languages.
type ListTranslations struct{}

// DeleteTranslation removes one language.
type DeleteTranslation struct {
	Lang string `json:"-"`
}

// GetLocalizedEvent reads the event with names in Lang (fallback per
// field to the default; an unknown lang falls back entirely).
type GetLocalizedEvent struct {
	Lang string `json:"-" query:"lang"`
}

// TranslationSaved replaces one language's texts, or removes the language
// (Deleted).
type TranslationSaved struct {
	At      time.Time       `json:"at"`
	Lang    string          `json:"lang"`
	Text    TranslationText `json:"text"`
	Deleted bool            `json:"deleted,omitempty"`
}

func (PutTranslation) result(*Translation) {}

func (c PutTranslation) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.putTranslation(now, c)
}

func (GetTranslation) result(*Translation) {}

func (c GetTranslation) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Content
	t, ok := cs.Translations[canonLang(c.Lang)]
	if !ok {
		return nil, nil, Errorf(NotFound, "translation not found")
	}
	return m.translationView(t), nil, nil
}

func (ListTranslations) result(*List[Translation]) {}

func (c ListTranslations) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Content
	out := []Translation{}
	for _, l := range sortedKeys(cs.Translations) {
		out = append(out, m.translationView(cs.Translations[l]))
	}
	return List[Translation]{Data: out}, nil, nil
}

func (DeleteTranslation) result(*Translation) {}

func (c DeleteTranslation) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Content
	t, ok := cs.Translations[canonLang(c.Lang)]
	if !ok {
		return nil, nil, Errorf(NotFound, "translation not found")
	}
	return m.translationView(t), []Change{TranslationSaved{At: now, Lang: t.Lang, Deleted: true}}, nil
}

func (GetLocalizedEvent) result(*Event) {}

func (c GetLocalizedEvent) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.localizedEvent(c.Lang), nil, nil
}

// canonLang checks a BCP 47 tag and returns it in canonical case (zh-CN,
// sr-Latn-RS); "" when it is not a well-formed tag.
func canonLang(tag string) string {
	tag = strings.ReplaceAll(strings.TrimSpace(tag), "_", "-")
	if tag == "" || len(tag) > 35 {
		return ""
	}
	parts := strings.Split(tag, "-")
	for i, p := range parts {
		if p == "" || len(p) > 8 {
			return ""
		}
		for _, r := range p {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return ""
			}
		}
		switch {
		case i == 0:
			if len(p) < 2 || len(p) > 3 || strings.ContainsAny(p, "0123456789") {
				return ""
			}
			parts[i] = strings.ToLower(p)
		case len(p) == 2:
			parts[i] = strings.ToUpper(p)
		case len(p) == 4:
			parts[i] = strings.ToUpper(p[:1]) + strings.ToLower(p[1:])
		default:
			parts[i] = strings.ToLower(p)
		}
	}
	return strings.Join(parts, "-")
}

func (m *Machine) putTranslation(now time.Time, c PutTranslation) (any, []Change, error) {
	lang := canonLang(c.Lang)
	if lang == "" {
		return nil, nil, FieldError("lang", "must be a BCP 47 language tag such as de or zh-CN")
	}
	cs := &m.s.Content
	if _, ok := cs.Translations[lang]; !ok && len(cs.Translations) >= maxLangs {
		return nil, nil, Reasonf(FailedPrecondition, ReasonEventLimitReached, "an event has at most %d languages", maxLangs)
	}
	t := c.TranslationText
	t.Name, t.Description = strings.TrimSpace(t.Name), strings.TrimSpace(t.Description)
	if len(t.Name) > 200 {
		return nil, nil, FieldError("name", "at most 200 characters")
	}
	if len(t.Description) > 5000 {
		return nil, nil, FieldError("description", "at most 5000 characters")
	}
	var err error
	if t.TicketTypes, err = checkTexts("ticketTypes", t.TicketTypes, func(id string) bool { return m.s.Types[id] != nil }); err != nil {
		return nil, nil, err
	}
	if t.Addons, err = checkTexts("addons", t.Addons, func(id string) bool { return m.s.Addons[id] != nil }); err != nil {
		return nil, nil, err
	}
	if t.Bundles, err = checkTexts("bundles", t.Bundles, func(id string) bool { return m.s.Bundles[id] != nil }); err != nil {
		return nil, nil, err
	}
	if t.Sessions, err = checkTexts("sessions", t.Sessions, func(id string) bool { return m.s.Sessions[id] != nil }); err != nil {
		return nil, nil, err
	}
	rec := TranslationRec{Lang: lang, Text: t, CreatedAt: now, UpdatedAt: now}
	if old, ok := cs.Translations[lang]; ok {
		rec.CreatedAt = old.CreatedAt
	}
	return m.translationView(&rec), []Change{TranslationSaved{At: now, Lang: lang, Text: t}}, nil
}

func checkTexts(field string, in map[string]TranslatedText, known func(string) bool) (map[string]TranslatedText, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > maxTranslated {
		return nil, FieldError(field, fmt.Sprintf("at most %d entries", maxTranslated))
	}
	out := make(map[string]TranslatedText, len(in))
	for _, id := range sortedKeys(in) {
		if !known(id) {
			return nil, FieldError(field+"."+id, "unknown id")
		}
		v := in[id]
		v.Name, v.Description = strings.TrimSpace(v.Name), strings.TrimSpace(v.Description)
		if len(v.Name) > 200 || len(v.Description) > 5000 {
			return nil, FieldError(field+"."+id, "name at most 200, description at most 5000 characters")
		}
		out[id] = v
	}
	return out, nil
}

// translation returns the texts of lang, or nil for the default language
// or one without a translation.
func (m *Machine) translation(lang string) *TranslationText {
	if t, ok := m.s.Content.Translations[canonLang(lang)]; ok {
		return &t.Text
	}
	return nil
}

func pick(tr, def string) string {
	if tr != "" {
		return tr
	}
	return def
}

func (m *Machine) localizedEvent(lang string) Event {
	v := m.eventView()
	if t := m.translation(lang); t != nil {
		v.Name = pick(t.Name, v.Name)
		if t.Description != "" {
			v.Description = strp(t.Description)
		}
	}
	return v
}

// ---- change kinds: each one's log name, body codec and apply

// ChangeKind names the change in the log (its binary tag).
func (TranslationSaved) ChangeKind() string { return "translation.saved" }

func decodeTranslationSaved(d *dec) TranslationSaved {
	return readJSONChange(d, func(c *TranslationSaved, at time.Time) { c.At = at })
}

func (c TranslationSaved) appendBody(e enc) enc { return appendJSONBody(e, c.At, c) }

func (c TranslationSaved) apply(s *State) {
	cs := &s.Content
	if c.Deleted {
		delete(cs.Translations, c.Lang)
		return
	}
	if cs.Translations == nil {
		cs.Translations = map[string]*TranslationRec{}
	}
	t := cs.Translations[c.Lang]
	if t == nil {
		t = &TranslationRec{Lang: c.Lang, CreatedAt: c.At}
		cs.Translations[c.Lang] = t
	}
	t.Text, t.UpdatedAt = c.Text, c.At
}
