package console_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

var revRE = regexp.MustCompile(`name="rev" value="([^"]+)"`)

// formPost posts a form-builder form with the draft revision the page
// showed.
func (m *member) formPost(page, path string, kv ...string) apptest.Page {
	m.t.Helper()
	rev := match(m.t, revRE, m.get(page).Body)
	return m.post(path, append([]string{"rev", rev}, kv...)...)
}

// TestFormBuilder: an organizer builds a ticket type's registration form
// in the console (questions of each kind, edited, reordered, removed),
// refused input comes back next to its field with what was typed, a page
// older than the draft is refused, publishing puts the questions on the
// checkout, and the questions are copied to another ticket type. Viewers
// read, door members and other units see nothing, every write needs the
// CSRF token and is audited.
func TestFormBuilder(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unit, other := op.newUnit("Forms Unit"), op.newUnit("Other Unit")
	ev := op.newEvent(unit, "Form Night")
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	require.Equal(t, 303, op.post("/console/events/"+ev+"/ticket-types", "ttName", "VIP", "priceAmount", "90", "status", "open").Status)
	vip := ""
	for _, m := range typeRE.FindAllStringSubmatch(op.get("/console/events/"+ev).Body, -1) {
		if m[1] != tt {
			vip = m[1]
		}
	}
	require.NotEmpty(t, vip)

	p := op.get("/console/events/" + ev + "/forms")
	require.Equal(t, 303, p.Status)
	page := "/console/events/" + ev + "/forms/" + tt
	assert.Equal(t, page, p.Header.Get("Location"))
	p = op.get(page)
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, "No questions yet")
	assert.Contains(t, p.Body, `<label for="q-new-label">Question</label>`)
	for _, kind := range []string{"text", "email", "phone", "select", "multi_select", "checkbox", "date"} {
		assert.Contains(t, p.Body, `<option value="`+kind+`"`, "the builder offers %s", kind)
	}
	add := page + "/questions"

	p = op.formPost(page, add, "label", "Company name", "type", "text", "required", "1")
	require.Equal(t, 303, p.Status, p.Body)
	assert.Equal(t, page+"?done=added", p.Header.Get("Location"))
	p = op.get(p.Header.Get("Location"))
	assert.Contains(t, p.Body, "Question added to the draft.")
	assert.Contains(t, p.Body, "<strong>Company name</strong> <span class=\"badge\">required</span>")
	assert.Contains(t, p.Body, "<code>company_name</code>", "a key made from the label")
	assert.Contains(t, p.Body, "not yet at checkout")

	// Refused: a choice without options, a key with a space; what was
	// typed stays, the error is next to its field.
	p = op.formPost(page, add, "label", "T-shirt size", "type", "select", "options", " \n ")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `id="q-new-options-err"`)
	assert.Contains(t, p.Body, `aria-describedby="q-new-options-err"`)
	assert.Contains(t, p.Body, `value="T-shirt size"`)
	assert.Contains(t, p.Body, `<option value="select" selected>`)
	p = op.formPost(page, add, "label", "Phone", "type", "phone", "key", "my phone")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `id="q-new-key-err"`)
	assert.Contains(t, p.Body, `value="my phone"`)

	require.Equal(t, 303, op.formPost(page, add, "label", "T-shirt size", "type", "select", "options", "S\r\nM\r\n\r\nL", "required", "1").Status)
	require.Equal(t, 303, op.formPost(page, add, "label", "Diet", "type", "multi_select", "options", "vegan\nhalal").Status)
	for _, kind := range []string{"email", "phone", "checkbox", "date"} {
		require.Equal(t, 303, op.formPost(page, add, "label", "A "+kind, "type", kind, "options", "ignored for "+kind).Status, kind)
	}

	// Edit: the label and required flag change, the key stays.
	p = op.formPost(page, page+"/questions/company_name", "label", "Company", "type", "text")
	require.Equal(t, 303, p.Status, p.Body)
	p = op.formPost(page, page+"/questions/company_name", "label", "", "type", "text")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `id="q-company_name-label-err"`)
	// Reorder: the T-shirt goes first.
	require.Equal(t, 303, op.formPost(page, page+"/questions/t_shirt_size/move", "direction", "up").Status)
	p = op.get(page)
	assert.Less(t, strings.Index(p.Body, "<strong>T-shirt size</strong>"), strings.Index(p.Body, "<strong>Company</strong>"))
	assert.Contains(t, p.Body, "Options: S, M, L")
	assert.NotContains(t, p.Body, `id="up-t_shirt_size"`, "the first cannot go up")
	// Remove, behind a confirmation.
	assert.Contains(t, p.Body, `<details class="confirm"><summary class="btn small danger" id="remove-a_date"`)
	require.Equal(t, 303, op.formPost(page, page+"/questions/a_date/delete").Status)
	assert.NotContains(t, op.get(page).Body, "<strong>A date</strong>")
	assert.Equal(t, 404, op.formPost(page, page+"/questions/a_date/delete").Status)

	// A page older than the draft is refused and shown as it is now.
	stale := match(t, revRE, op.get(page).Body)
	require.Equal(t, 303, op.formPost(page, page+"/questions/diet/move", "direction", "up").Status)
	p = op.post(page+"/questions/company_name/delete", "rev", stale)
	assert.Equal(t, 409, p.Status)
	assert.Contains(t, p.Body, "The form changed since this page was opened")
	assert.Contains(t, op.get(page).Body, "<strong>Company</strong>", "nothing removed")

	// Publish: the checkout's form is the draft now.
	require.Equal(t, 303, op.formPost(page, page+"/publish").Status)
	p = op.get(page)
	assert.Contains(t, p.Body, `id="form-status">published<`)
	assert.NotContains(t, p.Body, "not yet at checkout")
	st, f := api(t, s, s.Admin, "GET", "/admin/v1/events/"+ev+"/ticket-types/"+tt+"/form", nil)
	require.Equal(t, 200, st)
	var ids []string
	for _, q := range f["publishedQuestions"].([]any) {
		ids = append(ids, q.(map[string]any)["id"].(string))
	}
	assert.Equal(t, []string{"t_shirt_size", "diet", "company_name", "a_email", "a_phone", "a_checkbox"}, ids)

	// Copied to the VIP ticket type's draft.
	p = op.formPost(page, page+"/copy", "to", tt)
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `id="copy-to-err"`)
	require.Equal(t, 303, op.formPost(page, page+"/copy", "to", vip).Status)
	p = op.get("/console/events/" + ev + "/forms/" + vip)
	assert.Contains(t, p.Body, "<strong>T-shirt size</strong>")
	assert.Contains(t, p.Body, `id="form-status">not published<`)

	// Roles.
	viewer := accept(t, op.invite(unit, "viewer@example.com", "viewer"), "Vic Viewer", "viewer password")
	door := accept(t, op.invite(unit, "door@example.com", "door"), "Dora Door", "door password 1")
	stranger := accept(t, op.invite(other, "o@example.com", "owner"), "Otto", "other password")
	p = viewer.get(page)
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, "<strong>T-shirt size</strong>")
	assert.NotContains(t, p.Body, "Add a question")
	assert.NotContains(t, p.Body, `name="rev"`)
	assert.Equal(t, 403, viewer.post(add, "label", "x", "type", "text").Status)
	assert.Equal(t, 403, door.get(page).Status)
	assert.Equal(t, 404, stranger.get(page).Status)
	assert.Equal(t, 404, stranger.post(add, "label", "x", "type", "text").Status)
	assert.Equal(t, 403, op.b.Post(s.URL+add, map[string][]string{"label": {"x"}, "type": {"text"}}).Status, "no CSRF token")
	assert.NotContains(t, op.get(page).Body, "<strong>x</strong>")

	ops := auditOps(t, s, unit)
	assert.Contains(t, ops, "console.putRegistrationForm by admin")
	assert.Contains(t, ops, "console.publishRegistrationForm by admin")
}
