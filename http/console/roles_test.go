package console_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
	"ticketd/http/console"
)

// TestEveryWriteRouteChecksRoleAndCSRF walks every signed-in POST route of
// the console with unit A's ids: without a session it goes to sign-in;
// without the CSRF token it is 403; a viewer of A gets 403; the owner of
// another unit gets the 404 of a missing thing; a door member gets 403
// everywhere but the door. Nothing of it changes anything.
func TestEveryWriteRouteChecksRoleAndCSRF(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unitA, unitB := op.newUnit("Unit A"), op.newUnit("Unit B")
	ev := op.newEvent(unitA, "A's event")
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	key := op.secretKey(unitA)
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	viewer := accept(t, op.invite(unitA, "viewer@example.com", "viewer"), "Vic Viewer", "viewer password")
	door := accept(t, op.invite(unitA, "door@example.com", "door"), "Dora Door", "door password 1")
	other := accept(t, op.invite(unitB, "other@example.com", "owner"), "Otto Other", "other password")
	page := op.get("/console/units/" + unitA)
	memberID := match(t, regexp.MustCompile(`/members/(mem_[A-Za-z0-9]+)/role`), page.Body)
	keyID := match(t, regexp.MustCompile(`/keys/(key_[A-Za-z0-9]+)/revoke`), op.get("/console/units/"+unitA+"/keys").Body)
	num := sell(t, s, key, ev, tt, "buyer@example.com", "B")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/codes", "registrationTypeId", tt, "count", "1").Status)
	codeID := match(t, regexp.MustCompile(`/codes/(rc_[A-Za-z0-9]+)/disable`), op.get("/console/events/"+ev+"/codes").Body)
	regID := match(t, regexp.MustCompile(`/registrations/(reg_[A-Za-z0-9]+)/cancel`), op.get("/console/events/"+ev+"/attendees").Body)

	fill := strings.NewReplacer("{unitId}", unitA, "{eventId}", ev, "{memberId}", memberID, "{keyId}", keyID,
		"{typeId}", tt, "{linkId}", "inv_x", "{orderNumber}", num, "{registrationId}", regID, "{action}", "cancel", "{codeId}", codeID, "{endpointId}", "we_0", "{id}", "x", "{promoId}", "pc_0", "{deliveryId}", "0000000000000000-00000000")
	before := op.get("/console/units/" + unitA).Body
	anon := apptest.NewBrowser(t)
	routes := console.WriteRoutes()
	require.Greater(t, len(routes), 15)
	for _, pattern := range routes {
		path := fill.Replace(pattern)
		signOut := strings.HasPrefix(path, "/console/logout")
		t.Run(pattern, func(t *testing.T) {
			p := anon.Post(s.URL+path, url.Values{})
			assert.Equal(t, 303, p.Status, "no session")
			assert.Equal(t, "/console/login", p.Header.Get("Location"))
			p = op.b.Post(s.URL+path, url.Values{"name": {"x"}})
			assert.Equal(t, 403, p.Status, "no CSRF token")
			if signOut {
				return
			}
			p = viewer.post(path, "name", "x", "role", "owner", "email", "v2@example.com", "status", "open")
			assert.Equal(t, 403, p.Status, "viewer")
			p = other.post(path, "name", "x", "role", "owner", "email", "v2@example.com", "status", "open")
			if pattern == "/console/units" || pattern == "/console/outbox/{id}/retry" {
				assert.Equal(t, 403, p.Status, "the operator's alone")
			} else {
				assert.Equal(t, 404, p.Status, "another unit's owner")
			}
			if pattern != "/console/events/{eventId}/door" {
				p = door.post(path, "name", "x", "role", "owner", "email", "v2@example.com", "status", "open")
				assert.Equal(t, 403, p.Status, "door member")
			}
		})
	}
	// Nobody's refused form changed unit A (members, links, events).
	after := op.get("/console/units/" + unitA).Body
	csrf := regexp.MustCompile(`value="[A-Za-z0-9_-]{43}"`)
	assert.Equal(t, csrf.ReplaceAllString(before, ""), csrf.ReplaceAllString(after, ""))
	// Reads of A by B's owner are the same 404 as a missing event.
	assert.Equal(t, 404, other.get("/console/events/"+ev).Status)
	assert.Equal(t, 404, other.get("/console/events/evt_missing").Status)
	assert.Equal(t, 404, other.get("/console/events/"+ev+"/attendees.csv").Status)
	assert.Equal(t, 404, other.get("/console/units/"+unitA).Status)
	assert.Equal(t, 200, viewer.get("/console/events/"+ev+"/orders").Status)
	assert.Equal(t, 403, viewer.get("/console/events/"+ev+"/door").Status)
}
