package console

import (
	"strconv"

	"ticketd/event"
)

// The event page's waiting-room section (decisions §19): the shop page's
// address to share, the room's settings, its live counts (waiting,
// admitted, admitted in the last minute, tokens used, expired) and the
// organizer's controls: set up or change the room, pause, resume, change
// the rate. One form, POST /console/events/{eventId}/queue, whose action
// says what to do; the room itself is PATCH /v1/events/{id} waitingRoom.
func (c *Console) setQueue(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	ev, err := askOp(c, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	f := map[string]string{"action": form(r.rc, "action"), "onSaleAt": form(r.rc, "onSaleAt"), "opensAt": form(r.rc, "opensAt"),
		"admitPerMinute": form(r.rc, "admitPerMinute"), "admissionMinutes": form(r.rc, "admissionMinutes")}
	v := &view{req: r, Form: f, Errors: map[string]string{}, Any: "queue"}
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
		if t := localTime(v, "waitingRoom", f["onSaleAt"], ev.Timezone); t != nil {
			room["onSaleAt"] = *t
		}
		if t := localTime(v, "waitingRoom", f["opensAt"], ev.Timezone); t != nil {
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
	if err = bindForm(map[string]any{"waitingRoom": room}, &cmd); err == nil && len(v.Errors) == 0 {
		var out event.Event
		if out, err = askOp(c, eventID, cmd); err == nil {
			r.audit("setWaitingRoom", unitID, map[string]string{"eventId": eventID}, out.WaitingRoom)
			return redirect(r, "/console/events/"+eventID)
		}
	}
	if err != nil && !fieldErrors(err, v) {
		return err
	}
	return c.showEventKeeping(r, v)
}

func init() {
	funcs["inZoneAt"] = func(t event.Time, tz string) string { return inZone(&t, tz) }
}
