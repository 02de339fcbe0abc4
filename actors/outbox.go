package actors

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"ticketd/event"
)

// OutboxPrefix is the key prefix of outbox entries: mail the service owes
// somebody. An entry is written in the same batch as the change that owes
// it (so it is exactly as durable as that change) and deleted by the mailer
// once delivered. Key: "mail/" + event id + "/" + 16 hex digits of the log
// seq + "-" + 4 hex digits of the entry's index within the change.
const OutboxPrefix = "mail/"

// ValidOutboxKey reports whether k has the shape of an outbox key (see
// OutboxPrefix), so a listing can refuse a cursor that names no position
// instead of paging from wherever it sorts. Whether the entry still exists
// is not asked: a delivered one is gone, and the next page follows it.
func ValidOutboxKey(k string) bool {
	rest, ok := strings.CutPrefix(k, OutboxPrefix)
	i := strings.IndexByte(rest, '/')
	if !ok || i <= 0 || len(rest)-i-1 != 16+1+4 {
		return false
	}
	pos := rest[i+1:]
	return isLowerHex(pos[:16]) && pos[16] == '-' && isLowerHex(pos[17:])
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

// TicketMail is an outbox entry of kind "ticket": the ticket email of a
// confirmed registration with its pass link.
type TicketMail struct {
	Key            string    `json:"key"`
	Kind           string    `json:"kind"`
	EventID        string    `json:"eventId"`
	EventName      string    `json:"eventName"`
	RegistrationID string    `json:"registrationId"`
	Email          string    `json:"email"`
	Name           string    `json:"name"`
	TicketName     string    `json:"ticketName"`
	CheckinCode    string    `json:"checkinCode"`
	PassURL        string    `json:"passUrl"`
	CreatedAt      time.Time `json:"createdAt"`
}

// ticketMail writes the ticket mail of registration e.ID into the open
// batch as entry i of the change at seq. It reads the machine after the
// change was applied.
func (a *eventActor) ticketMail(now time.Time, seq uint64, i int, e event.Effect) {
	r, _, err := event.DecideOp(a.m, now, event.GetRegistration{ID: e.ID})
	if err != nil {
		a.sys.cfg.Logger.Error("outbox: ticket of unknown registration", "event", a.id, "registration", e.ID)
		return
	}
	m := TicketMail{
		Key:  fmt.Sprintf("%s%s/%016x-%04x", OutboxPrefix, a.id, seq, i),
		Kind: "ticket", EventID: a.id, RegistrationID: r.ID, Email: r.Email,
		CheckinCode: r.CheckinCode, PassURL: r.PassURL, CreatedAt: e.At,
	}
	if ev, _, err := event.DecideOp(a.m, now, event.GetEvent{}); err == nil {
		m.EventName = ev.Name
	}
	if r.Name != nil {
		m.Name = *r.Name
	}
	if r.RegistrationTypeID != nil {
		if t, _, err := event.DecideOp(a.m, now, event.GetTicketType{ID: *r.RegistrationTypeID}); err == nil {
			m.TicketName = t.Name
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("actors: encode outbox entry: %v", err))
	}
	a.com.put([]byte(m.Key), b)
	a.outboxDirty = true
}
