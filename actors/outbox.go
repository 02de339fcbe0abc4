package actors

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"ticketd/event"
)

// OutboxPrefix is the key prefix of outbox entries: mail the service owes
// somebody. An entry is written in the same batch as the change that owes
// it (so it is exactly as durable as that change) and deleted by the mailer
// once delivered. Key: "mail/" + event id + "/" + 16 hex digits of the log
// seq + "-" + 4 hex digits of the entry's index within the change.
const OutboxPrefix = "mail/"

// OrderMailPrefix is the key prefix of the index of outbox mail by order,
// so an order's page lists the mail sent about it without reading the
// whole outbox. Key: "mailorder/" + event id + "/" + order id + "/" + the
// entry's position (its key after "mail/<eventId>/"), so an order's mail
// is one range scan in the order it was owed. It is written in the same
// batch as the entry it names, and rewritten by the mailer in the batch
// that deletes the delivered entry; it outlives the entry. Value: JSON of
// OrderMail.
const OrderMailPrefix = "mailorder/"

// OrderMailKey is the index key of the entry at position pos of an
// event's mail about an order ("" pos: the prefix of that order's keys).
func OrderMailKey(eventID, orderID, pos string) []byte {
	return []byte(OrderMailPrefix + eventID + "/" + orderID + "/" + pos)
}

// OrderMail is the value of an OrderMailKey: who the mail went to and
// when it was owed; once delivered, when and after how many attempts, and
// the entry's bytes (the outbox deletes the entry, and a preview renders
// from them). A version-free JSON document: new fields are optional.
type OrderMail struct {
	Kind      string          `json:"kind"`
	Email     string          `json:"email"`
	CreatedAt time.Time       `json:"createdAt"`
	SentAt    time.Time       `json:"sentAt,omitzero"`
	Attempts  int             `json:"attempts,omitempty"`
	Mail      json.RawMessage `json:"mail,omitempty"`
}

// ValidOutboxKey reports whether k has the shape of an outbox key (see
// OutboxPrefix), so a listing can refuse a cursor that names no position
// instead of paging from wherever it sorts. Whether the entry still exists
// is not asked: a delivered one is gone, and the next page follows it.
func ValidOutboxKey(k string) bool {
	rest, ok := strings.CutPrefix(k, OutboxPrefix)
	i := strings.IndexByte(rest, '/')
	if !ok || i <= 0 || len(rest)-i-1 != 16+1+4 {
		return false
	}
	pos := rest[i+1:]
	return isLowerHex(pos[:16]) && pos[16] == '-' && isLowerHex(pos[17:])
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

// Kinds of outbox mail (TicketMail.Kind). An entry without a kind was
// written by an older build and is a ticket email.
const (
	// MailTicket: the ticket email of a confirmed registration (pass
	// link, calendar file, and the receipt of its order when paid).
	MailTicket = "ticket"
	// MailWaitlistSeated: the ticket email of a registration seated from
	// the waitlist (it took a place that came free). The stored kind is
	// "promotion", its name before issue 32.
	MailWaitlistSeated = "promotion"
	// MailRefund: a refund of an order succeeded.
	MailRefund = "refund"
	// MailCancellation: a registration was cancelled (RegistrationID set)
	// or an order was cancelled before payment (only the order set).
	MailCancellation = "cancellation"
)

// MailPromotion is the old name of MailWaitlistSeated.
//
// Deprecated: renamed to MailWaitlistSeated (issue 32); the alias goes once
// the branches of this session are merged.
const MailPromotion = MailWaitlistSeated

// MailKinds lists the kinds of outbox mail.
func MailKinds() []string {
	return []string{MailTicket, MailWaitlistSeated, MailRefund, MailCancellation}
}

// TicketMail is an outbox entry: one email the service owes a buyer or
// registrant, with everything its rendering needs, read from the machine
// when the change that owes it was applied (so a later edit of the event
// does not rewrite mail already owed, and the mailer never asks an actor).
type TicketMail struct {
	Key            string    `json:"key"`
	Kind           string    `json:"kind"`
	EventID        string    `json:"eventId"`
	EventName      string    `json:"eventName"`
	RegistrationID string    `json:"registrationId"`
	Email          string    `json:"email"`
	Name           string    `json:"name"`
	TicketName     string    `json:"ticketName"`
	CheckinCode    string    `json:"checkinCode"`
	PassURL        string    `json:"passUrl"`
	CreatedAt      time.Time `json:"createdAt"`

	// The event's time and place, for the calendar file: StartsAt nil
	// means no calendar file. Timezone is the event's IANA zone; Location
	// its venue and address on one line.
	Timezone string     `json:"timezone,omitempty"`
	StartsAt *time.Time `json:"startsAt,omitempty"`
	EndsAt   *time.Time `json:"endsAt,omitempty"`
	Location string     `json:"location,omitempty"`

	// The order the mail is about, if any.
	OrderID     string `json:"orderId,omitempty"`
	OrderNumber string `json:"orderNumber,omitempty"`
	OrderURL    string `json:"orderUrl,omitempty"`
	// The receipt (ticket email of an order that cost money): Lines at
	// their undiscounted unit prices, Discount taken off, Total paid at
	// PaidAt, all in Currency. Money is in minor units.
	Currency string        `json:"currency,omitempty"`
	Lines    []ReceiptLine `json:"lines,omitempty"`
	Discount event.Money   `json:"discount,omitempty"`
	Total    event.Money   `json:"total,omitempty"`
	PaidAt   time.Time     `json:"paidAt,omitzero"`

	// A refund (kind refund): its amount, whether it refunds the order in
	// full, and its reason; Refunded is what the order had back in all.
	RefundID     string      `json:"refundId,omitempty"`
	RefundAmount event.Money `json:"refundAmount,omitempty"`
	RefundFull   bool        `json:"refundFull,omitempty"`
	Refunded     event.Money `json:"refunded,omitempty"`
	// Reason is a refund's or a cancellation's reason, when one was given.
	Reason string `json:"reason,omitempty"`
}

// ReceiptLine is one line of a receipt.
type ReceiptLine struct {
	Name      string      `json:"name"`
	Quantity  int         `json:"quantity"`
	UnitPrice event.Money `json:"unitPrice"`
}

// Amount is the line's total before any discount.
func (l ReceiptLine) Amount() event.Money { return l.UnitPrice * event.Money(l.Quantity) }

// mailEntry writes the mail effect e owes into the open batch as entry i
// of the change at seq. It reads the machine after the change was
// applied. A record that cannot be read is logged and owes nothing: the
// core only names records it has.
func (a *eventActor) mailEntry(now time.Time, seq uint64, i int, e event.Effect) {
	m := TicketMail{Key: fmt.Sprintf("%s%s/%016x-%04x", OutboxPrefix, a.id, seq, i), EventID: a.id, CreatedAt: e.At}
	if ev, _, err := event.DecideOp(a.m, now, event.GetEvent{}); err == nil {
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
	if l, _, err := event.DecideOp(a.m, now, event.GetLocation{}); err == nil {
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
		if ok = a.mailRegistration(now, &m, e.ID); ok && m.OrderID != "" {
			a.mailOrder(now, &m, m.OrderID, m.Kind == MailTicket, e.At)
		}
	case event.EffectCancelMail:
		m.Kind = MailCancellation
		if ok = a.mailRegistration(now, &m, e.ID); ok && m.OrderID != "" {
			a.mailOrder(now, &m, m.OrderID, false, e.At)
		}
	case event.EffectOrderCancelMail:
		m.Kind = MailCancellation
		ok = a.mailOrder(now, &m, e.ID, false, e.At)
	case event.EffectRefundMail:
		m.Kind = MailRefund
		if ok = a.mailOrder(now, &m, e.ID, false, e.At); ok {
			ok = a.mailRefund(now, &m, e.ID, e.RefundID)
		}
	}
	if !ok {
		a.sys.cfg.Logger.Error("outbox: mail about an unknown record", "event", a.id, "effect", e.String())
		return
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("actors: encode outbox entry: %v", err))
	}
	a.com.put([]byte(m.Key), b)
	if m.OrderID != "" {
		ix, err := json.Marshal(OrderMail{Kind: m.Kind, Email: m.Email, CreatedAt: m.CreatedAt})
		if err != nil {
			panic(fmt.Sprintf("actors: encode order mail index: %v", err))
		}
		a.com.put(OrderMailKey(a.id, m.OrderID, m.Key[len(OutboxPrefix)+len(a.id)+1:]), ix)
	}
	a.outboxDirty = true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// mailRegistration fills m from registration id.
func (a *eventActor) mailRegistration(now time.Time, m *TicketMail, id string) bool {
	r, _, err := event.DecideOp(a.m, now, event.GetRegistration{ID: id})
	if err != nil {
		return false
	}
	m.RegistrationID, m.Email, m.CheckinCode, m.PassURL = r.ID, r.Email, r.CheckinCode, r.PassURL
	if r.Name != nil {
		m.Name = *r.Name
	}
	if r.OrderID != nil {
		m.OrderID = *r.OrderID
	}
	if m.Kind == MailCancellation && r.Reason != nil {
		m.Reason = *r.Reason
	}
	if r.RegistrationTypeID != nil {
		if t, _, err := event.DecideOp(a.m, now, event.GetTicketType{ID: *r.RegistrationTypeID}); err == nil {
			m.TicketName = t.Name
		}
	}
	return true
}

// mailOrder fills m from order id: its number and page, the buyer when m
// has none yet, and with receipt the receipt of what was paid at paidAt
// (only an order that cost something has one: a free registration gets
// its ticket and calendar file, no money receipt).
func (a *eventActor) mailOrder(now time.Time, m *TicketMail, id string, receipt bool, paidAt time.Time) bool {
	o, _, err := event.DecideOp(a.m, now, event.GetOrder{Ref: id})
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
		for _, r := range o.Refunds {
			if r.Status == event.RefundSucceeded {
				m.Refunded += r.Amount
			}
		}
	}
	return true
}

// mailRefund fills m with refund refundID of order orderID.
func (a *eventActor) mailRefund(now time.Time, m *TicketMail, orderID, refundID string) bool {
	o, _, err := event.DecideOp(a.m, now, event.GetOrder{Ref: orderID})
	if err != nil {
		return false
	}
	for _, r := range o.Refunds {
		if r.ID == refundID {
			m.RefundID, m.RefundAmount, m.RefundFull = r.ID, r.Amount, r.Full
			if r.Reason != nil {
				m.Reason = *r.Reason
			}
			return true
		}
	}
	return false
}
