// Package eventsetup holds the console pages that set up an event, under
// /console/events/{eventId}: its overview and settings (the event page;
// site, refund policy and waiting room queue; publish, archive,
// unpublish, duplicate), ticket types (.../ticket-types), the venue
// (.../venue), registration forms (.../forms), add-ons and bundles
// (.../addons, .../bundles), the program and perks (.../program,
// .../perk-bindings) and translations (.../translations).
//
// # Concurrency
//
// Routes binds the handlers to a shell.Console; they hold no state of
// their own, so they are safe for concurrent use as the shell's are. The
// template functions and page names they add are added in init, before
// the shell parses its templates.
package eventsetup
