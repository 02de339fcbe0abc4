package adminctl

import (
	"fmt"
	"net/url"
	"strings"
)

// outboxIDOf turns what an operator pastes (the listing's id
// "evt_....0000000000000007-0000", or its key "mail/evt_.../...") into the
// id of the outbox routes: one path segment.
func outboxIDOf(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "mail/")
	return strings.ReplaceAll(s, "/", ".")
}

// parseOutbox reads the outbox commands: list the mail the service owes,
// preview one email as it would be sent (-eml for the raw message), retry
// a parked one.
func parseOutbox(cmd string, args []string, c *Client) (request, error) {
	fs := adminFlags(c)
	var eml bool
	var limit int
	switch cmd {
	case "outbox preview":
		fs.BoolVar(&eml, "eml", false, "print the raw RFC 5322 message instead of JSON")
	case "outbox list":
		fs.IntVar(&limit, "limit", 0, "page size, 1 to 100")
	}
	names, err := parseArgs(fs, args)
	if err != nil {
		return request{}, err
	}
	const base = "/admin/v1/outbox"
	var id string
	switch cmd {
	case "outbox list":
		if len(names) > 0 {
			return request{}, usageError(fmt.Sprintf("%s: unexpected argument %q", cmd, names[0]))
		}
		r := request{method: "GET", path: base}
		if limit != 0 {
			r.path += "?limit=" + url.QueryEscape(fmt.Sprint(limit))
		}
		return r, nil
	case "outbox preview":
		if err := positional(cmd, names, &id, "ID (ticketd admin outbox list shows them)"); err != nil {
			return request{}, err
		}
		r := request{method: "GET", path: base + "/" + url.PathEscape(outboxIDOf(id)) + "/preview"}
		if eml {
			r.path += "?format=eml"
		}
		return r, nil
	case "outbox retry":
		err := positional(cmd, names, &id, "ID of a parked email (ticketd admin outbox list shows them)")
		return request{method: "POST", path: base + "/" + url.PathEscape(outboxIDOf(id)) + "/retry"}, err
	}
	return request{}, usageError(fmt.Sprintf("unknown command %q", cmd))
}
