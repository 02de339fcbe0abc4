package units

import (
	"strconv"
	"strings"

	"ticketd/http/console/shell"
	"ticketd/http/devlog"
)

// devlogData is the developer log page.
type devlogData struct {
	Entries []devlog.RequestLogEntry
	Next    string
	KeyID   string
	Status  string
	Method  string
}

// devlogPage lists a unit's API requests (Developer and Storefront),
// newest first, filtered by key, status and method. Owners and admins.
func (c *pages) devlogPage(r *shell.Req) error {
	unitID := shell.Param(r.RC, "unitId")
	if err := r.Need(unitID, shell.PermWrite); err != nil {
		return err
	}
	if c.Deps.DevLog == nil {
		return shell.ErrNotFound
	}
	q := r.RC.QueryArgs()
	d := devlogData{KeyID: strings.TrimSpace(string(q.Peek("key"))), Status: strings.TrimSpace(string(q.Peek("status"))),
		Method: strings.ToUpper(strings.TrimSpace(string(q.Peek("method"))))}
	f := devlog.Filter{KeyID: d.KeyID, Method: d.Method}
	if d.Status != "" {
		f.Status, _ = strconv.Atoi(d.Status)
	}
	var before uint64
	if b := string(q.Peek("before")); b != "" {
		var err error
		if before, err = strconv.ParseUint(b, 10, 64); err != nil {
			return shell.ErrNotFound
		}
	}
	items, more := c.Deps.DevLog.List(unitID, f, before, shell.ListLimit, r.Now)
	d.Entries = items
	if more && len(items) > 0 {
		d.Next = strings.TrimPrefix(items[len(items)-1].ID, "rl_")
	}
	u, _ := r.Dir.Unit(unitID)
	c.Render(r.RC, 200, "devlog", &shell.View{Req: r, Unit: &u, Title: "Developer log · " + u.Name, Any: d})
	return nil
}
