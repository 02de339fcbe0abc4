package console_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// TestDuplicateCopiesFormsAndProgram: a duplicate carries the ticket
// types' registration forms (a published one published, its newer draft
// kept) and perk bindings, and the program (perks, venues, sessions,
// speakers, sponsors), every reference pointing at the copies, never at
// the original's records.
func TestDuplicateCopiesFormsAndProgram(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Copies")
	ev := op.newEvent(unit, "Summit")
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	adm := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		st, out := api(t, s, s.Admin, method, "/admin/v1/events/"+path, body)
		require.Equal(t, want, st, "%s %s: %v", method, path, out)
		return out
	}
	list := func(path string) []map[string]any {
		t.Helper()
		var out []map[string]any
		for _, x := range adm("GET", path, nil, 200)["data"].([]any) {
			out = append(out, x.(map[string]any))
		}
		return out
	}
	perk := adm("POST", ev+"/perks", map[string]any{"name": "Lounge", "description": "Upstairs"}, 201)["id"].(string)
	venue := adm("POST", ev+"/venues", map[string]any{"name": "Hall A", "perkIds": []string{perk}}, 201)["id"].(string)
	ses := adm("POST", ev+"/sessions", map[string]any{"title": "Keynote", "startsAt": "2030-06-01T10:00:00Z", "endsAt": "2030-06-01T11:00:00Z",
		"venueId": venue, "perkIds": []string{perk}}, 201)["id"].(string)
	adm("POST", ev+"/speakers", map[string]any{"name": "Ada", "title": "CTO", "sessionIds": []string{ses}}, 201)
	adm("POST", ev+"/sponsors", map[string]any{"name": "Acme", "url": "https://acme.example.com", "tier": "gold"}, 201)
	adm("PUT", ev+"/ticket-types/"+tt+"/perks", map[string]any{"perkIds": []string{perk}}, 200)
	form := ev + "/ticket-types/" + tt + "/form"
	adm("PUT", form, map[string]any{"questions": []map[string]any{{"id": "company", "type": "text", "label": "Company", "required": true}}}, 200)
	adm("POST", form+"/publish", nil, 200)
	adm("PUT", form, map[string]any{"questions": []map[string]any{{"id": "company", "type": "text", "label": "Company", "required": true},
		{"id": "diet", "type": "select", "label": "Diet", "options": []string{"none", "vegan"}}}}, 200)

	p := op.post("/console/events/" + ev + "/duplicate")
	require.Equal(t, 303, p.Status, p.Body)
	page := op.get(p.Header.Get("Location"))
	cp := match(t, regexp.MustCompile(`/console/events/(evt_[A-Za-z0-9]+)`), p.Header.Get("Location"))
	require.NotEqual(t, ev, cp)
	assert.Contains(t, page.Body, "with its 1 ticket type, 0 add-ons, 1 registration form and 5 program items, as a draft")

	perks := list(cp + "/perks")
	require.Len(t, perks, 1)
	assert.Equal(t, "Lounge", perks[0]["name"])
	assert.Equal(t, "Upstairs", perks[0]["description"])
	cpPerk := perks[0]["id"].(string)
	assert.NotEqual(t, perk, cpPerk)
	venues := list(cp + "/venues")
	require.Len(t, venues, 1)
	assert.Equal(t, "Hall A", venues[0]["name"])
	assert.Equal(t, []any{cpPerk}, venues[0]["perkIds"], "the venue's gate is the copy's perk")
	sessions := list(cp + "/sessions")
	require.Len(t, sessions, 1)
	assert.Equal(t, "Keynote", sessions[0]["title"])
	assert.Equal(t, "2030-06-01T10:00:00Z", sessions[0]["startsAt"])
	assert.Equal(t, venues[0]["id"], sessions[0]["venueId"], "the session is in the copy's venue")
	assert.Equal(t, []any{cpPerk}, sessions[0]["perkIds"])
	speakers := list(cp + "/speakers")
	require.Len(t, speakers, 1)
	assert.Equal(t, "CTO", speakers[0]["title"])
	assert.Equal(t, []any{sessions[0]["id"]}, speakers[0]["sessionIds"], "the speaker talks at the copy's session")
	sponsors := list(cp + "/sponsors")
	require.Len(t, sponsors, 1)
	assert.Equal(t, "gold", sponsors[0]["tier"])

	cpType := match(t, typeRE, op.get("/console/events/"+cp).Body)
	require.NotEqual(t, tt, cpType)
	prog := op.get("/console/events/" + cp + "/program").Body
	assert.Contains(t, prog, `id="`+cpType+`-b-`+cpPerk+`" name="perkIds" value="`+cpPerk+`" checked>`, "the copy's ticket type carries the copy's perk")
	f := adm("GET", cp+"/ticket-types/"+cpType+"/form", nil, 200)
	orig := adm("GET", form, nil, 200)
	assert.Equal(t, orig["status"], f["status"], "the form's state as the original's (a newer draft over a published form)")
	assert.NotNil(t, f["publishedAt"], "published: buyers of the copy answer it")
	assert.Len(t, f["publishedQuestions"], 1, "the published form as buyers see it")
	assert.Len(t, f["questions"], 2, "and the organizer's newer draft")
}
