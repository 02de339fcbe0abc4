package units

import (
	"errors"

	"ticketd/http/console/shell"
	"ticketd/mail"
	"ticketd/outbox"
)

// outboxData is the outbox page.
type outboxData struct {
	Entries []mail.Entry
	Next    string
}

// outboxPage lists the mail the service still owes, service-wide, for the
// operator: waiting, retrying and parked mail, with "retry" on parked.
func (c *pages) outboxPage(r *shell.Req) error {
	if !r.Session.Operator {
		return shell.ErrForbidden
	}
	if c.Deps.Outbox == nil {
		return shell.ErrNotFound
	}
	es, err := c.Deps.Outbox.Pending(string(r.RC.QueryArgs().Peek("after")), shell.ListLimit)
	if err != nil {
		return err
	}
	d := outboxData{Entries: es}
	if len(es) == shell.ListLimit {
		d.Next = es[len(es)-1].ID
	}
	v := &shell.View{Req: r, Title: "Mail outbox", Any: d, Error: string(r.RC.QueryArgs().Peek("error"))}
	c.Render(r.RC, 200, "outbox", v)
	return nil
}

// retryMail sends a parked mail again now.
func (c *pages) retryMail(r *shell.Req) error {
	if !r.Session.Operator {
		return shell.ErrForbidden
	}
	if c.Deps.Outbox == nil {
		return shell.ErrNotFound
	}
	id := shell.Param(r.RC, "id")
	e, err := c.Deps.Outbox.Retry(id)
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		return shell.ErrNotFound
	case errors.Is(err, outbox.ErrNotParked):
		return shell.Redirect(r, "/console/outbox?error=That+mail+is+not+parked%3A+it+is+already+being+sent.")
	case err != nil:
		return err
	}
	if unit, ok := c.Ops.EventUnit(e.EventID); ok {
		r.Audit("retryOutboxMail", unit, map[string]string{"id": id, "eventId": e.EventID},
			map[string]any{"id": e.ID, "state": e.State, "email": e.Email})
	}
	return shell.Redirect(r, "/console/outbox")
}
