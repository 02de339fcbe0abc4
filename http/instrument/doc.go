// Package instrument wraps the handlers of ticketd's API route table for
// the two logs a request can leave: the developer log (Developer and
// Storefront requests note their concrete path; the rest of the entry
// comes from the server's Config.OnRequest) and the audit log (Developer
// and Admin writes that succeed become an audit.AuditEntry: who, what,
// from where, the record before and after, secrets redacted and bounded
// to audit.BodyMax). Routes wraps a table before http/api hands it to the
// server; entries go to the application layer (Recorder: ops.Ops), which
// finds each write's business unit and stores it. Storefront traffic, and
// a write answered with an alternative success status (a repeat that
// changed nothing), are not audited.
//
// An audited write's result is encoded once: the bytes of the audit entry
// are the response's (thttp.Ctx.SetEncodedBody). The record before a
// PATCH, PUT or DELETE is read through the GET route of the same path,
// when there is one: one more read through the actor.
//
// # Concurrency
//
// Routes is called once, before Serve. The wrapped handlers run on
// fasthttp's request goroutines and share only the Recorder, which must
// be safe for concurrent use.
package instrument
