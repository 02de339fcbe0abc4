package eventsetup

import (
	"strconv"

	"ticketd/event"
	"ticketd/http/console/shell"
)

// The event page's waiting-room section (decisions §19): the shop page's
// address to share, the room's settings, its live counts (waiting,
// admitted, admitted in the last minute, tokens used, expired) and the
// organizer's controls: set up or change the room, pause, resume, change
// the rate. One form, POST /console/events/{eventId}/queue, whose action
// says what to do; the room itself is PATCH /v1/events/{id} waitingRoom.
func (c *pages) setQueue(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	ev, err := shell.AskOp(c.Console, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	f := map[string]string{"action": shell.Form(r.RC, "action"), "onSaleAt": shell.Form(r.RC, "onSaleAt"), "opensAt": shell.Form(r.RC, "opensAt"),
		"admitPerMinute": shell.Form(r.RC, "admitPerMinute"), "admissionMinutes": shell.Form(r.RC, "admissionMinutes")}
	v := &shell.View{Req: r, Form: f, Errors: map[string]string{}, Any: "queue"}
	room := map[string]any{}
	switch f["action"] {
	case "pause":
		room["paused"] = true
	case "resume":
		room["paused"] = false
	case "off":
		room["enabled"] = false
	default: // save
		room["enabled"] = true
		if t := shell.LocalTime(v, "waitingRoom", f["onSaleAt"], ev.Timezone); t != nil {
			room["onSaleAt"] = *t
		}
		if t := shell.LocalTime(v, "waitingRoom", f["opensAt"], ev.Timezone); t != nil {
			room["opensAt"] = *t
		}
		for _, k := range []string{"admitPerMinute", "admissionMinutes"} {
			if f[k] == "" {
				continue
			}
			n, err := strconv.Atoi(f[k])
			if err != nil {
				v.Errors["waitingRoom"] = k + ": it must be a whole number."
				continue
			}
			room[k] = n
		}
	}
	var cmd event.UpdateEvent
	if err = shell.BindForm(map[string]any{"waitingRoom": room}, &cmd); err == nil && len(v.Errors) == 0 {
		var out event.Event
		if out, err = shell.AskOp(c.Console, eventID, cmd); err == nil {
			r.Audit("setWaitingRoom", unitID, map[string]string{"eventId": eventID}, out.WaitingRoom)
			return shell.Redirect(r, "/console/events/"+eventID)
		}
	}
	if err != nil && !shell.FieldErrors(err, v) {
		return err
	}
	return c.showEventKeeping(r, v)
}

func init() {
	funcs["inZoneAt"] = func(t event.Time, tz string) string { return shell.InZone(&t, tz) }
}
