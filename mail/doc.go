// Package mail owns the mail the service owes and delivers it over SMTP:
// the format of the mail inbox (TicketMail, written by Owed), and the
// Mailer that renders its entries and hands them to the relay. The queue
// of tried entries, their retry state and the sender loop are package
// outbox's (the generic owed-work queue); the mail inbox is the queue's
// inbox.
//
// # The mail inbox
//
// An event actor has Owed write an inbox entry in the same Pebble batch as
// the change that owes it (event.AppendEffects: a TicketIssued change owes one
// ticket email per registration, a WaitlistSeated one per seated
// registration, a succeeded refund, a cancelled registration and an order
// cancelled before payment one each), so an entry exists exactly when its
// change is durable, and replaying the log writes none again.
// Fresh entries are index entries of the store:
//
//	key:   "mail/" + eventId + "/" + %016x log seq + "-" + %04x index
//	value: JSON of TicketMail (kind ticket, promotion, refund or
//	       cancellation; none means ticket), version-free: new fields are
//	       optional, so old entries always decode
//
// An entry that was tried and not delivered moves to the outbox queue
// QueueName (keys "obx/mail/...", see package outbox), keeping its id (the
// key after "mail/") and these bytes verbatim.
//
// Mail about an order is also indexed by order (OrderMailKey,
// written in the same batch as the entry): OrderMail lists an order's
// mail from it, queued or sent, without reading the inbox or the queue, and
// PreviewOrderMail renders one. Delivery rewrites that index entry in the
// batch that deletes the entry, with when it went, the attempts and the
// entry's bytes, so a sent mail can still be shown.
//
// # What an email says
//
// Every email has a plain text part and an HTML alternative rendered from
// one view, so they say the same. A ticket (and a promotion, which is a
// ticket) carries the pass link and check-in code; when it comes from an
// order that cost money, a receipt: the lines at their unit prices, the
// discount, the total, the order number and the payment date in the
// event's time zone, amounts written "EUR 18.50". When the event has a
// start, a calendar file (package ics) is attached as event.ics, type
// CalendarType, and the message is multipart/mixed. A refund says the
// amount, what was refunded in all and whether the order is refunded in
// full; a cancellation says what was cancelled. Everything is read from
// the entry: rendering never asks an actor, and Preview renders a queued
// entry without sending it.
//
// # Delivery
//
// Each round opens one connection, renders each due retry and fresh
// entry, sends it with github.com/wneessen/go-mail, and settles every
// entry by itself:
//
//   - accepted: deleted (at least once: a crash between acceptance and the
//     delete sends the mail again on the next start);
//   - refused for now (a 4xx reply, at RCPT for an unknown domain say, or
//     the connection lost under it): retried after Config.RetryMin
//     doubling up to Config.RetryMax, jittered; after Config.MaxAttempts
//     such failures it is parked;
//   - refused for good (a 5xx reply, an address or entry that cannot be
//     rendered): parked with its last error, shown by Pending, and sent
//     again only after Retry (the admin API's retry).
//
// The other entries keep flowing meanwhile. When the relay cannot be
// reached at all (dial, TLS or login fails), no entry is charged: the
// whole sender backs off (Config.BackoffMin doubling to BackoffMax,
// jittered) and is not woken early. Without Config.SMTPAddr nothing is
// sent: mail stays queued, where Pending lists it.
//
// # Concurrency
//
// One goroutine (started by Start, stopped by Close) does all sending.
// Wake, Pending and Retry are safe from any goroutine; Wake never blocks,
// so an actor can call it (actors.Config.OnOwed). Owed runs inside the
// event actor that owes the mail (actors.OwedWork) and reads its machine
// there; it is a value without state.
package mail
