package units

import (
	"ticketd/directory"
	"ticketd/http/console/shell"
)

// signInsPage lists the sign-in events of no unit (SignInUnit), for the
// operator: the audit page's list with the operator's breadcrumbs.
func (c *pages) signInsPage(r *shell.Req) error {
	if !r.Session.Operator {
		return shell.ErrForbidden
	}
	return c.auditOf(r, &directory.Unit{ID: shell.SignInUnit, Name: "Console sign-ins"})
}
