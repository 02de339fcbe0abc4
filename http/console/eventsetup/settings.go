package eventsetup

import (
	"ticketd/event"
	"ticketd/http/console/shell"
)

// setSite sets the event's public page address and description (empty
// clears), with the API's checks.
func (c *pages) setSite(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	f := map[string]string{"siteUrl": shell.Form(r.RC, "siteUrl"), "description": shell.Form(r.RC, "description")}
	v := &shell.View{Req: r, Form: f, Errors: map[string]string{}, Any: "site"}
	body := map[string]any{"siteUrl": nil, "description": nil}
	if f["siteUrl"] != "" {
		body["siteUrl"] = f["siteUrl"]
	}
	if f["description"] != "" {
		body["description"] = f["description"]
	}
	var cmd event.SetSite
	if err = shell.BindForm(body, &cmd); err == nil {
		var ev event.Event
		if ev, err = shell.AskOp(c.Console, eventID, cmd); err == nil {
			r.Audit("setEventSite", unitID, map[string]string{"eventId": eventID}, ev)
			return shell.Redirect(r, "/console/events/"+eventID)
		}
	}
	if !shell.FieldErrors(err, v) {
		return err
	}
	return c.showEventKeeping(r, v)
}

// setRefundPolicy replaces the event's refund policy: refundable, a
// deadline (in the event's timezone) or hours before the start, a fee.
func (c *pages) setRefundPolicy(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	f := map[string]string{}
	for _, k := range []string{"refundable", "deadline", "hoursBeforeStart", "feePercent"} {
		f[k] = shell.Form(r.RC, k)
	}
	v := &shell.View{Req: r, Form: f, Errors: map[string]string{}, Any: "policy"}
	ev, err := shell.AskOp(c.Console, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	body := map[string]any{"refundable": f["refundable"] != "", "deadline": nil, "hoursBeforeStart": nil}
	if t := shell.LocalTime(v, "deadline", f["deadline"], ev.Timezone); t != nil {
		body["deadline"] = *t
	}
	if h := f["hoursBeforeStart"]; h != "" {
		body["hoursBeforeStart"] = shell.JSONNumberOr(h)
	}
	if p := f["feePercent"]; p != "" {
		body["feePercent"] = shell.JSONNumberOr(p)
	}
	var cmd event.SetRefundPolicy
	if err = shell.BindForm(body, &cmd); err == nil && len(v.Errors) == 0 {
		var pol event.RefundPolicy
		if pol, err = shell.AskOp(c.Console, eventID, cmd); err == nil {
			r.Audit("setRefundPolicy", unitID, map[string]string{"eventId": eventID}, pol)
			return shell.Redirect(r, "/console/events/"+eventID)
		}
	}
	if err != nil && !shell.FieldErrors(err, v) {
		return err
	}
	return c.showEventKeeping(r, v)
}

// showEventKeeping renders the event page with a refused settings form:
// the edit form gets the event's values, the refused form what was typed.
func (c *pages) showEventKeeping(r *shell.Req, v *shell.View) error {
	typed := v.Form
	v.Form = nil
	return c.showEvent(r, v, 400, typed)
}
