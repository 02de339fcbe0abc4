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

var perkRE = regexp.MustCompile(`/program/perks/(prk_[A-Za-z0-9_.]+)/delete`)

// TestConsolePerkBindings: an owner ticks the perks a ticket type carries
// and unticks them again; a redemption code named by its text gets perks
// and is then listed with them; an unknown code is refused next to its
// field keeping what was typed; viewers see the bindings without forms,
// other units 404, writes need the CSRF token, and writes are audited.
func TestConsolePerkBindings(t *testing.T) {
	c := newCatalogue(t)
	op, page := c.op, c.base+"/program"
	require.Equal(t, 303, op.post(page+"/perks", "name", "Lounge access").Status)
	perk := match(t, perkRE, op.get(page).Body)

	typePath := c.base + "/perk-bindings/types/" + c.tt
	c.refusals(t, page, typePath, "perkIds", perk)
	p := op.post(typePath, "perkIds", perk)
	require.Equal(t, 303, p.Status, p.Body)
	p = op.get(page)
	assert.Regexp(t, `General</strong></td><td data-label="Perks"><span class="badge">Lounge access</span>`, p.Body)
	assert.Regexp(t, `id="`+c.tt+`-b-`+perk+`"[^>]*checked`, p.Body)
	assert.True(t, audited(t, c.s, c.unit, "setTicketTypePerks"))

	// The viewer reads the binding, without the form.
	p = c.viewer.get(page)
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, `<span class="badge">Lounge access</span>`)
	assert.NotContains(t, p.Body, "/perk-bindings/")

	// Nothing ticked unbinds.
	require.Equal(t, 303, op.post(typePath).Status)
	p = op.get(page)
	assert.Regexp(t, `General</strong></td><td data-label="Perks"></td>`, p.Body)
	assert.NotRegexp(t, `id="`+c.tt+`-b-`+perk+`"[^>]*checked`, p.Body)

	// A code by its text, in any case.
	require.Equal(t, 303, op.post(c.base+"/codes", "registrationTypeId", c.tt, "count", "1").Status)
	csv := op.get(c.base + "/codes.csv").Body
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	require.Len(t, lines, 2, csv)
	code, _, _ := strings.Cut(lines[1], ",")
	codeID := match(t, regexp.MustCompile(`/codes/(rc_[A-Za-z0-9]+)/disable`), op.get(c.base+"/codes").Body)

	p = op.post(c.base+"/perk-bindings/codes", "code", "NOT-A-CODE", "perkIds", perk)
	require.Equal(t, 400, p.Status, p.Body)
	assert.Regexp(t, `id="bind-code"[^>]*value="NOT-A-CODE">\s*<p class="field-error"`, p.Body)
	assert.Regexp(t, `id="new-code-p-`+perk+`"[^>]*checked`, p.Body)

	c.refusals(t, page, c.base+"/perk-bindings/codes", "code", code, "perkIds", perk)
	p = op.post(c.base+"/perk-bindings/codes", "code", strings.ToLower(code), "perkIds", perk)
	require.Equal(t, 303, p.Status, p.Body)
	p = op.get(page)
	assert.Regexp(t, `Code <code>`+code+`</code></td><td data-label="Perks"><span class="badge">Lounge access</span>`, p.Body)
	assert.True(t, audited(t, c.s, c.unit, "setCodePerks"))

	// The code's row form unbinds it; a deleted perk ticked is refused
	// next to the row's perks.
	codePath := c.base + "/perk-bindings/codes/" + codeID
	c.refusals(t, page, codePath)
	p = op.post(codePath, "perkIds", "prk_gone")
	require.Equal(t, 400, p.Status, p.Body)
	assert.Regexp(t, `Save perks of `+code, p.Body)
	assert.Contains(t, p.Body, "A perk ticked is gone")
	require.Equal(t, 303, op.post(codePath).Status)
	assert.NotContains(t, op.get(page).Body, "Code <code>"+code)

	// Unknown targets are the 404 of a missing thing.
	assert.Equal(t, 404, op.post(c.base+"/perk-bindings/types/tt_missing", "perkIds", perk).Status)
	assert.Equal(t, 404, op.post(c.base+"/perk-bindings/codes/rc_missing").Status)
}

// TestOrdersSearchByName: the orders search finds a buyer by any part of
// their name in any case (the core's list filters, so it is not limited
// to one page), still finds order numbers and emails, and a name nobody
// has lists nothing.
func TestOrdersSearchByName(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Search Unit")
	ev := op.newEvent(unit, "Gig")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	key := op.secretKey(unit)
	ada := sell(t, s, key, ev, tt, "ada@example.com", "Ada Lovelace")
	bob := sell(t, s, key, ev, tt, "bob@example.com", "Bob Builder")
	page := "/console/events/" + ev + "/orders?q="

	p := op.get(page + url.QueryEscape("loveLACE"))
	require.Equal(t, 200, p.Status, p.Body)
	assert.Contains(t, p.Body, ada)
	assert.NotContains(t, p.Body, bob)
	assert.Contains(t, p.Body, `value="loveLACE"`)

	p = op.get(page + url.QueryEscape("Bob B"))
	assert.Contains(t, p.Body, bob)
	assert.NotContains(t, p.Body, ada)

	p = op.get(page + bob)
	assert.Contains(t, p.Body, bob)
	assert.NotContains(t, p.Body, ada)
	p = op.get(page + url.QueryEscape("ada@example.com"))
	assert.Contains(t, p.Body, ada)
	assert.NotContains(t, p.Body, bob)

	p = op.get(page + "Nobody")
	require.Equal(t, 200, p.Status)
	assert.NotContains(t, p.Body, ada)
	assert.NotContains(t, p.Body, bob)
}
