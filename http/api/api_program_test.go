package api_test

// Black-box tests of the program and perks: the console's venues,
// sessions, speakers, sponsors, perks, bindings and grants; the Developer
// API's agenda, line-up, venues, attendees and effective perks; the agenda
// reset rule; and the advisory perk verdict at session and venue doors.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apiConsole is an event reached through the console (admin API).
type apiConsole struct {
	adm *apiClient
	ev  string
}

func (c apiConsole) path(p string) string { return "/admin/v1/events/" + c.ev + p }

// create POSTs a console record and returns it.
func (c apiConsole) create(t testing.TB, kind string, body map[string]any) map[string]any {
	t.Helper()
	return apiWant(t, c.adm.Do("POST", c.path("/"+kind), body), 201)
}

func apiStrings(v any) []string {
	out := []string{}
	xs, _ := v.([]any)
	for _, x := range xs {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func TestAPIProgram(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("console CRUD of every collection and the Developer reads", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		ev := apiS(apiEvent(t, u.dev, map[string]any{"startsAt": apiStartsAt}), "id")
		c := apiConsole{adm: f.admin(t), ev: ev}

		vip := c.create(t, "perks", map[string]any{"name": "VIP lounge", "description": "Drinks"})
		assert.Regexp(t, `^prk_`, vip["id"])
		perk := apiS(vip, "id")
		p := apiWant(t, c.adm.Do("PATCH", c.path("/perks/"+perk), map[string]any{"description": nil}), 200)
		assert.Nil(t, p["description"])
		assert.Equal(t, "VIP lounge", p["name"])
		apiWant(t, c.adm.Do("GET", c.path("/perks/"+perk), nil), 200)
		assert.Equal(t, []string{perk}, apiIDs(t, apiWant(t, c.adm.Do("GET", c.path("/perks"), nil), 200)))

		hall := c.create(t, "venues", map[string]any{"name": "Hall", "perkIds": []string{perk}})
		assert.Regexp(t, `^ven_`, hall["id"])
		assert.Equal(t, []string{perk}, apiStrings(hall["perkIds"]))
		venue := apiS(hall, "id")
		v := apiWant(t, c.adm.Do("PATCH", c.path("/venues/"+venue), map[string]any{"name": "Main hall"}), 200)
		assert.Equal(t, "Main hall", v["name"])
		apiWant400(t, c.adm.Do("POST", c.path("/venues"), map[string]any{"name": "X", "perkIds": []string{"prk_nope"}}), "perkIds[0]")

		late := c.create(t, "sessions", map[string]any{"title": "Closing", "startsAt": "2030-06-01T16:00:00Z", "endsAt": "2030-06-01T17:00:00Z"})
		early := c.create(t, "sessions", map[string]any{"title": "Keynote", "startsAt": "2030-06-01T09:00:00Z",
			"endsAt": "2030-06-01T10:00:00Z", "venueId": venue})
		assert.Regexp(t, `^ses_`, early["id"])
		assert.Equal(t, []string{perk}, apiStrings(early["gatePerkIds"]), "a session inherits its venue's gate")
		apiWant400(t, c.adm.Do("POST", c.path("/sessions"), map[string]any{"title": "Bad", "startsAt": "2030-06-01T10:00:00Z",
			"endsAt": "2030-06-01T09:00:00Z"}), "endsAt")
		apiWant400(t, c.adm.Do("POST", c.path("/sessions"), map[string]any{"title": "Bad", "startsAt": "2030-06-01T10:00:00Z",
			"endsAt": "2030-06-01T11:00:00Z", "venueId": "ven_nope"}), "venueId")
		s := apiWant(t, c.adm.Do("PATCH", c.path("/sessions/"+apiS(early, "id")), map[string]any{"title": "Opening keynote"}), 200)
		assert.Equal(t, "Opening keynote", s["title"])

		reg := apiRegister(t, u.dev, ev, "", "speaker@example.com")
		sp := c.create(t, "speakers", map[string]any{"name": "Rob", "title": "Engineer", "registrationId": apiS(reg, "id"),
			"sessionIds": []string{apiS(early, "id")}})
		assert.Regexp(t, `^spk_`, sp["id"])
		apiWant400(t, c.adm.Do("POST", c.path("/speakers"), map[string]any{"name": "X", "registrationId": "reg_nope"}), "registrationId")
		apiWant400(t, c.adm.Do("POST", c.path("/speakers"), map[string]any{"name": "X", "sessionIds": []string{"ses_nope"}}), "sessionIds[0]")
		sp = apiWant(t, c.adm.Do("PATCH", c.path("/speakers/"+apiS(sp, "id")), map[string]any{"bio": "Gopher", "title": nil}), 200)
		assert.Equal(t, "Gopher", sp["bio"])
		assert.Nil(t, sp["title"])

		spon := c.create(t, "sponsors", map[string]any{"name": "Acme", "url": "https://acme.example", "tier": "gold"})
		spon = apiWant(t, c.adm.Do("PATCH", c.path("/sponsors/"+apiS(spon, "id")), map[string]any{"tier": "platinum"}), 200)
		assert.Equal(t, "platinum", spon["tier"])
		assert.Len(t, apiData(t, apiWant(t, c.adm.Do("GET", c.path("/sponsors"), nil), 200)), 1)
		apiWant(t, c.adm.Do("GET", c.path("/sponsors/"+apiS(spon, "id")), nil), 200)

		// The console lists every collection too.
		assert.Equal(t, []string{venue}, apiIDs(t, apiWant(t, c.adm.Do("GET", c.path("/venues"), nil), 200)))
		assert.Equal(t, []string{apiS(early, "id"), apiS(late, "id")}, apiIDs(t, apiWant(t, c.adm.Do("GET", c.path("/sessions"), nil), 200)))
		assert.Equal(t, []string{apiS(sp, "id")}, apiIDs(t, apiWant(t, c.adm.Do("GET", c.path("/speakers?limit=10"), nil), 200)))
		apiWant400(t, c.adm.AllowInvalidRequest().Do("GET", c.path("/speakers?limit=0"), nil), "limit")

		// Developer reads.
		d := "/v1/events/" + ev
		assert.Equal(t, []string{apiS(early, "id"), apiS(late, "id")}, apiIDs(t, apiWant(t, u.dev.Do("GET", d+"/sessions", nil), 200)), "time order")
		page := apiWant(t, u.dev.Do("GET", d+"/sessions?limit=1", nil), 200)
		require.Equal(t, true, page["hasMore"])
		next := apiWant(t, u.dev.Do("GET", d+"/sessions?limit=1&cursor="+apiS(page, "nextCursor"), nil), 200)
		assert.Equal(t, []string{apiS(late, "id")}, apiIDs(t, next))
		assert.Equal(t, []string{apiS(sp, "id")}, apiIDs(t, apiWant(t, u.dev.Do("GET", d+"/speakers", nil), 200)))
		venues := apiData(t, apiWant(t, u.dev.Do("GET", d+"/venues", nil), 200))
		require.Len(t, venues, 1)
		assert.Equal(t, []string{perk}, apiStrings(venues[0]["perkIds"]))

		// Deletes detach references.
		apiWant(t, c.adm.Do("DELETE", c.path("/perks/"+perk), nil), 200)
		apiWantErr(t, c.adm.Do("GET", c.path("/perks/"+perk), nil), 404, "NOT_FOUND")
		v = apiWant(t, c.adm.Do("GET", c.path("/venues/"+venue), nil), 200)
		assert.Empty(t, apiStrings(v["perkIds"]), "a deleted perk leaves the gate")
		apiWant(t, c.adm.Do("DELETE", c.path("/venues/"+venue), nil), 200)
		s = apiWant(t, c.adm.Do("GET", c.path("/sessions/"+apiS(early, "id")), nil), 200)
		assert.Nil(t, s["venueId"], "a deleted venue leaves its sessions")
		apiWant(t, c.adm.Do("DELETE", c.path("/sessions/"+apiS(early, "id")), nil), 200)
		sp = apiWant(t, c.adm.Do("GET", c.path("/speakers/"+apiS(sp, "id")), nil), 200)
		assert.Empty(t, apiStrings(sp["sessionIds"]))
		apiWant(t, c.adm.Do("DELETE", c.path("/speakers/"+apiS(sp, "id")), nil), 200)
		apiWant(t, c.adm.Do("DELETE", c.path("/sponsors/"+apiS(spon, "id")), nil), 200)
		apiWantErr(t, c.adm.Do("DELETE", c.path("/sponsors/"+apiS(spon, "id")), nil), 404, "NOT_FOUND")

		// The console reaches only existing events.
		apiWantErr(t, c.adm.Do("POST", "/admin/v1/events/evt_nope/venues", map[string]any{"name": "X"}), 404, "NOT_FOUND")
	})

	t.Run("developer reads are isolated between business units", func(t *testing.T) {
		t.Parallel()
		a, b := f.unit(t), f.unit(t)
		ev := apiS(apiEvent(t, a.dev, nil), "id")
		tt := apiOpenType(t, a.dev, ev, nil)
		reg := apiRegister(t, a.dev, ev, tt, "ann@example.com")
		for _, p := range []string{"/sessions", "/speakers", "/venues", "/attendees", "/registrations/" + apiS(reg, "id") + "/perks"} {
			apiWant(t, a.dev.Do("GET", "/v1/events/"+ev+p, nil), 200)
			apiWantErr(t, b.dev.Do("GET", "/v1/events/"+ev+p, nil), 404, "NOT_FOUND")
		}
	})

	t.Run("moving the start with sessions answers 412 until confirmAgendaReset", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		ev := apiS(apiEvent(t, u.dev, map[string]any{"startsAt": apiStartsAt}), "id")
		c := apiConsole{adm: f.admin(t), ev: ev}
		ses := c.create(t, "sessions", map[string]any{"title": "Talk", "startsAt": "2030-06-01T10:00:00Z", "endsAt": "2030-06-01T11:00:00Z"})
		sp := c.create(t, "speakers", map[string]any{"name": "Rob", "sessionIds": []string{apiS(ses, "id")}})
		move := map[string]any{"startsAt": "2030-07-01T09:00:00Z"}
		apiWantErr(t, u.dev.Do("PATCH", "/v1/events/"+ev, move), 412, "FAILED_PRECONDITION")
		assert.Len(t, apiData(t, apiWant(t, u.dev.Do("GET", "/v1/events/"+ev+"/sessions", nil), 200)), 1, "nothing changed")
		apiWant(t, u.dev.Do("PATCH", "/v1/events/"+ev, map[string]any{"name": "Renamed"}), 200)
		e := apiWant(t, u.dev.Do("PATCH", "/v1/events/"+ev, apiMerge(move, map[string]any{"confirmAgendaReset": true})), 200)
		assert.Equal(t, "2030-07-01T09:00:00Z", e["startsAt"])
		assert.Empty(t, apiData(t, apiWant(t, u.dev.Do("GET", "/v1/events/"+ev+"/sessions", nil), 200)), "the agenda is cleared")
		sp = apiWant(t, c.adm.Do("GET", c.path("/speakers/"+apiS(sp, "id")), nil), 200)
		assert.Empty(t, apiStrings(sp["sessionIds"]))
		// Without sessions, moving the start needs no confirmation.
		apiWant(t, u.dev.Do("PATCH", "/v1/events/"+ev, map[string]any{"startsAt": "2030-08-01T09:00:00Z"}), 200)
	})

	t.Run("gated doors answer an advisory verdict; perks by ticket, code and grant", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		s := apiShop{c: u.dev, ev: apiPublished(t, u.dev)}
		c := apiConsole{adm: f.admin(t), ev: s.ev}
		vipType := apiOpenType(t, u.dev, s.ev, map[string]any{"name": "VIP"})
		gaType := apiOpenType(t, u.dev, s.ev, map[string]any{"name": "GA"})
		perk := apiS(c.create(t, "perks", map[string]any{"name": "Workshop"}), "id")
		room := apiS(c.create(t, "venues", map[string]any{"name": "Room 1"}), "id")
		ses := apiS(c.create(t, "sessions", map[string]any{"title": "Workshop", "startsAt": "2030-06-01T10:00:00Z",
			"endsAt": "2030-06-01T12:00:00Z", "perkIds": []string{perk}}), "id")
		gatedRoom := apiS(c.create(t, "venues", map[string]any{"name": "Lounge", "perkIds": []string{perk}}), "id")

		b := apiWant(t, c.adm.Do("PUT", c.path("/ticket-types/"+vipType+"/perks"), map[string]any{"perkIds": []string{perk}}), 200)
		assert.Equal(t, []string{perk}, apiStrings(b["perkIds"]))
		apiWant400(t, c.adm.Do("PUT", c.path("/ticket-types/"+vipType+"/perks"), map[string]any{"perkIds": []string{"prk_nope"}}), "perkIds[0]")
		apiWantErr(t, c.adm.Do("PUT", c.path("/ticket-types/tt_nope/perks"), map[string]any{"perkIds": []string{}}), 404, "NOT_FOUND")

		checkin := func(regID, subjectType, subjectID string, status int) map[string]any {
			t.Helper()
			return apiWant(t, u.dev.Do("POST", "/v1/events/"+s.ev+"/checkins",
				map[string]any{"registrationId": regID, "subjectType": subjectType, "subjectId": subjectID}), status)
		}
		perksOf := func(regID string) []map[string]any {
			t.Helper()
			m := apiWant(t, u.dev.Do("GET", "/v1/events/"+s.ev+"/registrations/"+regID+"/perks", nil), 200)
			return apiData(t, map[string]any{"data": m["perks"]})
		}

		// Without the perk: 201 with a negative verdict.
		ga := apiS(apiRegister(t, u.dev, s.ev, gaType, "ga@example.com"), "id")
		res := checkin(ga, "session", ses, 201)
		assert.Equal(t, false, apiM(res, "access")["allowed"])
		assert.Equal(t, []string{perk}, apiStrings(apiM(res, "access")["missingPerkIds"]))
		res = checkin(ga, "venue", room, 201)
		assert.Equal(t, true, apiM(res, "access")["allowed"], "an empty gate is open to all")
		assert.Empty(t, perksOf(ga))

		// By ticket type.
		vip := apiS(apiRegister(t, u.dev, s.ev, vipType, "vip@example.com"), "id")
		res = checkin(vip, "session", ses, 201)
		assert.Equal(t, true, apiM(res, "access")["allowed"])
		ps := perksOf(vip)
		require.Len(t, ps, 1)
		assert.Equal(t, []string{"ticket_type"}, apiStrings(ps[0]["sources"]))

		// By code, through an order placed with the code.
		code := s.mint(t, map[string]any{"registrationTypeId": gaType})[0]
		apiWant(t, c.adm.Do("PUT", c.path("/redemption-codes/"+apiS(code, "id")+"/perks"), map[string]any{"perkIds": []string{perk}}), 200)
		look := apiWant(t, u.dev.Do("GET", "/v1/events/"+s.ev+"/redemption-codes/lookup?code="+apiS(code, "code"), nil), 200)
		lp := apiData(t, map[string]any{"data": look["perks"]})
		require.Len(t, lp, 1, "the lookup shows the admission's perks")
		assert.Equal(t, perk, lp[0]["id"])
		o := apiWant(t, s.order(t, gaType, "coded@example.com", map[string]any{"redemptionCode": apiS(code, "code")}), 201)
		paid := apiWant(t, u.dev.Do("POST", "/v1/events/"+s.ev+"/orders/"+apiS(o, "orderNumber")+"/confirm", map[string]any{}), 200)
		require.Equal(t, "paid", paid["status"])
		coded := apiS(paid, "registrationId")
		res = checkin(coded, "venue", gatedRoom, 201)
		assert.Equal(t, true, apiM(res, "access")["allowed"])
		ps = perksOf(coded)
		require.Len(t, ps, 1)
		assert.Equal(t, []string{"redemption_code"}, apiStrings(ps[0]["sources"]))

		// By grant: a repeat grant answers 200; a repeat scan re-reads the verdict.
		g := apiWant(t, c.adm.Do("POST", c.path("/registrations/"+ga+"/perk-grants"), map[string]any{"perkId": perk}), 201)
		assert.Equal(t, true, g["created"])
		apiWant(t, c.adm.Do("POST", c.path("/registrations/"+ga+"/perk-grants"), map[string]any{"perkId": perk}), 200)
		res = checkin(ga, "session", ses, 200)
		assert.Equal(t, true, res["alreadyCheckedIn"])
		assert.Equal(t, true, apiM(res, "access")["allowed"])
		ps = perksOf(ga)
		require.Len(t, ps, 1)
		assert.Equal(t, []string{"grant"}, apiStrings(ps[0]["sources"]))
		apiWant400(t, c.adm.Do("POST", c.path("/registrations/"+ga+"/perk-grants"), map[string]any{"perkId": "prk_nope"}), "perkId")
		apiWantErr(t, c.adm.Do("POST", c.path("/registrations/reg_nope/perk-grants"), map[string]any{"perkId": perk}), 404, "NOT_FOUND")
		r := apiWant(t, c.adm.Do("DELETE", c.path("/registrations/"+ga+"/perk-grants/"+perk), nil), 200)
		assert.Empty(t, apiData(t, map[string]any{"data": r["perks"]}))

		// Unknown doors are refused; the hard stop stays "not confirmed".
		apiWant400(t, u.dev.Do("POST", "/v1/events/"+s.ev+"/checkins",
			map[string]any{"registrationId": vip, "subjectType": "session", "subjectId": "ses_nope"}), "subjectId")
		apiWant(t, u.dev.Do("POST", "/v1/events/"+s.ev+"/registrations/"+ga+"/cancel", nil), 200)
		apiWantErr(t, u.dev.Do("POST", "/v1/events/"+s.ev+"/checkins",
			map[string]any{"registrationId": ga, "subjectType": "venue", "subjectId": gatedRoom}), 412, "FAILED_PRECONDITION")

		// The storefront shows the ticket type's perks and the agenda.
		cat := apiWant(t, u.sf.Do("GET", "/storefront/v1/events/"+s.ev, nil), 200)
		var vipPerks []map[string]any
		for _, x := range apiData(t, map[string]any{"data": cat["ticketTypes"]}) {
			if x["id"] == vipType {
				vipPerks = apiData(t, map[string]any{"data": x["perks"]})
			}
		}
		require.Len(t, vipPerks, 1)
		agenda := apiData(t, map[string]any{"data": cat["agenda"]})
		require.Len(t, agenda, 1)
		assert.Equal(t, ses, agenda[0]["id"])
	})

	t.Run("attendees: one entry per person with standing status", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		ev := apiS(apiEvent(t, u.dev, nil), "id")
		tt := apiOpenType(t, u.dev, ev, nil)
		first := apiRegister(t, u.dev, ev, tt, "Ann@Example.com")
		apiWant(t, u.dev.Do("POST", "/v1/events/"+ev+"/registrations/"+apiS(first, "id")+"/cancel", nil), 200)
		second := apiRegister(t, u.dev, ev, tt, "ann@example.com")
		bob := apiRegister(t, u.dev, ev, tt, "bob@example.com")
		apiWant(t, u.dev.Do("POST", "/v1/events/"+ev+"/registrations/"+apiS(bob, "id")+"/cancel", nil), 200)

		l := apiWant(t, u.dev.Do("GET", "/v1/events/"+ev+"/attendees?limit=1", nil), 200)
		as := apiData(t, l)
		require.Len(t, as, 1)
		assert.Equal(t, "confirmed", as[0]["status"])
		assert.Equal(t, []string{apiS(first, "id"), apiS(second, "id")}, apiStrings(as[0]["registrationIds"]))
		require.Equal(t, true, l["hasMore"])
		l = apiWant(t, u.dev.Do("GET", "/v1/events/"+ev+"/attendees?limit=1&cursor="+apiS(l, "nextCursor"), nil), 200)
		as = apiData(t, l)
		require.Len(t, as, 1)
		assert.Equal(t, "bob@example.com", as[0]["email"])
		assert.Equal(t, "cancelled", as[0]["status"])
		assert.Equal(t, false, l["hasMore"])
		apiWant400(t, u.dev.Do("GET", "/v1/events/"+ev+"/attendees?cursor=bm9wZQ", nil), "cursor")
	})
}
