package console_test

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
	"ticketd/audit"
)

// catalogueSetup starts a service with unit A (an event with a ticket
// type), a viewer of A and the owner of unit B.
type catalogue struct {
	s                  *apptest.Service
	op, viewer, other  *member
	unit, ev, tt, base string
}

func newCatalogue(t *testing.T) *catalogue {
	t.Helper()
	s := apptest.Start(t)
	op := operator(t, s)
	unitA, unitB := op.newUnit("Unit A"), op.newUnit("Unit B")
	ev := op.newEvent(unitA, "A's event")
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	viewer := accept(t, op.invite(unitA, "viewer@example.com", "viewer"), "Vic Viewer", "viewer password")
	other := accept(t, op.invite(unitB, "other@example.com", "owner"), "Otto Other", "other password")
	return &catalogue{s: s, op: op, viewer: viewer, other: other, unit: unitA, ev: ev, tt: tt, base: "/console/events/" + ev}
}

// refusals checks a write route: viewer 403, another unit's owner 404,
// no CSRF token 403, and what the page shows did not change.
func (c *catalogue) refusals(t *testing.T, page, path string, kv ...string) {
	t.Helper()
	before := c.op.get(page).Body
	assert.Equal(t, 403, c.viewer.post(path, kv...).Status, "viewer %s", path)
	assert.Equal(t, 404, c.other.post(path, kv...).Status, "other unit %s", path)
	csrf := c.op.csrf
	c.op.csrf = ""
	assert.Equal(t, 403, c.op.post(path, kv...).Status, "no CSRF token %s", path)
	c.op.csrf = csrf
	after := c.op.get(page).Body
	tok := regexp.MustCompile(`value="[A-Za-z0-9_-]{43}"`)
	assert.Equal(t, tok.ReplaceAllString(before, ""), tok.ReplaceAllString(after, ""), "a refused form changed %s", path)
}

// audited reports whether the unit's audit log has the console operation.
func audited(t *testing.T, s *apptest.Service, unit, op string) bool {
	t.Helper()
	entries, _, err := s.Main.Audit().List(unit, audit.Filter{}, "", 200)
	require.NoError(t, err)
	for _, e := range entries {
		if e.OperationID == "console."+op {
			return true
		}
	}
	return false
}

var (
	addonRE  = regexp.MustCompile(`/addons/(ao_[A-Za-z0-9._]+)/status`)
	bundleRE = regexp.MustCompile(`/bundles/(bdl_[A-Za-z0-9._]+)/status`)
)

// TestConsoleAddonsAndBundles: an add-on and a bundle are created as
// drafts, edited, opened and archived behind confirms; a refused form
// shows the error next to its field with what was typed; availability is
// the machine's live count (an open order's hold shows); viewers read
// without forms, other units get 404, writes need the CSRF token, and
// each write is audited.
func TestConsoleAddonsAndBundles(t *testing.T) {
	c := newCatalogue(t)
	op, page := c.op, c.base+"/addons"
	p := op.get(page)
	require.Equal(t, 200, p.Status, p.Body)
	assert.Contains(t, p.Body, "No add-ons yet.")

	// Refused: the error is next to the price and the name typed stays.
	p = op.post(page, "name", "T-shirt", "priceAmount", "lots", "capacity", "50")
	require.Equal(t, 400, p.Status, p.Body)
	assert.Regexp(t, `id="na--price"[^>]*value="lots"[^>]*>\s*<p class="field-error"`, p.Body)
	assert.Contains(t, p.Body, `value="T-shirt"`)

	p = op.post(page, "name", "T-shirt", "priceAmount", "20.00", "capacity", "50")
	require.Equal(t, 303, p.Status, p.Body)
	p = op.get(page)
	addon := match(t, addonRE, p.Body)
	assert.Regexp(t, `T-shirt</strong>.*20 EUR.*50</td>.*0</td>.*0</td>.*50</td><td data-label="Status">draft`, oneLine(p.Body))
	assert.True(t, audited(t, c.s, c.unit, "createAddon"))

	// Edit, then open behind its confirm.
	p = op.post(page+"/"+addon, "name", "Shirt", "priceAmount", "18", "capacity", "")
	require.Equal(t, 303, p.Status, p.Body)
	p = op.post(c.base+"/addons/"+addon+"/status", "status", "open")
	require.Equal(t, 303, p.Status, p.Body)
	p = op.get(page)
	assert.Regexp(t, `Shirt</strong>.*18 EUR.*unlimited</td>.*open</td>`, oneLine(p.Body))
	assert.Contains(t, p.Body, "Close sales…")
	assert.True(t, audited(t, c.s, c.unit, "updateAddon"))
	p = op.post(page+"/"+addon, "name", "Shirt", "priceAmount", "18", "capacity", "-3")
	require.Equal(t, 400, p.Status, p.Body)
	assert.Regexp(t, `id="e-`+addon+`-cap"[^>]*value="-3"[^>]*>\s*<p class="field-error"`, p.Body)

	// A bundle of one ticket and two shirts; empty quantities are left out.
	p = op.post(c.base+"/bundles", "name", "Fan pack", "priceAmount", "60", "capacity", "10", "q_"+c.tt, "1", "q_"+addon, "2")
	require.Equal(t, 303, p.Status, p.Body)
	p = op.get(page)
	bundle := match(t, bundleRE, p.Body)
	assert.Regexp(t, `Fan pack</strong></td>\s*<td data-label="Contents">1 × General, 2 × Shirt</td>`, p.Body)
	assert.True(t, audited(t, c.s, c.unit, "createBundle"))
	p = op.post(c.base+"/bundles/"+bundle, "name", "Fan pack", "priceAmount", "55", "capacity", "10", "q_"+addon, "1")
	require.Equal(t, 303, p.Status, p.Body)
	p = op.post(c.base+"/bundles/"+bundle+"/status", "status", "open")
	require.Equal(t, 303, p.Status, p.Body)

	// An open order holding the bundle shows in its availability at once.
	key := op.secretKey(c.unit)
	require.Equal(t, 303, op.post(c.base+"/publish").Status)
	st, o := api(t, c.s, key, "POST", "/v1/events/"+c.ev+"/orders", map[string]any{"email": "b@example.com", "name": "B",
		"items": []map[string]any{{"itemType": "bundle", "itemId": bundle, "quantity": 1}}})
	require.Equal(t, 201, st, "%v", o)
	p = op.get(page)
	assert.Regexp(t, `Fan pack</strong></td>\s*<td data-label="Contents">1 × Shirt</td>.*55 EUR.*10</td>.*0</td>.*1</td>.*9</td><td data-label="Status">open`, oneLine(p.Body))

	// A move the core refuses shows on the page; archiving is behind a confirm.
	p = op.post(c.base+"/bundles/"+bundle+"/status", "status", "draft")
	assert.Equal(t, 409, p.Status, p.Body)
	assert.Contains(t, p.Body, `role="alert"`)
	p = op.post(c.base+"/bundles/"+bundle+"/status", "status", "sold")
	assert.Equal(t, 409, p.Status, p.Body)
	assert.Contains(t, p.Body, "Not changed: The status must be draft, open, closed or archived.")
	require.Equal(t, 303, op.post(c.base+"/addons/"+addon+"/status", "status", "closed").Status)
	assert.Contains(t, op.get(page).Body, "Archiving is final")
	require.Equal(t, 303, op.post(c.base+"/addons/"+addon+"/status", "status", "archived").Status)
	assert.Regexp(t, `Shirt</strong>.*archived</td>`, oneLine(op.get(page).Body))

	// Roles and CSRF.
	v := c.viewer.get(page)
	require.Equal(t, 200, v.Status)
	assert.Contains(t, v.Body, "Fan pack")
	assert.NotContains(t, v.Body, "New add-on")
	assert.NotContains(t, v.Body, `/status"`)
	assert.Equal(t, 404, c.other.get(page).Status)
	c.refusals(t, page, page, "name", "X", "priceAmount", "1")
	c.refusals(t, page, page+"/"+addon, "name", "X", "priceAmount", "1")
	c.refusals(t, page, c.base+"/bundles/"+bundle+"/status", "status", "closed")
	c.refusals(t, page, c.base+"/bundles", "name", "X")
}

// oneLine joins a page's lines so a pattern can span a table row.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// TestConsoleProgram: perks, venues (gated by a perk), sessions (times in
// the event's timezone, at a venue), speakers (on a session) and sponsors
// are created and deleted behind a confirm; a refused form keeps what
// was typed with the error next to its field; viewers read, other units
// 404, writes need the CSRF token, and writes are audited.
func TestConsoleProgram(t *testing.T) {
	c := newCatalogue(t)
	op, page := c.op, c.base+"/program"
	p := op.get(page)
	require.Equal(t, 200, p.Status, p.Body)
	assert.Contains(t, p.Body, "No perks yet.")
	idOf := func(kind, name string) string {
		t.Helper()
		re := regexp.MustCompile(`<p>Delete “` + regexp.QuoteMeta(name) + `”`)
		body := op.get(page).Body
		loc := re.FindStringIndex(body)
		require.NotNil(t, loc, "no %s %s", kind, name)
		m := regexp.MustCompile(`/program/` + kind + `/([A-Za-z0-9_.]+)/delete"[^<]*<input[^>]*>$`).FindStringSubmatch(body[:loc[0]])
		require.NotNil(t, m)
		return m[1]
	}

	require.Equal(t, 303, op.post(page+"/perks", "name", "VIP", "description", "Backstage").Status)
	vip := idOf("perks", "VIP")
	require.Equal(t, 303, op.post(page+"/venues", "name", "Lounge", "perkIds", vip).Status)
	lounge := idOf("venues", "Lounge")

	// A session ending before it starts is refused; what was typed stays.
	p = op.post(page+"/sessions", "title", "Keynote", "startsAt", "2030-06-01T19:00", "endsAt", "2030-06-01T18:00", "venueId", lounge)
	require.Equal(t, 400, p.Status, p.Body)
	assert.Contains(t, p.Body, `value="Keynote"`)
	assert.Regexp(t, `<option value="`+lounge+`" selected>`, p.Body)
	assert.Contains(t, p.Body, `class="field-error"`)
	p = op.post(page+"/sessions", "title", "Keynote", "startsAt", "2030-06-01T19:00", "endsAt", "2030-06-01T20:00", "venueId", lounge)
	require.Equal(t, 303, p.Status, p.Body)
	keynote := idOf("sessions", "Keynote")
	require.Equal(t, 303, op.post(page+"/speakers", "name", "Ada", "title", "Engineer", "bio", "Wrote programs.", "sessionIds", keynote).Status)
	p = op.post(page+"/sponsors", "name", "Acme", "url", "not a url", "tier", "gold")
	require.Equal(t, 400, p.Status, p.Body)
	assert.Regexp(t, `id="sponsors-url"[^>]*value="not a url">\s*<p class="field-error"`, p.Body)
	require.Equal(t, 303, op.post(page+"/sponsors", "name", "Acme", "url", "https://acme.example.com", "tier", "gold").Status)

	body := oneLine(op.get(page).Body)
	assert.Regexp(t, `Lounge</strong></td><td data-label="Gate"><span class="badge">VIP</span>`, body)
	assert.Regexp(t, `Keynote</strong></td><td data-label="When">Sat 1 Jun 2030 19:00 CEST – Sat 1 Jun 2030 20:00 CEST</td>\s*<td data-label="Venue">Lounge</td><td data-label="Gate"><span class="badge">VIP</span>`, body)
	assert.Regexp(t, `Ada</strong></td><td data-label="Title">Engineer</td><td data-label="Sessions">Keynote</td>`, body)
	assert.Regexp(t, `Acme</strong></td><td data-label="Tier">gold</td>`, body)
	for _, o := range []string{"createPerk", "createVenue", "createSession", "createSpeaker", "createSponsor"} {
		assert.True(t, audited(t, c.s, c.unit, o), o)
	}

	// Edits: a renamed perk shows in the gates; a cleared field is gone; a
	// refused edit opens its row with what was typed.
	require.Equal(t, 303, op.post(page+"/perks/"+vip, "name", "Very VIP", "description", "").Status)
	acme := idOf("sponsors", "Acme")
	require.Equal(t, 303, op.post(page+"/sponsors/"+acme, "name", "Acme", "url", "", "tier", "platinum").Status)
	p = op.post(page+"/sessions/"+keynote, "title", "Keynote!", "startsAt", "2030-06-01T21:00", "endsAt", "2030-06-01T20:00")
	require.Equal(t, 400, p.Status, p.Body)
	assert.Regexp(t, `<details open><summary class="btn small">Edit…</summary>\s*<form method="post" action="`+regexp.QuoteMeta(page+"/sessions/"+keynote)+`"`, p.Body)
	assert.Contains(t, p.Body, `id="`+keynote+`-title" name="title" type="text" maxlength="5000" value="Keynote!"`)
	body = oneLine(op.get(page).Body)
	assert.Regexp(t, `Lounge</strong></td><td data-label="Gate"><span class="badge">Very VIP</span>`, body)
	assert.Regexp(t, `Acme</strong></td><td data-label="Tier">platinum</td><td data-label="Site"></td>`, body)
	assert.Regexp(t, `Keynote</strong></td><td data-label="When">Sat 1 Jun 2030 19:00 CEST`, body)
	assert.True(t, audited(t, c.s, c.unit, "updateSponsor"))
	c.refusals(t, page, page+"/sponsors/"+acme, "name", "X")

	// Roles and CSRF, then delete behind a confirm.
	v := c.viewer.get(page)
	require.Equal(t, 200, v.Status)
	assert.Contains(t, v.Body, "Keynote")
	assert.NotContains(t, v.Body, "New session")
	assert.Equal(t, 404, c.other.get(page).Status)
	c.refusals(t, page, page+"/sponsors", "name", "X")
	c.refusals(t, page, page+"/sessions/"+keynote+"/delete")
	assert.Equal(t, 404, op.post(page+"/nonsense", "name", "X").Status)
	require.Equal(t, 303, op.post(page+"/perks/"+vip+"/delete").Status)
	require.Equal(t, 303, op.post(page+"/sessions/"+keynote+"/delete").Status)
	body = oneLine(op.get(page).Body)
	assert.Contains(t, body, "No perks yet.")
	assert.Contains(t, body, "No sessions yet.")
	assert.Regexp(t, `Lounge</strong></td><td data-label="Gate">open to all`, body)
	assert.True(t, audited(t, c.s, c.unit, "deleteSession"))

	// Lists page with the API's cursors.
	for i := range 50 {
		require.Equal(t, 303, op.post(page+"/sponsors", "name", fmt.Sprintf("Sponsor %02d", i)).Status)
	}
	body = op.get(page).Body
	assert.NotContains(t, body, "Sponsor 49")
	next := match(t, regexp.MustCompile(`href="\?sponsors=([^"#]+)#sponsors">More sponsors`), body)
	body = op.get(page + "?sponsors=" + url.QueryEscape(next)).Body
	assert.Contains(t, body, "Sponsor 49")
	assert.NotContains(t, body, "Acme")
}

// TestConsoleTranslations: a language is added (a bad tag is refused next
// to its field with what was typed), edited (keeping the item
// translations the API set) and deleted behind a confirm; viewers read,
// other units 404, writes need the CSRF token, and writes are audited.
func TestConsoleTranslations(t *testing.T) {
	c := newCatalogue(t)
	op, page := c.op, c.base+"/translations"
	p := op.get(page)
	require.Equal(t, 200, p.Status, p.Body)
	assert.Contains(t, p.Body, "No translations yet.")

	p = op.post(c.base+"/translations", "row", "", "lang", "not a tag!", "name", "Soirée")
	require.Equal(t, 400, p.Status, p.Body)
	assert.Regexp(t, `id="tr-lang"[^>]*value="not a tag!">\s*<p class="field-error"`, p.Body)
	assert.Contains(t, p.Body, `id="tr-name" name="name" type="text" maxlength="200" value="Soirée"`)
	require.Equal(t, 303, op.post(c.base+"/translations", "row", "", "lang", "fr", "name", "Soirée", "description", "Une soirée.").Status)

	// An item translation set through the API survives the console's edit.
	st, o := api(t, c.s, c.s.Admin, "PUT", "/admin/v1/events/"+c.ev+"/translations/fr", map[string]any{"name": "Soirée",
		"ticketTypes": map[string]any{c.tt: map[string]any{"name": "Entrée"}}})
	require.Equal(t, 200, st, "%v", o)
	require.Equal(t, 303, op.post(c.base+"/translations", "row", "fr", "lang", "fr", "name", "La soirée", "description", "").Status)
	st, o = api(t, c.s, c.s.Admin, "GET", "/admin/v1/events/"+c.ev+"/translations/fr", nil)
	require.Equal(t, 200, st, "%v", o)
	assert.Equal(t, "La soirée", o["name"])
	assert.Equal(t, map[string]any{c.tt: map[string]any{"name": "Entrée"}}, o["ticketTypes"])
	body := oneLine(op.get(page).Body)
	assert.Regexp(t, `>fr</td><td data-label="Name">La soirée</td>`, body)
	assert.True(t, audited(t, c.s, c.unit, "putTranslation"))

	v := c.viewer.get(page)
	require.Equal(t, 200, v.Status)
	assert.Contains(t, v.Body, "La soirée")
	assert.NotContains(t, v.Body, "Add a language")
	assert.Equal(t, 404, c.other.get(page).Status)
	c.refusals(t, page, c.base+"/translations", "lang", "de", "name", "X")
	c.refusals(t, page, c.base+"/translations/fr/delete")

	require.Equal(t, 303, op.post(c.base+"/translations/fr/delete").Status)
	p = op.get(page)
	assert.Contains(t, p.Body, "No translations yet.")
	assert.True(t, audited(t, c.s, c.unit, "deleteTranslation"))
}
