// Package mail delivers the mail the service owes: the durable outbox that
// the event actors write (package actors) is drained over SMTP.
//
// # The outbox
//
// An event actor writes an outbox entry in the same Pebble batch as the
// change that owes it (a TicketIssued change owes one ticket email per
// registration), so an entry exists exactly when its change is durable.
// Entries are index entries of the store (persistence.Batch.Put):
//
//	key:   "mail/" + eventId + "/" + %016x log seq + "-" + %04x index
//	value: JSON of actors.TicketMail (kind "ticket"), version-free: new
//	       fields are optional, so old entries always decode
//
// Keys sort by event, then by the log order of their changes, so a scan
// visits an event's mail in the order it was owed.
//
// # Delivery
//
// The Mailer scans the prefix (at most Config.BatchMax entries a round),
// renders each entry (text/template and html/template: a plain text part
// and an HTML alternative with the pass link, the event and ticket name),
// sends it with github.com/wneessen/go-mail and deletes the entry with a
// committed batch only after the SMTP server accepted the message. Delivery
// is at least once: a crash between acceptance and the delete sends the
// mail again on the next start.
//
// While the server is unreachable or refuses a message, the round is
// retried with exponential backoff (Config.BackoffMin doubling up to
// Config.BackoffMax, with jitter so restarts do not synchronise). Without
// Config.SMTPAddr nothing is sent: mail stays in the outbox, where
// Pending lists it (the admin API shows it).
//
// # Concurrency
//
// One goroutine (started by Start, stopped by Close) does all scanning,
// sending and deleting. Wake and Pending are safe from any goroutine; Wake
// never blocks, so an actor can call it (actors.Config.OnOutbox).
package mail
