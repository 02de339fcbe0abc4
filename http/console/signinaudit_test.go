package console_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

var auditRowRE = regexp.MustCompile(`<td data-label="Who">(.*?)</td><td data-label="Operation" class="mono">([^<]+)</td>`)

// auditRows reads an audit page's rows, newest first, as "operation who".
func auditRows(p apptest.Page) []string {
	var out []string
	for _, m := range auditRowRE.FindAllStringSubmatch(p.Body, -1) {
		who := regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], "")
		out = append(out, m[2]+" "+who)
	}
	return out
}

// TestSignInEventsAreAudited: sign-ins, failed sign-ins, sign-outs (one
// and everywhere), an accepted invitation and a password reset are in
// the audit log with the member (or the email tried) and the client's
// IP: a member's in each of their units, the operator's and those naming
// no member on the operator's sign-ins page.
func TestSignInEventsAreAudited(t *testing.T) {
	s := apptest.Start(t)
	_, p := signIn(t, s, "", "not the token")
	require.Equal(t, 401, p.Status)
	_, p = signIn(t, s, "ghost@example.com", "whatever password")
	require.Equal(t, 401, p.Status)
	op := operator(t, s)
	unit := op.newUnit("Audit Unit")
	owner := accept(t, op.invite(unit, "olga@example.com", "owner"), "Olga", "owner password")

	_, p = signIn(t, s, "olga@example.com", "wrong password")
	require.Equal(t, 401, p.Status)
	again, p := signIn(t, s, "olga@example.com", "owner password")
	require.Equal(t, 303, p.Status)
	require.Equal(t, 303, again.post("/console/logout").Status)

	// A reset link, used.
	page := owner.get("/console/units/" + unit)
	ownerID := match(t, regexp.MustCompile(`/members/(mem_[A-Za-z0-9]+)/reset`), page.Body)
	p = owner.post("/console/units/" + unit + "/members/" + ownerID + "/reset")
	require.Equal(t, 200, p.Status, p.Body)
	link := match(t, linkRE, p.Body)
	b := apptest.NewBrowser(t)
	p = b.Get(link)
	p = b.Post(link, url.Values{"csrf": {match(t, csrfRE, p.Body)}, "password": {"third password"}, "password2": {"third password"}})
	require.Equal(t, 303, p.Status, p.Body)
	fresh, p := signIn(t, s, "olga@example.com", "third password")
	require.Equal(t, 303, p.Status)
	require.Equal(t, 303, fresh.post("/console/logout-everywhere").Status)

	rows := auditRows(op.get("/console/units/" + unit + "/audit?operation="))
	olga := "Olga (olga@example.com) from 127.0.0.1"
	for _, want := range []string{
		"console.acceptInvitation " + olga,
		"console.signInFailed " + olga,
		"console.signIn " + olga,
		"console.signOut " + olga,
		"console.resetPassword " + olga,
		"console.signOutEverywhere " + olga,
	} {
		assert.Contains(t, rows, want, "in the unit's audit log: %s", strings.Join(rows, "\n"))
	}
	// Newest first: the last sign-out everywhere leads.
	require.NotEmpty(t, rows)
	assert.Equal(t, "console.signOutEverywhere "+olga, rows[0])

	// The operator's page: the operator's sign-ins, and the failures that
	// name no member; a member may not read it.
	p = op.get("/console/sign-ins")
	require.Equal(t, 200, p.Status)
	rows = auditRows(p)
	for _, want := range []string{
		"console.signInFailed operator from 127.0.0.1",
		"console.signInFailed unknown (ghost@example.com) from 127.0.0.1",
		"console.signIn operator from 127.0.0.1",
	} {
		assert.Contains(t, rows, want, "on the sign-ins page: %s", strings.Join(rows, "\n"))
	}
	assert.NotContains(t, strings.Join(rows, "\n"), "olga@example.com", "a member's events are their units'")
	last, p := signIn(t, s, "olga@example.com", "third password")
	require.Equal(t, 303, p.Status)
	assert.Equal(t, 403, last.get("/console/sign-ins").Status)
	// Filtered like any audit log.
	rows = auditRows(op.get("/console/sign-ins?operation=console.signInFailed"))
	assert.Len(t, rows, 2)
}
