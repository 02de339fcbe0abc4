package console

import (
	"errors"

	"ticketd/mail"
	"ticketd/outbox"
)

// Outbox is the ticket-mail outbox as the console uses it (mail.Mailer).
type Outbox interface {
	Pending(after string, limit int) ([]mail.Entry, error)
	Retry(id string) (mail.Entry, error)
}

// outboxData is the outbox page.
type outboxData struct {
	Entries []mail.Entry
	Next    string
}

// outboxPage lists the mail the service still owes, service-wide, for the
// operator: waiting, retrying and parked mail, with "retry" on parked.
func (c *Console) outboxPage(r *req) error {
	if !r.s.operator {
		return errForbidden
	}
	if c.deps.Outbox == nil {
		return errNotFound
	}
	es, err := c.deps.Outbox.Pending(string(r.rc.QueryArgs().Peek("after")), listLimit)
	if err != nil {
		return err
	}
	d := outboxData{Entries: es}
	if len(es) == listLimit {
		d.Next = es[len(es)-1].ID
	}
	v := &view{req: r, Title: "Mail outbox", Any: d, Error: string(r.rc.QueryArgs().Peek("error"))}
	c.render(r.rc, 200, "outbox", v)
	return nil
}

// retryMail sends a parked mail again now.
func (c *Console) retryMail(r *req) error {
	if !r.s.operator {
		return errForbidden
	}
	if c.deps.Outbox == nil {
		return errNotFound
	}
	id := param(r.rc, "id")
	e, err := c.deps.Outbox.Retry(id)
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		return errNotFound
	case errors.Is(err, outbox.ErrNotParked):
		return redirect(r, "/console/outbox?error=That+mail+is+not+parked%3A+it+is+already+being+sent.")
	case err != nil:
		return err
	}
	if unit, ok := c.sys.EventUnit(e.EventID); ok {
		r.audit("retryOutboxMail", unit, map[string]string{"id": id, "eventId": e.EventID},
			map[string]any{"id": e.ID, "state": e.State, "email": e.Email})
	}
	return redirect(r, "/console/outbox")
}
