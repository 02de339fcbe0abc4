package actors

import (
	"encoding/json"
	"fmt"
	"time"

	"ticketd/event"
)

// HookPrefix is the key prefix of the webhook queue: outbound webhook
// events the service owes the business unit's endpoints. Like the mail
// outbox, an entry is written in the same batch as the change that causes
// it, so it is exactly as durable as that change; the webhooks deliverer
// fans it out to the subscribed endpoints and deletes it. Key: "hook/" +
// event id + "/" + 16 hex digits of the log seq + "-" + 4 hex digits of the
// entry's index within the change.
const HookPrefix = "hook/"

// Webhook event types.
const (
	HookRegistrationCreated   = "registration.created"
	HookRegistrationConfirmed = "registration.confirmed"
	HookRegistrationCancelled = "registration.cancelled"
	HookCheckinCreated        = "checkin.created"
	HookOrderPaid             = "order.paid"
	// HookOrderRefunded fires when a refund of a paid order succeeds at
	// the payment provider, partial or full; its data is the order with
	// its refunds (status refunded once nothing is left to refund).
	HookOrderRefunded = "order.refunded"
)

// HookTypes lists every webhook event type, for validating subscriptions.
func HookTypes() []string {
	return []string{HookRegistrationCreated, HookRegistrationConfirmed, HookRegistrationCancelled,
		HookCheckinCreated, HookOrderPaid, HookOrderRefunded}
}

// HookEvent is one webhook queue entry. ID is derived from the key, so it
// is the same on every delivery attempt and to every endpoint.
type HookEvent struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	EventID   string          `json:"eventId"`
	UnitID    string          `json:"unitId"`
	CreatedAt time.Time       `json:"createdAt"`
	Data      json.RawMessage `json:"data"`
}

// hookCheckin is the data of a checkin.created webhook.
type hookCheckin struct {
	ID             string    `json:"id"`
	EventID        string    `json:"eventId"`
	RegistrationID string    `json:"registrationId"`
	SubjectType    string    `json:"subjectType"`
	SubjectID      string    `json:"subjectId,omitempty"`
	Method         string    `json:"method"`
	CheckedInAt    time.Time `json:"checkedInAt"`
}

// hookChange writes the webhook events change ch owes into the open batch.
// It reads the machine after the change was applied, so the data is the
// record as the change left it. A change that owes nothing, or owes only
// types no endpoint of the unit subscribes to, costs a type switch and a
// subscription lookup: nothing is read or encoded.
func (a *eventActor) hookChange(now time.Time, seq uint64, ch event.Change) {
	var n int
	var unit string
	var unitKnown bool
	wants := func(typ string) bool {
		if !unitKnown {
			unit, _ = a.sys.EventUnit(a.id)
			unitKnown = true
		}
		want := a.sys.cfg.WantHook
		return want == nil || want(unit, typ)
	}
	put := func(typ string, data any) {
		if !wants(typ) {
			return // nobody listens: no queue entry, no write
		}
		b, err := json.Marshal(data)
		if err != nil {
			panic(fmt.Sprintf("actors: encode webhook data: %v", err))
		}
		key := fmt.Sprintf("%s%s/%016x-%04x", HookPrefix, a.id, seq, n)
		h := HookEvent{
			ID:   fmt.Sprintf("whevt_%s_%x_%x", a.id, seq, n),
			Type: typ, EventID: a.id, UnitID: unit, CreatedAt: now.UTC(), Data: b,
		}
		v, err := json.Marshal(h)
		if err != nil {
			panic(fmt.Sprintf("actors: encode webhook event: %v", err))
		}
		a.com.put([]byte(key), v)
		n++
		// The webhooks deliverer is woken through the same hook as the
		// mailer (Config.OnOutbox), once the entry is durable.
		a.outboxDirty = true
	}
	// reg reads a registration only if one of types is wanted.
	reg := func(id string, types ...string) (any, bool) {
		wanted := false
		for _, t := range types {
			wanted = wanted || wants(t)
		}
		if !wanted {
			return nil, false
		}
		res, _, err := a.m.Decide(now, event.GetRegistration{ID: id})
		return res, err == nil
	}
	switch c := ch.(type) {
	case event.RegistrationCreated:
		if r, ok := reg(c.ID, HookRegistrationCreated, HookRegistrationConfirmed); ok {
			put(HookRegistrationCreated, r)
			if c.Status == event.RegConfirmed {
				put(HookRegistrationConfirmed, r)
			}
		}
	case event.RegistrationStatusChanged:
		var typ string
		switch c.Status {
		case event.RegConfirmed:
			typ = HookRegistrationConfirmed
		case event.RegCancelled:
			typ = HookRegistrationCancelled
		default:
			return
		}
		if r, ok := reg(c.ID, typ); ok {
			put(typ, r)
		}
	case event.CheckedIn:
		if wants(HookCheckinCreated) {
			put(HookCheckinCreated, hookCheckin{ID: c.ID, EventID: a.id, RegistrationID: c.RegID,
				SubjectType: c.SubjectType, SubjectID: c.SubjectID, Method: c.Method, CheckedInAt: c.At.UTC()})
		}
	case event.RefundSettled:
		if c.Status == event.RefundSucceeded && wants(HookOrderRefunded) {
			if res, _, err := a.m.Decide(now, event.GetOrder{Ref: c.OrderID}); err == nil {
				put(HookOrderRefunded, res)
			}
		}
	case event.OrderPaid:
		if wants(HookOrderPaid) {
			if res, _, err := a.m.Decide(now, event.GetOrder{Ref: c.ID}); err == nil {
				put(HookOrderPaid, res)
			}
		}
		if c.RegistrationID != "" && !c.AlreadyRegistered {
			if r, ok := reg(c.RegistrationID, HookRegistrationCreated, HookRegistrationConfirmed); ok {
				put(HookRegistrationCreated, r)
				put(HookRegistrationConfirmed, r)
			}
		}
	}
}
