package event

import (
	"slices"
	"time"

	json "github.com/goccy/go-json"
)

// ---- views of the console's sales records

// RegistrationForm is a ticket type's registration form. Questions is the
// draft; PublishedQuestions what the storefront shows and responses are
// checked against. Status is published when the two are the same.
type RegistrationForm struct {
	TicketTypeID       string     `json:"ticketTypeId"`
	EventID            string     `json:"eventId"`
	Status             string     `json:"status" v:"enum=draft|published"`
	Questions          []Question `json:"questions"`
	PublishedQuestions []Question `json:"publishedQuestions"`
	PublishedAt        *Time      `json:"publishedAt"`
	UpdatedAt          Time       `json:"updatedAt"`
}

// PromotionCode is the promotion code record. Uses counts paid orders and
// live orders holding a use.
type PromotionCode struct {
	ID         string         `json:"id"`
	EventID    string         `json:"eventId"`
	Code       string         `json:"code"`
	PercentOff *int           `json:"percentOff"`
	AmountOff  *Money         `json:"amountOff"`
	MaxUses    *int           `json:"maxUses"`
	Uses       int            `json:"uses"`
	ExpiresAt  *Time          `json:"expiresAt"`
	AppliesTo  PromotionScope `json:"appliesTo"`
	Status     string         `json:"status" v:"enum=active|disabled|expired|exhausted"`
	CreatedAt  Time           `json:"createdAt"`
	UpdatedAt  Time           `json:"updatedAt"`
}

// Translation is one language of an event.
type Translation struct {
	EventID string `json:"eventId"`
	Lang    string `json:"lang"`
	TranslationText
	CreatedAt Time `json:"createdAt"`
	UpdatedAt Time `json:"updatedAt"`
}

func (m *Machine) formView(f *FormRec) RegistrationForm {
	v := RegistrationForm{
		TicketTypeID: f.TypeID, EventID: m.s.ID, Status: FormDraft, Questions: orEmptyQ(f.Draft),
		PublishedQuestions: orEmptyQ(f.Published), PublishedAt: tp(f.PublishedAt), UpdatedAt: At(f.UpdatedAt),
	}
	if f.PublishedAt != nil && slices.EqualFunc(f.Draft, f.Published, func(a, b Question) bool {
		return a.ID == b.ID && a.Type == b.Type && a.Label == b.Label && a.Required == b.Required && slices.Equal(a.Options, b.Options)
	}) {
		v.Status = FormPublished
	}
	return v
}

func orEmptyQ(qs []Question) []Question {
	if qs == nil {
		return []Question{}
	}
	return slices.Clone(qs)
}

func (m *Machine) promoView(p *PromoRec, now time.Time) PromotionCode {
	v := PromotionCode{
		ID: p.ID, EventID: m.s.ID, Code: p.Code, MaxUses: intp(p.MaxUses), Uses: p.Uses + p.Held,
		ExpiresAt: tp(p.ExpiresAt), Status: p.status(now), CreatedAt: At(p.CreatedAt), UpdatedAt: At(p.UpdatedAt),
		AppliesTo: PromotionScope{TicketTypeIDs: orEmpty(slices.Clone(p.Scope.TicketTypeIDs)),
			AddonIDs: orEmpty(slices.Clone(p.Scope.AddonIDs)), BundleIDs: orEmpty(slices.Clone(p.Scope.BundleIDs))},
	}
	if p.PercentOff > 0 {
		pct := p.PercentOff
		v.PercentOff = &pct
	} else {
		off := p.AmountOff
		v.AmountOff = &off
	}
	return v
}

func (m *Machine) translationView(t *TranslationRec) Translation {
	return Translation{EventID: m.s.ID, Lang: t.Lang, TranslationText: t.Text, CreatedAt: At(t.CreatedAt), UpdatedAt: At(t.UpdatedAt)}
}

// regResponses are the form answers of the order a registration came from.
func (m *Machine) regResponses(r *RegistrationRec) json.RawMessage {
	if o := m.s.Orders[r.OrderID]; o != nil && len(o.Responses) > 0 {
		return append(json.RawMessage{}, o.Responses...)
	}
	return nil
}
