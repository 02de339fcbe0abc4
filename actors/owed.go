package actors

import (
	"time"

	"ticketd/directory"
	"ticketd/event"
	"ticketd/outbox"
	"ticketd/persistence"
)

// OwedWork carries out what a change of an event owes the world (the
// core's Effects, like raft's Ready): it writes its entries (mail,
// webhook events, pending refunds, pages to close) into the batch that
// logs the change, so an entry is exactly as durable as the change that
// owes it. Each owner of owed work implements it with its own format
// (mail.Owed, webhooks.Owed, payments.Owed); app.Main wires them
// (Config.Owed). Owe runs inside the event's actor and must not block.
type OwedWork interface {
	// Owe writes the entries c's effects owe into w and answers whether
	// its sender should be woken once they are durable (Config.OnOwed).
	Owe(w persistence.KeyWriter, c *outbox.Owed) bool
}

// LinkMail writes the mail of a console link (an invitation, or a password
// reset when inv names a member) into w, the batch of the directory change
// at seq that made the link: url is the link (it is mailed, never stored
// in the directory), unit the name of its unit. mail.Owed implements it.
type LinkMail interface {
	OweLink(w persistence.KeyWriter, seq uint64, inv directory.Invitation, unit, url string)
}

// keyWriter writes into a committer's open batch.
type keyWriter struct{ c *committer }

func (w keyWriter) Put(key, value []byte) { w.c.put(key, value) }
func (w keyWriter) Delete(key []byte)     { w.c.del(key) }

// carryOut hands what the change at seq owes the world (its effects, in
// the core's order) to each OwedWork, which writes it into the open batch.
// The work reads the machine after the change was applied, so it is the
// record as the change left it.
func (a *eventActor) carryOut(now time.Time, seq uint64, effs []event.Effect, fes []event.FeedEntry) {
	if len(a.sys.cfg.Owed) == 0 {
		return
	}
	if a.owed.Unit == nil {
		a.owed.Unit = a.unit
	}
	a.owed.EventID, a.owed.Seq, a.owed.Now, a.owed.Machine, a.owed.Effects, a.owed.Feed = a.id, seq, now, a.m, effs, fes
	for _, o := range a.sys.cfg.Owed {
		if o.Owe(keyWriter{&a.com}, &a.owed) {
			a.owedDirty = true
		}
	}
	a.owed.Machine, a.owed.Effects, a.owed.Feed = nil, nil, nil
}

// unit is the event's business unit ("" when not indexed yet).
func (a *eventActor) unit() string {
	u, _ := a.sys.EventUnit(a.id)
	return u
}
