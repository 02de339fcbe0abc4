package mail

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"ticketd/outbox"
	"ticketd/persistence"
)

// Sent is the state of a mail that was delivered: neither the inbox nor
// the queue holds it; the index by order remembers it (see OrderMail).
const Sent outbox.State = "sent"

// MaxOrderMail bounds the mail OrderMail lists for one order (an order
// owes a handful: its ticket, a refund or two, a cancellation).
const MaxOrderMail = 100

var errEnough = errors.New("mail: enough")

// OrderMail lists the mail owed about order orderID of event eventID, in
// the order it was owed, at most limit (1 to MaxOrderMail): the entries
// still owed with their delivery state, and those delivered
// (State Sent, SentAt). It reads the index by order (OrderMailKey),
// never the whole inbox. Mail owed before that index existed is not
// listed.
func (m *Mailer) OrderMail(eventID, orderID string, limit int) ([]Entry, error) {
	limit = min(max(limit, 1), MaxOrderMail)
	type row struct {
		pos string
		rec []byte
	}
	var rows []row
	prefix := OrderMailKey(eventID, orderID, "")
	err := m.store.Scan(prefix, func(key, value []byte) error {
		if len(rows) == limit {
			return errEnough
		}
		rows = append(rows, row{pos: string(key[len(prefix):]), rec: append([]byte(nil), value...)})
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, fmt.Errorf("mail: order mail %s/%s: %w", eventID, orderID, err)
	}
	out := make([]Entry, 0, len(rows))
	for _, r := range rows {
		e, err := m.orderEntry(eventID+"/"+r.pos, r.rec)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// orderEntry is entry id as the inbox or the queue holds it, or as the index
// remembers it once delivered.
func (m *Mailer) orderEntry(id string, rec []byte) (Entry, error) {
	e, err := m.queue.Get(id)
	switch {
	case err == nil:
		return m.entry(e), nil
	case !errors.Is(err, outbox.ErrNotFound):
		return Entry{}, fmt.Errorf("mail: %w", err)
	}
	var om OrderMail
	out := Entry{ID: id, State: Sent}
	if err := json.Unmarshal(rec, &om); err != nil {
		out.LastError = "undecodable index entry: " + err.Error()
		return out, nil
	}
	out.Kind, out.Email, out.CreatedAt, out.SentAt, out.Attempts = om.Kind, om.Email, om.CreatedAt, om.SentAt, om.Attempts
	if len(om.Mail) > 0 {
		if err := json.Unmarshal(om.Mail, &out.TicketMail); err != nil {
			out.LastError = "undecodable outbox entry: " + err.Error()
		}
	}
	out.Key = InboxPrefix + id
	return out, nil
}

// PreviewOrderMail renders mail id (its key after InboxPrefix) of
// order orderID of event eventID as Preview does, and a delivered one
// from the bytes the index kept. outbox.ErrNotFound when the index has no
// such mail of that order, so a caller allowed to see the order sees its
// mail and no other.
func (m *Mailer) PreviewOrderMail(eventID, orderID, id string) (Entry, []byte, error) {
	pos, ok := strings.CutPrefix(id, eventID+"/")
	if !ok || pos == "" || strings.Contains(pos, "/") {
		return Entry{}, nil, outbox.ErrNotFound
	}
	rec, ok, err := m.store.Get(OrderMailKey(eventID, orderID, pos))
	if err != nil {
		return Entry{}, nil, fmt.Errorf("mail: preview %s: %w", id, err)
	}
	if !ok {
		return Entry{}, nil, outbox.ErrNotFound
	}
	e, err := m.orderEntry(id, rec)
	if err != nil {
		return Entry{}, nil, err
	}
	if e.State != Sent {
		return m.Preview(id)
	}
	if e.TicketMail.Key == "" && e.EventID == "" {
		return e, nil, outbox.ErrNotFound // delivered before its bytes were kept
	}
	msg, err := m.Render(e.TicketMail)
	if err != nil {
		return e, nil, err
	}
	var b bytes.Buffer
	if _, err := msg.WriteTo(&b); err != nil {
		return e, nil, fmt.Errorf("mail: preview %s: %w", id, err)
	}
	return e, b.Bytes(), nil
}

// recordSent rewrites, in b, the index entry of delivered entry e about
// an order: when it went, after how many attempts, and its bytes, which
// outlive the entry b deletes. Mail about no order has no index entry.
func (m *Mailer) recordSent(b *persistence.Batch, e outbox.Entry, now time.Time) error {
	var tm TicketMail
	if err := json.Unmarshal(e.Value, &tm); err != nil || tm.OrderID == "" {
		return nil
	}
	pos, ok := strings.CutPrefix(e.ID, tm.EventID+"/")
	if !ok || pos == "" {
		return nil
	}
	key := OrderMailKey(tm.EventID, tm.OrderID, pos)
	om := OrderMail{Kind: tm.Kind, Email: tm.Email, CreatedAt: tm.CreatedAt}
	if old, found, err := m.store.Get(key); err != nil {
		return fmt.Errorf("mail: record %s sent: %w", e.ID, err)
	} else if found {
		_ = json.Unmarshal(old, &om) // a bad one is replaced by what the entry says
	}
	om.SentAt, om.Attempts, om.Mail = now.UTC(), e.Attempts+1, json.RawMessage(e.Value)
	v, err := json.Marshal(om)
	if err != nil {
		return fmt.Errorf("mail: record %s sent: %w", e.ID, err)
	}
	b.Put(key, v)
	return nil
}
