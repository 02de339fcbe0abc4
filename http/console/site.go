package console

import (
	"ticketd/event"
)

func init() {
	pageNames = append(pageNames, "site")
}

func (c *Console) siteRoutes() []route {
	return []route{
		{"GET", "/console/events/{eventId}/site", c.sitePage},
		{"POST", "/console/events/{eventId}/site", c.setSite},
		{"POST", "/console/events/{eventId}/translations", c.putTranslation},
		{"POST", "/console/events/{eventId}/translations/{lang}/delete", c.deleteTranslation},
	}
}

// siteData is the site page: the event's languages, each with what its
// edit form shows (the record, or what was typed when it was refused).
type siteData struct {
	Langs          []langRow
	New            map[string]string
	Site, SiteErrs map[string]string
}

type langRow struct {
	event.Translation
	Vals, Errs map[string]string
}

// sitePage shows the event's public page address, description and
// translations (name and description per language).
func (c *Console) sitePage(r *req) error {
	return c.showSite(r, &view{}, 200)
}

func (c *Console) showSite(r *req, v *view, status int) error {
	v.Title = "Site and translations"
	eventID, _, err := c.eventHead(r, v, permRead)
	if err != nil {
		return err
	}
	list, err := askOp(c, eventID, event.ListTranslations{})
	if err != nil {
		return err
	}
	if v.Form == nil {
		v.Form = map[string]string{}
	}
	if v.Errors == nil {
		v.Errors = map[string]string{}
	}
	edit := v.Form["edit"]
	d := siteData{New: map[string]string{},
		Site: map[string]string{"siteUrl": deref(v.Event.SiteURL), "description": deref(v.Event.Description)}}
	if edit == "site" {
		d.Site, d.SiteErrs = v.Form, v.Errors
	}
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
	c.render(r.rc, status, "site", v)
	return nil
}

// setSite sets the public page address and the description; an empty
// field clears it.
func (c *Console) setSite(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	f := map[string]string{"edit": "site", "siteUrl": form(r.rc, "siteUrl"), "description": form(r.rc, "description")}
	v := &view{Form: f, Errors: map[string]string{}}
	body := map[string]any{"siteUrl": nil, "description": nil}
	if f["siteUrl"] != "" {
		body["siteUrl"] = f["siteUrl"]
	}
	if f["description"] != "" {
		body["description"] = f["description"]
	}
	var cmd event.SetSite
	if err = bindForm(body, &cmd); err == nil {
		var ev event.Event
		if ev, err = askOp(c, eventID, cmd); err == nil {
			r.audit("setEventSite", unitID, map[string]string{"eventId": eventID}, ev)
			return redirect(r, "/console/events/"+eventID+"/site")
		}
	}
	if !fieldErrors(err, v) {
		return err
	}
	return c.showSite(r, v, 400)
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
	if len(v.Errors) == 0 {
		text.Name, text.Description = f["name"], f["description"]
		var tr event.Translation
		if tr, err = askOp(c, eventID, event.PutTranslation{Lang: lang, TranslationText: text}); err == nil {
			r.audit("putTranslation", unitID, map[string]string{"eventId": eventID, "lang": tr.Lang}, tr)
			return redirect(r, "/console/events/"+eventID+"/site")
		}
		if !fieldErrors(err, v) {
			return err
		}
	}
	return c.showSite(r, v, 400)
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
	return redirect(r, "/console/events/"+eventID+"/site")
}
