// Package shell is the frame of the web console (package console, served
// at /console): the Console and its Config and Deps, routing and the
// per-request Req with its permission checks, sessions, sign-in and its
// throttles, invitation and reset links, the layout, templates and View,
// confirmations (flash), the wording of refusals, money formatting, the
// form submit shape, the audit of writes, and the one ask through which
// every page reaches the event actors (Console.Ask, AskOp). Its pages are
// the sign-in, invitation, reset and checkout link (/buy) pages, which
// need no session. The signed-in pages live in the area packages, each a
// set of routes New is given:
//
//	/console, /console/units/{unitId}/..., /console/outbox, /console/sign-ins
//	                                                     package units
//	/console/events/{eventId} (overview, settings), ticket-types, venue,
//	forms, addons, bundles, program, perk-bindings, translations, queue,
//	unpublish, duplicate                                 package eventsetup
//	/console/events/{eventId}/dashboard, orders, attendees, registrations,
//	codes, promotion-codes, door, devices                package eventwork
//
// The templates of every area are here (templates/), parsed once by New
// with the template functions of the shell and of every Area.
// A page never calls the HTTP API: it asks in process the same service
// layer the API handlers call (the actor system, the audit log, the
// refund workflow).
//
// # Sign-in and sessions
//
// The operator signs in with the admin token; members (package directory)
// with email and password (argon2id). Failed sign-ins are slowed down per
// account and per client address, IPv6 per /64 (throttle.go: free
// failures, then a doubling wait; Config.SignInFailures,
// SignInFailuresPerIP, SignInDelayMax, SignInWindow), never locked out; a
// browser that signed in to the account before (a signed cookie) counts
// on its own. The count tables are bounded by eviction of the keys with
// fewest failures, never by refusing newcomers, and what was typed is
// capped before it is counted or logged. A session is a random 256-bit cookie value
// (HttpOnly, SameSite=Lax, Path /console, Secure when the base URL is
// https, the connection is TLS, or a trusted proxy sends
// X-Forwarded-Proto: https) naming a server-side record keyed by its
// SHA-256. Sessions are kept in memory only, bounded (Config.Sessions,
// SessionsPerPerson, SessionsPerIP; expired ones first, then the least
// recently used of whoever holds the most): a restart signs everyone out, which costs
// a sign-in and keeps session secrets off the disk. A session ends after
// Config.SessionIdle without a request, Config.SessionMax after sign-in,
// at sign-out, at "sign out everywhere" (every session of that person),
// and when the member's password changes or the member is gone.
//
// In cluster mode (ShareSessions) the records are the cluster's, in its
// shared index and every node's store (session_shared.go has the key
// schema): a session is live on every node with the same cookie, ended
// on every node by a sign-out, and no longer bounded by count but by its
// timeouts; its last use is shared at most every minute, so a node it was
// not used on may end it by the idle timeout up to that much early. The
// records are on disk there, but never the cookie value, only its SHA-256.
//
// Every form carries the session's synchronizer CSRF token; a POST
// without it answers 403. The sign-in, invitation and reset forms, which
// have no session yet, carry a double-submit token (a cookie and a field).
//
// Invitation and password-reset links are one-time tokens of which the
// directory keeps only a hash; the link is shown once on the page and
// mailed through the durable outbox, which holds it until it is delivered.
// A reset link is the operator's or an owner's of every unit the member is
// in (directory.MayReset); owners list and revoke open links.
//
// A form's confirmation crosses its redirect in a short-lived cookie
// signed with a key derived from the admin token (flash.go).
//
// # Authorization
//
// Checked on every request from the current directory view: a role per
// business unit (owner: everything; admin: everything but members; door:
// check-in pages; viewer: read only); the operator is an owner of every
// unit and alone creates units. A unit, event, key or member the caller
// has no role for answers the same 404 as a missing one; a role without
// the permission answers 403. Every successful write is recorded in the
// audit log with the member (actor type "member") or the operator
// ("admin") who made it. Sign-in events (sign-in, failed sign-in,
// sign-out, sign-out everywhere; invitations accepted and passwords reset)
// are recorded too, with the client's IP (in the entry's After) and the
// member or the email tried: a member's in each unit of theirs, the
// operator's and those naming no member under SignInUnit, which the
// operator reads on the sign-ins page.
//
// # The organizer's pages
//
// Every page of an event has two rows of tabs (its work and its setup),
// the current one marked. Ticket types have a page each (eventsetup/setup.go) with a
// checkout link, /buy/{eventId}/{typeId}: a public route whose GET shows
// the event, the type and its price with a Buy button and creates nothing
// (link previews and crawlers fetch it), and whose POST (the button, no
// script needed) starts a hosted checkout of one ticket of a public type
// and redirects to it, counted against the client's storefront budget
// (the server's per (key, IP) limiter, TICKETD_STOREFRONT_IP_LIMIT_PER_MINUTE).
// The venue page sets the event's place and online link, which the hosted
// pages and the ticket email show. A form that succeeds redirects with a
// confirmation (flash.go); one that is refused is shown again with each
// refusal next to its field as a sentence (wording.go), what was typed,
// and its page's own address restored in the address bar (view.Canon).
//
// # Concurrency
//
// New parses the templates once; a Console is then read-only but for its
// session table and sign-in throttles, each behind its own mutex. The
// template functions and page names (the shell's and each Area's) are
// filled by init functions, so before any New, and only read after.
// Register must be called before the
// server serves. A handler runs on the server's goroutine of its
// request; its Req is that request's alone.
package shell
