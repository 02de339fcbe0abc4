package shell

import (
	"errors"

	"ticketd/event"
)

// listLimit is the page size of the console's lists; csvMax bounds the
// rows of one CSV download (the lists page through the API's cursors).
const (
	ListLimit = 50
	CSVMax    = 100_000
)

// EventHead loads what every event page shows above its content.
func (c *Console) EventHead(r *Req, v *View, p Perm) (eventID, unitID string, err error) {
	eventID, unitID, err = r.EventUnit(p)
	if err != nil {
		return "", "", err
	}
	ev, err := AskOp(c, eventID, event.GetEvent{})
	if err != nil {
		return "", "", err
	}
	u, _ := r.Dir.Unit(unitID)
	v.Req, v.Unit, v.Event = r, &u, &ev
	v.Role = r.Role(unitID)
	v.CanWrite = Allowed(v.Role, PermWrite)
	return eventID, unitID, nil
}

// IsNotFound reports whether err is the core's not-found refusal.
func IsNotFound(err error) bool {
	var ee *event.Error
	return errors.As(err, &ee) && ee.Code == event.NotFound
}

// Deref is *s, "" for nil.
func Deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
