package mail

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"ticketd/directory"
	"ticketd/event"
	"ticketd/outbox"
	"ticketd/persistence"
)

// Owed writes the mail a change owes (the core's mail effects) into the
// change's batch: one inbox entry each, read from the machine after the
// change was applied, and its order index entry. The event actors call it
// (actors.OwedWork, wired by app.Main); it needs no Mailer, so a store
// without a relay still owes its mail. The zero value is ready (Logger
// nil: the default logger).
type Owed struct {
	Logger *slog.Logger
}

// Owe implements actors.OwedWork: it answers whether it wrote an entry.
func (o Owed) Owe(w persistence.KeyWriter, c *outbox.Owed) bool {
	n := 0
	for _, e := range c.Effects {
		switch e.Kind {
		case event.EffectTicketMail, event.EffectWaitlistSeatedMail, event.EffectRefundMail, event.EffectCancelMail,
			event.EffectOrderCancelMail:
			o.owe(w, c, n, e)
			n++
		}
	}
	return n > 0
}

// owe writes the mail effect e owes into w as entry i of c's change. A
// record that cannot be read is logged and owes nothing: the core only
// names records it has.
func (o Owed) owe(w persistence.KeyWriter, c *outbox.Owed, i int, e event.Effect) {
	m := TicketMail{Key: fmt.Sprintf("%s%s/%016x-%04x", InboxPrefix, c.EventID, c.Seq, i), EventID: c.EventID, CreatedAt: e.At}
	r := reader{m: c.Machine, now: c.Now}
	if ev, _, err := event.DecideOp(r.m, r.now, event.GetEvent{}); err == nil {
		m.EventName, m.Timezone = ev.Name, ev.Timezone
		if ev.StartsAt != nil {
			t := ev.StartsAt.Time
			m.StartsAt = &t
		}
		if ev.EndsAt != nil {
			t := ev.EndsAt.Time
			m.EndsAt = &t
		}
	}
	if l, _, err := event.DecideOp(r.m, r.now, event.GetLocation{}); err == nil {
		m.Location = event.PlaceText(deref(l.Venue), deref(l.Address), deref(l.OnlineURL))
	}
	ok := false
	switch e.Kind {
	case event.EffectTicketMail, event.EffectWaitlistSeatedMail:
		m.Kind = MailTicket
		if e.Kind == event.EffectWaitlistSeatedMail {
			m.Kind = MailWaitlistSeated
		}
		// The receipt is the fulfilment's: e.At is when the order was paid.
		if ok = r.registration(&m, e.ID); ok && m.OrderID != "" {
			r.order(&m, m.OrderID, m.Kind == MailTicket, e.At)
		}
	case event.EffectCancelMail:
		m.Kind = MailCancellation
		if ok = r.registration(&m, e.ID); ok && m.OrderID != "" {
			r.order(&m, m.OrderID, false, e.At)
		}
	case event.EffectOrderCancelMail:
		m.Kind = MailCancellation
		ok = r.order(&m, e.ID, false, e.At)
	case event.EffectRefundMail:
		m.Kind = MailRefund
		if ok = r.order(&m, e.ID, false, e.At); ok {
			ok = r.refund(&m, e.ID, e.RefundID)
		}
	}
	if !ok {
		log := o.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Error("mail: mail about an unknown record", "event", c.EventID, "effect", e.String())
		return
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("mail: encode inbox entry: %v", err))
	}
	w.Put([]byte(m.Key), b)
	if m.OrderID != "" {
		ix, err := json.Marshal(OrderMail{Kind: m.Kind, Email: m.Email, CreatedAt: m.CreatedAt})
		if err != nil {
			panic(fmt.Sprintf("mail: encode order mail index: %v", err))
		}
		w.Put(OrderMailKey(c.EventID, m.OrderID, m.Key[len(InboxPrefix)+len(c.EventID)+1:]), ix)
	}
}

// OweLink writes the mail of console link inv (an invitation, or a
// password reset when it names a member) into w, the batch of the
// directory change at seq that made it: url is the link, unit the name of
// its unit. The entry holds the link until it is delivered (the directory
// keeps only a hash).
func (Owed) OweLink(w persistence.KeyWriter, seq uint64, inv directory.Invitation, unit, url string) {
	kind := MailInvitation
	if inv.MemberID != "" {
		kind = MailReset
	}
	m := TicketMail{Key: DirectoryKey(seq), Kind: kind, Email: inv.Email, EventName: unit, TicketName: inv.Role,
		PassURL: url, CreatedAt: inv.CreatedAt.UTC()}
	v, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("mail: encode directory mail: %v", err))
	}
	w.Put([]byte(m.Key), v)
}

// directoryStream names the directory's mail in the inbox, where an
// event's id names its own.
const directoryStream = "directory"

// DirectoryKey is the inbox key of the mail the directory change at seq
// owes (the shape of InboxPrefix, with "directory" for the event).
func DirectoryKey(seq uint64) string {
	return fmt.Sprintf("%s%s/%016x-%04x", InboxPrefix, directoryStream, seq, 0)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// reader reads the records a mail is about from a machine.
type reader struct {
	m   *event.Machine
	now time.Time
}

// registration fills m from registration id.
func (r reader) registration(m *TicketMail, id string) bool {
	g, _, err := event.DecideOp(r.m, r.now, event.GetRegistration{ID: id})
	if err != nil {
		return false
	}
	m.RegistrationID, m.Email, m.CheckinCode, m.PassURL = g.ID, g.Email, g.CheckinCode, g.PassURL
	if g.Name != nil {
		m.Name = *g.Name
	}
	if g.OrderID != nil {
		m.OrderID = *g.OrderID
	}
	if m.Kind == MailCancellation && g.Reason != nil {
		m.Reason = *g.Reason
	}
	if g.RegistrationTypeID != nil {
		if t, _, err := event.DecideOp(r.m, r.now, event.GetTicketType{ID: *g.RegistrationTypeID}); err == nil {
			m.TicketName = t.Name
		}
	}
	return true
}

// order fills m from order id: its number and page, the buyer when m has
// none yet, and with receipt the receipt of what was paid at paidAt (only
// an order that cost something has one: a free registration gets its
// ticket and calendar file, no money receipt).
func (r reader) order(m *TicketMail, id string, receipt bool, paidAt time.Time) bool {
	o, _, err := event.DecideOp(r.m, r.now, event.GetOrder{Ref: id})
	if err != nil {
		return false
	}
	m.OrderID, m.OrderNumber, m.OrderURL, m.Currency = o.ID, o.OrderNumber, o.OrderURL, o.Currency
	if m.Email == "" {
		m.Email = o.Email
		if o.Name != nil {
			m.Name = *o.Name
		}
	}
	if receipt && (o.TotalAmount > 0 || o.DiscountAmount > 0) {
		m.Lines = make([]ReceiptLine, len(o.Items))
		for i, it := range o.Items {
			m.Lines[i] = ReceiptLine{Name: it.Name, Quantity: it.Quantity, UnitPrice: it.UnitPriceAmount}
		}
		m.Discount, m.Total, m.PaidAt = o.DiscountAmount, o.TotalAmount, paidAt
	}
	if m.Kind == MailRefund {
		if o.Status == event.OrderStatusRefunded && o.RegistrationID != nil {
			m.RegistrationID = *o.RegistrationID // the place went with the money
		}
		m.Total = o.TotalAmount
		for _, rf := range o.Refunds {
			if rf.Status == event.RefundSucceeded {
				m.Refunded += rf.Amount
			}
		}
	}
	return true
}

// refund fills m with refund refundID of order orderID.
func (r reader) refund(m *TicketMail, orderID, refundID string) bool {
	o, _, err := event.DecideOp(r.m, r.now, event.GetOrder{Ref: orderID})
	if err != nil {
		return false
	}
	for _, rf := range o.Refunds {
		if rf.ID == refundID {
			m.RefundID, m.RefundAmount, m.RefundFull = rf.ID, rf.Amount, rf.Full
			if rf.Reason != nil {
				m.Reason = *rf.Reason
			}
			return true
		}
	}
	return false
}
