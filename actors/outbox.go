package actors

import (
	"encoding/json"
	"fmt"
	"time"

	"ticketd/event"
)

// OutboxPrefix is the key prefix of outbox entries: mail the service owes
// somebody. An entry is written in the same batch as the change that owes
// it (so it is exactly as durable as that change) and deleted by the mailer
// once delivered. Key: "mail/" + event id + "/" + 16 hex digits of the log
// seq + "-" + 4 hex digits of the entry's index within the change.
const OutboxPrefix = "mail/"

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

// outboxTickets writes the ticket mail a TicketIssued change owes into the
// open batch. It reads the machine after the change was applied.
func (a *eventActor) outboxTickets(now time.Time, seq uint64, ch event.TicketIssued) {
	evName := ""
	if res, _, err := a.m.Decide(now, event.GetEvent{}); err == nil {
		evName = res.(event.Event).Name
	}
	for i, regID := range ch.RegistrationIDs {
		res, _, err := a.m.Decide(now, event.GetRegistration{ID: regID})
		if err != nil {
			a.sys.cfg.Logger.Error("outbox: ticket of unknown registration", "event", a.id, "registration", regID)
			continue
		}
		r := res.(event.Registration)
		m := TicketMail{
			Key:  fmt.Sprintf("%s%s/%016x-%04x", OutboxPrefix, a.id, seq, i),
			Kind: "ticket", EventID: a.id, EventName: evName, RegistrationID: r.ID, Email: r.Email,
			CheckinCode: r.CheckinCode, PassURL: r.PassURL, CreatedAt: ch.At,
		}
		if r.Name != nil {
			m.Name = *r.Name
		}
		if r.RegistrationTypeID != nil {
			if res, _, err := a.m.Decide(now, event.GetTicketType{ID: *r.RegistrationTypeID}); err == nil {
				m.TicketName = res.(event.TicketType).Name
			}
		}
		b, err := json.Marshal(m)
		if err != nil {
			panic(fmt.Sprintf("actors: encode outbox entry: %v", err))
		}
		a.com.put([]byte(m.Key), b)
	}
	a.outboxDirty = true
}
