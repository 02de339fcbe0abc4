package eventsetup

import (
	"strings"

	"ticketd/event"
	"ticketd/http/console/shell"
)

func init() {
	pageNames = append(pageNames, "program")
	funcs["deref"] = shell.Deref
	funcs["ptext"] = func(p *shell.View, kind, field, label, typ string) programArgs {
		return programArgs{P: p, Kind: kind, Field: field, Label: label, Type: typ}
	}
	funcs["pdel"] = func(p *shell.View, kind, id, name string) programArgs {
		return programArgs{P: p, Kind: kind, ID: id, Name: name}
	}
	funcs["pbind"] = func(p *shell.View, kind, id, name string) programArgs {
		return programArgs{P: p, Kind: kind, ID: id, Name: name}
	}
	funcs["pedit"] = func(p *shell.View, kind, id, name string) programArgs {
		d, _ := p.Any.(programData)
		return programArgs{P: p, Kind: kind, ID: id, Name: name, Fields: editFields[kind], Vals: d.Vals[id], Errs: d.Errs[id]}
	}
}

// editFields are the fields a row's edit form changes (gates, venue and
// a speaker's sessions are set when the item is created).
var editFields = map[string][]field{
	"perks":    {{"name", "Name", "text"}, {"description", "Description", "text"}},
	"venues":   {{"name", "Name", "text"}},
	"sessions": {{"title", "Title", "text"}, {"startsAt", "Starts", "datetime-local"}, {"endsAt", "Ends", "datetime-local"}},
	"speakers": {{"name", "Name", "text"}, {"title", "Title", "text"}, {"bio", "Bio", "text"}},
	"sponsors": {{"name", "Name", "text"}, {"url", "Site address", "url"}, {"tier", "Tier", "text"}},
}

type field struct{ Name, Label, Type string }

// programArgs is what the program page's sub-templates get: the page, the
// kind (its path segment), and a field or a row.
type programArgs struct {
	P                        *shell.View
	Kind, Field, Label, Type string
	ID, Name                 string
	Fields                   []field
	Vals, Errs               map[string]string
}

func (c *pages) programRoutes() []shell.Route {
	return []shell.Route{
		{Method: "GET", Path: "/console/events/{eventId}/program", H: c.programPage},
		{Method: "POST", Path: "/console/events/{eventId}/program/{kind}", H: c.createProgramItem},
		{Method: "POST", Path: "/console/events/{eventId}/program/{kind}/{itemId}", H: c.updateProgramItem},
		{Method: "POST", Path: "/console/events/{eventId}/program/{kind}/{itemId}/delete", H: c.deleteProgramItem},
		{Method: "POST", Path: "/console/events/{eventId}/perk-bindings/types/{typeId}", H: c.bindPerks},
		{Method: "POST", Path: "/console/events/{eventId}/perk-bindings/codes", H: c.bindPerks},
		{Method: "POST", Path: "/console/events/{eventId}/perk-bindings/codes/{codeId}", H: c.bindPerks},
	}
}

// programData is the program page: perks, venues, the agenda, speakers
// and sponsors (the first listLimit of each, in the core's order).
type programData struct {
	Perks    []event.Perk
	Venues   []event.Venue
	Sessions []event.Session
	Speakers []event.Speaker
	Sponsors []event.Sponsor
	// Types are the ticket types (first listLimit) and Codes the bound
	// redemption codes; Bound ticks each one's perks (what was ticked,
	// on a refused form).
	Types     []event.TicketType
	Codes     []event.CodePerkBinding
	CodesMore bool
	Bound     map[string]map[string]bool
	Names     map[string]string // perk, venue and session names by id
	Picked    map[string]bool   // the perks and sessions ticked on a refused form
	Next      map[string]string // the next page's cursor of each list
	// Vals are what each row's edit form shows, Errs its errors (the
	// refused row's, with what was typed).
	Vals, Errs map[string]map[string]string
}

// programPage shows the event's program and perks with a form for each
// kind and a delete behind a confirm on each row.
func (c *pages) programPage(r *shell.Req) error {
	return c.showProgram(r, &shell.View{}, 200)
}

func (c *pages) showProgram(r *shell.Req, v *shell.View, status int) error {
	v.Title = "Program and perks"
	eventID, _, err := c.EventHead(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	d := programData{Names: map[string]string{}, Picked: map[string]bool{}, Next: map[string]string{}}
	q := r.RC.QueryArgs()
	cur := func(k string) string { return string(q.Peek(k)) }
	next := func(k string, more bool, c *string) {
		if more && c != nil {
			d.Next[k] = *c
		}
	}
	perks, err := shell.AskOp(c.Console, eventID, event.ListPerks{Limit: shell.ListLimit, Cursor: cur("perks")})
	if err != nil {
		return err
	}
	next("perks", perks.HasMore, perks.NextCursor)
	venues, err := shell.AskOp(c.Console, eventID, event.ListVenues{Limit: shell.ListLimit, Cursor: cur("venues")})
	if err != nil {
		return err
	}
	next("venues", venues.HasMore, venues.NextCursor)
	sessions, err := shell.AskOp(c.Console, eventID, event.ListSessions{Limit: shell.ListLimit, Cursor: cur("sessions")})
	if err != nil {
		return err
	}
	next("sessions", sessions.HasMore, sessions.NextCursor)
	speakers, err := shell.AskOp(c.Console, eventID, event.ListSpeakers{Limit: shell.ListLimit, Cursor: cur("speakers")})
	if err != nil {
		return err
	}
	next("speakers", speakers.HasMore, speakers.NextCursor)
	sponsors, err := shell.AskOp(c.Console, eventID, event.ListSponsors{Limit: shell.ListLimit, Cursor: cur("sponsors")})
	if err != nil {
		return err
	}
	next("sponsors", sponsors.HasMore, sponsors.NextCursor)
	types, err := shell.AskOp(c.Console, eventID, event.ListTicketTypes{Limit: shell.ListLimit, Cursor: cur("types")})
	if err != nil {
		return err
	}
	next("types", types.HasMore, types.NextCursor)
	bindings, err := shell.AskOp(c.Console, eventID, event.ListPerkBindings{})
	if err != nil {
		return err
	}
	d.Perks, d.Venues, d.Sessions, d.Speakers, d.Sponsors = perks.Data, venues.Data, sessions.Data, speakers.Data, sponsors.Data
	d.Types, d.Codes, d.CodesMore = types.Data, bindings.RedemptionCodes, bindings.More
	d.Bound = map[string]map[string]bool{}
	tick := func(id string, perkIDs []string) {
		d.Bound[id] = map[string]bool{}
		for _, p := range perkIDs {
			d.Bound[id][p] = true
		}
	}
	for _, b := range bindings.TicketTypes {
		tick(b.ID, b.PerkIDs)
	}
	for _, b := range bindings.RedemptionCodes {
		tick(b.ID, b.PerkIDs)
	}
	if id := v.Form["bind"]; id != "" {
		var picked []string
		for _, p := range r.RC.PostArgs().PeekMulti("perkIds") {
			picked = append(picked, string(p))
		}
		tick(id, picked)
	}
	d.Vals, d.Errs = map[string]map[string]string{}, map[string]map[string]string{}
	tz := v.Event.Timezone
	for _, p := range d.Perks {
		d.Names[p.ID] = p.Name
		d.Vals[p.ID] = map[string]string{"name": p.Name, "description": shell.Deref(p.Description)}
	}
	for _, x := range d.Venues {
		d.Vals[x.ID] = map[string]string{"name": x.Name}
	}
	for _, x := range d.Sessions {
		d.Vals[x.ID] = map[string]string{"title": x.Title, "startsAt": shell.InZone(&x.StartsAt, tz), "endsAt": shell.InZone(&x.EndsAt, tz)}
	}
	for _, x := range d.Speakers {
		d.Vals[x.ID] = map[string]string{"name": x.Name, "title": shell.Deref(x.Title), "bio": shell.Deref(x.Bio)}
	}
	for _, x := range d.Sponsors {
		d.Vals[x.ID] = map[string]string{"name": x.Name, "url": shell.Deref(x.URL), "tier": shell.Deref(x.Tier)}
	}
	if id := v.Form["row"]; id != "" {
		d.Vals[id], d.Errs[id] = map[string]string{}, map[string]string{}
		for k, val := range v.Form {
			if _, f, ok := strings.Cut(k, "."); ok {
				d.Vals[id][f] = val
			}
		}
		for k, msg := range v.Errors {
			if _, f, ok := strings.Cut(k, "."); ok {
				d.Errs[id][f] = msg
			}
		}
		v.Form["edit"] = ""
	}
	for _, x := range d.Venues {
		d.Names[x.ID] = x.Name
	}
	for _, x := range d.Sessions {
		d.Names[x.ID] = x.Title
	}
	for _, k := range []string{"perkIds", "sessionIds"} {
		for _, id := range r.RC.PostArgs().PeekMulti(k) {
			d.Picked[string(id)] = true
		}
	}
	if v.Form == nil {
		v.Form = map[string]string{}
	}
	if v.Errors == nil {
		v.Errors = map[string]string{}
	}
	v.Any = d
	c.Render(r.RC, status, "program", v)
	return nil
}

// programFields are the text fields of each kind's form; a refused form
// comes back with them under the kind's prefix ("venue.name").
var programFields = map[string][]string{
	"perks":    {"name", "description"},
	"venues":   {"name"},
	"sessions": {"title", "startsAt", "endsAt", "venueId"},
	"speakers": {"name", "title", "bio"},
	"sponsors": {"name", "url", "tier"},
}

// createProgramItem creates a perk, venue, session, speaker or sponsor
// with the API's rules.
func (c *pages) createProgramItem(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	kind := shell.Param(r.RC, "kind")
	fields, ok := programFields[kind]
	if !ok {
		return shell.ErrNotFound
	}
	ev, err := shell.AskOp(c.Console, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	v := &shell.View{Form: map[string]string{"edit": kind}, Errors: map[string]string{}}
	body := map[string]any{}
	for _, k := range fields {
		val := shell.Form(r.RC, k)
		v.Form[kind+"."+k] = val
		switch {
		case k == "startsAt" || k == "endsAt":
			if t := shell.LocalTime(v, k, val, ev.Timezone); t != nil {
				body[k] = *t
			}
		case val != "":
			body[k] = val
		}
	}
	multi := func(k string) {
		ids := []string{}
		for _, id := range r.RC.PostArgs().PeekMulti(k) {
			ids = append(ids, string(id))
		}
		body[k] = ids
	}
	var res any
	if len(v.Errors) == 0 {
		switch kind {
		case "perks":
			res, err = programCreate[event.CreatePerk](c.Console, eventID, body)
		case "venues":
			multi("perkIds")
			res, err = programCreate[event.CreateVenue](c.Console, eventID, body)
		case "sessions":
			multi("perkIds")
			res, err = programCreate[event.CreateSession](c.Console, eventID, body)
		case "speakers":
			multi("sessionIds")
			res, err = programCreate[event.CreateSpeaker](c.Console, eventID, body)
		case "sponsors":
			res, err = programCreate[event.CreateSponsor](c.Console, eventID, body)
		}
		if err == nil {
			r.Audit("create"+programOp[kind], unitID, map[string]string{"eventId": eventID}, res)
			return shell.Redirect(r, "/console/events/"+eventID+"/program#"+kind)
		}
		if shell.IsNotFound(err) {
			v.Error = "A perk, venue or session picked is gone. Reload the page and try again."
		} else if !shell.FieldErrors(err, v) {
			return err
		}
	}
	for f, msg := range v.Errors {
		delete(v.Errors, f)
		v.Errors[kind+"."+f] = msg
	}
	return c.showProgram(r, v, 400)
}

// programOp names each kind in the audit log's operations.
var programOp = map[string]string{"perks": "Perk", "venues": "Venue", "sessions": "Session", "speakers": "Speaker", "sponsors": "Sponsor"}

// programCreate binds body into the create command C and runs it.
func programCreate[C event.Command](c *shell.Console, eventID string, body map[string]any) (any, error) {
	var cmd C
	if err := shell.BindForm(body, &cmd); err != nil {
		return nil, err
	}
	return c.Ask(eventID, cmd)
}

// deleteProgramItem deletes a perk (with its gates, bindings and
// grants), venue, session, speaker or sponsor.
func (c *pages) deleteProgramItem(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	kind, id := shell.Param(r.RC, "kind"), shell.Param(r.RC, "itemId")
	var cmd event.Command
	switch kind {
	case "perks":
		cmd = event.DeletePerk{ID: id}
	case "venues":
		cmd = event.DeleteVenue{ID: id}
	case "sessions":
		cmd = event.DeleteSession{ID: id}
	case "speakers":
		cmd = event.DeleteSpeaker{ID: id}
	case "sponsors":
		cmd = event.DeleteSponsor{ID: id}
	default:
		return shell.ErrNotFound
	}
	res, err := c.Ask(eventID, cmd)
	if err != nil {
		return err
	}
	r.Audit("delete"+programOp[kind], unitID, map[string]string{"eventId": eventID, "id": id}, res)
	return shell.Redirect(r, "/console/events/"+eventID+"/program#"+kind)
}

// updateProgramItem changes a row's fields (editFields); an empty
// optional field clears it.
func (c *pages) updateProgramItem(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	kind, id := shell.Param(r.RC, "kind"), shell.Param(r.RC, "itemId")
	fields, ok := editFields[kind]
	if !ok {
		return shell.ErrNotFound
	}
	ev, err := shell.AskOp(c.Console, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	v := &shell.View{Form: map[string]string{"row": id}, Errors: map[string]string{}}
	body := map[string]any{}
	for _, f := range fields {
		val := shell.Form(r.RC, f.Name)
		v.Form[kind+"."+f.Name] = val
		switch {
		case f.Type == "datetime-local":
			if t := shell.LocalTime(v, f.Name, val, ev.Timezone); t != nil {
				body[f.Name] = *t
			}
		case val == "" && f.Name != "name" && !(kind == "sessions" && f.Name == "title"):
			body[f.Name] = nil
		default:
			body[f.Name] = val
		}
	}
	var res any
	if len(v.Errors) == 0 {
		switch kind {
		case "perks":
			res, err = programUpdate[event.UpdatePerk](c.Console, eventID, body, func(u *event.UpdatePerk) { u.ID = id })
		case "venues":
			res, err = programUpdate[event.UpdateVenue](c.Console, eventID, body, func(u *event.UpdateVenue) { u.ID = id })
		case "sessions":
			res, err = programUpdate[event.UpdateSession](c.Console, eventID, body, func(u *event.UpdateSession) { u.ID = id })
		case "speakers":
			res, err = programUpdate[event.UpdateSpeaker](c.Console, eventID, body, func(u *event.UpdateSpeaker) { u.ID = id })
		case "sponsors":
			res, err = programUpdate[event.UpdateSponsor](c.Console, eventID, body, func(u *event.UpdateSponsor) { u.ID = id })
		}
		if err == nil {
			r.Audit("update"+programOp[kind], unitID, map[string]string{"eventId": eventID, "id": id}, res)
			return shell.Redirect(r, "/console/events/"+eventID+"/program#"+kind)
		}
		if shell.IsNotFound(err) || !shell.FieldErrors(err, v) {
			return err
		}
	}
	for f, msg := range v.Errors {
		delete(v.Errors, f)
		v.Errors[kind+"."+f] = msg
	}
	return c.showProgram(r, v, 400)
}

// programUpdate binds body into the update command C, names its target
// with set, and runs it.
func programUpdate[C event.Command](c *shell.Console, eventID string, body map[string]any, set func(*C)) (any, error) {
	var cmd C
	if err := shell.BindForm(body, &cmd); err != nil {
		return nil, err
	}
	set(&cmd)
	return c.Ask(eventID, cmd)
}

// bindPerks replaces the perks a ticket type or a redemption code carries
// (none ticked unbinds them all). A code without an id in the path is
// named by its text in the form's code field.
func (c *pages) bindPerks(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	typeID, codeID := shell.Param(r.RC, "typeId"), shell.Param(r.RC, "codeId")
	ids := []string{}
	for _, id := range r.RC.PostArgs().PeekMulti("perkIds") {
		ids = append(ids, string(id))
	}
	v := &shell.View{Form: map[string]string{}, Errors: map[string]string{}}
	isCode := typeID == ""
	if isCode && codeID == "" {
		text := shell.Form(r.RC, "code")
		v.Form["bind"], v.Form["bind.code"] = "new-code", text
		if text == "" {
			v.Errors["bind.code"] = "Type a redemption code."
			return c.showProgram(r, v, 400)
		}
		found, err := shell.AskOp(c.Console, eventID, event.ListPerkBindings{Code: text})
		if shell.IsNotFound(err) {
			v.Errors["bind.code"] = "No redemption code of this event is " + text + "."
			return c.showProgram(r, v, 400)
		} else if err != nil {
			return err
		}
		codeID = found.Match.ID
	}
	var res any
	op, targets := "setTicketTypePerks", map[string]string{"eventId": eventID, "typeId": typeID}
	if isCode {
		op, targets = "setCodePerks", map[string]string{"eventId": eventID, "codeId": codeID}
		res, err = c.Ask(eventID, event.SetCodePerks{CodeID: codeID, PerkIDs: ids})
	} else {
		res, err = c.Ask(eventID, event.SetTicketTypePerks{TypeID: typeID, PerkIDs: ids})
	}
	if err == nil {
		r.Audit(op, unitID, targets, res)
		return shell.Redirect(r, "/console/events/"+eventID+"/program#bindings")
	}
	if shell.IsNotFound(err) || !shell.FieldErrors(err, &shell.View{}) {
		return err
	}
	// The only field is perkIds: a perk ticked was deleted meanwhile, or
	// too many were ticked.
	if v.Form["bind"] == "" {
		v.Form["bind"] = typeID + codeID
	}
	v.Errors["bind."+v.Form["bind"]] = "A perk ticked is gone or too many are ticked: " + err.Error()
	return c.showProgram(r, v, 400)
}
