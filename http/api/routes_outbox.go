package api

import (
	"ticketd/ask"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/bind"
	"ticketd/mail"
)

// OutboxLister lists the mail the service owes, in key order after the key
// after, at most limit entries, retries a parked one and renders one
// without sending it (*mail.Mailer implements it).
type OutboxLister interface {
	Pending(after string, limit int) ([]mail.Entry, error)
	Retry(id string) (mail.Entry, error)
	// RetryRecorded is Retry committing the request's Idempotency-Key
	// record (nil: none) with the requeue.
	RetryRecorded(id string, rec *ask.Recorder) (mail.Entry, error)
	Preview(id string) (mail.Entry, []byte, error)
}

// OutboxMail is an undelivered email in the outbox: without SMTP
// (TICKETD_SMTP_ADDR) mail stays here, and while the SMTP server is down it
// waits here for the next retry.
type OutboxMail struct {
	Key            string     `json:"key" doc:"Outbox key: mail/{eventId}/{log seq}-{index}."`
	Kind           string     `json:"kind" v:"enum=ticket|promotion|refund|cancellation" doc:"ticket: the ticket email (pass link, calendar file, the receipt of a paid order); promotion: the ticket email of a registration that left the waitlist; refund: a refund of an order succeeded; cancellation: a registration, or an order before payment, was cancelled."`
	EventID        string     `json:"eventId"`
	EventName      string     `json:"eventName"`
	RegistrationID string     `json:"registrationId"`
	Email          string     `json:"email"`
	Name           string     `json:"name"`
	TicketName     string     `json:"ticketName"`
	PassURL        string     `json:"passUrl"`
	OrderNumber    *string    `json:"orderNumber" doc:"The order the email is about, null when none."`
	CreatedAt      event.Time `json:"createdAt"`

	// The delivery state: mail the SMTP server refused for now waits for
	// its next attempt, mail it refused for good is parked until retried.
	ID            string      `json:"id" doc:"The entry's id, for POST /admin/v1/outbox/{entryId}/retry."`
	Status        string      `json:"status" v:"enum=pending|retrying|parked" doc:"pending: not tried yet; retrying: refused for now (a 4xx answer or a lost connection), tried again at nextAttemptAt; parked: refused for good (a 5xx answer), sent again only after a retry request."`
	Attempts      int         `json:"attempts" doc:"Failed delivery attempts so far."`
	LastError     *string     `json:"lastError" doc:"The SMTP server's answer to the last failed attempt."`
	LastAttemptAt *event.Time `json:"lastAttemptAt"`
	NextAttemptAt *event.Time `json:"nextAttemptAt" doc:"When a retrying entry is tried again."`
}

func (a *api) outboxRoutes() []thttp.Route {
	return []thttp.Route{{Method: "GET", Path: "/admin/v1/outbox", OperationID: "listOutbox", Tag: "Mail",
		Summary: "List the mail the service still owes (ticket emails not yet accepted by the SMTP server)",
		Surface: thttp.Admin, Query: bind.ListQuery{}, Success: 200, Response: bind.List[OutboxMail]{}, Errors: []int{400},
		Handle: a.listOutbox}, a.outboxPreviewRoute()}
}

// outbox is the mail deliverer's outbox (app.Main's, through the layer).
func (a *api) outbox() OutboxLister {
	if m := a.ops.Mail(); m != nil {
		return m
	}
	return nil
}

func (a *api) listOutbox(c *thttp.Ctx) (any, error) {
	var q bind.ListQuery
	if err := c.BindQuery(&q); err != nil {
		return nil, err
	}
	after, err := bind.DecodeCursor(q.Cursor)
	if err != nil {
		return nil, err
	}
	if after != "" && !a.ops.ValidOutboxKey(after) {
		return nil, event.FieldError("cursor", "is not a valid cursor")
	}
	ob := a.outbox()
	if ob == nil {
		return nil, thttp.NewError(503, "the outbox is not available").WithReason(event.ReasonOutboxUnavailable)
	}
	got, err := ob.Pending(after, q.Limit+1)
	if err != nil {
		return nil, err
	}
	more := len(got) > q.Limit
	if more {
		got = got[:q.Limit]
	}
	out := make([]OutboxMail, len(got))
	for i, m := range got {
		out[i] = outboxView(m)
	}
	next := ""
	if more && len(out) > 0 {
		next = out[len(out)-1].Key
	}
	return bind.NewList(out, more, next), nil
}
