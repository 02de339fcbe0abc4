package console

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"ticketd/audit"
	"ticketd/directory"
)

// auditRow is one audit entry with its actor named.
type auditRow struct {
	audit.AuditEntry
	Who     string
	Targets string
	IP      string // the client's address of a sign-in event
}

// auditData is the audit log page.
type auditData struct {
	Rows                     []auditRow
	Next                     string
	Actor, Operation, Target string
}

// auditPage lists a unit's audit log, newest first, filtered by actor,
// operation and target id, paged by entry id. Owners and admins see it.
func (c *Console) auditPage(r *req) error {
	unitID := param(r.rc, "unitId")
	if err := r.need(unitID, permWrite); err != nil {
		return err
	}
	u, _ := r.dir.Unit(unitID)
	return c.auditOf(r, &u)
}

// auditOf renders the audit log of unit u, whose permission was checked.
func (c *Console) auditOf(r *req, u *directory.Unit) error {
	unitID := u.ID
	q := r.rc.QueryArgs()
	d := auditData{Actor: strings.TrimSpace(string(q.Peek("actor"))), Operation: strings.TrimSpace(string(q.Peek("operation"))),
		Target: strings.TrimSpace(string(q.Peek("target")))}
	v := &view{req: r, Unit: u, Title: "Audit log · " + u.Name}
	f := audit.Filter{Actor: d.Actor, OperationID: d.Operation, TargetID: d.Target}
	entries, more, err := c.deps.Audit.List(unitID, f, string(q.Peek("after")), listLimit)
	if errors.Is(err, audit.ErrBadAfter) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		row := auditRow{AuditEntry: e, Who: e.Actor, IP: signInIP(e)}
		switch e.ActorType {
		case "admin":
			row.Who = "operator"
		case "member":
			if m, ok := r.dir.Member(e.Actor); ok {
				row.Who = m.Name + " (" + m.Email + ")"
			} else if e.Actor == "" {
				row.Who = "unknown"
				var rec signInRecord
				if json.Unmarshal(e.After, &rec) == nil && rec.Email != "" {
					row.Who = "unknown (" + rec.Email + ")"
				}
			}
		case "secret":
			row.Who = "API key " + e.Actor
		}
		var ts []string
		for k, id := range e.TargetIDs {
			ts = append(ts, k+"="+id)
		}
		slicesSort(ts)
		row.Targets = strings.Join(ts, " ")
		d.Rows = append(d.Rows, row)
	}
	if more && len(entries) > 0 {
		d.Next = entries[len(entries)-1].ID
	}
	v.Any = d
	c.render(r.rc, 200, "audit", v)
	return nil
}

func slicesSort(s []string) { slices.Sort(s) }
