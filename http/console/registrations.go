package console

import (
	"net/url"

	"ticketd/event"
)

// registrationAction runs one of the registration commands of the
// attendees page (approve, reject, cancel, rotate the pass link, send the
// ticket email again) and returns to the page it came from. The resend
// goes the hosted pages' way: the core's TicketIssued, whose mail the
// actor queues in the durable outbox with the change.
func (c *Console) registrationAction(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	id := param(r.rc, "registrationId")
	var cmd event.Command
	op := param(r.rc, "action")
	switch op {
	case "approve":
		cmd = event.ApproveRegistration{ID: id}
	case "reject":
		cmd = event.RejectRegistration{ID: id, Reason: form(r.rc, "reason")}
	case "cancel":
		cmd = event.CancelRegistration{ID: id}
	case "rotate-pass":
		cmd = event.RotatePass{ID: id}
	case "resend-ticket":
		cmd = event.ResendTicket{ID: id}
	default:
		return errNotFound
	}
	res, err := c.ask(eventID, cmd)
	if err != nil {
		v := &view{}
		if isNotFound(err) || !fieldErrors(err, v) {
			return err
		}
		msg := v.Error
		for f, m := range v.Errors {
			msg = f + ": " + m
		}
		return redirect(r, "/console/events/"+eventID+"/attendees?error="+url.QueryEscape(msg))
	}
	name := op + "Registration"
	if op == "resend-ticket" {
		name = "resendTicketEmail"
	}
	r.audit(name, unitID, map[string]string{"eventId": eventID, "registrationId": id}, res)
	back := url.Values{}
	if s := form(r.rc, "status"); s != "" {
		back.Set("status", s)
	}
	if op == "resend-ticket" {
		back.Set("resent", "1")
	}
	to := "/console/events/" + eventID + "/attendees"
	if len(back) > 0 {
		to += "?" + back.Encode()
	}
	return redirect(r, to)
}
