package console_test

import (
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/audit"
	"ticketd/http/console"
)

var (
	csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	linkRE = regexp.MustCompile(`id="once-link"[^>]*value="([^"]+)"`)
	keyRE  = regexp.MustCompile(`id="new-key"[^>]*value="([^"]+)"`)
	unitRE = regexp.MustCompile(`^/console/units/(bu_[A-Za-z0-9]+)$`)
)

// member is a signed-in console browser and its CSRF token.
type member struct {
	b    *apptest.Browser
	csrf string
	url  string
	t    *testing.T
}

func (m *member) get(path string) apptest.Page {
	m.t.Helper()
	p := m.b.Get(m.url + path)
	if c := csrfRE.FindStringSubmatch(p.Body); c != nil {
		m.csrf = c[1]
	}
	return p
}

// post sends a form with the session's CSRF token.
func (m *member) post(path string, kv ...string) apptest.Page {
	m.t.Helper()
	f := url.Values{"csrf": {m.csrf}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Add(kv[i], kv[i+1])
	}
	return m.b.Post(m.url+path, f)
}

func match(t *testing.T, re *regexp.Regexp, s string) string {
	t.Helper()
	m := re.FindStringSubmatch(s)
	require.NotNil(t, m, "no %s in:\n%s", re, s)
	return html.UnescapeString(m[1])
}

// signIn signs in through the sign-in form: with the admin token when
// email is empty.
func signIn(t *testing.T, s *apptest.Service, email, password string) (*member, apptest.Page) {
	t.Helper()
	return signInWith(t, apptest.NewBrowser(t), s, email, password)
}

// signInWith signs in with browser b.
func signInWith(t *testing.T, b *apptest.Browser, s *apptest.Service, email, password string) (*member, apptest.Page) {
	t.Helper()
	p := b.Get(s.URL + "/console/login")
	require.Equal(t, 200, p.Status)
	f := url.Values{"csrf": {match(t, csrfRE, p.Body)}}
	if email == "" {
		f.Set("token", password)
	} else {
		f.Set("email", email)
		f.Set("password", password)
	}
	p = b.Post(s.URL+"/console/login", f)
	m := &member{b: b, url: s.URL, t: t}
	if p.Status == 303 {
		m.get("/console")
	}
	return m, p
}

func operator(t *testing.T, s *apptest.Service) *member {
	t.Helper()
	m, p := signIn(t, s, "", s.Admin)
	require.Equal(t, 303, p.Status, p.Body)
	return m
}

// newUnit creates a unit through the console and returns its id.
func (m *member) newUnit(name string) string {
	m.t.Helper()
	p := m.post("/console/units", "name", name)
	require.Equal(m.t, 303, p.Status, p.Body)
	return match(m.t, unitRE, p.Header.Get("Location"))
}

// invite makes an invitation link for email with role in unit.
func (m *member) invite(unit, email, role string) string {
	m.t.Helper()
	m.get("/console/units/" + unit)
	p := m.post("/console/units/"+unit+"/invitations", "email", email, "role", role)
	require.Equal(m.t, 200, p.Status, p.Body)
	return match(m.t, linkRE, p.Body)
}

// accept opens an invitation link in a fresh browser and joins.
func accept(t *testing.T, link, name, password string) *member {
	t.Helper()
	b := apptest.NewBrowser(t)
	p := b.Get(link)
	require.Equal(t, 200, p.Status, p.Body)
	f := url.Values{"csrf": {match(t, csrfRE, p.Body)}, "name": {name}, "password": {password}, "password2": {password}}
	p = b.Post(link, f)
	require.Equal(t, 303, p.Status, p.Body)
	u, _ := url.Parse(link)
	m := &member{b: b, url: u.Scheme + "://" + u.Host, t: t}
	m.get("/console")
	return m
}

// TestSignInSessionsAndInvitations: pages need a session; the operator
// signs in with the admin token, creates a unit and invites its owner,
// who accepts and signs in with a password; cookies are HttpOnly and
// SameSite=Lax; a link works once; sign-out everywhere ends every session
// of that person; every write is in the audit log with who made it.
func TestSignInSessionsAndInvitations(t *testing.T) {
	s := apptest.Start(t)
	anon := apptest.NewBrowser(t)
	p := anon.Get(s.URL + "/console/units/bu_x")
	assert.Equal(t, 303, p.Status)
	assert.Equal(t, "/console/login?next=%2Fconsole%2Funits%2Fbu_x", p.Header.Get("Location"))

	_, p = signIn(t, s, "", "adm_wrong")
	assert.Equal(t, 401, p.Status)
	assert.Contains(t, p.Body, "That is not the admin token.")

	op := operator(t, s)
	ck := op.b.Get(s.URL + "/console/login") // signed in: back to the console
	assert.Equal(t, 303, ck.Status)

	// A form without the session's token is refused.
	p = op.b.Post(s.URL+"/console/units", url.Values{"name": {"No token"}})
	assert.Equal(t, 403, p.Status)
	p = op.post("/console/units", "name", "  ")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `class="field-error"`)
	unit := op.newUnit("Acme Events")

	link := op.invite(unit, "Owner@Example.com", "owner")
	assert.True(t, strings.HasPrefix(link, s.URL+"/console/invitations/"), link)
	owner := accept(t, link, "Olivia Owner", "correct horse battery")
	p = owner.get("/console/units/" + unit)
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, "owner@example.com")

	// The invitation was also mailed: it waits in the durable outbox (no
	// SMTP server here).
	p = op.get("/console/outbox")
	assert.Contains(t, p.Body, "owner@example.com")
	assert.Contains(t, p.Body, ">pending<")

	// The link worked once.
	p = apptest.NewBrowser(t).Get(link)
	assert.Equal(t, 404, p.Status)

	// The owner signs in again with the password; the cookie is HttpOnly,
	// SameSite=Lax and scoped to /console; not Secure over plain http.
	_, p = signIn(t, s, "owner@example.com", "wrong password!")
	assert.Equal(t, 401, p.Status)
	second, p := signIn(t, s, "OWNER@example.com", "correct horse battery")
	require.Equal(t, 303, p.Status)
	sc := p.Header.Values("Set-Cookie")
	require.NotEmpty(t, sc)
	var sess string
	for _, c := range sc {
		if strings.HasPrefix(c, "ticketd_console=") {
			sess = strings.ToLower(c)
		}
	}
	assert.Contains(t, sess, "httponly")
	assert.Contains(t, sess, "samesite=lax")
	assert.Contains(t, sess, "path=/console")
	assert.NotContains(t, sess, "secure")

	// Sign out everywhere ends both of the owner's sessions, not the
	// operator's.
	p = second.post("/console/logout-everywhere")
	assert.Equal(t, 303, p.Status)
	assert.Equal(t, 303, owner.get("/console").Status)
	assert.Equal(t, 303, second.get("/console").Status)
	assert.Equal(t, 200, op.get("/console").Status)

	// The audit log has the operator's and the member's writes.
	log := s.Main.Audit()
	require.NoError(t, log.Flush())
	entries, _, err := log.List(unit, audit.Filter{}, "", 50)
	require.NoError(t, err)
	var ops []string
	for _, e := range entries {
		ops = append(ops, e.OperationID+" by "+e.ActorType)
	}
	assert.Contains(t, ops, "console.createUnit by admin")
	assert.Contains(t, ops, "console.createInvitation by admin")
	assert.Contains(t, ops, "console.acceptInvitation by member")

	// The audit log page shows them, filterable.
	p = op.get("/console/units/" + unit + "/audit?operation=console.acceptInvitation")
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, "Olivia Owner (owner@example.com)")
	assert.NotContains(t, p.Body, "console.createUnit")
	assert.Equal(t, 404, op.get("/console/units/"+unit+"/audit?after=garbage").Status)
}

// TestSignInThrottled: failed sign-ins of an account cost nothing up to
// the limit, then each makes the next try wait, doubling; nobody is
// locked out: after the wait the right password signs in. A browser that
// signed in to the account before is not slowed by others' failures.
func TestSignInThrottled(t *testing.T) {
	clock := newClock()
	s := apptest.Start(t, func(c *app.Config) {
		c.Tune = &app.Tuning{Console: func(cc *console.Config) {
			cc.SignInFailures = 3
			cc.SignInWindow = time.Hour
			cc.Now = clock.Now
		}}
	})
	op := operator(t, s)
	unit := op.newUnit("Throttled")
	a := accept(t, op.invite(unit, "a@example.com", "viewer"), "A", "a long password")
	for i := 0; i < 3; i++ {
		_, p := signIn(t, s, "a@example.com", "not the password")
		assert.Equal(t, 401, p.Status)
	}
	_, p := signIn(t, s, "a@example.com", "a long password")
	assert.Equal(t, 429, p.Status, "the next try waits")
	assert.Equal(t, "1", p.Header.Get("Retry-After"))
	assert.Contains(t, p.Body, "Too many failed sign-ins. Wait 1 second, then try again.")
	_, p = signIn(t, s, "", s.Admin)
	assert.Equal(t, 303, p.Status, "another account from the same address still signs in")

	clock.Advance(time.Second)
	_, p = signIn(t, s, "a@example.com", "still not it")
	assert.Equal(t, 401, p.Status, "after the wait the account may try again")
	_, p = signIn(t, s, "a@example.com", "a long password")
	assert.Equal(t, 429, p.Status)
	assert.Equal(t, "2", p.Header.Get("Retry-After"), "the wait doubles")
	clock.Advance(2 * time.Second)
	_, p = signIn(t, s, "a@example.com", "a long password")
	assert.Equal(t, 303, p.Status, "never locked out: the right password signs in after the wait")

	// The member's own browser signed in before: an attack on the account
	// (failures from a fresh browser) does not slow it down.
	for i := 0; i < 6; i++ {
		clock.Advance(time.Minute)
		signIn(t, s, "a@example.com", "attacker guess")
	}
	_, p = signIn(t, s, "a@example.com", "a long password")
	assert.Equal(t, 429, p.Status, "a fresh browser waits")
	require.Equal(t, 303, a.post("/console/logout").Status) // a's browser keeps the known cookie
	_, p = signInWith(t, a.b, s, "a@example.com", "a long password")
	assert.Equal(t, 303, p.Status, "the member's known browser signs in at once")
}

var eventRE = regexp.MustCompile(`^/console/events/(evt_[A-Za-z0-9]+)$`)

// newEvent creates an event through the console's form, with a ticket
// type open for sale, and returns the event id.
func (m *member) newEvent(unit, name string) string {
	m.t.Helper()
	m.get("/console/units/" + unit)
	p := m.post("/console/units/"+unit+"/events", "name", name, "timezone", "Europe/Paris",
		"startsAt", "2030-06-01T18:00", "endsAt", "2030-06-01T23:00", "currency", "eur")
	require.Equal(m.t, 303, p.Status, p.Body)
	ev := match(m.t, eventRE, p.Header.Get("Location"))
	p = m.post("/console/events/"+ev+"/ticket-types", "ttName", "General", "priceAmount", "25.00", "capacity", "100",
		"isPublic", "1", "status", "open")
	require.Equal(m.t, 303, p.Status, p.Body)
	return ev
}

// TestEventsAndTicketTypes: an event is created in its timezone, refused
// input comes back next to its field with what was typed, a ticket type
// goes on sale with its availability shown, and the event is published.
func TestEventsAndTicketTypes(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Events Unit")
	op.get("/console/units/" + unit)
	p := op.post("/console/units/"+unit+"/events", "name", "Bad zone", "timezone", "Mars/Olympus", "currency", "EUR")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `value="Mars/Olympus"`, "what was typed is kept")
	assert.Contains(t, p.Body, `class="field-error"`)

	ev := op.newEvent(unit, "Summer Gala")
	p = op.get("/console/events/" + ev)
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, "Sat 1 Jun 2030 18:00 CEST", "times in the event's timezone")
	assert.Contains(t, p.Body, "General")
	assert.Contains(t, p.Body, "25,00\u00a0€", "money written as the hosted pages write it")

	p = op.post("/console/events/"+ev+"/ticket-types", "ttName", "", "priceAmount", "abc")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `value="abc"`)

	// Site and description; the refund policy (the API's rules).
	p = op.post("/console/events/"+ev+"/site", "siteUrl", "not a url", "description", "Bring a towel")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `value="not a url"`)
	assert.Contains(t, p.Body, ">Bring a towel</textarea>")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/site", "siteUrl", "https://gala.example.com", "description", "Bring a towel").Status)
	assert.Contains(t, op.get("/console/events/"+ev).Body, `value="https://gala.example.com"`)
	p = op.post("/console/events/"+ev+"/refund-policy", "refundable", "1", "deadline", "2030-05-01T00:00", "hoursBeforeStart", "48")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `value="48"`)
	assert.Contains(t, p.Body, `class="field-error"`)
	require.Equal(t, 303, op.post("/console/events/"+ev+"/refund-policy", "refundable", "1", "hoursBeforeStart", "48", "feePercent", "10").Status)
	assert.Contains(t, op.get("/console/events/"+ev).Body, "Refundable until Thu 30 May 2030 18:00 CEST, keeping a 10% fee.")

	p = op.post("/console/events/" + ev + "/publish")
	assert.Equal(t, 303, p.Status, p.Body)
	p = op.get("/console/events/" + ev)
	assert.Contains(t, p.Body, `<span class="badge" id="event-status">published</span>`)
}

// TestPasswordResetAndRoles: an owner makes a reset link for a member;
// using it sets the password, ends the member's other sessions and signs
// them in; the old password no longer works. The owner changes the
// member's role (applied at the next request) and removes them; the last
// owner cannot step down.
func TestPasswordResetAndRoles(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Reset Unit")
	owner := accept(t, op.invite(unit, "owner@example.com", "owner"), "Olivia", "owner password")
	member := accept(t, owner.invite(unit, "m@example.com", "admin"), "Max", "first password")
	page := owner.get("/console/units/" + unit)
	memberID := match(t, regexp.MustCompile(`/members/(mem_[A-Za-z0-9]+)/reset`), page.Body)
	ownerID := match(t, regexp.MustCompile(`/members/(mem_[A-Za-z0-9]+)/role`), page.Body)
	if memberID == ownerID { // the first row is the owner's
		memberID = match(t, regexp.MustCompile(`(?s)Max.*?/members/(mem_[A-Za-z0-9]+)/reset`), page.Body)
	}

	p := owner.post("/console/units/" + unit + "/members/" + memberID + "/reset")
	require.Equal(t, 200, p.Status, p.Body)
	link := match(t, linkRE, p.Body)
	require.Contains(t, link, "/console/reset/")

	b := apptest.NewBrowser(t)
	p = b.Get(link)
	require.Equal(t, 200, p.Status)
	csrf := match(t, csrfRE, p.Body)
	p = b.Post(link, url.Values{"csrf": {csrf}, "password": {"short"}, "password2": {"short"}})
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, "The password must be at least 10 characters.")
	csrf = match(t, csrfRE, p.Body) // each rendering of the form has its own token
	p = b.Post(link, url.Values{"csrf": {csrf}, "password": {"second password"}, "password2": {"second password"}})
	require.Equal(t, 303, p.Status, p.Body)
	assert.Equal(t, 303, member.get("/console").Status, "the session from before the reset ended")
	_, p = signIn(t, s, "m@example.com", "first password")
	assert.Equal(t, 401, p.Status)
	again, p := signIn(t, s, "m@example.com", "second password")
	require.Equal(t, 303, p.Status)

	// Admin -> viewer: the next form is refused.
	require.Equal(t, 303, owner.post("/console/units/"+unit+"/members/"+memberID+"/role", "role", "viewer").Status)
	again.get("/console/units/" + unit)
	assert.Equal(t, 403, again.post("/console/units/"+unit+"/events", "name", "x", "timezone", "UTC").Status)
	// Removed: the unit is gone for them.
	require.Equal(t, 303, owner.post("/console/units/"+unit+"/members/"+memberID+"/role", "role", "remove").Status)
	assert.Equal(t, 404, again.get("/console/units/"+unit).Status)
	// The last owner stays.
	p = owner.post("/console/units/"+unit+"/members/"+ownerID+"/role", "role", "viewer")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, "at least one owner")
}
