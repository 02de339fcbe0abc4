package eventsetup

import (
	"ticketd/event"
	"ticketd/http/console/shell"
)

func init() {
	pageNames = append(pageNames, "translations")
}

func (c *pages) translationRoutes() []shell.Route {
	return []shell.Route{
		{Method: "GET", Path: "/console/events/{eventId}/translations", H: c.translationsPage},
		{Method: "POST", Path: "/console/events/{eventId}/translations", H: c.putTranslation},
		{Method: "POST", Path: "/console/events/{eventId}/translations/{lang}/delete", H: c.deleteTranslation},
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
func (c *pages) translationsPage(r *shell.Req) error {
	return c.showTranslations(r, &shell.View{}, 200)
}

func (c *pages) showTranslations(r *shell.Req, v *shell.View, status int) error {
	v.Title = "Translations"
	eventID, _, err := c.EventHead(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	list, err := shell.AskOp(c.Console, eventID, event.ListTranslations{})
	if err != nil {
		return err
	}
	v.Typed()
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
	c.Render(r.RC, status, "translations", v)
	return nil
}

// putTranslation sets one language's name and description, keeping the
// item translations the API may have set for it.
func (c *pages) putTranslation(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	lang := shell.Form(r.RC, "lang")
	f := map[string]string{"edit": "lang:" + shell.Form(r.RC, "row"), "lang": lang, "name": shell.Form(r.RC, "name"), "description": shell.Form(r.RC, "description")}
	v := &shell.View{Form: f, Errors: map[string]string{}}
	var text event.TranslationText
	if lang != "" {
		if old, err := shell.AskOp(c.Console, eventID, event.GetTranslation{Lang: lang}); err == nil {
			text = old.TranslationText
		} else if !shell.IsNotFound(err) && !shell.FieldErrors(err, v) {
			return err
		}
	} else {
		v.Errors["lang"] = "It is required."
	}
	text.Name, text.Description = f["name"], f["description"]
	return shell.Submit(r, shell.FormSubmit[event.PutTranslation, event.Translation]{EventID: eventID, UnitID: unitID, View: v,
		Cmd: event.PutTranslation{Lang: lang, TranslationText: text}, Op: "putTranslation",
		Targets: func(tr event.Translation) map[string]string {
			return map[string]string{"eventId": eventID, "lang": tr.Lang}
		},
		Back: "/console/events/" + eventID + "/translations", Show: c.showTranslations})
}

// deleteTranslation removes one language.
func (c *pages) deleteTranslation(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	lang := shell.Param(r.RC, "lang")
	tr, err := shell.AskOp(c.Console, eventID, event.DeleteTranslation{Lang: lang})
	if err != nil {
		return err
	}
	r.Audit("deleteTranslation", unitID, map[string]string{"eventId": eventID, "lang": lang}, tr)
	return shell.Redirect(r, "/console/events/"+eventID+"/translations")
}
