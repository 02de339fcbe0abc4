package eventsetup

import (
	"encoding/json"
	"strings"

	"ticketd/event"
	"ticketd/http/console/shell"
)

func init() {
	funcs["inZone"] = shell.InZone
	funcs["showTime"] = shell.ShowTime
	funcs["showAt"] = func(t event.Time, tz string) string { return shell.ShowTime(&t, tz) }
}

// eventPage shows an event: its details and edit form, publish and
// archive, and its ticket types with live availability.
func (c *pages) eventPage(r *shell.Req) error {
	return c.showEvent(r, &shell.View{Req: r}, 200)
}

func (c *pages) showEvent(r *shell.Req, v *shell.View, status int, typed ...map[string]string) error {
	eventID, unitID, err := r.EventUnit(shell.PermRead)
	if err != nil {
		return err
	}
	ev, err := shell.AskOp(c.Console, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	u, _ := r.Dir.Unit(unitID)
	v.Unit, v.Event, v.Title, v.Canon = &u, &ev, ev.Name, "/console/events/"+eventID
	v.Role = r.Role(unitID)
	v.CanWrite = shell.Allowed(v.Role, shell.PermWrite)
	list, err := shell.AskOp(c.Console, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return err
	}
	for _, tt := range list.Data {
		av, err := shell.AskOp(c.Console, eventID, event.GetAvailability{ID: tt.ID})
		if err != nil {
			return err
		}
		v.TicketTypes = append(v.TicketTypes, shell.TicketTypeRow{TicketType: tt, Avail: av})
	}
	if v.Form == nil {
		v.Form = map[string]string{"name": ev.Name, "timezone": ev.Timezone, "startsAt": shell.InZone(ev.StartsAt, ev.Timezone),
			"endsAt": shell.InZone(ev.EndsAt, ev.Timezone), "currency": ev.Currency}
	}
	if v.Errors == nil {
		v.Errors = map[string]string{}
	}
	pol, err := shell.AskOp(c.Console, eventID, event.GetRefundPolicy{})
	if err != nil {
		return err
	}
	set := shell.EventSettings{SiteURL: shell.Deref(ev.SiteURL), Description: shell.Deref(ev.Description), Refundable: pol.Refundable,
		Deadline: shell.InZone(pol.Deadline, ev.Timezone), FeePercent: shell.Itoa(pol.FeePercent)}
	if pol.HoursBeforeStart != nil {
		set.HoursBeforeStart = shell.Itoa(*pol.HoursBeforeStart)
	}
	if pol.EffectiveDeadline != nil {
		set.Effective = shell.ShowTime(pol.EffectiveDeadline, ev.Timezone)
	}
	if len(typed) > 0 {
		t := typed[0]
		switch v.Any {
		case "site":
			set.SiteURL, set.Description = t["siteUrl"], t["description"]
		case "policy":
			set.Refundable, set.Deadline, set.HoursBeforeStart, set.FeePercent = t["refundable"] != "", t["deadline"], t["hoursBeforeStart"], t["feePercent"]
		}
	}
	v.Settings = &set
	loc, err := shell.AskOp(c.Console, eventID, event.GetLocation{})
	if err != nil {
		return err
	}
	v.Venue, v.PublicURL = event.PlaceText(shell.Deref(loc.Venue), shell.Deref(loc.Address), shell.Deref(loc.OnlineURL)), c.publicPage(ev)
	c.Render(r.RC, status, "event", v)
	return nil
}

// updateEvent applies the edit form. Moving the start of an event with an
// agenda asks for confirmation first (the form comes back with the
// confirmation box).
func (c *pages) updateEvent(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	f := map[string]string{}
	for _, k := range []string{"name", "timezone", "startsAt", "endsAt", "currency", "confirmAgendaReset"} {
		f[k] = shell.Form(r.RC, k)
	}
	v := &shell.View{Req: r, Form: f, Errors: map[string]string{}}
	body := map[string]any{"name": f["name"], "timezone": f["timezone"], "startsAt": nil, "endsAt": nil}
	if f["currency"] != "" {
		body["currency"] = strings.ToUpper(f["currency"])
	}
	if t := shell.LocalTime(v, "startsAt", f["startsAt"], f["timezone"]); t != nil {
		body["startsAt"] = *t
	}
	if t := shell.LocalTime(v, "endsAt", f["endsAt"], f["timezone"]); t != nil {
		body["endsAt"] = *t
	}
	if f["confirmAgendaReset"] != "" {
		body["confirmAgendaReset"] = true
	}
	var cmd event.UpdateEvent
	err = shell.BindForm(body, &cmd)
	if err == nil && len(v.Errors) == 0 {
		var ev event.Event
		if ev, err = shell.AskOp(c.Console, eventID, cmd); err == nil {
			r.Audit("updateEvent", unitID, map[string]string{"eventId": eventID}, ev)
			return shell.RedirectNotice(r, "/console/events/"+eventID, "Event saved.")
		}
		if strings.Contains(err.Error(), "confirmAgendaReset") {
			v.Any = "agenda"
			v.Error = "Moving the start clears the event's agenda (sessions and speakers' sessions). Tick the confirmation and save again."
			return c.showEvent(r, v, 409)
		}
	}
	if err != nil && !shell.FieldErrors(err, v) {
		return err
	}
	return c.showEvent(r, v, 400)
}

// eventAction runs a command without a form on the event.
func (c *pages) eventAction(r *shell.Req, op string, cmd event.Command) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	res, err := c.Ask(eventID, cmd)
	if err != nil {
		v := &shell.View{Req: r}
		if shell.FieldErrors(err, v) {
			return c.showEvent(r, v, 409)
		}
		return err
	}
	r.Audit(op, unitID, map[string]string{"eventId": eventID}, res)
	return shell.RedirectNotice(r, "/console/events/"+eventID, eventNotices[op])
}

// eventNotices confirm the event's actions without a form.
var eventNotices = map[string]string{
	"archiveEvent": "The event is archived: it no longer sells. Its orders and attendees stay readable.",
}

// publishEvent opens the event's page and checkout; the confirmation
// gives the public page's address to share.
func (c *pages) publishEvent(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	ev, err := shell.AskOp(c.Console, eventID, event.UpdateEvent{Status: event.Some("published")})
	if err != nil {
		v := &shell.View{Req: r}
		if shell.FieldErrors(err, v) {
			if v.Error == "" {
				for _, m := range v.Errors {
					v.Error = "Not published: " + m
				}
			}
			return c.showEvent(r, v, 409)
		}
		return err
	}
	r.Audit("publishEvent", unitID, map[string]string{"eventId": eventID}, ev)
	return shell.RedirectNotice(r, "/console/events/"+eventID, "“"+ev.Name+"” is published. Share its page: "+c.publicPage(ev))
}

// publicPage is the address buyers read the event at: its own site when
// set, else the hosted page.
func (c *pages) publicPage(ev event.Event) string {
	if ev.SiteURL != nil && *ev.SiteURL != "" {
		return *ev.SiteURL
	}
	return c.Config.BaseURL + "/e/" + ev.ID
}

func (c *pages) archiveEvent(r *shell.Req) error {
	return c.eventAction(r, "archiveEvent", event.ArchiveEvent{})
}

// backTo is the console page a quick action came from (its form's back
// field), else def.
func backTo(r *shell.Req, def string) string {
	if b := shell.Form(r.RC, "back"); strings.HasPrefix(b, "/console/") && !strings.ContainsAny(b, "\\\r\n") && !strings.HasPrefix(b, "//") {
		return b
	}
	return def
}

// ticketTypeBody is the API JSON of the ticket type form.
func ticketTypeBody(r *shell.Req, v *shell.View, create bool) map[string]any {
	f := v.Form
	for _, k := range []string{"ttName", "capacity", "priceAmount", "allowWaitlist", "requiresApproval", "isPublic", "status"} {
		f[k] = shell.Form(r.RC, k)
	}
	body := map[string]any{}
	if f["ttName"] != "" || create {
		body["name"] = f["ttName"]
	}
	switch cap := f["capacity"]; {
	case cap == "" && create:
		body["capacity"] = nil
	case cap != "":
		body["capacity"] = shell.JSONNumberOr(cap)
	}
	if p := f["priceAmount"]; p != "" {
		body["priceAmount"] = shell.MoneyField(p)
	} else if create {
		body["priceAmount"] = json.RawMessage("0")
	}
	if create {
		body["allowWaitlist"] = f["allowWaitlist"] != ""
		body["requiresApproval"] = f["requiresApproval"] != ""
		body["isPublic"] = f["isPublic"] != ""
	}
	if s := f["status"]; s != "" {
		body["status"] = s
	}
	return body
}

// createTicketType adds a ticket type; with "open" ticked it goes on
// sale at once.
func (c *pages) createTicketType(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	v := &shell.View{Req: r, Errors: map[string]string{}, Form: map[string]string{}}
	ev, err := shell.AskOp(c.Console, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	body := ticketTypeBody(r, v, true)
	open := body["status"] == "open"
	delete(body, "status")
	for _, k := range []string{"opensAt", "closesAt"} {
		v.Form[k] = shell.Form(r.RC, k)
		if t := shell.LocalTime(v, k, v.Form[k], ev.Timezone); t != nil {
			body[k] = *t
		}
	}
	if reason := textProblem(v.Form["ttName"], 200); reason != "" {
		v.Errors["ttName"] = shell.Say("ttName", reason)
	}
	var cmd event.CreateTicketType
	if err = shell.BindForm(body, &cmd); err == nil && len(v.Errors) == 0 {
		var tt event.TicketType
		if tt, err = shell.AskOp(c.Console, eventID, cmd); err == nil {
			r.Audit("createTicketType", unitID, map[string]string{"eventId": eventID, "typeId": tt.ID}, tt)
			if open {
				up := event.UpdateTicketType{ID: tt.ID, Status: event.Some("open")}
				if tt, err = shell.AskOp(c.Console, eventID, up); err != nil {
					shell.FieldErrors(err, v)
					return c.showTicketTypes(r, v, 409)
				}
				r.Audit("updateTicketType", unitID, map[string]string{"eventId": eventID, "typeId": tt.ID}, tt)
			}
			msg := "Ticket type “" + tt.Name + "” added"
			if tt.Status == "open" {
				msg += " and on sale"
			} else {
				msg += " as a draft: open its sales when you are ready"
			}
			return shell.RedirectNotice(r, "/console/events/"+eventID+"/ticket-types", msg+".")
		}
	}
	if err != nil && !shell.FieldErrors(err, v) {
		return err
	}
	if n, ok := v.Errors["name"]; ok {
		v.Errors["ttName"] = n
		delete(v.Errors, "name")
	}
	return c.showTicketTypes(r, v, 400)
}

// updateTicketType changes a ticket type's status or capacity.
func (c *pages) updateTicketType(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	typeID := shell.Param(r.RC, "typeId")
	if shell.Form(r.RC, "edit") != "" {
		return c.editTicketType(r, eventID, unitID, typeID)
	}
	v := &shell.View{Req: r, Form: map[string]string{}, Errors: map[string]string{}}
	body := ticketTypeBody(r, v, false)
	v.Form = nil
	var cmd event.UpdateTicketType
	if err = shell.BindForm(body, &cmd); err == nil {
		cmd.ID = typeID
		var tt event.TicketType
		if tt, err = shell.AskOp(c.Console, eventID, cmd); err == nil {
			r.Audit("updateTicketType", unitID, map[string]string{"eventId": eventID, "typeId": typeID}, tt)
			msg := "“" + tt.Name + "”: "
			switch {
			case cmd.Status.Set && tt.Status == "open":
				msg += "sales are open."
			case cmd.Status.Set && tt.Status == "closed":
				msg += "sales are closed."
			case cmd.Capacity.Set:
				msg += "capacity set to " + shell.Itoa(cmd.Capacity.V) + "."
			default:
				msg += "saved."
			}
			return shell.RedirectNotice(r, backTo(r, "/console/events/"+eventID), msg)
		}
	}
	if !shell.FieldErrors(err, v) {
		return err
	}
	for _, msg := range v.Errors {
		v.Error = "The ticket type is unchanged: " + msg
	}
	return c.showEvent(r, v, 400)
}

// eventRoutes are the signed-in routes of these pages.
func (c *pages) eventRoutes() []shell.Route {
	return append([]shell.Route{
		{Method: "GET", Path: "/console/events/{eventId}", H: c.eventPage},
		{Method: "POST", Path: "/console/events/{eventId}", H: c.updateEvent},
		{Method: "POST", Path: "/console/events/{eventId}/publish", H: c.publishEvent},
		{Method: "POST", Path: "/console/events/{eventId}/archive", H: c.archiveEvent},
		{Method: "POST", Path: "/console/events/{eventId}/site", H: c.setSite},
		{Method: "POST", Path: "/console/events/{eventId}/queue", H: c.setQueue}, // queue.go
		{Method: "POST", Path: "/console/events/{eventId}/refund-policy", H: c.setRefundPolicy},
		{Method: "POST", Path: "/console/events/{eventId}/ticket-types", H: c.createTicketType},
		{Method: "POST", Path: "/console/events/{eventId}/ticket-types/{typeId}", H: c.updateTicketType},
	}, append(c.catalogueRoutes(), c.setupRoutes()...)...)
}
