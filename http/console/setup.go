package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"

	"github.com/valyala/fasthttp"

	"ticketd/event"
	"ticketd/internal/money"
)

// The event's setup pages: its ticket types (each with an edit page and a
// checkout link to share), where it takes place, and the event-wide
// actions (unpublish, duplicate).

func (c *Console) setupRoutes() []route {
	return []route{
		{"GET", "/console/events/{eventId}/ticket-types", c.ticketTypesPage},
		{"GET", "/console/events/{eventId}/ticket-types/{typeId}", c.ticketTypePage},
		{"GET", "/console/events/{eventId}/venue", c.venuePage},
		{"POST", "/console/events/{eventId}/venue", c.setVenue},
		{"POST", "/console/events/{eventId}/unpublish", c.unpublishEvent},
		{"POST", "/console/events/{eventId}/duplicate", c.duplicateEvent},
	}
}

// typesData is the ticket types page, and a ticket type's edit page
// (Type set).
type typesData struct {
	Type     *ticketTypeRow
	BuyLink  string
	BuyLinks map[string]string // by type id: public types only
}

// eventView fills v with the event of the path after checking p: its
// unit, role and name, for the pages under the event's tabs.
func (c *Console) eventView(r *req, v *view, p perm) (ev event.Event, err error) {
	eventID, unitID, err := r.eventUnit(p)
	if err != nil {
		return ev, err
	}
	if ev, err = askOp(c, eventID, event.GetEvent{}); err != nil {
		return ev, err
	}
	u, _ := r.dir.Unit(unitID)
	v.Unit, v.Event, v.Role = &u, &ev, r.role(unitID)
	v.CanWrite = allowed(v.Role, permWrite)
	v.typed()
	return ev, nil
}

// typeRows reads the event's ticket types with their availability.
func (c *Console) typeRows(eventID string) ([]ticketTypeRow, error) {
	list, err := askOp(c, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return nil, err
	}
	var out []ticketTypeRow
	for _, tt := range list.Data {
		av, err := askOp(c, eventID, event.GetAvailability{ID: tt.ID})
		if err != nil {
			return nil, err
		}
		out = append(out, ticketTypeRow{TicketType: tt, Avail: av})
	}
	return out, nil
}

// buyLink is the address a buyer opens to check out one ticket of type
// typeID: it starts a hosted checkout for it.
func (c *Console) buyLink(eventID, typeID string) string {
	return c.cfg.BaseURL + "/buy/" + url.PathEscape(eventID) + "/" + url.PathEscape(typeID)
}

func (c *Console) ticketTypesPage(r *req) error {
	return c.showTicketTypes(r, &view{req: r}, 200)
}

func (c *Console) showTicketTypes(r *req, v *view, status int) error {
	ev, err := c.eventView(r, v, permRead)
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
	c.render(r.rc, status, "tickettypes", v)
	return nil
}

func (c *Console) ticketTypePage(r *req) error {
	return c.showTicketType(r, &view{req: r}, 200)
}

// showTicketType renders a ticket type's edit page: the record's values,
// or what was typed into a refused form.
func (c *Console) showTicketType(r *req, v *view, status int) error {
	ev, err := c.eventView(r, v, permRead)
	if err != nil {
		return err
	}
	typeID := param(r.rc, "typeId")
	tt, err := askOp(c, ev.ID, event.GetTicketType{ID: typeID})
	if err != nil {
		return err
	}
	av, err := askOp(c, ev.ID, event.GetAvailability{ID: typeID})
	if err != nil {
		return err
	}
	row := ticketTypeRow{TicketType: tt, Avail: av}
	if len(v.Form) == 0 {
		v.Form = map[string]string{"ttName": tt.Name, "priceAmount": plainAmount(tt.PriceAmount), "capacity": "",
			"opensAt": inZone(tt.OpensAt, ev.Timezone), "closesAt": inZone(tt.ClosesAt, ev.Timezone), "status": tt.Status,
			"isPublic": flag(tt.IsPublic), "allowWaitlist": flag(tt.AllowWaitlist), "requiresApproval": flag(tt.RequiresApproval)}
		if tt.Capacity != nil {
			v.Form["capacity"] = itoa(*tt.Capacity)
		}
	}
	d := typesData{Type: &row}
	if tt.IsPublic {
		d.BuyLink = c.buyLink(ev.ID, tt.ID)
	}
	v.Title, v.Canon, v.Any = tt.Name+" · "+ev.Name, "/console/events/"+ev.ID+"/ticket-types/"+typeID, d
	c.render(r.rc, status, "tickettype", v)
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
func (c *Console) editTicketType(r *req, eventID, unitID, typeID string) error {
	v := &view{req: r, Form: map[string]string{}, Errors: map[string]string{}}
	ev, err := askOp(c, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	f := v.Form
	for _, k := range []string{"ttName", "capacity", "priceAmount", "opensAt", "closesAt", "allowWaitlist", "requiresApproval", "isPublic", "status"} {
		f[k] = form(r.rc, k)
	}
	if reason := textProblem(f["ttName"], 200); reason != "" {
		v.Errors["ttName"] = say("ttName", reason)
	}
	body := map[string]any{"name": f["ttName"], "allowWaitlist": f["allowWaitlist"] != "", "requiresApproval": f["requiresApproval"] != "",
		"isPublic": f["isPublic"] != "", "opensAt": nil, "closesAt": nil, "capacity": nil}
	if cp := f["capacity"]; cp != "" {
		body["capacity"] = jsonNumberOr(cp)
	}
	if p := f["priceAmount"]; p != "" {
		body["priceAmount"] = moneyField(p)
	} else {
		body["priceAmount"] = json.RawMessage("0")
	}
	if t := localTime(v, "opensAt", f["opensAt"], ev.Timezone); t != nil {
		body["opensAt"] = *t
	}
	if t := localTime(v, "closesAt", f["closesAt"], ev.Timezone); t != nil {
		body["closesAt"] = *t
	}
	if s := f["status"]; s != "" {
		body["status"] = s
	}
	var cmd event.UpdateTicketType
	if err = bindForm(body, &cmd); err == nil && len(v.Errors) == 0 {
		cmd.ID = typeID
		var tt event.TicketType
		if tt, err = askOp(c, eventID, cmd); err == nil {
			r.audit("updateTicketType", unitID, map[string]string{"eventId": eventID, "typeId": typeID}, tt)
			return redirectNotice(r, "/console/events/"+eventID+"/ticket-types", "Ticket type “"+tt.Name+"” saved.")
		}
	}
	if err != nil && !fieldErrors(err, v) {
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

func (c *Console) venuePage(r *req) error {
	return c.showVenue(r, &view{req: r}, 200)
}

func (c *Console) showVenue(r *req, v *view, status int) error {
	ev, err := c.eventView(r, v, permRead)
	if err != nil {
		return err
	}
	loc, err := askOp(c, ev.ID, event.GetLocation{})
	if err != nil {
		return err
	}
	if len(v.Form) == 0 {
		v.Form = map[string]string{"venue": deref(loc.Venue), "address": deref(loc.Address), "onlineUrl": deref(loc.OnlineURL)}
	}
	v.Title, v.Canon = "Venue · "+ev.Name, "/console/events/"+ev.ID+"/venue"
	v.Any = venueData{Text: event.PlaceText(deref(loc.Venue), deref(loc.Address), deref(loc.OnlineURL))}
	c.render(r.rc, status, "venue", v)
	return nil
}

// setVenue saves where the event takes place: every buyer-facing page,
// the ticket email and its calendar file show it.
func (c *Console) setVenue(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	v := &view{req: r, Form: map[string]string{"venue": form(r.rc, "venue"), "address": form(r.rc, "address"), "onlineUrl": form(r.rc, "onlineUrl")},
		Errors: map[string]string{}}
	for k, max := range map[string]int{"venue": event.MaxVenueLen, "address": event.MaxAddressLen, "onlineUrl": event.MaxOnlineLen} {
		if reason := textProblem(v.Form[k], max); reason != "" {
			v.Errors[k] = say(k, reason)
		}
	}
	if len(v.Errors) == 0 {
		loc, err := askOp(c, eventID, event.SetLocation{Venue: v.Form["venue"], Address: v.Form["address"], OnlineURL: v.Form["onlineUrl"]})
		if err == nil {
			r.audit("setLocation", unitID, map[string]string{"eventId": eventID}, loc)
			msg := "Venue saved: buyers now see “" + event.PlaceText(deref(loc.Venue), deref(loc.Address), deref(loc.OnlineURL)) + "” on the checkout, their order, their ticket and the ticket email."
			if loc.Venue == nil && loc.Address == nil && loc.OnlineURL == nil {
				msg = "Venue cleared: buyers see no place."
			}
			return redirectNotice(r, "/console/events/"+eventID+"/venue", msg)
		}
		if !fieldErrors(err, v) {
			return err
		}
	}
	return c.showVenue(r, v, 400)
}

// unpublishEvent takes a published event back to draft: its page and
// checkout close until it is published again; orders already placed stay.
func (c *Console) unpublishEvent(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	ev, err := askOp(c, eventID, event.UpdateEvent{Status: event.Some(event.EventDraft)})
	if err != nil {
		v := &view{req: r}
		if fieldErrors(err, v) {
			return c.showEvent(r, v, 409)
		}
		return err
	}
	r.audit("unpublishEvent", unitID, map[string]string{"eventId": eventID}, ev)
	return redirectNotice(r, "/console/events/"+eventID, "“"+ev.Name+"” is a draft again: its public page and checkout are closed until you publish it. Orders already placed stay.")
}

// buyLinkKey is the budget the checkout link's sessions are counted
// against, per client address (the storefront's per (key, IP) budget,
// StorefrontIPLimitPerMinute): every link shares it, so one client cannot
// multiply its budget by opening many events' links.
const buyLinkKey = "console:buy-link"

// buyData is the checkout link's page: what the Buy button buys.
type buyData struct {
	Event, When, Type, Price, Action string
}

// buy answers the checkout link an organizer shares. GET shows the event,
// the ticket type and its price with a Buy button and creates nothing, so
// a chat app's link preview or a crawler following the link costs no
// checkout session; the button POSTs (no script needed), which creates a
// hosted checkout of one ticket, counted against the client's storefront
// budget, and sends the buyer there. A type that is not public, not of a
// published event, or unknown is "not on sale" (404), never told apart.
func (c *Console) buy(rc *fasthttp.RequestCtx) {
	eventID, typeID := param(rc, "eventId"), param(rc, "typeId")
	notFound := func() {
		c.render(rc, 404, "message", &view{Title: "Not on sale", Message: "These tickets are not on sale. Check the address, or ask the organizer for a new link."})
	}
	if _, ok := c.sys.EventUnit(eventID); !ok || typeID == "" || len(typeID) > 100 {
		notFound()
		return
	}
	if string(rc.Method()) != "POST" {
		ev, err := askOp(c, eventID, event.GetEvent{})
		if err != nil || ev.Status != "published" {
			notFound()
			return
		}
		tt, err := askOp(c, eventID, event.GetTicketType{ID: typeID})
		if err != nil || !tt.IsPublic {
			notFound()
			return
		}
		d := buyData{Event: ev.Name, Type: tt.Name, Price: money.Format(tt.PriceAmount, ev.Currency, "en"),
			Action: "/buy/" + url.PathEscape(eventID) + "/" + url.PathEscape(typeID)}
		if ev.StartsAt != nil {
			d.When = showTime(ev.StartsAt, ev.Timezone)
		}
		c.render(rc, 200, "buy", &view{Title: tt.Name + " · " + ev.Name, Any: d})
		return
	}
	if c.takeIP != nil {
		if ok, wait := c.takeIP(rc, buyLinkKey); !ok {
			rc.Response.Header.Set("Retry-After", itoa(wait))
			c.render(rc, 429, "message", &view{Title: "Too many checkouts",
				Message: fmt.Sprintf("Too many checkouts were started from your connection in the last minute. Try again in %d seconds.", wait)})
			return
		}
	}
	cmd := event.CreateCheckoutSession{Items: []event.OrderItem{{ItemType: "registration_type", ItemID: typeID, Quantity: 1}}, Storefront: true}
	cs, err := askOp(c, eventID, cmd)
	if err != nil {
		notFound()
		return
	}
	seeOther(rc, cs.URL)
	c.headers(rc)
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
func (c *Console) duplicateEvent(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	ctx := context.Background()
	ev, err := askOp(c, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	types, err := listAll(c, eventID, func(cur string) event.Op[event.List[event.TicketType]] {
		return event.ListTicketTypes{Limit: 100, Cursor: cur}
	})
	if err != nil {
		return err
	}
	addons, err := listAll(c, eventID, func(cur string) event.Op[event.List[event.Addon]] { return event.ListAddons{Limit: 100, Cursor: cur} })
	if err != nil {
		return err
	}
	perks, err := listAll(c, eventID, func(cur string) event.Op[event.List[event.Perk]] { return event.ListPerks{Limit: 100, Cursor: cur} })
	if err != nil {
		return err
	}
	venues, err := listAll(c, eventID, func(cur string) event.Op[event.List[event.Venue]] { return event.ListVenues{Limit: 100, Cursor: cur} })
	if err != nil {
		return err
	}
	sessions, err := listAll(c, eventID, func(cur string) event.Op[event.List[event.Session]] {
		return event.ListSessions{Limit: 100, Cursor: cur}
	})
	if err != nil {
		return err
	}
	speakers, err := listAll(c, eventID, func(cur string) event.Op[event.List[event.Speaker]] {
		return event.ListSpeakers{Limit: 100, Cursor: cur}
	})
	if err != nil {
		return err
	}
	sponsors, err := listAll(c, eventID, func(cur string) event.Op[event.List[event.Sponsor]] {
		return event.ListSponsors{Limit: 100, Cursor: cur}
	})
	if err != nil {
		return err
	}
	bindings, err := askOp(c, eventID, event.ListPerkBindings{})
	if err != nil {
		return err
	}
	forms := make(map[string]event.RegistrationForm, len(types))
	for _, tt := range types {
		f, err := askOp(c, eventID, event.GetForm{TypeID: tt.ID})
		if err != nil {
			return err
		}
		forms[tt.ID] = f
	}
	loc, err := askOp(c, eventID, event.GetLocation{})
	if err != nil {
		return err
	}
	pol, err := askOp(c, eventID, event.GetRefundPolicy{})
	if err != nil {
		return err
	}
	create := event.CreateEvent{Name: copyName(ev.Name), Timezone: ev.Timezone, StartsAt: ev.StartsAt, EndsAt: ev.EndsAt, Currency: ev.Currency}
	res, err := c.sys.CreateEvent(ctx, unitID, c.sys.NewEventID(), create)
	if err != nil {
		return err
	}
	cp := res.(event.Event)
	r.audit("duplicateEvent", unitID, map[string]string{"eventId": cp.ID, "fromEventId": eventID}, cp)
	if err := copyInto(c, cp.ID, ev, loc, pol, types, forms, bindings, addons, perks, venues, sessions, speakers, sponsors); err != nil {
		// The copy exists: say what is missing rather than hide it.
		return redirectNotice(r, "/console/events/"+cp.ID, "The copy was made, but not all of it: "+err.Error()+". Check its ticket types, forms and program.")
	}
	program := len(venues) + len(sessions) + len(speakers) + len(sponsors) + len(perks)
	return redirectNotice(r, "/console/events/"+cp.ID, fmt.Sprintf("“%s” is a copy of “%s” with its %s, %s, %s and %s, as a draft. Change what differs, then publish it.",
		cp.Name, ev.Name, plural(len(types), "ticket type"), plural(len(addons), "add-on"), plural(countForms(forms), "registration form"),
		plural(program, "program item")))
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
func copyInto(c *Console, cp string, ev event.Event, loc event.Location, pol event.RefundPolicy, types []event.TicketType,
	forms map[string]event.RegistrationForm, bindings event.PerkBindings, addons []event.Addon, perks []event.Perk,
	venues []event.Venue, sessions []event.Session, speakers []event.Speaker, sponsors []event.Sponsor) error {
	for _, cmd := range []event.Command{
		event.SetSite{SiteURL: optStr(ev.SiteURL), Description: optStr(ev.Description)},
		event.SetLocation{Venue: deref(loc.Venue), Address: deref(loc.Address), OnlineURL: deref(loc.OnlineURL)},
		event.SetRefundPolicy{Refundable: pol.Refundable, Deadline: pol.Deadline, HoursBeforeStart: pol.HoursBeforeStart, FeePercent: pol.FeePercent},
	} {
		if _, err := c.ask(cp, cmd); err != nil {
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
		n, err := askOp(c, cp, event.CreatePerk{Name: p.Name, Description: deref(p.Description)})
		if err != nil {
			return err
		}
		ids[p.ID] = n.ID
	}
	for _, v := range venues {
		n, err := askOp(c, cp, event.CreateVenue{Name: v.Name, PerkIDs: remap(v.PerkIDs)})
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
		n, err := askOp(c, cp, cmd)
		if err != nil {
			return err
		}
		ids[s.ID] = n.ID
	}
	for _, s := range speakers {
		if _, err := askOp(c, cp, event.CreateSpeaker{Name: s.Name, Title: deref(s.Title), Bio: deref(s.Bio), SessionIDs: remap(s.SessionIDs)}); err != nil {
			return err
		}
	}
	for _, s := range sponsors {
		if _, err := askOp(c, cp, event.CreateSponsor{Name: s.Name, URL: deref(s.URL), Tier: deref(s.Tier)}); err != nil {
			return err
		}
	}
	for _, tt := range types {
		pub := tt.IsPublic
		n, err := askOp(c, cp, event.CreateTicketType{Name: tt.Name, Capacity: tt.Capacity, PriceAmount: tt.PriceAmount, AllowWaitlist: tt.AllowWaitlist,
			IsPublic: &pub, RequiresApproval: tt.RequiresApproval, OpensAt: tt.OpensAt, ClosesAt: tt.ClosesAt})
		if err != nil {
			return err
		}
		ids[tt.ID] = n.ID
		if f := forms[tt.ID]; f.PublishedAt != nil || len(f.PublishedQuestions) > 0 {
			if _, err := c.ask(cp, event.PutForm{TypeID: n.ID, Questions: f.PublishedQuestions}); err != nil {
				return err
			}
			if _, err := c.ask(cp, event.PublishForm{TypeID: n.ID}); err != nil {
				return err
			}
			if !reflect.DeepEqual(f.Questions, f.PublishedQuestions) {
				if _, err := c.ask(cp, event.PutForm{TypeID: n.ID, Questions: f.Questions}); err != nil {
					return err
				}
			}
		} else if len(f.Questions) > 0 {
			if _, err := c.ask(cp, event.PutForm{TypeID: n.ID, Questions: f.Questions}); err != nil {
				return err
			}
		}
	}
	for _, b := range bindings.TicketTypes {
		if n, ok := ids[b.ID]; ok && len(b.PerkIDs) > 0 {
			if _, err := c.ask(cp, event.SetTicketTypePerks{TypeID: n, PerkIDs: remap(b.PerkIDs)}); err != nil {
				return err
			}
		}
	}
	for _, a := range addons {
		if _, err := c.ask(cp, event.CreateAddon{Name: a.Name, PriceAmount: a.PriceAmount, Capacity: a.Capacity}); err != nil {
			return err
		}
	}
	return nil
}

// listAll reads every page of a list (duplicating an event copies all of
// it, not the first page).
func listAll[T any](c *Console, eventID string, page func(cursor string) event.Op[event.List[T]]) ([]T, error) {
	var all []T
	cur := ""
	for {
		l, err := askOp(c, eventID, page(cur))
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
