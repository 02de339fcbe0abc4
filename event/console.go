package event

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	json "github.com/goccy/go-json"
)

// The console for sales: registration forms,
// promotion codes, translations and the event's public description.
//
// Decisions:
//   - A ticket type's form has a draft (what PUT writes) and a published
//     version (what POST .../form/publish copies from the draft). Only the
//     published questions reach the storefront and validate responses, so
//     editing a live form never changes it under a buyer.
//   - Responses are validated when the order's admission ticket type has a
//     published form; otherwise they stay free-form (bounded JSON object).
//     A checkout session validates the responses it is given, without the
//     required check: the hosted page collects the rest, and the order it
//     places is checked in full.
//   - Promotion codes discount order lines: percentOff rounds half up per
//     line (amount*percent/100), amountOff is taken per unit and never below
//     zero. appliesTo with all lists empty means every item; otherwise only
//     the listed items. Code and discount are fixed at creation; maxUses,
//     expiresAt, appliesTo and active can change. DELETE disables (orders
//     keep referring to the code). Uses count like redemption codes: live
//     orders reserve one, expiry or cancel returns it, payment spends it.
//   - The redemption-code lookup takes an optional promotionCode: when it
//     is usable and applies to the code's ticket type, discountedPriceAmount
//     is the discounted price (otherwise the plain price); an unusable one
//     is 400 on promotionCode.
//   - Translations are per BCP 47 tag (canonical case: zh-CN, de). A lang
//     with no translation falls back entirely to the default texts, and each
//     missing field of a translation falls back on its own; never an error.
//   - The event's description is console data set with the site
//     (PATCH .../site {siteUrl?, description?}); null until set.

// Bounds of console records.
const (
	maxQuestions    = 50
	maxOptions      = 50
	maxPromos       = 1000
	maxLangs        = 30
	maxTranslated   = 500
	maxAnswerLen    = 2000
	maxPromoCodeLen = 64
)

// Question types of registration forms.
const (
	QText        = "text"
	QEmail       = "email"
	QPhone       = "phone"
	QSelect      = "select"
	QMultiSelect = "multi_select"
	QCheckbox    = "checkbox"
	QDate        = "date"
)

// Form statuses: published when the draft equals the published version.
const (
	FormDraft     = "draft"
	FormPublished = "published"
)

// ---- records

// Question is one typed question of a registration form.
type Question struct {
	ID       string   `json:"id" v:"required,minLen=1,maxLen=64"`
	Type     string   `json:"type" v:"required,enum=text|email|phone|select|multi_select|checkbox|date"`
	Label    string   `json:"label" v:"required,minLen=1,maxLen=500"`
	Required bool     `json:"required"`
	Options  []string `json:"options,omitempty" v:"maxItems=50" doc:"The allowed answers of select and multi_select."`
}

// FormRec is a ticket type's registration form.
type FormRec struct {
	TypeID      string     `json:"typeId"`
	Draft       []Question `json:"draft,omitempty"`
	Published   []Question `json:"published,omitempty"`
	PublishedAt *time.Time `json:"publishedAt,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
}

// PromotionScope limits a promotion code to items; all lists empty means
// every item of the event.
type PromotionScope struct {
	TicketTypeIDs []string `json:"ticketTypeIds" v:"maxItems=100"`
	AddonIDs      []string `json:"addonIds" v:"maxItems=100"`
	BundleIDs     []string `json:"bundleIds" v:"maxItems=100"`
}

func (p PromotionScope) all() bool {
	return len(p.TicketTypeIDs) == 0 && len(p.AddonIDs) == 0 && len(p.BundleIDs) == 0
}

func (p PromotionScope) covers(itemType, id string) bool {
	if p.all() {
		return true
	}
	switch itemType {
	case ItemRegistrationType:
		return slices.Contains(p.TicketTypeIDs, id)
	case ItemAddon:
		return slices.Contains(p.AddonIDs, id)
	case ItemBundle:
		return slices.Contains(p.BundleIDs, id)
	}
	return false
}

// PromoRec is a promotion code. Held counts live orders, Uses paid ones.
type PromoRec struct {
	ID         string         `json:"id"`
	Seq        int            `json:"seq"`
	Code       string         `json:"code"`
	PercentOff int            `json:"percentOff,omitempty"`
	AmountOff  Money          `json:"amountOff,omitempty"`
	MaxUses    *int           `json:"maxUses,omitempty"`
	ExpiresAt  *time.Time     `json:"expiresAt,omitempty"`
	Scope      PromotionScope `json:"scope"`
	Disabled   bool           `json:"disabled,omitempty"`
	Uses       int            `json:"uses,omitempty"`
	Held       int            `json:"held,omitempty"`
	CreatedAt  time.Time      `json:"createdAt"`
	UpdatedAt  time.Time      `json:"updatedAt"`
}

// Promotion code statuses.
const (
	PromoActive    = "active"
	PromoDisabled  = "disabled"
	PromoExpired   = "expired"
	PromoExhausted = "exhausted"
)

func (p *PromoRec) status(now time.Time) string {
	switch {
	case p.Disabled:
		return PromoDisabled
	case p.ExpiresAt != nil && !now.Before(*p.ExpiresAt):
		return PromoExpired
	case p.MaxUses != nil && p.Uses+p.Held >= *p.MaxUses:
		return PromoExhausted
	}
	return PromoActive
}

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

// ConsoleState is the console's sales records of one event (State.Console).
// Maps are created on first use; promoByCode is an index rebuilt on decode.
type ConsoleState struct {
	Description  string                     `json:"description,omitempty"`
	Forms        map[string]*FormRec        `json:"forms,omitempty"`
	Promos       map[string]*PromoRec       `json:"promos,omitempty"`
	PromoOrder   []string                   `json:"promoOrder,omitempty"`
	Translations map[string]*TranslationRec `json:"translations,omitempty"`
	promoByCode  map[string]string
}

// ---- commands

// PutForm replaces the draft of a ticket type's registration form.
type PutForm struct {
	TypeID    string     `json:"-"`
	Questions []Question `json:"questions" v:"required,maxItems=50"`
}

// GetForm reads a ticket type's form (an empty draft when none was saved).
type GetForm struct {
	TypeID string `json:"-"`
}

// PublishForm publishes the draft of a ticket type's form.
type PublishForm struct {
	TypeID string `json:"-"`
}

// CreatePromotionCode creates a promotion code: exactly one of percentOff
// and amountOff.
type CreatePromotionCode struct {
	Code       string          `json:"code" v:"required,minLen=1,maxLen=64,pattern=nospace" doc:"1 to 64 characters without spaces; kept in upper case."`
	PercentOff *int            `json:"percentOff" v:"nullable,min=1,max=100"`
	AmountOff  *Money          `json:"amountOff" v:"nullable" doc:"Minor units off each unit of a covered item."`
	MaxUses    *int            `json:"maxUses" v:"nullable,min=1,max=10000000"`
	ExpiresAt  *Time           `json:"expiresAt" v:"nullable"`
	AppliesTo  *PromotionScope `json:"appliesTo" v:"nullable" doc:"Empty (or absent) means every item."`
}

// UpdatePromotionCode patches a promotion code; null clears maxUses or
// expiresAt, active false disables it.
type UpdatePromotionCode struct {
	ID        string              `json:"-"`
	MaxUses   Opt[int]            `json:"maxUses,omitzero" v:"nullable,min=1,max=10000000"`
	ExpiresAt Opt[Time]           `json:"expiresAt,omitzero" v:"nullable"`
	AppliesTo Opt[PromotionScope] `json:"appliesTo,omitzero" v:"nullable"`
	Active    Opt[bool]           `json:"active,omitzero"`
}

// GetPromotionCode reads a promotion code by id.
type GetPromotionCode struct {
	ID string `json:"-"`
}

// ListPromotionCodes lists promotion codes in creation order.
type ListPromotionCodes struct {
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// DeletePromotionCode disables a promotion code; it stays listed.
type DeletePromotionCode struct {
	ID string `json:"-"`
}

// SetSite sets the event's siteUrl and/or description; null clears.
type SetSite struct {
	SiteURL     Opt[string] `json:"siteUrl,omitzero" v:"nullable,maxLen=2000"`
	Description Opt[string] `json:"description,omitzero" v:"nullable,maxLen=5000"`
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

// ---- changes

// FormSaved replaces the draft of a ticket type's form (Publish false) or
// publishes the draft (Publish true, Questions empty).
type FormSaved struct {
	At        time.Time  `json:"at"`
	TypeID    string     `json:"type"`
	Questions []Question `json:"questions,omitempty"`
	Publish   bool       `json:"publish,omitempty"`
}

// PromoSaved creates a promotion code or replaces its settings (uses and
// holds stay).
type PromoSaved struct {
	At         time.Time      `json:"at"`
	ID         string         `json:"id"`
	Code       string         `json:"code"`
	PercentOff int            `json:"pct,omitempty"`
	AmountOff  Money          `json:"off,omitempty"`
	MaxUses    *int           `json:"max,omitempty"`
	ExpiresAt  *time.Time     `json:"exp,omitempty"`
	Scope      PromotionScope `json:"scope"`
	Disabled   bool           `json:"disabled,omitempty"`
}

// TranslationSaved replaces one language's texts, or removes the language
// (Deleted).
type TranslationSaved struct {
	At      time.Time       `json:"at"`
	Lang    string          `json:"lang"`
	Text    TranslationText `json:"text"`
	Deleted bool            `json:"deleted,omitempty"`
}

// DescriptionSet sets the event's description ("" clears it).
type DescriptionSet struct {
	At          time.Time `json:"at"`
	Description string    `json:"description,omitempty"`
}

// ---- decide

func (PutForm) result(*RegistrationForm) {}

func (c PutForm) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Console
	t, err := m.ticketType(c.TypeID)
	if err != nil {
		return nil, nil, err
	}
	qs, err := checkQuestions(c.Questions)
	if err != nil {
		return nil, nil, err
	}
	rec := FormRec{TypeID: t.ID, CreatedAt: now}
	if f := cs.Forms[t.ID]; f != nil {
		rec = *f
	}
	rec.Draft, rec.UpdatedAt = qs, now
	return m.formView(&rec), []Change{FormSaved{At: now, TypeID: t.ID, Questions: qs}}, nil
}

func (GetForm) result(*RegistrationForm) {}

func (c GetForm) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Console
	t, err := m.ticketType(c.TypeID)
	if err != nil {
		return nil, nil, err
	}
	if f := cs.Forms[t.ID]; f != nil {
		return m.formView(f), nil, nil
	}
	return m.formView(&FormRec{TypeID: t.ID, CreatedAt: t.CreatedAt, UpdatedAt: t.CreatedAt}), nil, nil
}

func (PublishForm) result(*RegistrationForm) {}

func (c PublishForm) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Console
	t, err := m.ticketType(c.TypeID)
	if err != nil {
		return nil, nil, err
	}
	f := cs.Forms[t.ID]
	if f == nil {
		return nil, nil, Reasonf(FailedPrecondition, ReasonNoFormToPublish, "ticket type %s has no form to publish", t.ID)
	}
	rec := *f
	rec.Published, rec.PublishedAt, rec.UpdatedAt = slices.Clone(f.Draft), &now, now
	return m.formView(&rec), []Change{FormSaved{At: now, TypeID: t.ID, Publish: true}}, nil
}

func (CreatePromotionCode) result(*PromotionCode) {}

func (c CreatePromotionCode) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.createPromo(now, c)
}

func (UpdatePromotionCode) result(*PromotionCode) {}

func (c UpdatePromotionCode) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.updatePromo(now, c)
}

func (GetPromotionCode) result(*PromotionCode) {}

func (c GetPromotionCode) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Console
	p, ok := cs.Promos[c.ID]
	if !ok {
		return nil, nil, Errorf(NotFound, "promotion code not found")
	}
	return m.promoView(p, now), nil, nil
}

func (ListPromotionCodes) result(*List[PromotionCode]) {}

func (c ListPromotionCodes) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Console
	l, err := pageOf(cs.PromoOrder, cs.Promos, func(p *PromoRec) int { return p.Seq }, c.Cursor, c.Limit, false, nil,
		func(p *PromoRec) PromotionCode { return m.promoView(p, now) })
	return l, nil, err
}

func (DeletePromotionCode) result(*PromotionCode) {}

func (c DeletePromotionCode) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.updatePromo(now, UpdatePromotionCode{ID: c.ID, Active: Some(false)})
}

func (SetSite) result(*Event) {}

func (c SetSite) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.setSite(now, c)
}

func (PutTranslation) result(*Translation) {}

func (c PutTranslation) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.putTranslation(now, c)
}

func (GetTranslation) result(*Translation) {}

func (c GetTranslation) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Console
	t, ok := cs.Translations[canonLang(c.Lang)]
	if !ok {
		return nil, nil, Errorf(NotFound, "translation not found")
	}
	return m.translationView(t), nil, nil
}

func (ListTranslations) result(*List[Translation]) {}

func (c ListTranslations) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Console
	out := []Translation{}
	for _, l := range sortedKeys(cs.Translations) {
		out = append(out, m.translationView(cs.Translations[l]))
	}
	return List[Translation]{Data: out}, nil, nil
}

func (DeleteTranslation) result(*Translation) {}

func (c DeleteTranslation) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Console
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

func sortedKeys[V any](mp map[string]V) []string {
	ks := make([]string, 0, len(mp))
	for k := range mp {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// checkQuestions validates and normalizes a form's questions.
func checkQuestions(qs []Question) ([]Question, error) {
	if len(qs) > maxQuestions {
		return nil, FieldError("questions", fmt.Sprintf("at most %d questions", maxQuestions))
	}
	out := make([]Question, 0, len(qs))
	seen := map[string]bool{}
	for i, q := range qs {
		f := fmt.Sprintf("questions[%d]", i)
		q.ID, q.Label = strings.TrimSpace(q.ID), strings.TrimSpace(q.Label)
		if q.ID == "" || len(q.ID) > 64 || strings.ContainsAny(q.ID, ". []\"") {
			return nil, FieldError(f+".id", "must be 1 to 64 characters without dots, spaces or brackets")
		}
		if seen[q.ID] {
			return nil, FieldError(f+".id", "duplicate question id")
		}
		seen[q.ID] = true
		if q.Label == "" || len(q.Label) > 500 {
			return nil, FieldError(f+".label", "must be 1 to 500 characters")
		}
		switch q.Type {
		case QSelect, QMultiSelect:
			if len(q.Options) == 0 || len(q.Options) > maxOptions {
				return nil, FieldError(f+".options", fmt.Sprintf("a %s needs 1 to %d options", q.Type, maxOptions))
			}
			opts := make([]string, 0, len(q.Options))
			for _, o := range q.Options {
				o = strings.TrimSpace(o)
				if o == "" || len(o) > 200 || slices.Contains(opts, o) {
					return nil, FieldError(f+".options", "options must be distinct, 1 to 200 characters")
				}
				opts = append(opts, o)
			}
			q.Options = opts
		case QText, QEmail, QPhone, QCheckbox, QDate:
			if len(q.Options) > 0 {
				return nil, FieldError(f+".options", "only select and multi_select have options")
			}
			q.Options = nil
		default:
			return nil, FieldError(f+".type", "must be text, email, phone, select, multi_select, checkbox or date")
		}
		out = append(out, q)
	}
	return out, nil
}

// checkAnswers validates responses against the published form of typeID.
// full also demands every required question.
func (m *Machine) checkAnswers(typeID string, raw []byte, full bool) error {
	f := m.s.Console.Forms[typeID]
	if f == nil || f.PublishedAt == nil {
		return nil
	}
	answers := map[string]json.RawMessage{}
	if r := trimJSON(raw); len(r) > 0 {
		if err := json.Unmarshal(r, &answers); err != nil {
			return FieldError("responses", "must be an object")
		}
	}
	for _, k := range sortedKeys(answers) {
		if !slices.ContainsFunc(f.Published, func(q Question) bool { return q.ID == k }) {
			return FieldError("responses."+k, "unknown question")
		}
	}
	for _, q := range f.Published {
		field := "responses." + q.ID
		a, ok := answers[q.ID]
		if !ok || string(a) == "null" {
			if q.Required && full {
				return FieldError(field, "required")
			}
			continue
		}
		if err := checkAnswer(q, a, full); err != nil {
			return FieldError(field, err.Error())
		}
	}
	return nil
}

func trimJSON(b []byte) []byte {
	s := strings.TrimSpace(string(b))
	if s == "" || s == "null" {
		return nil
	}
	return []byte(s)
}

func checkAnswer(q Question, a json.RawMessage, full bool) error {
	var s string
	if q.Type != QCheckbox && q.Type != QMultiSelect {
		if err := json.Unmarshal(a, &s); err != nil {
			return fmt.Errorf("must be a string")
		}
		s = strings.TrimSpace(s)
		if s == "" && q.Required && full {
			return fmt.Errorf("required")
		}
		if len(s) > maxAnswerLen {
			return fmt.Errorf("at most %d characters", maxAnswerLen)
		}
		if s == "" {
			return nil
		}
	}
	switch q.Type {
	case QEmail:
		if !ValidEmail(s) {
			return fmt.Errorf("must be an email address")
		}
	case QPhone:
		digits := 0
		for i, r := range s {
			switch {
			case r >= '0' && r <= '9':
				digits++
			case r == '+' && i == 0, r == ' ', r == '-', r == '(', r == ')', r == '.':
			default:
				return fmt.Errorf("must be a phone number")
			}
		}
		if digits < 5 || digits > 15 {
			return fmt.Errorf("must be a phone number")
		}
	case QDate:
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return fmt.Errorf("must be a date (YYYY-MM-DD)")
		}
	case QSelect:
		if !slices.Contains(q.Options, s) {
			return fmt.Errorf("option not allowed")
		}
	case QMultiSelect:
		var vs []string
		if err := json.Unmarshal(a, &vs); err != nil {
			return fmt.Errorf("must be an array of options")
		}
		if len(vs) == 0 && q.Required && full {
			return fmt.Errorf("required")
		}
		for i, v := range vs {
			if !slices.Contains(q.Options, v) || slices.Contains(vs[:i], v) {
				return fmt.Errorf("option not allowed")
			}
		}
	case QCheckbox:
		var b bool
		if err := json.Unmarshal(a, &b); err != nil {
			return fmt.Errorf("must be true or false")
		}
		if !b && q.Required && full {
			return fmt.Errorf("required")
		}
	}
	return nil
}

// admissionOf is the ticket type an item list admits ("" when none).
func (m *Machine) admissionOf(items []OrderItem) string {
	for _, it := range items {
		switch it.ItemType {
		case ItemRegistrationType:
			return it.ItemID
		case ItemBundle:
			if b := m.s.Bundles[it.ItemID]; b != nil {
				for _, bi := range b.Items {
					if bi.ItemType == ItemRegistrationType {
						return bi.ItemID
					}
				}
			}
		}
	}
	return ""
}

// ---- promotion codes

func (m *Machine) createPromo(now time.Time, c CreatePromotionCode) (any, []Change, error) {
	cs := &m.s.Console
	if len(cs.PromoOrder) >= maxPromos {
		return nil, nil, Reasonf(FailedPrecondition, ReasonEventLimitReached, "an event has at most %d promotion codes", maxPromos)
	}
	// The same rule as the schema's (minLength, maxLength in characters,
	// pattern nospace), so that what a validator passes the core takes.
	code := normCode(c.Code)
	if code == "" || utf8.RuneCountInString(code) > maxPromoCodeLen || strings.IndexFunc(code, func(r rune) bool { return unicode.IsSpace(r) || r == '\ufeff' }) >= 0 {
		return nil, nil, FieldError("code", "must be 1 to 64 characters without spaces")
	}
	if _, taken := cs.byCode()[code]; taken {
		return nil, nil, Errorf(AlreadyExists, "promotion code %s already exists", code)
	}
	ch := PromoSaved{At: now, Code: code, ExpiresAt: timeOf(c.ExpiresAt), MaxUses: c.MaxUses}
	switch {
	case (c.PercentOff == nil) == (c.AmountOff == nil):
		return nil, nil, FieldError("percentOff", "exactly one of percentOff and amountOff is required")
	case c.PercentOff != nil:
		if *c.PercentOff < 1 || *c.PercentOff > 100 {
			return nil, nil, FieldError("percentOff", "must be 1 to 100")
		}
		ch.PercentOff = *c.PercentOff
	default:
		if *c.AmountOff < 1 || *c.AmountOff > moneyMax {
			return nil, nil, FieldError("amountOff", "must be positive")
		}
		ch.AmountOff = *c.AmountOff
	}
	if c.MaxUses != nil && *c.MaxUses < 1 {
		return nil, nil, FieldError("maxUses", "must be at least 1")
	}
	if c.AppliesTo != nil {
		var err error
		if ch.Scope, err = m.checkScope(*c.AppliesTo); err != nil {
			return nil, nil, err
		}
	}
	ch.ID = m.newID("prm_")
	rec := PromoRec{CreatedAt: now}
	rec.saved(ch)
	return m.promoView(&rec, now), []Change{ch}, nil
}

func (m *Machine) updatePromo(now time.Time, c UpdatePromotionCode) (any, []Change, error) {
	p, ok := m.s.Console.Promos[c.ID]
	if !ok {
		return nil, nil, Errorf(NotFound, "promotion code not found")
	}
	ch := PromoSaved{At: now, ID: p.ID, Code: p.Code, PercentOff: p.PercentOff, AmountOff: p.AmountOff,
		MaxUses: p.MaxUses, ExpiresAt: p.ExpiresAt, Scope: p.Scope, Disabled: p.Disabled}
	if c.MaxUses.Set {
		ch.MaxUses = nil
		if !c.MaxUses.Null {
			if c.MaxUses.V < 1 || c.MaxUses.V > 10000000 {
				return nil, nil, FieldError("maxUses", "must be 1 to 10000000")
			}
			ch.MaxUses = &c.MaxUses.V
		}
	}
	if c.ExpiresAt.Set {
		ch.ExpiresAt = nil
		if !c.ExpiresAt.Null {
			t := c.ExpiresAt.V.Time
			ch.ExpiresAt = &t
		}
	}
	if c.AppliesTo.Set {
		ch.Scope = PromotionScope{}
		if !c.AppliesTo.Null {
			var err error
			if ch.Scope, err = m.checkScope(c.AppliesTo.V); err != nil {
				return nil, nil, err
			}
		}
	}
	if c.Active.Set {
		if c.Active.Null {
			return nil, nil, FieldError("active", "must not be null")
		}
		ch.Disabled = !c.Active.V
	}
	rec := *p
	rec.saved(ch)
	return m.promoView(&rec, now), []Change{ch}, nil
}

func (m *Machine) checkScope(s PromotionScope) (PromotionScope, error) {
	var out PromotionScope
	var err error
	if out.TicketTypeIDs, err = checkIDs("appliesTo.ticketTypeIds", s.TicketTypeIDs, 100, "ticket type", func(id string) bool { return m.s.Types[id] != nil }); err != nil {
		return out, err
	}
	if out.AddonIDs, err = checkIDs("appliesTo.addonIds", s.AddonIDs, 100, "add-on", func(id string) bool { return m.s.Addons[id] != nil }); err != nil {
		return out, err
	}
	if out.BundleIDs, err = checkIDs("appliesTo.bundleIds", s.BundleIDs, 100, "bundle", func(id string) bool { return m.s.Bundles[id] != nil }); err != nil {
		return out, err
	}
	return out, nil
}

func (p *PromoRec) saved(c PromoSaved) {
	p.ID, p.Code, p.PercentOff, p.AmountOff, p.MaxUses, p.ExpiresAt, p.Scope, p.Disabled, p.UpdatedAt =
		c.ID, c.Code, c.PercentOff, c.AmountOff, c.MaxUses, c.ExpiresAt, c.Scope, c.Disabled, c.At
}

func (cs *ConsoleState) byCode() map[string]string {
	if cs.promoByCode == nil {
		cs.promoByCode = make(map[string]string, len(cs.Promos))
		for id, p := range cs.Promos {
			cs.promoByCode[p.Code] = id
		}
	}
	return cs.promoByCode
}

// usablePromo finds an active promotion code by its text.
func (m *Machine) usablePromo(now time.Time, text string) (*PromoRec, error) {
	id, ok := m.s.Console.byCode()[normCode(text)]
	if !ok {
		return nil, FieldError("promotionCode", "unknown promotion code")
	}
	p := m.s.Console.Promos[id]
	if st := p.status(now); st != PromoActive {
		return nil, FieldError("promotionCode", "promotion code is "+st)
	}
	return p, nil
}

// lineDiscount is the discount of p on one line: percent rounds half up on
// the line amount, an amount is taken per unit and never below zero.
func lineDiscount(p *PromoRec, l OrderLine) Money {
	if !p.Scope.covers(l.ItemType, l.ItemID) {
		return 0
	}
	if p.PercentOff > 0 {
		return (l.Amount*Money(p.PercentOff) + 50) / 100
	}
	return min(p.AmountOff, l.UnitPrice) * Money(l.Quantity)
}

// applyPromo discounts the priced lines of an order in place and returns
// the total discount; 400 when the code covers no line.
func applyPromo(p *PromoRec, po *pricedOrder) (Money, error) {
	var total Money
	covered := false
	for i := range po.lines {
		l := &po.lines[i]
		if p.Scope.covers(l.ItemType, l.ItemID) {
			covered = true
		}
		d := lineDiscount(p, *l)
		l.Amount -= d
		total += d
	}
	if !covered {
		return 0, FieldError("promotionCode", "does not apply to the items of this order")
	}
	po.total -= total
	return total, nil
}

// promoLookupPrice is the price of a ticket type under an optional
// promotion code, for the redemption-code lookup.
func (m *Machine) promoLookupPrice(now time.Time, text string, t *TicketTypeRec) (Money, error) {
	if strings.TrimSpace(text) == "" {
		return t.Price, nil
	}
	p, err := m.usablePromo(now, text)
	if err != nil {
		return 0, err
	}
	return t.Price - lineDiscount(p, OrderLine{ItemType: ItemRegistrationType, ItemID: t.ID, Quantity: 1, UnitPrice: t.Price, Amount: t.Price}), nil
}

// ---- site and translations

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
	cs := &m.s.Console
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
	if t, ok := m.s.Console.Translations[canonLang(lang)]; ok {
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

// consoleCatalog adds published forms and the translation of lang to a
// catalog.
func (m *Machine) consoleCatalog(cat *Catalog, lang string) {
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
			if f := m.s.Console.Forms[tt.ID]; f != nil && f.PublishedAt != nil {
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

// ---- apply

// applyConsole performs the console's changes; false for a change that is
// not one of them.

// promoHeld moves an order's promotion use: a placed holding order
// reserves one (delta +1), a released one returns it (-1), a paid one
// spends it (paid true).
func (s *State) promoHeld(o *OrderRec, delta int, paid bool) {
	if o.PromoID == "" {
		return
	}
	p := s.Console.Promos[o.PromoID]
	if p == nil {
		panic(fmt.Sprintf("event: order %s refers to unknown promotion code %s", o.ID, o.PromoID))
	}
	p.Held += delta
	if paid {
		p.Uses++
	}
}

// ---- codecs

// appendJSONBody encodes a console change: the console's changes are rare
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

// consoleVersion is the version byte of the console section of a snapshot.
const consoleVersion = 1

// appendConsole appends the console section: a byte 0 for an empty
// console, else the version byte and the ConsoleState as one JSON document
// (maps sorted by key) as bytes. Snapshots of older builds end before it
// and decode an empty console.
func (s *State) appendConsole(e enc) enc {
	cs := &s.Console
	if cs.Description == "" && len(cs.Forms) == 0 && len(cs.Promos) == 0 && len(cs.Translations) == 0 {
		return append(e, 0)
	}
	b, err := json.Marshal(cs)
	if err != nil {
		panic(fmt.Sprintf("event: encode console state: %v", err))
	}
	e = append(e, consoleVersion)
	return e.bytes(b)
}

func (s *State) decodeConsole(d *dec) {
	if len(d.s) == 0 || d.err != nil {
		return
	}
	v := d.s[0]
	d.s = d.s[1:]
	if v == 0 {
		return
	}
	if v != consoleVersion {
		d.fail()
		return
	}
	b := d.bytes()
	if d.err != nil {
		return
	}
	var cs ConsoleState
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
	s.Console = cs
}

// consistent checks a decoded console against itself and the decoded
// orders: no nil records, keys match ids, codes unique, counts not
// negative, every order's promotion code known.
func (cs *ConsoleState) consistent(s *State) bool {
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
func (FormSaved) ChangeKind() string { return "form.saved" }

func decodeFormSaved(d *dec) FormSaved {
	return readJSONChange(d, func(c *FormSaved, at time.Time) { c.At = at })
}

func (c FormSaved) appendBody(e enc) enc { return appendJSONBody(e, c.At, c) }

func (c FormSaved) apply(s *State) {
	cs := &s.Console
	if cs.Forms == nil {
		cs.Forms = map[string]*FormRec{}
	}
	f := cs.Forms[c.TypeID]
	if f == nil {
		f = &FormRec{TypeID: c.TypeID, CreatedAt: c.At}
		cs.Forms[c.TypeID] = f
	}
	if c.Publish {
		f.Published, f.PublishedAt = slices.Clone(f.Draft), &c.At
	} else {
		f.Draft = c.Questions
	}
	f.UpdatedAt = c.At
}

// ChangeKind names the change in the log (its binary tag).
func (PromoSaved) ChangeKind() string { return "promotion_code.saved" }

func decodePromoSaved(d *dec) PromoSaved {
	return readJSONChange(d, func(c *PromoSaved, at time.Time) { c.At = at })
}

func (c PromoSaved) appendBody(e enc) enc { return appendJSONBody(e, c.At, c) }

func (c PromoSaved) apply(s *State) {
	cs := &s.Console
	if cs.Promos == nil {
		cs.Promos = map[string]*PromoRec{}
	}
	p := cs.Promos[c.ID]
	if p == nil {
		p = &PromoRec{Seq: len(cs.PromoOrder), CreatedAt: c.At}
		cs.Promos[c.ID] = p
		cs.PromoOrder = append(cs.PromoOrder, c.ID)
	}
	p.saved(c)
	cs.byCode()[p.Code] = p.ID
}

// ChangeKind names the change in the log (its binary tag).
func (TranslationSaved) ChangeKind() string { return "translation.saved" }

func decodeTranslationSaved(d *dec) TranslationSaved {
	return readJSONChange(d, func(c *TranslationSaved, at time.Time) { c.At = at })
}

func (c TranslationSaved) appendBody(e enc) enc { return appendJSONBody(e, c.At, c) }

func (c TranslationSaved) apply(s *State) {
	cs := &s.Console
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

// ChangeKind names the change in the log (its binary tag).
func (DescriptionSet) ChangeKind() string { return "event.description_set" }

func decodeDescriptionSet(d *dec) DescriptionSet {
	return DescriptionSet{At: d.time(), Description: d.str()}
}

func (c DescriptionSet) appendBody(e enc) enc { return e.time(c.At).str(c.Description) }

func (c DescriptionSet) apply(s *State) {
	cs := &s.Console
	cs.Description = c.Description
	s.mustEvent().UpdatedAt = c.At
}
