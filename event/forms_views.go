package event

import (
	"slices"

	json "github.com/goccy/go-json"
)

// ---- views of registration forms

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

// regResponses are the form answers of the order a registration came from.
func (m *Machine) regResponses(r *RegistrationRec) json.RawMessage {
	if o := m.s.Orders[r.OrderID]; o != nil && len(o.Responses) > 0 {
		return append(json.RawMessage{}, o.Responses...)
	}
	return nil
}
