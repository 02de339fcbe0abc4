package mail

import (
	"encoding/json"
	"strings"
	"time"

	"ticketd/event"
	"ticketd/persistence"
)

// InboxPrefix is the key prefix of the mail inbox: mail the service owes
// somebody, not tried yet. An entry is written in the same batch as the
// change that owes it (so it is exactly as durable as that change) and
// deleted by the mailer once delivered (or moved to the outbox queue
// QueueName once tried). Key: "mail/" + event id (or "directory") + "/" +
// 16 hex digits of the log seq + "-" + 4 hex digits of the entry's index
// within the change.
const InboxPrefix = persistence.PrefixMailInbox

// OrderMailPrefix is the key prefix of the index of owed mail by order,
// so an order's page lists the mail sent about it without reading the
// whole inbox and queue. Key: "mailorder/" + event id + "/" + order id + "/" + the
// entry's position (its key after "mail/<eventId>/"), so an order's mail
// is one range scan in the order it was owed. It is written in the same
// batch as the entry it names, and rewritten by the mailer in the batch
// that deletes the delivered entry; it outlives the entry. Value: JSON of
// OrderMail.
const OrderMailPrefix = persistence.PrefixMailByOrder

// OrderMailKey is the index key of the entry at position pos of an
// event's mail about an order ("" pos: the prefix of that order's keys).
func OrderMailKey(eventID, orderID, pos string) []byte {
	return []byte(OrderMailPrefix + eventID + "/" + orderID + "/" + pos)
}

// OrderMail is the value of an OrderMailKey: who the mail went to and
// when it was owed; once delivered, when and after how many attempts, and
// the entry's bytes (delivery deletes the entry, and a preview renders
// from them). A version-free JSON document: new fields are optional.
type OrderMail struct {
	Kind      string          `json:"kind"`
	Email     string          `json:"email"`
	CreatedAt time.Time       `json:"createdAt"`
	SentAt    time.Time       `json:"sentAt,omitzero"`
	Attempts  int             `json:"attempts,omitempty"`
	Mail      json.RawMessage `json:"mail,omitempty"`
}

// ValidInboxKey reports whether k has the shape of a mail inbox key (see
// InboxPrefix), so a listing can refuse a cursor that names no position
// instead of paging from wherever it sorts. Whether the entry still exists
// is not asked: a delivered one is gone, and the next page follows it.
func ValidInboxKey(k string) bool {
	rest, ok := strings.CutPrefix(k, InboxPrefix)
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

// Kinds of owed mail (TicketMail.Kind). An entry without a kind was
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

// Kinds of the console's links (TicketMail.Kind), owed by the directory:
// the link is in PassURL, the unit's name in EventName, the role in
// TicketName.
const (
	MailInvitation = "invitation"
	MailReset      = "reset"
)

// MailKinds lists the kinds of mail that events owe (console links
// aside).
func MailKinds() []string {
	return []string{MailTicket, MailWaitlistSeated, MailRefund, MailCancellation}
}

// TicketMail is a mail inbox entry: one email the service owes a buyer or
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
