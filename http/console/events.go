package console

import "ticketd/event"

// ticketTypeRow is a ticket type with its live availability.
type ticketTypeRow struct {
	event.TicketType
	Avail event.Availability
}
