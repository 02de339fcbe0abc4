package console

import (
	"ticketd/event"
)

func init() {
	pageNames = append(pageNames, "translations")
}

func (c *Console) translationRoutes() []route {
	return []route{
		{"GET", "/console/events/{eventId}/translations", c.translationsPage},
		{"POST", "/console/events/{eventId}/translations", c.putTranslation},
		{"POST", "/console/events/{eventId}/translations/{lang}/delete", c.deleteTranslation},
	}
}

// translationsData is the translations page: the event's languages, each with what its
// edit form shows (the record, or what was typed when it was refused).
type translationsData struct {
	Langs []langRow
	New   map[string]string
}

type langRow struct {
	event.Translation
	Vals, Errs map[string]string
}

// translationsPage shows the event's translations (name and description per
// language); the site address and description are edited on the event
// page.
func (c *Console) translationsPage(r *req) error {
	return c.showTranslations(r, &view{}, 200)
}

func (c *Console) showTranslations(r *req, v *view, status int) error {
	v.Title = "Translations"
	eventID, _, err := c.eventHead(r, v, permRead)
	if err != nil {
		return err
	}
	list, err := askOp(c, eventID, event.ListTranslations{})
	if err != nil {
		return err
	}
	v.typed()
	edit := v.Form["edit"]
	d := translationsData{New: map[string]string{}}
	for _, t := range list.Data {
		row := langRow{Translation: t, Vals: map[string]string{"name": t.Name, "description": t.Description}}
		if edit == "lang:"+t.Lang {
			row.Vals, row.Errs = v.Form, v.Errors
		}
		d.Langs = append(d.Langs, row)
	}
	if edit == "lang:" {
		d.New = v.Form
	}
	v.Any = d
	c.render(r.rc, status, "translations", v)
	return nil
}

// putTranslation sets one language's name and description, keeping the
// item translations the API may have set for it.
func (c *Console) putTranslation(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	lang := form(r.rc, "lang")
	f := map[string]string{"edit": "lang:" + form(r.rc, "row"), "lang": lang, "name": form(r.rc, "name"), "description": form(r.rc, "description")}
	v := &view{Form: f, Errors: map[string]string{}}
	var text event.TranslationText
	if lang != "" {
		if old, err := askOp(c, eventID, event.GetTranslation{Lang: lang}); err == nil {
			text = old.TranslationText
		} else if !isNotFound(err) && !fieldErrors(err, v) {
			return err
		}
	} else {
		v.Errors["lang"] = "It is required."
	}
	text.Name, text.Description = f["name"], f["description"]
	return submit(r, formSubmit[event.PutTranslation, event.Translation]{EventID: eventID, UnitID: unitID, View: v,
		Cmd: event.PutTranslation{Lang: lang, TranslationText: text}, Op: "putTranslation",
		Targets: func(tr event.Translation) map[string]string {
			return map[string]string{"eventId": eventID, "lang": tr.Lang}
		},
		Back: "/console/events/" + eventID + "/translations", Show: c.showTranslations})
}

// deleteTranslation removes one language.
func (c *Console) deleteTranslation(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	lang := param(r.rc, "lang")
	tr, err := askOp(c, eventID, event.DeleteTranslation{Lang: lang})
	if err != nil {
		return err
	}
	r.audit("deleteTranslation", unitID, map[string]string{"eventId": eventID, "lang": lang}, tr)
	return redirect(r, "/console/events/"+eventID+"/translations")
}
