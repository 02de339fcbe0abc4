package api

import (
	"errors"
	"strings"
	"ticketd/event"

	thttp "ticketd/http"
	"ticketd/mail"
	"ticketd/outbox"
)

// OutboxPreviewQuery chooses the preview's form.
type OutboxPreviewQuery struct {
	Format string `query:"format" v:"enum=json|eml" doc:"json (default): the message read back as JSON; eml: the raw RFC 5322 message (message/rfc822), as the SMTP server would receive it."`
}

// OutboxPreview is a queued email rendered as it would be sent now.
type OutboxPreview struct {
	Mail        OutboxMail          `json:"mail" doc:"The outbox entry and its delivery state."`
	Headers     OutboxPreviewHeader `json:"headers"`
	Text        string              `json:"text" doc:"The plain text part."`
	HTML        string              `json:"html" doc:"The HTML alternative."`
	Attachments []OutboxAttachment  `json:"attachments" doc:"The attached files (a ticket's calendar file, event.ics), empty when none."`
}

// OutboxPreviewHeader is the top-level header of a previewed email.
type OutboxPreviewHeader struct {
	From        string `json:"from" doc:"The sender (TICKETD_MAIL_FROM)."`
	To          string `json:"to" doc:"The recipient: the buyer's or registrant's address."`
	Subject     string `json:"subject" doc:"Decoded (no encoded words)."`
	Date        string `json:"date" doc:"When rendered: the preview's time, not the send's."`
	ContentType string `json:"contentType" doc:"multipart/mixed with an attachment, else multipart/alternative."`
}

// OutboxAttachment is one attached file of a previewed email.
type OutboxAttachment struct {
	Filename    string `json:"filename" doc:"The file name the recipient sees, e.g. event.ics."`
	ContentType string `json:"contentType" doc:"E.g. text/calendar; method=PUBLISH; charset=UTF-8; name=\"event.ics\"."`
	Size        int    `json:"size" doc:"Decoded size in bytes."`
}

func (a *api) outboxPreviewRoute() thttp.Route {
	return thttp.Route{Method: "GET", Path: "/admin/v1/outbox/{entryId}/preview", OperationID: "previewOutboxMail", Tag: "Mail",
		Summary: "Render a queued email as it would be sent now, without sending it (JSON, or the raw message with format=eml)",
		Surface: thttp.Admin, Query: OutboxPreviewQuery{}, Success: 200, Response: OutboxPreview{}, Errors: []int{400, 404, 412},
		Handle: a.previewOutboxMail}
}

func (a *api) previewOutboxMail(c *thttp.Ctx) (any, error) {
	var q OutboxPreviewQuery
	if err := c.BindQuery(&q); err != nil {
		return nil, err
	}
	ob := a.outbox()
	if ob == nil {
		return nil, thttp.NewError(503, "the outbox is not available")
	}
	e, raw, err := ob.Preview(strings.ReplaceAll(c.Param("entryId"), ".", "/"))
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		return nil, thttp.NewError(404, "no such outbox entry (delivered already, or never owed)")
	case err != nil && e.ID != "":
		// The entry is there and cannot be rendered: the reason it would
		// be parked, which is what the operator came to see.
		he := thttp.NewError(412, "the entry cannot be rendered: "+err.Error())
		he.Reason = event.ReasonOutboxMailUnrenderable
		return nil, he
	case err != nil:
		return nil, err
	}
	if q.Format == "eml" {
		rc := c.RequestCtx()
		rc.SetContentType("message/rfc822")
		rc.Response.Header.Set("Content-Disposition", `inline; filename="`+outboxID(e.ID)+`.eml"`)
		rc.SetBody(raw)
		return nil, nil
	}
	m, err := mail.ParseMessage(raw)
	if err != nil {
		return nil, err
	}
	out := OutboxPreview{Mail: outboxView(e), Text: m.Text, HTML: m.HTML, Attachments: []OutboxAttachment{},
		Headers: OutboxPreviewHeader{From: m.Headers["From"], To: m.Headers["To"], Subject: m.Headers["Subject"],
			Date: m.Headers["Date"], ContentType: m.Headers["Content-Type"]}}
	for _, at := range m.Attachments {
		out.Attachments = append(out.Attachments, OutboxAttachment{Filename: at.Filename, ContentType: at.ContentType, Size: len(at.Content)})
	}
	return out, nil
}
