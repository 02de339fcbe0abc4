package api

import (
	"ticketd/event"
	thttp "ticketd/http"
)

// The program and perks: console records of an event under
// /admin/v1/events/{eventId}/... (venues, sessions, speakers, sponsors,
// perks, perk bindings and grants) and the Developer API's reads (agenda,
// line-up, venues, attendees, a registration's effective perks).

// adminEventCmd is eventCmd for the console: the admin is service-wide, so
// any existing event answers, and an unknown one is 404.
func adminEventCmd[C event.Command](a *api, set func(c *thttp.Ctx, cmd *C)) thttp.HandlerFunc {
	return func(c *thttp.Ctx) (any, error) {
		id := c.Param("eventId")
		if _, ok := a.ops.EventUnit(id); !ok {
			return nil, errEventNotFound
		}
		cmd, err := bindCmd(c, set)
		if err != nil {
			return nil, err
		}
		return a.askC(c, id, cmd)
	}
}

// programCollection is one console collection: its path segment, names
// and commands.
type programCollection[Create, Update, Get, List, Delete event.Command, V any] struct {
	segment, tag, singular, plural string
	setUpdate                      func(*Update, string)
	setGet                         func(*Get, string)
	setDelete                      func(*Delete, string)
	createNote, deleteNote         string
}

func (p programCollection[Create, Update, Get, List, Delete, V]) routes(a *api, opSingular, opPlural string) []thttp.Route {
	adm := func(r thttp.Route) thttp.Route { r.Surface = thttp.Admin; return r }
	base := "/admin/v1/events/{eventId}/" + p.segment
	var v V
	param := p.singular + "Id" // {venueId}, {sessionId}...: named after what it holds
	id := func(c *thttp.Ctx) string { return c.Param(param) }
	return []thttp.Route{
		adm(thttp.Route{Method: "POST", Path: base, OperationID: "create" + opSingular, Tag: p.tag,
			Summary: "Create a " + p.singular + p.createNote, Body: *new(Create), Success: 201, Response: v,
			Errors: errsWrite, Handle: adminEventCmd[Create](a, nil)}),
		adm(thttp.Route{Method: "GET", Path: base, OperationID: "listConsole" + opPlural, Tag: p.tag,
			Summary: "List the event's " + p.plural, Query: *new(List), Success: 200, Response: event.List[V]{},
			Errors: []int{400, 404}, Handle: adminEventCmd[List](a, nil)}),
		adm(thttp.Route{Method: "GET", Path: base + "/{" + param + "}", OperationID: "get" + opSingular, Tag: p.tag,
			Summary: "Get a " + p.singular, Success: 200, Response: v, Errors: errsRead,
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *Get) { p.setGet(cmd, id(c)) })}),
		adm(thttp.Route{Method: "PATCH", Path: base + "/{" + param + "}", OperationID: "update" + opSingular, Tag: p.tag,
			Summary: "Update a " + p.singular + "; absent fields stay, null clears an optional one", Body: *new(Update),
			Success: 200, Response: v, Errors: errsWrite,
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *Update) { p.setUpdate(cmd, id(c)) })}),
		adm(thttp.Route{Method: "DELETE", Path: base + "/{" + param + "}", OperationID: "delete" + opSingular, Tag: p.tag,
			Summary: "Delete a " + p.singular + p.deleteNote + "; answers the deleted record", Success: 200, Response: v,
			Errors: errsRead, Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *Delete) { p.setDelete(cmd, id(c)) })}),
	}
}

// programRoutes is the console side of the program and perks and the
// Developer API's program reads.
func (a *api) programRoutes() []thttp.Route {
	var rs []thttp.Route
	rs = append(rs, programCollection[event.CreateVenue, event.UpdateVenue, event.GetVenue, event.ListVenues, event.DeleteVenue, event.Venue]{
		segment: "venues", tag: "Program", singular: "venue", plural: "venues",
		setUpdate: func(c *event.UpdateVenue, id string) { c.ID = id }, setGet: func(c *event.GetVenue, id string) { c.ID = id },
		setDelete:  func(c *event.DeleteVenue, id string) { c.ID = id },
		createNote: " (a room); perkIds is its gate, empty means open to all", deleteNote: "; its sessions keep no venue",
	}.routes(a, "Venue", "Venues")...)
	rs = append(rs, programCollection[event.CreateSession, event.UpdateSession, event.GetSession, event.ListSessions, event.DeleteSession, event.Session]{
		segment: "sessions", tag: "Program", singular: "session", plural: "sessions in time order",
		setUpdate: func(c *event.UpdateSession, id string) { c.ID = id }, setGet: func(c *event.GetSession, id string) { c.ID = id },
		setDelete:  func(c *event.DeleteSession, id string) { c.ID = id },
		createNote: " of the agenda; endsAt after startsAt; its gate is its perkIds plus its venue's", deleteNote: "; speakers lose it",
	}.routes(a, "Session", "Sessions")...)
	rs = append(rs, programCollection[event.CreateSpeaker, event.UpdateSpeaker, event.GetSpeaker, event.ListSpeakers, event.DeleteSpeaker, event.Speaker]{
		segment: "speakers", tag: "Program", singular: "speaker", plural: "speakers",
		setUpdate: func(c *event.UpdateSpeaker, id string) { c.ID = id }, setGet: func(c *event.GetSpeaker, id string) { c.ID = id },
		setDelete:  func(c *event.DeleteSpeaker, id string) { c.ID = id },
		createNote: "; registrationId and sessionIds must be of this event",
	}.routes(a, "Speaker", "Speakers")...)
	rs = append(rs, programCollection[event.CreateSponsor, event.UpdateSponsor, event.GetSponsor, event.ListSponsors, event.DeleteSponsor, event.Sponsor]{
		segment: "sponsors", tag: "Program", singular: "sponsor", plural: "sponsors",
		setUpdate: func(c *event.UpdateSponsor, id string) { c.ID = id }, setGet: func(c *event.GetSponsor, id string) { c.ID = id },
		setDelete: func(c *event.DeleteSponsor, id string) { c.ID = id },
	}.routes(a, "Sponsor", "Sponsors")...)
	rs = append(rs, programCollection[event.CreatePerk, event.UpdatePerk, event.GetPerk, event.ListPerks, event.DeletePerk, event.Perk]{
		segment: "perks", tag: "Perks", singular: "perk", plural: "perks",
		setUpdate: func(c *event.UpdatePerk, id string) { c.ID = id }, setGet: func(c *event.GetPerk, id string) { c.ID = id },
		setDelete:  func(c *event.DeletePerk, id string) { c.ID = id },
		deleteNote: "; it leaves every gate, binding and grant",
	}.routes(a, "Perk", "Perks")...)

	adm := func(r thttp.Route) thttp.Route { r.Surface = thttp.Admin; return r }
	dev := func(r thttp.Route) thttp.Route { r.Surface = thttp.Developer; return r }
	regID := func(c *thttp.Ctx) string { return c.Param("registrationId") }
	rs = append(rs,
		adm(thttp.Route{Method: "PUT", Path: "/admin/v1/events/{eventId}/ticket-types/{typeId}/perks", OperationID: "setTicketTypePerks", Tag: "Perks",
			Summary: "Replace the perks a ticket type carries", Body: event.SetTicketTypePerks{}, Success: 200,
			Response: event.PerkBinding{}, Errors: errsWrite,
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *event.SetTicketTypePerks) { cmd.TypeID = c.Param("typeId") })}),
		adm(thttp.Route{Method: "PUT", Path: "/admin/v1/events/{eventId}/redemption-codes/{codeId}/perks", OperationID: "setRedemptionCodePerks", Tag: "Perks",
			Summary: "Replace the perks a redemption code adds to the admission it unlocks", Body: event.SetCodePerks{}, Success: 200,
			Response: event.PerkBinding{}, Errors: errsWrite,
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *event.SetCodePerks) { cmd.CodeID = c.Param("codeId") })}),
		adm(thttp.Route{Method: "POST", Path: "/admin/v1/events/{eventId}/registrations/{registrationId}/perk-grants", OperationID: "grantPerk", Tag: "Perks",
			Summary: "Grant a perk to one registration; a repeat grant answers 200 with created false",
			Body:    event.GrantPerk{}, Success: 201, AltSuccess: []int{200}, Response: event.PerkGrantResult{}, Errors: errsWrite,
			Handle: a.grantPerk}),
		adm(thttp.Route{Method: "DELETE", Path: "/admin/v1/events/{eventId}/registrations/{registrationId}/perk-grants/{perkId}", OperationID: "revokePerk", Tag: "Perks",
			Summary: "Revoke an individual grant; answers the effective perks (created false when nothing was granted)",
			Success: 200, Response: event.PerkGrantResult{}, Errors: errsRead,
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *event.RevokePerk) {
				cmd.RegistrationID, cmd.PerkID = regID(c), c.Param("perkId")
			})}),

		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/sessions", OperationID: "listSessions", Tag: "Program",
			Summary: "The agenda in time order", Query: event.ListSessions{}, Success: 200,
			Response: event.List[event.Session]{}, Errors: []int{400, 404}, Handle: eventCmd[event.ListSessions](a, nil)}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/speakers", OperationID: "listSpeakers", Tag: "Program",
			Summary: "The line-up", Query: event.ListSpeakers{}, Success: 200,
			Response: event.List[event.Speaker]{}, Errors: []int{400, 404}, Handle: eventCmd[event.ListSpeakers](a, nil)}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/venues", OperationID: "listVenues", Tag: "Program",
			Summary: "The rooms with their perk gates", Query: event.ListVenues{}, Success: 200,
			Response: event.List[event.Venue]{}, Errors: []int{400, 404}, Handle: eventCmd[event.ListVenues](a, nil)}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/attendees", OperationID: "listAttendees", Tag: "Program",
			Summary: "One entry per person (email, case-insensitive) with their registration ids and standing status, in order of first registration",
			Query:   event.ListAttendees{}, Success: 200, Response: event.List[event.Attendee]{}, Errors: []int{400, 404},
			Handle: eventCmd[event.ListAttendees](a, nil)}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/registrations/{registrationId}/perks", OperationID: "getRegistrationPerks", Tag: "Registrations",
			Summary: "Effective perks: the union of the ticket type's perks, the admitting code's perks and individual grants, each with its sources",
			Success: 200, Response: event.RegistrationPerks{}, Errors: errsRead,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.GetRegistrationPerks) { cmd.ID = regID(c) })}),
	)
	return rs
}

func (a *api) grantPerk(c *thttp.Ctx) (any, error) {
	res, err := adminEventCmd(a, func(c *thttp.Ctx, cmd *event.GrantPerk) { cmd.RegistrationID = c.Param("registrationId") })(c)
	if err != nil {
		return nil, err
	}
	if r, ok := res.(event.PerkGrantResult); ok && !r.Created {
		c.SetStatus(200)
	}
	return res, nil
}
