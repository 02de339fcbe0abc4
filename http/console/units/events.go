package units

import (
	"context"
	"strings"

	"ticketd/event"
	"ticketd/http/console/shell"
)

// createEvent creates an event of the unit (as draft).
func (c *pages) createEvent(r *shell.Req) error {
	unitID := shell.Param(r.RC, "unitId")
	if err := r.Need(unitID, shell.PermWrite); err != nil {
		return err
	}
	f := map[string]string{}
	for _, k := range []string{"name", "timezone", "startsAt", "endsAt", "currency"} {
		f[k] = shell.Form(r.RC, k)
	}
	v := &shell.View{Req: r, Form: f, Errors: map[string]string{}}
	body := map[string]any{"name": f["name"], "timezone": f["timezone"]}
	if f["currency"] != "" {
		body["currency"] = strings.ToUpper(f["currency"])
	}
	if t := shell.LocalTime(v, "startsAt", f["startsAt"], f["timezone"]); t != nil {
		body["startsAt"] = *t
	}
	if t := shell.LocalTime(v, "endsAt", f["endsAt"], f["timezone"]); t != nil {
		body["endsAt"] = *t
	}
	var cmd event.CreateEvent
	err := shell.BindForm(body, &cmd)
	if err == nil && len(v.Errors) == 0 {
		var res any
		if res, err = c.Ops.CreateEvent(context.Background(), unitID, c.Ops.NewEventID(), cmd); err == nil {
			ev := res.(event.Event)
			r.Audit("createEvent", unitID, map[string]string{"eventId": ev.ID}, ev)
			return shell.RedirectNotice(r, "/console/events/"+ev.ID, "“"+ev.Name+"” created as a draft. Next: add its ticket types and its venue, then publish it.")
		}
	}
	if err != nil && !shell.FieldErrors(err, v) {
		return err
	}
	return c.showUnit(r, v, 400)
}
