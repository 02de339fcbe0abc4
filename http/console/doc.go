// Package console serves the console web app at /console: server-rendered
// html/template pages for organizers, in process over the same service
// layer the API handlers call. It only assembles the console: the frame
// (sessions, sign-in, routing, templates, the ask) is package shell, and
// the signed-in pages are the areas, found by their URL:
//
//	/console, /console/units/{unitId}/..., /console/outbox, /console/sign-ins
//	                                            units: home, units, members, invitations,
//	                                            keys, webhooks, audit log, request log,
//	                                            outbox, console sign-ins
//	/console/events/{eventId} and its setup     eventsetup: overview and settings (site,
//	                                            refund policy, queue), ticket types, venue,
//	                                            forms, add-ons and bundles, program and
//	                                            perks, translations, unpublish, duplicate
//	/console/events/{eventId}/ its work         eventwork: dashboard, orders and their mail,
//	                                            attendees, registrations, codes and
//	                                            promotion codes, door, devices
//	/console/login, invitations, reset, /buy    shell
//
// The tests here drive the assembled console end to end (app.Main on a
// loopback port, real HTTP, chromium for the browser tests).
//
// # Concurrency
//
// As package shell's: New builds a Console once; its handlers are safe for
// concurrent use.
package console
