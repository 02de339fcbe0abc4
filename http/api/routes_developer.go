package api

import (
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/bind"
	"ticketd/ops"
)

// Errors documented for event-scoped operations beyond the surface's own.
var (
	errsRead   = []int{404}
	errsWrite  = []int{400, 404}
	errsAction = []int{404, 412}
	errsAll    = []int{400, 404, 412}
)

// developerRoutes is the Developer API (/v1, secret keys): events, ticket
// types, registrations, check-ins.
func (a *api) developerRoutes() []thttp.Route {
	dev := func(r thttp.Route) thttp.Route { r.Surface = thttp.Developer; return r }
	ttID := func(c *thttp.Ctx) string { return c.Param("typeId") }
	regID := func(c *thttp.Ctx) string { return c.Param("registrationId") }
	return []thttp.Route{
		// Events.
		dev(thttp.Route{Method: "GET", Path: "/v1/events", OperationID: "listEvents", Tag: "Events",
			Summary: "List the business unit's events, all statuses, newest first",
			Query:   bind.ListQuery{}, Success: 200, Response: event.List[event.Event]{}, Errors: []int{400},
			Handle: a.listEvents}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events", OperationID: "createEvent", Tag: "Events",
			Summary: "Create an event (as draft)",
			Body:    event.CreateEvent{}, Success: 201, Response: event.Event{}, Errors: []int{400},
			Handle: a.createEvent}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}", OperationID: "getEvent", Tag: "Events",
			Summary: "Get an event", Success: 200, Response: event.Event{}, Errors: errsRead,
			Handle: eventCmd[event.GetEvent](a, nil)}),
		dev(thttp.Route{Method: "PATCH", Path: "/v1/events/{eventId}", OperationID: "updateEvent", Tag: "Events",
			Summary: "Update an event: name, dates, timezone, status (publish needs a start time), currency (locked once the event has an order); moving the start date clears the agenda only with confirmAgendaReset",
			Body:    event.UpdateEvent{}, Success: 200, Response: event.Event{}, Errors: errsAll,
			Handle: eventCmd[event.UpdateEvent](a, nil)}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/archive", OperationID: "archiveEvent", Tag: "Events",
			Summary: "Archive an event (final; events are never deleted)", Success: 200, Response: event.Event{},
			Errors: errsRead, Handle: eventCmd[event.ArchiveEvent](a, nil)}),

		// Ticket types.
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/ticket-types", OperationID: "listTicketTypes", Tag: "Ticket types",
			Summary: "List ticket types with counts", Query: event.ListTicketTypes{}, Success: 200,
			Response: event.List[event.TicketType]{}, Errors: []int{400, 404},
			Handle: eventCmd[event.ListTicketTypes](a, nil)}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/ticket-types", OperationID: "createTicketType", Tag: "Ticket types",
			Summary: "Create a ticket type (as draft)", Body: event.CreateTicketType{}, Success: 201,
			Response: event.TicketType{}, Errors: errsAll, Handle: eventCmd[event.CreateTicketType](a, nil)}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/ticket-types/{typeId}", OperationID: "getTicketType", Tag: "Ticket types",
			Summary: "Get a ticket type", Success: 200, Response: event.TicketType{}, Errors: errsRead,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.GetTicketType) { cmd.ID = ttID(c) })}),
		dev(thttp.Route{Method: "PATCH", Path: "/v1/events/{eventId}/ticket-types/{typeId}", OperationID: "updateTicketType", Tag: "Ticket types",
			Summary: "Update a ticket type; status moves draft -> open <-> closed -> archived",
			Body:    event.UpdateTicketType{}, Success: 200, Response: event.TicketType{}, Errors: errsAll,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.UpdateTicketType) { cmd.ID = ttID(c) })}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/ticket-types/{typeId}/availability", OperationID: "getTicketTypeAvailability", Tag: "Ticket types",
			Summary: "Get a ticket type's availability (version 2026-03-15 has no held field)", Success: 200,
			Response: availabilityDoc{}, Errors: errsRead, Handle: a.getAvailability}),

		// Registrations.
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/registrations", OperationID: "listRegistrations", Tag: "Registrations",
			Summary: "List registrations, newest first; filter by status and email", Query: event.ListRegistrations{},
			Success: 200, Response: event.List[event.Registration]{}, Errors: []int{400, 404}, Headers: feedCursorDoc,
			Handle: listWithFeedCursor[event.ListRegistrations, event.Registration](a)}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/registrations", OperationID: "createRegistration", Tag: "Registrations",
			Summary: "Register a person: pending when the ticket requires approval, waitlisted when full with a waitlist, 412 when sold out; an email already registered answers 200 with created false",
			Body:    event.CreateRegistration{}, Success: 201, AltSuccess: []int{200}, Response: event.RegistrationResult{},
			Errors: errsAll, Handle: a.createRegistration}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/registrations/{registrationId}", OperationID: "getRegistration", Tag: "Registrations",
			Summary: "Get a registration", Success: 200, Response: event.Registration{}, Errors: errsRead,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.GetRegistration) { cmd.ID = regID(c) })}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/registrations/{registrationId}/approve", OperationID: "approveRegistration", Tag: "Registrations",
			Summary: "Approve a pending application (confirmed, or waitlisted when full)", Success: 200,
			Response: event.Registration{}, Errors: errsAction,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.ApproveRegistration) { cmd.ID = regID(c) })}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/registrations/{registrationId}/reject", OperationID: "rejectRegistration", Tag: "Registrations",
			Summary: "Reject a pending application", Body: event.RejectRegistration{}, Success: 200,
			Response: event.Registration{}, Errors: errsAll,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.RejectRegistration) { cmd.ID = regID(c) })}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/registrations/{registrationId}/cancel", OperationID: "cancelRegistration", Tag: "Registrations",
			Summary: "Cancel a registration: releases the place (and the code use); the oldest waitlisted registration of the type is promoted",
			Success: 200, Response: event.Registration{}, Errors: errsAction,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.CancelRegistration) { cmd.ID = regID(c) })}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/registrations/{registrationId}/rotate-pass", OperationID: "rotateRegistrationPass", Tag: "Registrations",
			Summary: "Issue a new pass link; the old one stops working", Success: 200,
			Response: event.Registration{}, Errors: errsRead,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.RotatePass) { cmd.ID = regID(c) })}),

		// Check-ins.
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/checkins", OperationID: "listCheckins", Tag: "Check-ins",
			Summary: "List check-ins; filter by subjectType, subjectId, registrationId", Query: event.ListCheckins{},
			Success: 200, Response: event.List[event.Checkin]{}, Errors: []int{400, 404}, Headers: feedCursorDoc,
			Handle: listWithFeedCursor[event.ListCheckins, event.Checkin](a)}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/checkins", OperationID: "recordCheckin", Hot: true, Tag: "Check-ins",
			Summary: "Record a check-in by registrationId or checkinCode; a repeat at the same door answers 200 with alreadyCheckedIn true; only confirmed registrations may enter (412)",
			Body:    event.RecordCheckin{}, Success: 201, AltSuccess: []int{200}, Response: event.CheckinResult{},
			Errors: errsAll, Handle: a.recordCheckin}),
	}
}

func (a *api) createEvent(c *thttp.Ctx) (any, error) {
	var cmd event.CreateEvent
	if err := c.Bind(&cmd); err != nil {
		return nil, err
	}
	id := a.ops.NewEventID()
	if a.ops.DirectoryShared() {
		// Cluster mode: the key's record lives with the event it made, so
		// a retry must make the same id to find it (see cluster.Idempotency).
		if kid := c.KeyedID("evt_"); kid != "" {
			id = kid
		}
	}
	res, err := a.ops.CreateEvent(keyed(c, nil), c.Principal().UnitID, id, cmd)
	if err != nil {
		return nil, keyedErr(c, ops.MapErr(err))
	}
	return res, nil
}

// listEvents pages through the unit's events, newest first, reading each
// from its actor.
func (a *api) listEvents(c *thttp.Ctx) (any, error) {
	var q bind.ListQuery
	if err := c.BindQuery(&q); err != nil {
		return nil, err
	}
	after, err := bind.DecodeCursor(q.Cursor)
	if err != nil {
		return nil, err
	}
	ids := a.ops.UnitEvents(c.Principal().UnitID)
	start := len(ids) - 1
	if after != "" {
		start = -2
		for i, id := range ids {
			if id == after {
				start = i - 1
				break
			}
		}
		if start == -2 {
			return nil, thttp.NewError(400, "cursor: unknown cursor", event.Detail{Field: "cursor", Reason: "unknown cursor"})
		}
	}
	out := make([]event.Event, 0, q.Limit)
	i := start
	for ; i >= 0 && len(out) < q.Limit; i-- {
		ev, err := askOp(a, ids[i], event.GetEvent{})
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	next := ""
	if len(out) > 0 {
		next = out[len(out)-1].ID
	}
	return bind.NewList(out, i >= 0, next), nil
}

func (a *api) createRegistration(c *thttp.Ctx) (any, error) {
	res, err := eventCmd[event.CreateRegistration](a, nil)(c)
	if err != nil {
		return nil, err
	}
	if r, ok := res.(event.RegistrationResult); ok && !r.Created {
		c.SetStatus(200)
	}
	return res, nil
}

// recordCheckin records a check-in through the layer's one check-in
// operation (the console's door page calls it too).
func (a *api) recordCheckin(c *thttp.Ctx) (any, error) {
	id, err := a.eventOf(c)
	if err != nil {
		return nil, err
	}
	cmd, err := bindCmd[event.RecordCheckin](c, nil)
	if err != nil {
		return nil, err
	}
	r, err := a.ops.CheckIn(keyed(c, nil), id, cmd)
	if err = keyedErr(c, err); err != nil {
		return nil, err
	}
	if r.AlreadyCheckedIn {
		c.SetStatus(200)
	}
	return r, nil
}

// availabilityDoc documents the availability object across versions: the
// handler answers event.Availability, or availabilityV20260315 under that
// version.
type availabilityDoc struct {
	Capacity   *int `json:"capacity" doc:"null: unlimited"`
	Confirmed  int  `json:"confirmed"`
	Waitlisted int  `json:"waitlisted"`
	Held       *int `json:"held,omitempty" doc:"Places held by open orders. Absent under version 2026-03-15."`
	Remaining  *int `json:"remaining" doc:"null: unlimited"`
}

// availabilityV20260315 is the availability object of version 2026-03-15,
// which has no held field.
type availabilityV20260315 struct {
	Capacity   *int `json:"capacity"`
	Confirmed  int  `json:"confirmed"`
	Waitlisted int  `json:"waitlisted"`
	Remaining  *int `json:"remaining"`
}

func (a *api) getAvailability(c *thttp.Ctx) (any, error) {
	res, err := eventCmd(a, func(c *thttp.Ctx, cmd *event.GetAvailability) { cmd.ID = c.Param("typeId") })(c)
	if err != nil {
		return nil, err
	}
	if av, ok := res.(event.Availability); ok && c.Version() == "2026-03-15" {
		return availabilityV20260315{Capacity: av.Capacity, Confirmed: av.Confirmed, Waitlisted: av.Waitlisted, Remaining: av.Remaining}, nil
	}
	return res, nil
}
