package shell

import (
	"encoding/json"
	"strconv"
	"time"

	"ticketd/event"
	"ticketd/http/bind"
)

// TicketTypeRow is a ticket type with its live availability.
type TicketTypeRow struct {
	event.TicketType
	Avail event.Availability
}

// binder decodes the JSON a form stands for with the API's own rules, so
// the console accepts exactly what the API accepts and names the same
// fields.
var binder bind.Binder

// BindForm encodes body (the form as the API's JSON) and binds it into
// dst.
func BindForm(body map[string]any, dst any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return binder.Bind(b, dst)
}

// Check checks a command the console built from a form with the API's
// own rules (the binder over the command's JSON, whose empty optional
// fields are left out), so the console refuses what the API refuses, with
// the same field names.
func Check(cmd any) error {
	b, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	return binder.Bind(b, cmd)
}

// LocalTime reads a datetime-local field in the event's timezone: "" is
// absent, a bad value is reported on the field.
func LocalTime(v *View, field, s, tz string) *string {
	if s == "" {
		return nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	t, err := time.ParseInLocation("2006-01-02T15:04", s, loc)
	if err != nil {
		v.Errors[field] = Say(field, "must be a date and time, such as 2030-06-01 18:00")
		return nil
	}
	out := t.UTC().Format(time.RFC3339)
	return &out
}

// InZone formats t in the event's timezone for a datetime-local field.
func InZone(t *event.Time, tz string) string {
	if t == nil {
		return ""
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	return t.Time.In(loc).Format("2006-01-02T15:04")
}

// ShowTime formats t in the event's timezone for reading.
func ShowTime(t *event.Time, tz string) string {
	if t == nil {
		return ""
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	return t.Time.In(loc).Format("Mon 2 Jan 2006 15:04 MST")
}

// EventSettings are the event page's settings: site, description and
// refund policy, as stored or as typed into a refused form.
type EventSettings struct {
	SiteURL, Description                              string
	Refundable                                        bool
	Deadline, HoursBeforeStart, FeePercent, Effective string
}

// jsonNumberOr is a form field as the JSON number it stands for, or as a
// string when it is none, so the binder names the field.
func JSONNumberOr(s string) any {
	if json.Valid([]byte(s)) && s != "" && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
		return json.RawMessage(s)
	}
	return s
}

// Itoa is strconv.Itoa, short for the pages' links and counts.
func Itoa(n int) string { return strconv.Itoa(n) }
