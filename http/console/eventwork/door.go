package eventwork

import (
	"context"
	"strings"

	"ticketd/event"
	"ticketd/http/console/shell"
)

// doorScanMax bounds the registrations a name search reads (newest
// first): an email or a check-in code is one lookup in the core's
// indexes, whatever the size of the event; a name is looked for among
// the most recent registrations only.
const doorScanMax = 2000

// doorOption is one door: the event's entrance, a venue or a session.
type doorOption struct {
	Value, Label string
}

// doorData is the door page.
type doorData struct {
	Query   string
	Door    string
	Doors   []doorOption
	Found   []event.Registration
	Result  *event.CheckinResult
	Refused string
	Types   map[string]string // ticket type id -> name
	// In says, per found registration, when it checked in at the chosen
	// door ("" when it has not): search results show who is in.
	In map[string]string
	// Where names the door and the device of an earlier check-in (an
	// amber verdict says when and where).
	Where string
}

// Verdict is the result's class: a second check-in is amber, never the
// green of the first.
func (d *doorData) Verdict() string {
	switch {
	case d.Result == nil:
		return ""
	case d.Result.AlreadyCheckedIn:
		return "warn"
	}
	return "ok"
}

// TypeName is the name of a registration's ticket type.
func (d *doorData) TypeName(id *string) string {
	if id == nil {
		return ""
	}
	return d.Types[*id]
}

// doors lists the event's doors.
func (c *pages) doors(eventID string) ([]doorOption, error) {
	out := []doorOption{{"event", "Main entrance (event)"}}
	venues, err := shell.AskOp(c.Console, eventID, event.ListVenues{Limit: 100})
	if err != nil {
		return nil, err
	}
	for _, v := range venues.Data {
		out = append(out, doorOption{"venue:" + v.ID, "Venue: " + v.Name})
	}
	sessions, err := shell.AskOp(c.Console, eventID, event.ListSessions{Limit: 100})
	if err != nil {
		return nil, err
	}
	for _, s := range sessions.Data {
		out = append(out, doorOption{"session:" + s.ID, "Session: " + s.Title})
	}
	return out, nil
}

// doorPage is the check-in page of door members (and owners, admins): a
// search by name, email or check-in code, and a check-in at a chosen door.
func (c *pages) doorPage(r *shell.Req) error {
	return c.showDoor(r, &doorData{Query: strings.TrimSpace(string(r.RC.QueryArgs().Peek("q"))), Door: string(r.RC.QueryArgs().Peek("door"))}, 200)
}

func (c *pages) showDoor(r *shell.Req, d *doorData, status int) error {
	v := &shell.View{Title: "Door"}
	eventID, _, err := c.EventHead(r, v, shell.PermDoor)
	if err != nil {
		return err
	}
	if d.Doors, err = c.doors(eventID); err != nil {
		return err
	}
	if d.Door == "" {
		d.Door = "event"
	}
	types, err := shell.AskOp(c.Console, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return err
	}
	d.Types = map[string]string{}
	for _, t := range types.Data {
		d.Types[t.ID] = t.Name
	}
	if d.Query != "" && d.Result == nil {
		if d.Found, err = c.search(eventID, d.Query); err != nil {
			return err
		}
		if d.In, err = c.whoIsIn(eventID, d.Door, d.Found, v.Event.Timezone); err != nil {
			return err
		}
	}
	if d.Result != nil && d.Result.AlreadyCheckedIn {
		d.Where = c.where(d, d.Result.Checkin)
	}
	v.Any = d
	c.Render(r.RC, status, "door", v)
	return nil
}

// search finds registrations by email or check-in code (the core's
// indexes), or by name among the newest doorScanMax registrations.
func (c *pages) search(eventID, q string) ([]event.Registration, error) {
	if strings.Contains(q, "@") {
		list, err := shell.AskOp(c.Console, eventID, event.ListRegistrations{Email: q, Limit: 20})
		return list.Data, err
	}
	if !strings.ContainsRune(q, ' ') {
		list, err := shell.AskOp(c.Console, eventID, event.ListRegistrations{CheckinCode: q})
		if err != nil || len(list.Data) > 0 {
			return list.Data, err
		}
	}
	lq := strings.ToLower(q)
	var out []event.Registration
	cursor := ""
	for read := 0; read < doorScanMax && len(out) < 20; {
		list, err := shell.AskOp(c.Console, eventID, event.ListRegistrations{Limit: 100, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, reg := range list.Data {
			if reg.Name != nil && strings.Contains(strings.ToLower(*reg.Name), lq) {
				out = append(out, reg)
			}
		}
		read += len(list.Data)
		if !list.HasMore || list.NextCursor == nil {
			break
		}
		cursor = *list.NextCursor
	}
	return out, nil
}

// checkin records a check-in at the chosen door and shows the verdict.
func (c *pages) checkin(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermDoor)
	if err != nil {
		return err
	}
	d := &doorData{Query: shell.Form(r.RC, "q"), Door: shell.Form(r.RC, "door")}
	cmd := event.RecordCheckin{RegistrationID: shell.Form(r.RC, "registrationId"), CheckinCode: shell.Form(r.RC, "checkinCode"),
		SubjectType: "event", Method: "manual"}
	if kind, id, ok := strings.Cut(d.Door, ":"); ok {
		cmd.SubjectType, cmd.SubjectID = kind, id
	}
	var checked event.CheckinResult
	// The command is checked with the API's own rules, its empty fields
	// left out as a JSON client would leave them out; then it is the
	// layer's one check-in, the API's.
	if err = shell.Check(&cmd); err == nil {
		checked, err = c.Console.Ops.CheckIn(context.Background(), eventID, cmd)
	}
	if err != nil {
		v := &shell.View{}
		if !shell.FieldErrors(err, v) && !shell.IsNotFound(err) {
			return err
		}
		d.Refused = v.Error
		for f, m := range v.Errors {
			d.Refused = f + ": " + strings.TrimPrefix(m, "It ")
		}
		if shell.IsNotFound(err) {
			d.Refused = "No registration with that code."
		}
		return c.showDoor(r, d, 409)
	}
	if !checked.AlreadyCheckedIn {
		r.Audit("recordCheckin", unitID, map[string]string{"eventId": eventID, "registrationId": checked.Checkin.RegistrationID}, checked)
	}
	d.Result = &checked
	return c.showDoor(r, d, 200)
}

// doorOf splits a door option value ("event", "venue:ven_1").
func doorOf(v string) (typ, id string) {
	typ, id, _ = strings.Cut(v, ":")
	if typ == "" {
		typ = "event"
	}
	return typ, id
}

// whoIsIn answers, for each registration found, when it checked in at
// door (one indexed read each; a search shows at most 20).
func (c *pages) whoIsIn(eventID, door string, found []event.Registration, tz string) (map[string]string, error) {
	typ, id := doorOf(door)
	in := map[string]string{}
	for _, reg := range found {
		l, err := shell.AskOp(c.Console, eventID, event.ListCheckins{RegistrationID: reg.ID, SubjectType: typ, SubjectID: id, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(l.Data) > 0 {
			in[reg.ID] = shell.ShowTime(&l.Data[0].CheckedInAt, tz)
		}
	}
	return in, nil
}

// where names the door and the device of a check-in.
func (c *pages) where(d *doorData, ch event.Checkin) string {
	k := ch.SubjectType
	if ch.SubjectID != nil {
		k += ":" + *ch.SubjectID
	}
	door := k
	for _, o := range d.Doors {
		if o.Value == k {
			door = o.Label
		}
	}
	by := "the console or the API"
	if ch.DeviceID != nil {
		by = "device " + *ch.DeviceID
		if dev, ok := c.Ops.Directory().Device(*ch.DeviceID); ok {
			by = dev.Name
		}
	}
	return door + " · " + by
}
