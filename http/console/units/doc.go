// Package units holds the console pages of business units and of the
// operator: the home page (/console: the units one can see, creating a
// unit, the wallets), a unit's page with its members, invitations, reset
// links and roles (/console/units/{unitId}), creating an event of the
// unit (.../events), its API keys (.../keys), webhooks and their
// deliveries (.../webhooks), audit log (.../audit) and request log
// (.../request-log), and the operator's outbox (/console/outbox) and
// console sign-ins (/console/sign-ins).
//
// # Concurrency
//
// Routes binds the handlers to a shell.Console; they hold no state of
// their own, so they are safe for concurrent use as the shell's are.
package units
