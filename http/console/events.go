package console

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"ticketd/event"
	"ticketd/http/bind"
)

// ticketTypeRow is a ticket type with its live availability.
type ticketTypeRow struct {
	event.TicketType
	Avail event.Availability
}

// binder decodes the JSON a form stands for with the API's own rules, so
// the console accepts exactly what the API accepts and names the same
// fields.
var binder bind.Binder

// bindForm encodes body (the form as the API's JSON) and binds it into
// dst.
func bindForm(body map[string]any, dst any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return binder.Bind(b, dst)
}

// localTime reads a datetime-local field in the event's timezone: "" is
// absent, a bad value is reported on the field.
func localTime(v *view, field, s, tz string) *string {
	if s == "" {
		return nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	t, err := time.ParseInLocation("2006-01-02T15:04", s, loc)
	if err != nil {
		v.Errors[field] = say(field, "must be a date and time, such as 2030-06-01 18:00")
		return nil
	}
	out := t.UTC().Format(time.RFC3339)
	return &out
}

// inZone formats t in the event's timezone for a datetime-local field.
func inZone(t *event.Time, tz string) string {
	if t == nil {
		return ""
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	return t.Time.In(loc).Format("2006-01-02T15:04")
}

// showTime formats t in the event's timezone for reading.
func showTime(t *event.Time, tz string) string {
	if t == nil {
		return ""
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	return t.Time.In(loc).Format("Mon 2 Jan 2006 15:04 MST")
}

func init() {
	funcs["inZone"] = inZone
	funcs["showTime"] = showTime
	funcs["showAt"] = func(t event.Time, tz string) string { return showTime(&t, tz) }
}

// createEvent creates an event of the unit (as draft).
func (c *Console) createEvent(r *req) error {
	unitID := param(r.rc, "unitId")
	if err := r.need(unitID, permWrite); err != nil {
		return err
	}
	f := map[string]string{}
	for _, k := range []string{"name", "timezone", "startsAt", "endsAt", "currency"} {
		f[k] = form(r.rc, k)
	}
	v := &view{req: r, Form: f, Errors: map[string]string{}}
	body := map[string]any{"name": f["name"], "timezone": f["timezone"]}
	if f["currency"] != "" {
		body["currency"] = strings.ToUpper(f["currency"])
	}
	if t := localTime(v, "startsAt", f["startsAt"], f["timezone"]); t != nil {
		body["startsAt"] = *t
	}
	if t := localTime(v, "endsAt", f["endsAt"], f["timezone"]); t != nil {
		body["endsAt"] = *t
	}
	var cmd event.CreateEvent
	err := bindForm(body, &cmd)
	if err == nil && len(v.Errors) == 0 {
		var res any
		if res, err = c.sys.CreateEvent(context.Background(), unitID, c.sys.NewEventID(), cmd); err == nil {
			ev := res.(event.Event)
			r.audit("createEvent", unitID, map[string]string{"eventId": ev.ID}, ev)
			return redirectNotice(r, "/console/events/"+ev.ID, "“"+ev.Name+"” created as a draft. Next: add its ticket types and its venue, then publish it.")
		}
	}
	if err != nil && !fieldErrors(err, v) {
		return err
	}
	return c.showUnit(r, v, 400)
}

// eventPage shows an event: its details and edit form, publish and
// archive, and its ticket types with live availability.
func (c *Console) eventPage(r *req) error {
	return c.showEvent(r, &view{req: r}, 200)
}

// eventSettings are the event page's settings: site, description and
// refund policy, as stored or as typed into a refused form.
type eventSettings struct {
	SiteURL, Description                              string
	Refundable                                        bool
	Deadline, HoursBeforeStart, FeePercent, Effective string
}

func (c *Console) showEvent(r *req, v *view, status int, typed ...map[string]string) error {
	eventID, unitID, err := r.eventUnit(permRead)
	if err != nil {
		return err
	}
	ev, err := askOp(c, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	u, _ := r.dir.Unit(unitID)
	v.Unit, v.Event, v.Title, v.Canon = &u, &ev, ev.Name, "/console/events/"+eventID
	v.Role = r.role(unitID)
	v.CanWrite = allowed(v.Role, permWrite)
	list, err := askOp(c, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return err
	}
	for _, tt := range list.Data {
		av, err := askOp(c, eventID, event.GetAvailability{ID: tt.ID})
		if err != nil {
			return err
		}
		v.TicketTypes = append(v.TicketTypes, ticketTypeRow{TicketType: tt, Avail: av})
	}
	if v.Form == nil {
		v.Form = map[string]string{"name": ev.Name, "timezone": ev.Timezone, "startsAt": inZone(ev.StartsAt, ev.Timezone),
			"endsAt": inZone(ev.EndsAt, ev.Timezone), "currency": ev.Currency}
	}
	if v.Errors == nil {
		v.Errors = map[string]string{}
	}
	pol, err := askOp(c, eventID, event.GetRefundPolicy{})
	if err != nil {
		return err
	}
	set := eventSettings{SiteURL: deref(ev.SiteURL), Description: deref(ev.Description), Refundable: pol.Refundable,
		Deadline: inZone(pol.Deadline, ev.Timezone), FeePercent: itoa(pol.FeePercent)}
	if pol.HoursBeforeStart != nil {
		set.HoursBeforeStart = itoa(*pol.HoursBeforeStart)
	}
	if pol.EffectiveDeadline != nil {
		set.Effective = showTime(pol.EffectiveDeadline, ev.Timezone)
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
	loc, err := askOp(c, eventID, event.GetLocation{})
	if err != nil {
		return err
	}
	v.Venue, v.PublicURL = event.PlaceText(deref(loc.Venue), deref(loc.Address), deref(loc.OnlineURL)), c.publicPage(ev)
	c.render(r.rc, status, "event", v)
	return nil
}

// updateEvent applies the edit form. Moving the start of an event with an
// agenda asks for confirmation first (the form comes back with the
// confirmation box).
func (c *Console) updateEvent(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	f := map[string]string{}
	for _, k := range []string{"name", "timezone", "startsAt", "endsAt", "currency", "confirmAgendaReset"} {
		f[k] = form(r.rc, k)
	}
	v := &view{req: r, Form: f, Errors: map[string]string{}}
	body := map[string]any{"name": f["name"], "timezone": f["timezone"], "startsAt": nil, "endsAt": nil}
	if f["currency"] != "" {
		body["currency"] = strings.ToUpper(f["currency"])
	}
	if t := localTime(v, "startsAt", f["startsAt"], f["timezone"]); t != nil {
		body["startsAt"] = *t
	}
	if t := localTime(v, "endsAt", f["endsAt"], f["timezone"]); t != nil {
		body["endsAt"] = *t
	}
	if f["confirmAgendaReset"] != "" {
		body["confirmAgendaReset"] = true
	}
	var cmd event.UpdateEvent
	err = bindForm(body, &cmd)
	if err == nil && len(v.Errors) == 0 {
		var ev event.Event
		if ev, err = askOp(c, eventID, cmd); err == nil {
			r.audit("updateEvent", unitID, map[string]string{"eventId": eventID}, ev)
			return redirectNotice(r, "/console/events/"+eventID, "Event saved.")
		}
		if strings.Contains(err.Error(), "confirmAgendaReset") {
			v.Any = "agenda"
			v.Error = "Moving the start clears the event's agenda (sessions and speakers' sessions). Tick the confirmation and save again."
			return c.showEvent(r, v, 409)
		}
	}
	if err != nil && !fieldErrors(err, v) {
		return err
	}
	return c.showEvent(r, v, 400)
}

// eventAction runs a command without a form on the event.
func (c *Console) eventAction(r *req, op string, cmd event.Command) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	res, err := c.ask(eventID, cmd)
	if err != nil {
		v := &view{req: r}
		if fieldErrors(err, v) {
			return c.showEvent(r, v, 409)
		}
		return err
	}
	r.audit(op, unitID, map[string]string{"eventId": eventID}, res)
	return redirectNotice(r, "/console/events/"+eventID, eventNotices[op])
}

// eventNotices confirm the event's actions without a form.
var eventNotices = map[string]string{
	"archiveEvent": "The event is archived: it no longer sells. Its orders and attendees stay readable.",
}

// publishEvent opens the event's page and checkout; the confirmation
// gives the public page's address to share.
func (c *Console) publishEvent(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	ev, err := askOp(c, eventID, event.UpdateEvent{Status: event.Some("published")})
	if err != nil {
		v := &view{req: r}
		if fieldErrors(err, v) {
			if v.Error == "" {
				for _, m := range v.Errors {
					v.Error = "Not published: " + m
				}
			}
			return c.showEvent(r, v, 409)
		}
		return err
	}
	r.audit("publishEvent", unitID, map[string]string{"eventId": eventID}, ev)
	return redirectNotice(r, "/console/events/"+eventID, "“"+ev.Name+"” is published. Share its page: "+c.publicPage(ev))
}

// publicPage is the address buyers read the event at: its own site when
// set, else the hosted page.
func (c *Console) publicPage(ev event.Event) string {
	if ev.SiteURL != nil && *ev.SiteURL != "" {
		return *ev.SiteURL
	}
	return c.cfg.BaseURL + "/e/" + ev.ID
}

func (c *Console) archiveEvent(r *req) error {
	return c.eventAction(r, "archiveEvent", event.ArchiveEvent{})
}

// backTo is the console page a quick action came from (its form's back
// field), else def.
func backTo(r *req, def string) string {
	if b := form(r.rc, "back"); strings.HasPrefix(b, "/console/") && !strings.ContainsAny(b, "\\\r\n") && !strings.HasPrefix(b, "//") {
		return b
	}
	return def
}

// ticketTypeBody is the API JSON of the ticket type form.
func ticketTypeBody(r *req, v *view, create bool) map[string]any {
	f := v.Form
	for _, k := range []string{"ttName", "capacity", "priceAmount", "allowWaitlist", "requiresApproval", "isPublic", "status"} {
		f[k] = form(r.rc, k)
	}
	body := map[string]any{}
	if f["ttName"] != "" || create {
		body["name"] = f["ttName"]
	}
	switch cap := f["capacity"]; {
	case cap == "" && create:
		body["capacity"] = nil
	case cap != "":
		body["capacity"] = jsonNumberOr(cap)
	}
	if p := f["priceAmount"]; p != "" {
		body["priceAmount"] = moneyField(p)
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
func (c *Console) createTicketType(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	v := &view{req: r, Errors: map[string]string{}, Form: map[string]string{}}
	ev, err := askOp(c, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	body := ticketTypeBody(r, v, true)
	open := body["status"] == "open"
	delete(body, "status")
	for _, k := range []string{"opensAt", "closesAt"} {
		v.Form[k] = form(r.rc, k)
		if t := localTime(v, k, v.Form[k], ev.Timezone); t != nil {
			body[k] = *t
		}
	}
	if reason := textProblem(v.Form["ttName"], 200); reason != "" {
		v.Errors["ttName"] = say("ttName", reason)
	}
	var cmd event.CreateTicketType
	if err = bindForm(body, &cmd); err == nil && len(v.Errors) == 0 {
		var tt event.TicketType
		if tt, err = askOp(c, eventID, cmd); err == nil {
			r.audit("createTicketType", unitID, map[string]string{"eventId": eventID, "typeId": tt.ID}, tt)
			if open {
				up := event.UpdateTicketType{ID: tt.ID, Status: event.Some("open")}
				if tt, err = askOp(c, eventID, up); err != nil {
					fieldErrors(err, v)
					return c.showTicketTypes(r, v, 409)
				}
				r.audit("updateTicketType", unitID, map[string]string{"eventId": eventID, "typeId": tt.ID}, tt)
			}
			msg := "Ticket type “" + tt.Name + "” added"
			if tt.Status == "open" {
				msg += " and on sale"
			} else {
				msg += " as a draft: open its sales when you are ready"
			}
			return redirectNotice(r, "/console/events/"+eventID+"/ticket-types", msg+".")
		}
	}
	if err != nil && !fieldErrors(err, v) {
		return err
	}
	if n, ok := v.Errors["name"]; ok {
		v.Errors["ttName"] = n
		delete(v.Errors, "name")
	}
	return c.showTicketTypes(r, v, 400)
}

// updateTicketType changes a ticket type's status or capacity.
func (c *Console) updateTicketType(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	typeID := param(r.rc, "typeId")
	if form(r.rc, "edit") != "" {
		return c.editTicketType(r, eventID, unitID, typeID)
	}
	v := &view{req: r, Form: map[string]string{}, Errors: map[string]string{}}
	body := ticketTypeBody(r, v, false)
	v.Form = nil
	var cmd event.UpdateTicketType
	if err = bindForm(body, &cmd); err == nil {
		cmd.ID = typeID
		var tt event.TicketType
		if tt, err = askOp(c, eventID, cmd); err == nil {
			r.audit("updateTicketType", unitID, map[string]string{"eventId": eventID, "typeId": typeID}, tt)
			msg := "“" + tt.Name + "”: "
			switch {
			case cmd.Status.Set && tt.Status == "open":
				msg += "sales are open."
			case cmd.Status.Set && tt.Status == "closed":
				msg += "sales are closed."
			case cmd.Capacity.Set:
				msg += "capacity set to " + itoa(cmd.Capacity.V) + "."
			default:
				msg += "saved."
			}
			return redirectNotice(r, backTo(r, "/console/events/"+eventID), msg)
		}
	}
	if !fieldErrors(err, v) {
		return err
	}
	for _, msg := range v.Errors {
		v.Error = "The ticket type is unchanged: " + msg
	}
	return c.showEvent(r, v, 400)
}

// jsonNumberOr is a form field as the JSON number it stands for, or as a
// string when it is none, so the binder names the field.
func jsonNumberOr(s string) any {
	if json.Valid([]byte(s)) && s != "" && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
		return json.RawMessage(s)
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }
