package console

import (
	"strconv"
	"strings"

	thttp "ticketd/http"
)

// devlogData is the developer log page.
type devlogData struct {
	Entries []thttp.RequestLogEntry
	Next    string
	KeyID   string
	Status  string
	Method  string
}

// devlogPage lists a unit's API requests (Developer and Storefront),
// newest first, filtered by key, status and method. Owners and admins.
func (c *Console) devlogPage(r *req) error {
	unitID := param(r.rc, "unitId")
	if err := r.need(unitID, permWrite); err != nil {
		return err
	}
	if c.deps.DevLog == nil {
		return errNotFound
	}
	q := r.rc.QueryArgs()
	d := devlogData{KeyID: strings.TrimSpace(string(q.Peek("key"))), Status: strings.TrimSpace(string(q.Peek("status"))),
		Method: strings.ToUpper(strings.TrimSpace(string(q.Peek("method"))))}
	f := thttp.RequestLogFilter{KeyID: d.KeyID, Method: d.Method}
	if d.Status != "" {
		f.Status, _ = strconv.Atoi(d.Status)
	}
	var before uint64
	if b := string(q.Peek("before")); b != "" {
		var err error
		if before, err = strconv.ParseUint(b, 10, 64); err != nil {
			return errNotFound
		}
	}
	items, more := c.deps.DevLog.List(unitID, f, before, listLimit, r.now)
	d.Entries = items
	if more && len(items) > 0 {
		d.Next = strings.TrimPrefix(items[len(items)-1].ID, "rl_")
	}
	u, _ := r.dir.Unit(unitID)
	c.render(r.rc, 200, "devlog", &view{req: r, Unit: &u, Title: "Developer log · " + u.Name, Any: d})
	return nil
}
