package webhooks

import (
	"encoding/json"
	"fmt"
	"time"

	"ticketd/event"
	"ticketd/outbox"
	"ticketd/persistence"
)

// InboxPrefix is the key prefix of the webhook inbox: outbound webhook
// events the service owes the business unit's endpoints. Like the mail
// inbox, an entry is written in the same batch as the change that causes
// it (Owed), so it is exactly as durable as that change; the deliverer
// fans it out to the subscribed endpoints and deletes it. Key: "hook/" +
// event id + "/" + 16 hex digits of the log seq + "-" + 4 hex digits of the
// entry's index within the change.
const InboxPrefix = persistence.PrefixHookInbox

// Webhook event types.
// The core names them (event.Effect); these are its names.
const (
	HookRegistrationCreated   = event.HookRegistrationCreated
	HookRegistrationConfirmed = event.HookRegistrationConfirmed
	HookRegistrationCancelled = event.HookRegistrationCancelled
	HookCheckinCreated        = event.HookCheckinCreated
	HookOrderPaid             = event.HookOrderPaid
	// HookOrderRefunded fires when a refund of a paid order succeeds at
	// the payment provider, partial or full; its data is the order with
	// its refunds (status refunded once nothing is left to refund).
	HookOrderRefunded = event.HookOrderRefunded
	// HookCheckinConflict fires for a door conflict (decisions §18): a
	// scan a device admitted offline that was refused or used already.
	HookCheckinConflict = event.HookCheckinConflict
)

// HookTypes lists every webhook event type, for validating subscriptions.
func HookTypes() []string {
	return []string{HookRegistrationCreated, HookRegistrationConfirmed, HookRegistrationCancelled,
		HookCheckinCreated, HookOrderPaid, HookOrderRefunded, HookCheckinConflict}
}

// HookEvent is one webhook inbox entry. ID is derived from the key, so it
// is the same on every delivery attempt and to every endpoint.
type HookEvent struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	EventID   string    `json:"eventId"`
	UnitID    string    `json:"unitId"`
	CreatedAt time.Time `json:"createdAt"`
	// Seq is the change feed's seq of the change the webhook is about
	// (decisions §20): a receiver that sees a gap fills it from the feed.
	Seq  uint64          `json:"seq,omitempty"`
	Data json.RawMessage `json:"data"`
}

// hookCheckin is the data of a checkin.created webhook.
type hookCheckin struct {
	ID             string    `json:"id"`
	DeviceID       string    `json:"deviceId,omitempty"`
	EventID        string    `json:"eventId"`
	RegistrationID string    `json:"registrationId"`
	SubjectType    string    `json:"subjectType"`
	SubjectID      string    `json:"subjectId,omitempty"`
	Method         string    `json:"method"`
	CheckedInAt    time.Time `json:"checkedInAt"`
}

// Owed writes the webhook events a change owes (the core's webhook
// effects) into the change's batch, their data read from the machine after
// the change was applied, so it is the record as the change left it. The
// event actors call it (actors.OwedWork, wired by app.Main).
type Owed struct {
	// Want, if set, says whether a unit has an endpoint for an event type
	// (Service.Subscribed); a type nobody listens to costs that lookup:
	// nothing is read, encoded or written. Nil: every type is queued.
	Want func(unitID, typ string) bool
}

// Owe implements actors.OwedWork: it answers whether it wrote an entry.
func (o Owed) Owe(w persistence.KeyWriter, c *outbox.Owed) bool {
	n := 0
	var unit string
	var unitKnown bool
	// The last type asked about and its answer: a batch of door scans
	// owes up to 500 checkin.created webhooks in one change.
	var lastHook string
	var lastWant bool
	for _, e := range c.Effects {
		if e.Kind != event.EffectWebhook {
			continue
		}
		if !unitKnown {
			unit, unitKnown = c.Unit(), true
		}
		if o.Want != nil {
			if e.Hook != lastHook {
				lastHook, lastWant = e.Hook, o.Want(unit, e.Hook)
			}
			if !lastWant {
				continue // nobody listens: no inbox entry, no write
			}
		}
		data, ok := hookData(c, e)
		if !ok {
			continue
		}
		putHook(w, c, n, unit, e.Hook, c.FeedSeq(e.ID), data)
		n++
	}
	return n > 0
}

// hookData reads the data of webhook e.
func hookData(c *outbox.Owed, e event.Effect) (any, bool) {
	switch e.Hook {
	case HookCheckinCreated:
		k := e.Checkin
		return hookCheckin{ID: k.ID, EventID: c.EventID, RegistrationID: k.RegID,
			SubjectType: k.SubjectType, SubjectID: k.SubjectID, Method: k.Method, CheckedInAt: checkedInAt(k).UTC(), DeviceID: k.DeviceID}, true
	case HookCheckinConflict:
		return c.Machine.ConflictView(e.Conflict), true
	case HookOrderPaid, HookOrderRefunded:
		o, _, err := event.DecideOp(c.Machine, c.Now, event.GetOrder{Ref: e.ID})
		return o, err == nil
	}
	r, _, err := event.DecideOp(c.Machine, c.Now, event.GetRegistration{ID: e.ID})
	return r, err == nil
}

// putHook writes webhook entry n of c's change.
func putHook(w persistence.KeyWriter, c *outbox.Owed, n int, unit, typ string, feedSeq uint64, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("webhooks: encode webhook data: %v", err))
	}
	key := fmt.Sprintf("%s%s/%016x-%04x", InboxPrefix, c.EventID, c.Seq, n)
	h := HookEvent{
		ID:   fmt.Sprintf("whevt_%s_%x_%x", c.EventID, c.Seq, n),
		Type: typ, EventID: c.EventID, UnitID: unit, CreatedAt: c.Now.UTC(), Seq: feedSeq, Data: b,
	}
	v, err := json.Marshal(h)
	if err != nil {
		panic(fmt.Sprintf("webhooks: encode webhook event: %v", err))
	}
	w.Put([]byte(key), v)
}

// checkedInAt is a check-in's time: an offline scan's is not the change's.
func checkedInAt(k event.CheckedIn) time.Time {
	if !k.CheckedInAt.IsZero() {
		return k.CheckedInAt
	}
	return k.At
}
