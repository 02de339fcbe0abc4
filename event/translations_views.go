package event

// ---- views of translations

// Translation is one language of an event.
type Translation struct {
	EventID string `json:"eventId"`
	Lang    string `json:"lang"`
	TranslationText
	CreatedAt Time `json:"createdAt"`
	UpdatedAt Time `json:"updatedAt"`
}

func (m *Machine) translationView(t *TranslationRec) Translation {
	return Translation{EventID: m.s.ID, Lang: t.Lang, TranslationText: t.Text, CreatedAt: At(t.CreatedAt), UpdatedAt: At(t.UpdatedAt)}
}
