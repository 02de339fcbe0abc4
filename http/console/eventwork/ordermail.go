package eventwork

import (
	"errors"
	"strings"
	"time"

	"ticketd/event"
	"ticketd/http/console/shell"
	"ticketd/mail"
	"ticketd/outbox"
)

// OrderMailer is the mail of one order as the console shows it
// (mail.Mailer): listed from the outbox's index by order, and previewed
// whether it is still queued or was sent. An Outbox without it shows no
// emails on the order page.
type OrderMailer interface {
	OrderMail(eventID, orderID string, limit int) ([]mail.Entry, error)
	PreviewOrderMail(eventID, orderID, id string) (mail.Entry, []byte, error)
}

// orderMailMax bounds the emails an order's page lists.
const orderMailMax = 50

// orderMail is the Deps' Outbox as an OrderMailer, nil when it is none.
func (c *pages) orderMail() OrderMailer {
	om, _ := c.Deps.Outbox.(OrderMailer)
	return om
}

// mailRow is one email of an order's page.
type mailRow struct {
	mail.Entry
	// Ref is the entry's id in a path segment ("/" written ".", as the
	// admin API's preview takes it).
	Ref string
}

// mailRef and mailID convert an entry id to a path segment and back.
func mailRef(id string) string { return strings.ReplaceAll(id, "/", ".") }
func mailID(ref string) string { return strings.ReplaceAll(ref, ".", "/") }

// ordersMail lists the emails sent about order o, oldest first.
func (c *pages) ordersMail(eventID string, o event.Order) ([]mailRow, error) {
	om := c.orderMail()
	if om == nil {
		return nil, nil
	}
	es, err := om.OrderMail(eventID, o.ID, orderMailMax)
	if err != nil {
		return nil, err
	}
	out := make([]mailRow, len(es))
	for i, e := range es {
		out[i] = mailRow{Entry: e, Ref: mailRef(e.ID)}
	}
	return out, nil
}

// mailPreviewData is the preview page of one email.
type mailPreviewData struct {
	Order   event.Order
	Mail    mailRow
	Message mail.Message
	// Unrenderable is why the mail cannot be rendered (it would be
	// parked for it), when it cannot.
	Unrenderable string
}

// previewMail shows one email of an order as it was (or will be) sent:
// its delivery state, headers, text, and the names of its attachments.
// The HTML part is served by mailHTML, in a sandbox.
func (c *pages) previewMail(r *shell.Req) error {
	v := &shell.View{}
	d, raw, err := c.loadMail(r, v)
	if err != nil {
		return err
	}
	if raw != nil {
		if d.Message, err = mail.ParseMessage(raw); err != nil {
			return err
		}
	}
	v.Title, v.Any = "Email to "+d.Mail.Email, d
	c.Render(r.RC, 200, "mailpreview", v)
	return nil
}

// mailHTML serves the HTML part of an order's email for reading, in a
// sandbox: no scripts, no forms, no requests but inline images.
func (c *pages) mailHTML(r *shell.Req) error {
	_, raw, err := c.loadMail(r, &shell.View{})
	if err != nil {
		return err
	}
	if raw == nil {
		return shell.ErrNotFound
	}
	msg, err := mail.ParseMessage(raw)
	if err != nil {
		return err
	}
	c.Headers(r.RC)
	r.RC.Response.Header.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox")
	r.RC.SetContentType("text/html; charset=utf-8")
	r.RC.SetBodyString(msg.HTML)
	return nil
}

// loadMail finds the path's email of the path's order, after the read
// permission on its event: another order's email is not found.
func (c *pages) loadMail(r *shell.Req, v *shell.View) (mailPreviewData, []byte, error) {
	var d mailPreviewData
	eventID, _, err := c.EventHead(r, v, shell.PermRead)
	if err != nil {
		return d, nil, err
	}
	om := c.orderMail()
	if om == nil {
		return d, nil, shell.ErrNotFound
	}
	if d.Order, err = shell.AskOp(c.Console, eventID, event.GetOrder{Ref: shell.Param(r.RC, "orderNumber")}); err != nil {
		return d, nil, err
	}
	e, raw, err := om.PreviewOrderMail(eventID, d.Order.ID, mailID(shell.Param(r.RC, "mailId")))
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		return d, nil, shell.ErrNotFound
	case err != nil && e.ID != "":
		d.Unrenderable, raw = err.Error(), nil
	case err != nil:
		return d, nil, err
	}
	d.Mail = mailRow{Entry: e, Ref: mailRef(e.ID)}
	return d, raw, nil
}

func init() {
	// whenIn writes a time of the outbox in the event's zone ("" for none).
	funcs["whenIn"] = func(t time.Time, tz string) string {
		if t.IsZero() {
			return ""
		}
		return shell.ShowTime(&event.Time{Time: t}, tz)
	}
}
