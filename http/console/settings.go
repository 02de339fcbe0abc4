package console

import (
	"ticketd/event"
)

// setSite sets the event's public page address and description (empty
// clears), with the API's checks.
func (c *Console) setSite(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	f := map[string]string{"siteUrl": form(r.rc, "siteUrl"), "description": form(r.rc, "description")}
	v := &view{req: r, Form: f, Errors: map[string]string{}, Any: "site"}
	body := map[string]any{"siteUrl": nil, "description": nil}
	if f["siteUrl"] != "" {
		body["siteUrl"] = f["siteUrl"]
	}
	if f["description"] != "" {
		body["description"] = f["description"]
	}
	var cmd event.SetSite
	if err = bindForm(body, &cmd); err == nil {
		var ev event.Event
		if ev, err = askOp(c, eventID, cmd); err == nil {
			r.audit("setEventSite", unitID, map[string]string{"eventId": eventID}, ev)
			return redirect(r, "/console/events/"+eventID)
		}
	}
	if !fieldErrors(err, v) {
		return err
	}
	return c.showEventKeeping(r, v)
}

// setRefundPolicy replaces the event's refund policy: refundable, a
// deadline (in the event's timezone) or hours before the start, a fee.
func (c *Console) setRefundPolicy(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	f := map[string]string{}
	for _, k := range []string{"refundable", "deadline", "hoursBeforeStart", "feePercent"} {
		f[k] = form(r.rc, k)
	}
	v := &view{req: r, Form: f, Errors: map[string]string{}, Any: "policy"}
	ev, err := askOp(c, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	body := map[string]any{"refundable": f["refundable"] != "", "deadline": nil, "hoursBeforeStart": nil}
	if t := localTime(v, "deadline", f["deadline"], ev.Timezone); t != nil {
		body["deadline"] = *t
	}
	if h := f["hoursBeforeStart"]; h != "" {
		body["hoursBeforeStart"] = jsonNumberOr(h)
	}
	if p := f["feePercent"]; p != "" {
		body["feePercent"] = jsonNumberOr(p)
	}
	var cmd event.SetRefundPolicy
	if err = bindForm(body, &cmd); err == nil && len(v.Errors) == 0 {
		var pol event.RefundPolicy
		if pol, err = askOp(c, eventID, cmd); err == nil {
			r.audit("setRefundPolicy", unitID, map[string]string{"eventId": eventID}, pol)
			return redirect(r, "/console/events/"+eventID)
		}
	}
	if err != nil && !fieldErrors(err, v) {
		return err
	}
	return c.showEventKeeping(r, v)
}

// showEventKeeping renders the event page with a refused settings form:
// the edit form gets the event's values, the refused form what was typed.
func (c *Console) showEventKeeping(r *req, v *view) error {
	typed := v.Form
	v.Form = nil
	return c.showEvent(r, v, 400, typed)
}
