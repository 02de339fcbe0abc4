package ops

import (
	"context"
	"encoding/json"
	"time"

	"ticketd/audit"
	"ticketd/event"
)

// RecordWrite records a successful write in the audit log: who made it
// (Actor, ActorType), what it did (OperationID, TargetIDs, Before, After)
// and from where (Method, Route, Path, RequestID); every door's writes go
// through it. An entry without a business unit gets the unit of its
// targets (unitId, or eventId's owner) or of its answer (unitId, or the id
// of a created business unit); a write that belongs to no unit is not
// recorded, and RecordWrite answers false. A zero CreatedAt is now.
func (o *Ops) RecordWrite(e audit.AuditEntry) bool {
	if e.UnitID == "" {
		e.UnitID = o.writeUnit(e)
	}
	if e.UnitID == "" || o.cfg.Audit == nil {
		return false
	}
	if e.TargetIDs == nil {
		e.TargetIDs = map[string]string{}
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt.Time = time.Now().UTC()
	}
	o.cfg.Audit.Record(e)
	return true
}

// writeUnit finds the business unit of a write: from its targets (unit,
// event) or from its answer (a created unit or key).
func (o *Ops) writeUnit(e audit.AuditEntry) string {
	if u := e.TargetIDs["unitId"]; u != "" {
		return u
	}
	if ev := e.TargetIDs["eventId"]; ev != "" {
		if u, ok := o.sys.EventUnit(ev); ok {
			return u
		}
	}
	var body struct {
		ID     string `json:"id"`
		UnitID string `json:"unitId"`
	}
	_ = json.Unmarshal(e.After, &body)
	if body.UnitID != "" {
		return body.UnitID
	}
	if e.OperationID == "createBusinessUnit" {
		return body.ID
	}
	return ""
}

// CheckIn records a check-in at a door (the API's POST .../checkins, the
// console's door page, door devices). A repeat at the same door answers
// AlreadyCheckedIn and changes nothing.
func (o *Ops) CheckIn(ctx context.Context, eventID string, cmd event.RecordCheckin) (event.CheckinResult, error) {
	return Do(ctx, o, eventID, cmd)
}
