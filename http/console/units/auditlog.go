package units

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"ticketd/audit"
	"ticketd/directory"
	"ticketd/http/console/shell"
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
func (c *pages) auditPage(r *shell.Req) error {
	unitID := shell.Param(r.RC, "unitId")
	if err := r.Need(unitID, shell.PermWrite); err != nil {
		return err
	}
	u, _ := r.Dir.Unit(unitID)
	return c.auditOf(r, &u)
}

// auditOf renders the audit log of unit u, whose permission was checked.
func (c *pages) auditOf(r *shell.Req, u *directory.Unit) error {
	unitID := u.ID
	q := r.RC.QueryArgs()
	d := auditData{Actor: strings.TrimSpace(string(q.Peek("actor"))), Operation: strings.TrimSpace(string(q.Peek("operation"))),
		Target: strings.TrimSpace(string(q.Peek("target")))}
	v := &shell.View{Req: r, Unit: u, Title: "Audit log · " + u.Name}
	f := audit.Filter{Actor: d.Actor, OperationID: d.Operation, TargetID: d.Target}
	entries, more, err := c.Ops.Audit().List(unitID, f, string(q.Peek("after")), shell.ListLimit)
	if errors.Is(err, audit.ErrBadAfter) {
		return shell.ErrNotFound
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		row := auditRow{AuditEntry: e, Who: e.Actor, IP: shell.SignInIP(e)}
		switch e.ActorType {
		case "admin":
			row.Who = "operator"
		case "member":
			if m, ok := r.Dir.Member(e.Actor); ok {
				row.Who = m.Name + " (" + m.Email + ")"
			} else if e.Actor == "" {
				row.Who = "unknown"
				var rec shell.SignInRecord
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
	c.Render(r.RC, 200, "audit", v)
	return nil
}

func slicesSort(s []string) { slices.Sort(s) }
