// Package eventwork holds the console pages of an event's daily work,
// under /console/events/{eventId}: the dashboard (.../dashboard, and its
// live numbers), orders with their refunds and mail (.../orders),
// attendees and their registrations (.../attendees, .../registrations),
// codes and promotion codes (.../codes, .../promotion-codes), the door's
// check-in (.../door) and door devices (.../devices).
//
// # Concurrency
//
// Routes binds the handlers to a shell.Console; they hold no state of
// their own, so they are safe for concurrent use as the shell's are.
package eventwork
