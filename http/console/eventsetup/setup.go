package eventsetup

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"

	"ticketd/event"
	"ticketd/http/console/shell"
)

// The event's setup pages: its ticket types (each with an edit page and a
// checkout link to share), where it takes place, and the event-wide
// actions (unpublish, duplicate).

func (c *pages) setupRoutes() []shell.Route {
	return []shell.Route{
		{Method: "GET", Path: "/console/events/{eventId}/ticket-types", H: c.ticketTypesPage},
		{Method: "GET", Path: "/console/events/{eventId}/ticket-types/{typeId}", H: c.ticketTypePage},
		{Method: "GET", Path: "/console/events/{eventId}/venue", H: c.venuePage},
		{Method: "POST", Path: "/console/events/{eventId}/venue", H: c.setVenue},
		{Method: "POST", Path: "/console/events/{eventId}/unpublish", H: c.unpublishEvent},
		{Method: "POST", Path: "/console/events/{eventId}/duplicate", H: c.duplicateEvent},
	}
}

// typesData is the ticket types page, and a ticket type's edit page
// (Type set).
type typesData struct {
	Type     *shell.TicketTypeRow
	BuyLink  string
	BuyLinks map[string]string // by type id: public types only
}

// eventView fills v with the event of the path after checking p: its
// unit, role and name, for the pages under the event's tabs.
func (c *pages) eventView(r *shell.Req, v *shell.View, p shell.Perm) (ev event.Event, err error) {
	eventID, unitID, err := r.EventUnit(p)
	if err != nil {
		return ev, err
	}
	if ev, err = shell.AskOp(c.Console, eventID, event.GetEvent{}); err != nil {
		return ev, err
	}
	u, _ := r.Dir.Unit(unitID)
	v.Unit, v.Event, v.Role = &u, &ev, r.Role(unitID)
	v.CanWrite = shell.Allowed(v.Role, shell.PermWrite)
	v.Typed()
	return ev, nil
}

// typeRows reads the event's ticket types with their availability.
func (c *pages) typeRows(eventID string) ([]shell.TicketTypeRow, error) {
	list, err := shell.AskOp(c.Console, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return nil, err
	}
	var out []shell.TicketTypeRow
	for _, tt := range list.Data {
		av, err := shell.AskOp(c.Console, eventID, event.GetAvailability{ID: tt.ID})
		if err != nil {
			return nil, err
		}
		out = append(out, shell.TicketTypeRow{TicketType: tt, Avail: av})
	}
	return out, nil
}

// buyLink is the address a buyer opens to check out one ticket of type
// typeID: it starts a hosted checkout for it.
func (c *pages) buyLink(eventID, typeID string) string {
	return c.Config.BaseURL + "/buy/" + url.PathEscape(eventID) + "/" + url.PathEscape(typeID)
}

func (c *pages) ticketTypesPage(r *shell.Req) error {
	return c.showTicketTypes(r, &shell.View{Req: r}, 200)
}

func (c *pages) showTicketTypes(r *shell.Req, v *shell.View, status int) error {
	ev, err := c.eventView(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	if v.TicketTypes, err = c.typeRows(ev.ID); err != nil {
		return err
	}
	d := typesData{BuyLinks: map[string]string{}}
	for _, tt := range v.TicketTypes {
		if tt.IsPublic {
			d.BuyLinks[tt.ID] = c.buyLink(ev.ID, tt.ID)
		}
	}
	v.Title, v.Canon, v.Any = "Ticket types · "+ev.Name, "/console/events/"+ev.ID+"/ticket-types", d
	if _, set := v.Form["isPublic"]; !set && status == 200 {
		v.Form["isPublic"], v.Form["status"] = "1", "open"
	}
	c.Render(r.RC, status, "tickettypes", v)
	return nil
}

func (c *pages) ticketTypePage(r *shell.Req) error {
	return c.showTicketType(r, &shell.View{Req: r}, 200)
}

// showTicketType renders a ticket type's edit page: the record's values,
// or what was typed into a refused form.
func (c *pages) showTicketType(r *shell.Req, v *shell.View, status int) error {
	ev, err := c.eventView(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	typeID := shell.Param(r.RC, "typeId")
	tt, err := shell.AskOp(c.Console, ev.ID, event.GetTicketType{ID: typeID})
	if err != nil {
		return err
	}
	av, err := shell.AskOp(c.Console, ev.ID, event.GetAvailability{ID: typeID})
	if err != nil {
		return err
	}
	row := shell.TicketTypeRow{TicketType: tt, Avail: av}
	if len(v.Form) == 0 {
		v.Form = map[string]string{"ttName": tt.Name, "priceAmount": plainAmount(tt.PriceAmount), "capacity": "",
			"opensAt": shell.InZone(tt.OpensAt, ev.Timezone), "closesAt": shell.InZone(tt.ClosesAt, ev.Timezone), "status": tt.Status,
			"isPublic": flag(tt.IsPublic), "allowWaitlist": flag(tt.AllowWaitlist), "requiresApproval": flag(tt.RequiresApproval)}
		if tt.Capacity != nil {
			v.Form["capacity"] = shell.Itoa(*tt.Capacity)
		}
	}
	d := typesData{Type: &row}
	if tt.IsPublic {
		d.BuyLink = c.buyLink(ev.ID, tt.ID)
	}
	v.Title, v.Canon, v.Any = tt.Name+" · "+ev.Name, "/console/events/"+ev.ID+"/ticket-types/"+typeID, d
	c.Render(r.RC, status, "tickettype", v)
	return nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// plainAmount writes m as a form's value: "25.00", no currency, no
// thousands separators.
func plainAmount(m event.Money) string {
	n := int64(m)
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	return fmt.Sprintf("%s%d.%02d", sign, n/100, n%100)
}

// editTicketType applies a ticket type's whole edit form.
func (c *pages) editTicketType(r *shell.Req, eventID, unitID, typeID string) error {
	v := &shell.View{Req: r, Form: map[string]string{}, Errors: map[string]string{}}
	ev, err := shell.AskOp(c.Console, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	f := v.Form
	for _, k := range []string{"ttName", "capacity", "priceAmount", "opensAt", "closesAt", "allowWaitlist", "requiresApproval", "isPublic", "status"} {
		f[k] = shell.Form(r.RC, k)
	}
	if reason := textProblem(f["ttName"], 200); reason != "" {
		v.Errors["ttName"] = shell.Say("ttName", reason)
	}
	body := map[string]any{"name": f["ttName"], "allowWaitlist": f["allowWaitlist"] != "", "requiresApproval": f["requiresApproval"] != "",
		"isPublic": f["isPublic"] != "", "opensAt": nil, "closesAt": nil, "capacity": nil}
	if cp := f["capacity"]; cp != "" {
		body["capacity"] = shell.JSONNumberOr(cp)
	}
	if p := f["priceAmount"]; p != "" {
		body["priceAmount"] = shell.MoneyField(p)
	} else {
		body["priceAmount"] = json.RawMessage("0")
	}
	if t := shell.LocalTime(v, "opensAt", f["opensAt"], ev.Timezone); t != nil {
		body["opensAt"] = *t
	}
	if t := shell.LocalTime(v, "closesAt", f["closesAt"], ev.Timezone); t != nil {
		body["closesAt"] = *t
	}
	if s := f["status"]; s != "" {
		body["status"] = s
	}
	var cmd event.UpdateTicketType
	if err = shell.BindForm(body, &cmd); err == nil && len(v.Errors) == 0 {
		cmd.ID = typeID
		var tt event.TicketType
		if tt, err = shell.AskOp(c.Console, eventID, cmd); err == nil {
			r.Audit("updateTicketType", unitID, map[string]string{"eventId": eventID, "typeId": typeID}, tt)
			return shell.RedirectNotice(r, "/console/events/"+eventID+"/ticket-types", "Ticket type “"+tt.Name+"” saved.")
		}
	}
	if err != nil && !shell.FieldErrors(err, v) {
		return err
	}
	if n, ok := v.Errors["name"]; ok {
		v.Errors["ttName"] = n
		delete(v.Errors, "name")
	}
	if v.Error == "" {
		v.Error = "The ticket type was not saved. Correct what is marked below."
	}
	return c.showTicketType(r, v, 400)
}

// textProblem says what is wrong with a line a person typed, "" when
// nothing (directory.TextProblem's rules, for the event's forms).
func textProblem(s string, max int) string {
	if len([]rune(s)) > max {
		return fmt.Sprintf("must be at most %d characters", max)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "must not hold control characters (such as a NUL byte or a tab)"
		}
	}
	return ""
}

// venueData is the venue page's form.
type venueData struct {
	Text string // the one line buyers read
}

func (c *pages) venuePage(r *shell.Req) error {
	return c.showVenue(r, &shell.View{Req: r}, 200)
}

func (c *pages) showVenue(r *shell.Req, v *shell.View, status int) error {
	ev, err := c.eventView(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	loc, err := shell.AskOp(c.Console, ev.ID, event.GetLocation{})
	if err != nil {
		return err
	}
	if len(v.Form) == 0 {
		v.Form = map[string]string{"venue": shell.Deref(loc.Venue), "address": shell.Deref(loc.Address), "onlineUrl": shell.Deref(loc.OnlineURL)}
	}
	v.Title, v.Canon = "Venue · "+ev.Name, "/console/events/"+ev.ID+"/venue"
	v.Any = venueData{Text: event.PlaceText(shell.Deref(loc.Venue), shell.Deref(loc.Address), shell.Deref(loc.OnlineURL))}
	c.Render(r.RC, status, "venue", v)
	return nil
}

// setVenue saves where the event takes place: every buyer-facing page,
// the ticket email and its calendar file show it.
func (c *pages) setVenue(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	v := &shell.View{Req: r, Form: map[string]string{"venue": shell.Form(r.RC, "venue"), "address": shell.Form(r.RC, "address"), "onlineUrl": shell.Form(r.RC, "onlineUrl")},
		Errors: map[string]string{}}
	for k, max := range map[string]int{"venue": event.MaxVenueLen, "address": event.MaxAddressLen, "onlineUrl": event.MaxOnlineLen} {
		if reason := textProblem(v.Form[k], max); reason != "" {
			v.Errors[k] = shell.Say(k, reason)
		}
	}
	if len(v.Errors) == 0 {
		loc, err := shell.AskOp(c.Console, eventID, event.SetLocation{Venue: v.Form["venue"], Address: v.Form["address"], OnlineURL: v.Form["onlineUrl"]})
		if err == nil {
			r.Audit("setLocation", unitID, map[string]string{"eventId": eventID}, loc)
			msg := "Venue saved: buyers now see “" + event.PlaceText(shell.Deref(loc.Venue), shell.Deref(loc.Address), shell.Deref(loc.OnlineURL)) + "” on the checkout, their order, their ticket and the ticket email."
			if loc.Venue == nil && loc.Address == nil && loc.OnlineURL == nil {
				msg = "Venue cleared: buyers see no place."
			}
			return shell.RedirectNotice(r, "/console/events/"+eventID+"/venue", msg)
		}
		if !shell.FieldErrors(err, v) {
			return err
		}
	}
	return c.showVenue(r, v, 400)
}

// unpublishEvent takes a published event back to draft: its page and
// checkout close until it is published again; orders already placed stay.
func (c *pages) unpublishEvent(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	ev, err := shell.AskOp(c.Console, eventID, event.UpdateEvent{Status: event.Some(event.EventDraft)})
	if err != nil {
		v := &shell.View{Req: r}
		if shell.FieldErrors(err, v) {
			return c.showEvent(r, v, 409)
		}
		return err
	}
	r.Audit("unpublishEvent", unitID, map[string]string{"eventId": eventID}, ev)
	return shell.RedirectNotice(r, "/console/events/"+eventID, "“"+ev.Name+"” is a draft again: its public page and checkout are closed until you publish it. Orders already placed stay.")
}

// copyName is the name of an event's copy.
func copyName(name string) string {
	const suffix = " (copy)"
	if r := []rune(name); len(r)+len([]rune(suffix)) > 200 {
		name = string(r[:200-len([]rune(suffix))])
	}
	return strings.TrimSpace(name) + suffix
}

// duplicateEvent makes a draft copy of the event in its unit: its times,
// currency, site and description, venue, refund policy, ticket types (as
// drafts, same prices, capacities, sale windows and options) with their
// registration forms (a published form published again, its draft kept)
// and perks, add-ons (as drafts), and its program: perks, venues,
// sessions, speakers and sponsors, each reference (a session's venue, a
// gate's perks, a speaker's sessions) pointing at the copies. Orders,
// attendees and codes are the original's alone, and so is a speaker's
// link to a registration.
func (c *pages) duplicateEvent(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	ctx := context.Background()
	ev, err := shell.AskOp(c.Console, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	types, err := listAll(c.Console, eventID, func(cur string) event.Op[event.List[event.TicketType]] {
		return event.ListTicketTypes{Limit: 100, Cursor: cur}
	})
	if err != nil {
		return err
	}
	addons, err := listAll(c.Console, eventID, func(cur string) event.Op[event.List[event.Addon]] { return event.ListAddons{Limit: 100, Cursor: cur} })
	if err != nil {
		return err
	}
	perks, err := listAll(c.Console, eventID, func(cur string) event.Op[event.List[event.Perk]] { return event.ListPerks{Limit: 100, Cursor: cur} })
	if err != nil {
		return err
	}
	venues, err := listAll(c.Console, eventID, func(cur string) event.Op[event.List[event.Venue]] { return event.ListVenues{Limit: 100, Cursor: cur} })
	if err != nil {
		return err
	}
	sessions, err := listAll(c.Console, eventID, func(cur string) event.Op[event.List[event.Session]] {
		return event.ListSessions{Limit: 100, Cursor: cur}
	})
	if err != nil {
		return err
	}
	speakers, err := listAll(c.Console, eventID, func(cur string) event.Op[event.List[event.Speaker]] {
		return event.ListSpeakers{Limit: 100, Cursor: cur}
	})
	if err != nil {
		return err
	}
	sponsors, err := listAll(c.Console, eventID, func(cur string) event.Op[event.List[event.Sponsor]] {
		return event.ListSponsors{Limit: 100, Cursor: cur}
	})
	if err != nil {
		return err
	}
	bindings, err := shell.AskOp(c.Console, eventID, event.ListPerkBindings{})
	if err != nil {
		return err
	}
	forms := make(map[string]event.RegistrationForm, len(types))
	for _, tt := range types {
		f, err := shell.AskOp(c.Console, eventID, event.GetForm{TypeID: tt.ID})
		if err != nil {
			return err
		}
		forms[tt.ID] = f
	}
	loc, err := shell.AskOp(c.Console, eventID, event.GetLocation{})
	if err != nil {
		return err
	}
	pol, err := shell.AskOp(c.Console, eventID, event.GetRefundPolicy{})
	if err != nil {
		return err
	}
	create := event.CreateEvent{Name: copyName(ev.Name), Timezone: ev.Timezone, StartsAt: ev.StartsAt, EndsAt: ev.EndsAt, Currency: ev.Currency}
	res, err := c.Ops.CreateEvent(ctx, unitID, c.Ops.NewEventID(), create)
	if err != nil {
		return err
	}
	cp := res.(event.Event)
	r.Audit("duplicateEvent", unitID, map[string]string{"eventId": cp.ID, "fromEventId": eventID}, cp)
	if err := copyInto(c.Console, cp.ID, ev, loc, pol, types, forms, bindings, addons, perks, venues, sessions, speakers, sponsors); err != nil {
		// The copy exists: say what is missing rather than hide it.
		return shell.RedirectNotice(r, "/console/events/"+cp.ID, "The copy was made, but not all of it: "+err.Error()+". Check its ticket types, forms and program.")
	}
	program := len(venues) + len(sessions) + len(speakers) + len(sponsors) + len(perks)
	return shell.RedirectNotice(r, "/console/events/"+cp.ID, fmt.Sprintf("“%s” is a copy of “%s” with its %s, %s, %s and %s, as a draft. Change what differs, then publish it.",
		cp.Name, ev.Name, shell.Plural(len(types), "ticket type"), shell.Plural(len(addons), "add-on"), shell.Plural(countForms(forms), "registration form"),
		shell.Plural(program, "program item")))
}

// countForms counts the forms with questions (a type without one has an
// empty draft).
func countForms(forms map[string]event.RegistrationForm) int {
	n := 0
	for _, f := range forms {
		if len(f.Questions) > 0 || len(f.PublishedQuestions) > 0 {
			n++
		}
	}
	return n
}

// copyInto writes the original's settings, program and catalogue into the
// copy cp, in the order their references need (perks before the gates and
// bindings that name them, venues before sessions, sessions before
// speakers), mapping every original id to its copy's.
func copyInto(c *shell.Console, cp string, ev event.Event, loc event.Location, pol event.RefundPolicy, types []event.TicketType,
	forms map[string]event.RegistrationForm, bindings event.PerkBindings, addons []event.Addon, perks []event.Perk,
	venues []event.Venue, sessions []event.Session, speakers []event.Speaker, sponsors []event.Sponsor) error {
	for _, cmd := range []event.Command{
		event.SetSite{SiteURL: optStr(ev.SiteURL), Description: optStr(ev.Description)},
		event.SetLocation{Venue: shell.Deref(loc.Venue), Address: shell.Deref(loc.Address), OnlineURL: shell.Deref(loc.OnlineURL)},
		event.SetRefundPolicy{Refundable: pol.Refundable, Deadline: pol.Deadline, HoursBeforeStart: pol.HoursBeforeStart, FeePercent: pol.FeePercent},
	} {
		if _, err := c.Ask(cp, cmd); err != nil {
			return err
		}
	}
	ids := map[string]string{} // original id -> copy's id (ids are unique across kinds)
	remap := func(in []string) []string {
		out := make([]string, 0, len(in))
		for _, id := range in {
			if n, ok := ids[id]; ok {
				out = append(out, n)
			}
		}
		return out
	}
	for _, p := range perks {
		n, err := shell.AskOp(c, cp, event.CreatePerk{Name: p.Name, Description: shell.Deref(p.Description)})
		if err != nil {
			return err
		}
		ids[p.ID] = n.ID
	}
	for _, v := range venues {
		n, err := shell.AskOp(c, cp, event.CreateVenue{Name: v.Name, PerkIDs: remap(v.PerkIDs)})
		if err != nil {
			return err
		}
		ids[v.ID] = n.ID
	}
	for _, s := range sessions {
		starts, ends := s.StartsAt, s.EndsAt
		cmd := event.CreateSession{Title: s.Title, StartsAt: &starts, EndsAt: &ends, PerkIDs: remap(s.PerkIDs)}
		if s.VenueID != nil {
			cmd.VenueID = ids[*s.VenueID]
		}
		n, err := shell.AskOp(c, cp, cmd)
		if err != nil {
			return err
		}
		ids[s.ID] = n.ID
	}
	for _, s := range speakers {
		if _, err := shell.AskOp(c, cp, event.CreateSpeaker{Name: s.Name, Title: shell.Deref(s.Title), Bio: shell.Deref(s.Bio), SessionIDs: remap(s.SessionIDs)}); err != nil {
			return err
		}
	}
	for _, s := range sponsors {
		if _, err := shell.AskOp(c, cp, event.CreateSponsor{Name: s.Name, URL: shell.Deref(s.URL), Tier: shell.Deref(s.Tier)}); err != nil {
			return err
		}
	}
	for _, tt := range types {
		pub := tt.IsPublic
		n, err := shell.AskOp(c, cp, event.CreateTicketType{Name: tt.Name, Capacity: tt.Capacity, PriceAmount: tt.PriceAmount, AllowWaitlist: tt.AllowWaitlist,
			IsPublic: &pub, RequiresApproval: tt.RequiresApproval, OpensAt: tt.OpensAt, ClosesAt: tt.ClosesAt})
		if err != nil {
			return err
		}
		ids[tt.ID] = n.ID
		if f := forms[tt.ID]; f.PublishedAt != nil || len(f.PublishedQuestions) > 0 {
			if _, err := c.Ask(cp, event.PutForm{TypeID: n.ID, Questions: f.PublishedQuestions}); err != nil {
				return err
			}
			if _, err := c.Ask(cp, event.PublishForm{TypeID: n.ID}); err != nil {
				return err
			}
			if !reflect.DeepEqual(f.Questions, f.PublishedQuestions) {
				if _, err := c.Ask(cp, event.PutForm{TypeID: n.ID, Questions: f.Questions}); err != nil {
					return err
				}
			}
		} else if len(f.Questions) > 0 {
			if _, err := c.Ask(cp, event.PutForm{TypeID: n.ID, Questions: f.Questions}); err != nil {
				return err
			}
		}
	}
	for _, b := range bindings.TicketTypes {
		if n, ok := ids[b.ID]; ok && len(b.PerkIDs) > 0 {
			if _, err := c.Ask(cp, event.SetTicketTypePerks{TypeID: n, PerkIDs: remap(b.PerkIDs)}); err != nil {
				return err
			}
		}
	}
	for _, a := range addons {
		if _, err := c.Ask(cp, event.CreateAddon{Name: a.Name, PriceAmount: a.PriceAmount, Capacity: a.Capacity}); err != nil {
			return err
		}
	}
	return nil
}

// listAll reads every page of a list (duplicating an event copies all of
// it, not the first page).
func listAll[T any](c *shell.Console, eventID string, page func(cursor string) event.Op[event.List[T]]) ([]T, error) {
	var all []T
	cur := ""
	for {
		l, err := shell.AskOp(c, eventID, page(cur))
		if err != nil {
			return nil, err
		}
		all = append(all, l.Data...)
		if !l.HasMore || l.NextCursor == nil {
			return all, nil
		}
		cur = *l.NextCursor
	}
}

// optStr is a set-or-clear field of a string that may be absent.
func optStr(s *string) event.Opt[string] {
	if s == nil {
		return event.Opt[string]{Set: true, Null: true}
	}
	return event.Some(*s)
}
