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

// HookEvent is one webhook queue entry. ID is derived from the key, so it
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

// carryOut writes what the change at seq owes the world (its effects, in
// the core's order) into the open batch. The data of mail and webhooks is
// read from the machine after the change was applied, so it is the record
// as the change left it. A webhook type no endpoint of the unit subscribes
// to costs a subscription lookup: nothing is read or encoded.
func (a *eventActor) carryOut(now time.Time, seq uint64, effs []event.Effect, fes []event.FeedEntry) {
	var hooks, mails int
	var unit string
	var unitKnown bool
	for _, e := range effs {
		switch e.Kind {
		case event.EffectTicketMail, event.EffectWaitlistSeatedMail, event.EffectRefundMail, event.EffectCancelMail,
			event.EffectOrderCancelMail:
			a.mailEntry(now, seq, mails, e)
			mails++
		case event.EffectRefundPending:
			v, err := json.Marshal(PendingRefund{EventID: a.id, OrderID: e.ID, RefundID: e.RefundID, RequestedAt: e.At.UTC()})
			if err != nil {
				panic(fmt.Sprintf("actors: encode pending refund: %v", err))
			}
			a.com.put(refundKey(a.id, e.RefundID), v)
		case event.EffectRefundSettled:
			a.com.del(refundKey(a.id, e.RefundID))
		case event.EffectCheckoutClose:
			a.putCheckoutClose(e.ID, e.Ref, e.At)
		case event.EffectWebhook:
			if !unitKnown {
				unit, _ = a.sys.EventUnit(a.id)
				unitKnown = true
			}
			if want := a.sys.cfg.WantHook; want != nil && !want(unit, e.Hook) {
				continue // nobody listens: no queue entry, no write
			}
			data, ok := a.hookData(now, e)
			if !ok {
				continue
			}
			a.putHook(now, seq, hooks, unit, e.Hook, a.feedSeqOf(fes, e.ID), data)
			hooks++
		}
	}
}

// hookData reads the data of webhook e.
func (a *eventActor) hookData(now time.Time, e event.Effect) (any, bool) {
	switch e.Hook {
	case HookCheckinCreated:
		c := e.Checkin
		return hookCheckin{ID: c.ID, EventID: a.id, RegistrationID: c.RegID,
			SubjectType: c.SubjectType, SubjectID: c.SubjectID, Method: c.Method, CheckedInAt: checkedInAt(c).UTC(), DeviceID: c.DeviceID}, true
	case HookCheckinConflict:
		return a.m.ConflictView(e.Conflict), true
	case HookOrderPaid, HookOrderRefunded:
		o, _, err := event.DecideOp(a.m, now, event.GetOrder{Ref: e.ID})
		return o, err == nil
	}
	r, _, err := event.DecideOp(a.m, now, event.GetRegistration{ID: e.ID})
	return r, err == nil
}

// putHook writes webhook entry n of the change at seq.
func (a *eventActor) putHook(now time.Time, seq uint64, n int, unit, typ string, feedSeq uint64, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("actors: encode webhook data: %v", err))
	}
	key := fmt.Sprintf("%s%s/%016x-%04x", HookPrefix, a.id, seq, n)
	h := HookEvent{
		ID:   fmt.Sprintf("whevt_%s_%x_%x", a.id, seq, n),
		Type: typ, EventID: a.id, UnitID: unit, CreatedAt: now.UTC(), Seq: feedSeq, Data: b,
	}
	v, err := json.Marshal(h)
	if err != nil {
		panic(fmt.Sprintf("actors: encode webhook event: %v", err))
	}
	a.com.put([]byte(key), v)
	// The webhooks deliverer is woken through the same hook as the
	// mailer (Config.OnOutbox), once the entry is durable.
	a.outboxDirty = true
}

// checkedInAt is a check-in's time: an offline scan's is not the change's.
func checkedInAt(c event.CheckedIn) time.Time {
	if !c.CheckedInAt.IsZero() {
		return c.CheckedInAt
	}
	return c.At
}
