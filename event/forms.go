package event

import (
	"fmt"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"
)

// Registration forms: the questions a ticket type asks its buyers.
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

// Bounds of registration forms.
const (
	maxQuestions = 50
	maxOptions   = 50
	maxAnswerLen = 2000
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

// FormSaved replaces the draft of a ticket type's form (Publish false) or
// publishes the draft (Publish true, Questions empty).
type FormSaved struct {
	At        time.Time  `json:"at"`
	TypeID    string     `json:"type"`
	Questions []Question `json:"questions,omitempty"`
	Publish   bool       `json:"publish,omitempty"`
}

func (PutForm) result(*RegistrationForm) {}

func (c PutForm) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Content
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
	cs := &m.s.Content
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
	cs := &m.s.Content
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
	f := m.s.Content.Forms[typeID]
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

// ---- change kinds: each one's log name, body codec and apply

// ChangeKind names the change in the log (its binary tag).
func (FormSaved) ChangeKind() string { return "form.saved" }

func decodeFormSaved(d *dec) FormSaved {
	return readJSONChange(d, func(c *FormSaved, at time.Time) { c.At = at })
}

func (c FormSaved) appendBody(e enc) enc { return appendJSONBody(e, c.At, c) }

func (c FormSaved) apply(s *State) {
	cs := &s.Content
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
