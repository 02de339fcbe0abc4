package api

import (
	"ticketd/event"
	thttp "ticketd/http"
)

// locationRoutes read and set where the event takes place (console): the
// ticket email shows it and its calendar file carries it.
func (a *api) locationRoutes() []thttp.Route {
	path := "/admin/v1/events/{eventId}/location"
	return []thttp.Route{
		{Method: "PUT", Path: path, OperationID: "setEventLocation", Tag: "Site", Surface: thttp.Admin,
			Summary: "Set where the event takes place: the venue's name and street address (empty clears); ticket emails and their calendar files show it",
			Body:    event.SetLocation{}, Success: 200, Response: event.Location{}, Errors: []int{400, 404, 412},
			Handle: adminEventCmd[event.SetLocation](a, nil)},
		{Method: "GET", Path: path, OperationID: "getEventLocation", Tag: "Site", Surface: thttp.Admin,
			Summary: "Get where the event takes place", Success: 200, Response: event.Location{}, Errors: []int{404},
			Handle: adminEventCmd[event.GetLocation](a, nil)},
	}
}
