package api

import (
	"errors"
	"strings"

	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/mail"
	"ticketd/ops"
	"ticketd/outbox"
)

func (a *api) outboxRetryRoutes() []thttp.Route {
	return []thttp.Route{{Method: "POST", Path: "/admin/v1/outbox/{entryId}/retry", OperationID: "retryOutboxMail", Tag: "Mail",
		Summary: "Send a parked email again now (after fixing what the SMTP server refused)",
		Surface: thttp.Admin, Success: 200, Response: OutboxMail{}, Errors: []int{404, 409},
		Handle: a.retryOutboxMail}}
}

// outboxID makes an entry id (eventId/seq-index) one path segment; the
// ids hold no '.' (lower-case ULIDs and hex).
func outboxID(id string) string { return strings.ReplaceAll(id, "/", ".") }

func outboxView(m mail.Entry) OutboxMail {
	v := OutboxMail{ID: outboxID(m.ID), Key: m.Key, Status: string(m.State), Attempts: m.Attempts, Kind: m.Kind,
		EventID: m.EventID, EventName: m.EventName, RegistrationID: m.RegistrationID, Email: m.Email, Name: m.Name,
		TicketName: m.TicketName, PassURL: m.PassURL, CreatedAt: event.At(m.CreatedAt)}
	if m.OrderNumber != "" {
		n := m.OrderNumber
		v.OrderNumber = &n
	}
	if m.LastError != "" {
		e := m.LastError
		v.LastError = &e
	}
	if !m.LastAttemptAt.IsZero() {
		t := event.At(m.LastAttemptAt)
		v.LastAttemptAt = &t
	}
	if m.State == outbox.Retrying && !m.NextAttemptAt.IsZero() {
		t := event.At(m.NextAttemptAt)
		v.NextAttemptAt = &t
	}
	return v
}

func (a *api) retryOutboxMail(c *thttp.Ctx) (any, error) {
	ob := a.outbox()
	if ob == nil {
		return nil, thttp.NewError(503, "the outbox is not available").WithReason(event.ReasonOutboxUnavailable)
	}
	// A keyed retry commits its record with the requeue: a retry of it
	// whose answer was lost replays it instead of requeueing again.
	rec := recorder(c, func(res any) any { return outboxView(res.(mail.Entry)) })
	e, err := ob.RetryRecorded(strings.ReplaceAll(c.Param("entryId"), ".", "/"), rec)
	if v, ok := ops.Replayed(err); ok {
		return nil, c.Replay(v)
	}
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		return nil, thttp.NewError(404, "no such outbox entry (delivered already, or never owed)")
	case errors.Is(err, outbox.ErrNotParked):
		return nil, thttp.NewError(409, "the entry is not parked: it is sent without a request").WithReason(event.ReasonOutboxEntryNotParked)
	case err != nil:
		return nil, err
	}
	return outboxView(e), nil
}
