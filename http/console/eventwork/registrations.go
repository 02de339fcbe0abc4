package eventwork

import (
	"net/url"

	"ticketd/event"
	"ticketd/http/console/shell"
)

// registrationAction runs one of the registration commands of the
// attendees page (approve, reject, cancel, rotate the pass link, send the
// ticket email again) and returns to the page it came from. The resend
// goes the hosted pages' way: the core's TicketIssued, whose mail the
// actor queues in the durable outbox with the change.
func (c *pages) registrationAction(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	id := shell.Param(r.RC, "registrationId")
	var cmd event.Command
	op := shell.Param(r.RC, "action")
	switch op {
	case "approve":
		cmd = event.ApproveRegistration{ID: id}
	case "reject":
		cmd = event.RejectRegistration{ID: id, Reason: shell.Form(r.RC, "reason")}
	case "cancel":
		cmd = event.CancelRegistration{ID: id}
	case "rotate-pass":
		cmd = event.RotatePass{ID: id}
	case "resend-ticket":
		cmd = event.ResendTicket{ID: id}
	default:
		return shell.ErrNotFound
	}
	res, err := c.Ask(eventID, cmd)
	if err != nil {
		v := &shell.View{}
		if shell.IsNotFound(err) || !shell.FieldErrors(err, v) {
			return err
		}
		msg := v.Error
		for f, m := range v.Errors {
			msg = f + ": " + m
		}
		return shell.Redirect(r, "/console/events/"+eventID+"/attendees?error="+url.QueryEscape(msg))
	}
	name := op + "Registration"
	if op == "resend-ticket" {
		name = "resendTicketEmail"
	}
	r.Audit(name, unitID, map[string]string{"eventId": eventID, "registrationId": id}, res)
	back := url.Values{}
	if s := shell.Form(r.RC, "status"); s != "" {
		back.Set("status", s)
	}
	if op == "resend-ticket" {
		back.Set("resent", "1")
	}
	to := "/console/events/" + eventID + "/attendees"
	if len(back) > 0 {
		to += "?" + back.Encode()
	}
	return shell.Redirect(r, to)
}
