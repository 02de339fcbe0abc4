package api_test

// Black-box tests of the console for sales:
// registration forms, promotion codes, the site and translations, through
// the admin API, the Developer API and the Storefront API.

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// salesFx is a published event of a fresh unit with an open ticket type.
type salesFx struct {
	u   apiUnit
	c   apiConsole
	ev  string
	tt  string
	dev string // Developer API path of the event
	sf  string // Storefront API path of the event
}

func newSalesFx(t *testing.T, f *apiFx, price float64) salesFx {
	t.Helper()
	u := f.unit(t)
	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, map[string]any{"priceAmount": price})
	return salesFx{u: u, c: apiConsole{adm: f.admin(t), ev: ev}, ev: ev, tt: tt, dev: "/v1/events/" + ev, sf: "/storefront/v1/events/" + ev}
}

func TestAPIConsoleSales(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("registration forms: draft, publish, catalog, responses checked and kept", func(t *testing.T) {
		t.Parallel()
		s := newSalesFx(t, f, 0)
		form := s.c.path("/ticket-types/" + s.tt + "/form")
		empty := apiWant(t, s.c.adm.Do("GET", form, nil), 200)
		assert.Equal(t, "draft", empty["status"])
		assert.Empty(t, empty["questions"])
		questions := []map[string]any{
			{"id": "tshirt", "type": "select", "label": "T-shirt size", "required": true, "options": []string{"S", "M", "L"}},
			{"id": "email2", "type": "email", "label": "Work email"},
			{"id": "phone", "type": "phone", "label": "Phone"},
			{"id": "diet", "type": "multi_select", "label": "Diet", "options": []string{"veg", "halal"}},
			{"id": "terms", "type": "checkbox", "label": "I accept", "required": true},
			{"id": "dob", "type": "date", "label": "Birthday"},
			{"id": "note", "type": "text", "label": "Note"},
		}
		d := apiWant(t, s.c.adm.Do("PUT", form, map[string]any{"questions": questions}), 200)
		assert.Equal(t, "draft", d["status"])
		assert.Len(t, d["questions"], 7)
		assert.Empty(t, d["publishedQuestions"])
		apiWant400(t, s.c.adm.Do("PUT", form, map[string]any{"questions": []map[string]any{{"id": "x", "type": "select", "label": "X"}}}), "questions[0].options")
		apiWantErr(t, s.c.adm.Do("PUT", s.c.path("/ticket-types/tt_nope/form"), map[string]any{"questions": questions}), 404, "NOT_FOUND")

		// A draft is not on the storefront and checks nothing.
		cat := apiWant(t, s.u.sf.Do("GET", s.sf, nil), 200)
		assert.Empty(t, apiData(t, map[string]any{"data": cat["ticketTypes"]})[0]["questions"])
		p := apiWant(t, s.c.adm.Do("POST", form+"/publish", nil), 200)
		assert.Equal(t, "published", p["status"])
		assert.NotNil(t, p["publishedAt"])
		cat = apiWant(t, s.u.sf.Do("GET", s.sf, nil), 200)
		tts := apiData(t, map[string]any{"data": cat["ticketTypes"]})
		require.Len(t, tts[0]["questions"], 7)
		assert.Equal(t, "tshirt", tts[0]["questions"].([]any)[0].(map[string]any)["id"])

		order := func(c *apiClient, path, email string, responses map[string]any) *apiResp {
			return c.Do("POST", path+"/orders", map[string]any{"email": email, "items": apiTicket(s.tt), "responses": responses})
		}
		ok := map[string]any{"tshirt": "M", "email2": "ann@work.example", "phone": "+49 30 1234567", "diet": []string{"veg"}, "terms": true, "dob": "1990-02-28"}
		for field, bad := range map[string]map[string]any{
			"responses.shoe":   apiMerge(ok, map[string]any{"shoe": "42"}),
			"responses.tshirt": apiMerge(ok, map[string]any{"tshirt": "XXL"}),
			"responses.terms":  apiMerge(ok, map[string]any{"terms": false}),
			"responses.email2": apiMerge(ok, map[string]any{"email2": "not-an-email"}),
			"responses.phone":  apiMerge(ok, map[string]any{"phone": "call me"}),
			"responses.dob":    apiMerge(ok, map[string]any{"dob": "28/02/1990"}),
			"responses.diet":   apiMerge(ok, map[string]any{"diet": []string{"vegan"}}),
		} {
			apiWant400(t, order(s.u.sf, s.sf, "bad@example.com", bad), field)
			apiWant400(t, order(s.u.dev, s.dev, "bad@example.com", bad), field)
		}
		missing := map[string]any{"terms": true}
		apiWant400(t, order(s.u.dev, s.dev, "bad@example.com", missing), "responses.tshirt")
		// A checkout session checks what it is given, not what is missing.
		apiWant(t, s.u.sf.Do("POST", s.sf+"/checkout-sessions", map[string]any{"items": apiTicket(s.tt), "responses": map[string]any{"tshirt": "S"}}), 201)
		apiWant400(t, s.u.sf.Do("POST", s.sf+"/checkout-sessions", map[string]any{"items": apiTicket(s.tt), "responses": map[string]any{"tshirt": "XS"}}), "responses.tshirt")

		o := apiWant(t, order(s.u.dev, s.dev, "ann@example.com", ok), 201)
		c := apiWant(t, s.u.dev.Do("POST", s.dev+"/orders/"+apiS(o, "orderNumber")+"/confirm", map[string]any{}), 200)
		require.Equal(t, "paid", c["status"])
		reg := apiWant(t, s.u.dev.Do("GET", s.dev+"/registrations/"+apiS(c, "registrationId"), nil), 200)
		assert.Equal(t, "M", apiM(reg, "responses")["tshirt"])
		assert.Equal(t, true, apiM(reg, "responses")["terms"])

		// Editing the live form leaves the published version in force.
		d = apiWant(t, s.c.adm.Do("PUT", form, map[string]any{"questions": questions[:1]}), 200)
		assert.Equal(t, "draft", d["status"])
		assert.Len(t, d["publishedQuestions"], 7)
		apiWant400(t, order(s.u.sf, s.sf, "bob@example.com", map[string]any{"tshirt": "S"}), "responses.terms")
	})

	t.Run("promotion codes: CRUD, exact discounts, scope, uses, expiry, lookup", func(t *testing.T) {
		t.Parallel()
		s := newSalesFx(t, f, 99.99)
		ao := apiS(apiWant(t, s.u.dev.Do("POST", s.dev+"/addons", map[string]any{"name": "Shirt", "priceAmount": 15}), 201), "id")
		apiSetStatus(t, s.u.dev, s.dev+"/addons/"+ao, "open")
		promos := s.c.path("/promotion-codes")

		half := apiWant(t, s.c.adm.Do("POST", promos, map[string]any{"code": "half", "percentOff": 50, "maxUses": 1}), 201)
		assert.Equal(t, "HALF", half["code"])
		assert.Equal(t, "active", half["status"])
		apiWantErr(t, s.c.adm.Do("POST", promos, map[string]any{"code": "HALF", "percentOff": 5}), 409, "ALREADY_EXISTS")
		apiWant400(t, s.c.adm.AllowInvalidRequest().Do("POST", promos, map[string]any{"code": "BOTH", "percentOff": 5, "amountOff": 1}), "percentOff")
		apiWant400(t, s.c.adm.Do("POST", promos, map[string]any{"code": "BAD", "amountOff": 1, "appliesTo": map[string]any{"addonIds": []string{"ao_nope"}}}), "appliesTo.addonIds[0]")
		shirt := apiWant(t, s.c.adm.Do("POST", promos, map[string]any{"code": "SHIRT20", "amountOff": 20,
			"appliesTo": map[string]any{"addonIds": []string{ao}}}), 201)
		assert.Equal(t, []string{ao}, apiStrings(apiM(shirt, "appliesTo")["addonIds"]))

		// 50% of 99.99 is 49.995: the discount rounds half up, per line.
		line := []map[string]any{{"itemType": "registration_type", "itemId": s.tt, "quantity": 1}, {"itemType": "addon", "itemId": ao, "quantity": 3}}
		o := apiWant(t, s.u.sf.Do("POST", s.sf+"/orders", map[string]any{"email": "a@example.com", "items": line, "promotionCode": "Half"}), 201)
		assert.Equal(t, "HALF", o["promotionCode"])
		assert.EqualValues(t, 49.99+22.5, o["totalAmount"])
		assert.EqualValues(t, 50+22.5, o["discountAmount"])
		items := o["items"].([]any)
		assert.EqualValues(t, 49.99, items[0].(map[string]any)["amount"])
		// maxUses 1: the live order holds the only use.
		h := apiWant(t, s.c.adm.Do("GET", promos+"/"+apiS(half, "id"), nil), 200)
		assert.EqualValues(t, 1, h["uses"])
		assert.Equal(t, "exhausted", h["status"])
		apiWant400(t, s.u.dev.Do("POST", s.dev+"/orders", map[string]any{"email": "b@example.com", "items": apiTicket(s.tt), "promotionCode": "HALF"}), "promotionCode")
		apiWant400(t, s.u.sf.Do("POST", s.sf+"/checkout-sessions", map[string]any{"items": apiTicket(s.tt), "promotionCode": "HALF"}), "promotionCode")
		// A cancelled order returns its use.
		apiWant(t, s.u.sf.Do("POST", s.sf+"/orders/"+apiS(o, "orderNumber")+"/cancel", nil), 200)
		h = apiWant(t, s.c.adm.Do("GET", promos+"/"+apiS(half, "id"), nil), 200)
		assert.EqualValues(t, 0, h["uses"])
		assert.Equal(t, "active", h["status"])

		// An amount off is per unit and never takes a line below zero; out of
		// scope items keep their price.
		o = apiWant(t, s.u.dev.Do("POST", s.dev+"/orders", map[string]any{"email": "c@example.com", "items": line, "promotionCode": "SHIRT20"}), 201)
		assert.EqualValues(t, 99.99, o["totalAmount"])
		assert.EqualValues(t, 45, o["discountAmount"])
		apiWant400(t, s.u.dev.Do("POST", s.dev+"/orders", map[string]any{"email": "d@example.com", "items": apiTicket(s.tt), "promotionCode": "SHIRT20"}), "promotionCode")
		apiWant400(t, s.u.dev.Do("POST", s.dev+"/orders", map[string]any{"email": "d@example.com", "items": apiTicket(s.tt), "promotionCode": "NOPE"}), "promotionCode")

		// PATCH: scope, expiry; DELETE disables.
		p := apiWant(t, s.c.adm.Do("PATCH", promos+"/"+apiS(shirt, "id"), map[string]any{"expiresAt": "2020-01-01T00:00:00Z"}), 200)
		assert.Equal(t, "expired", p["status"])
		apiWant400(t, s.u.dev.Do("POST", s.dev+"/orders", map[string]any{"email": "e@example.com", "items": line, "promotionCode": "SHIRT20"}), "promotionCode")
		p = apiWant(t, s.c.adm.Do("PATCH", promos+"/"+apiS(shirt, "id"), map[string]any{"expiresAt": nil, "maxUses": 5}), 200)
		assert.Equal(t, "active", p["status"])
		assert.EqualValues(t, 5, p["maxUses"])
		del := apiWant(t, s.c.adm.Do("DELETE", promos+"/"+apiS(shirt, "id"), nil), 200)
		assert.Equal(t, "disabled", del["status"])
		assert.Len(t, apiData(t, apiWant(t, s.c.adm.Do("GET", promos, nil), 200)), 2)
		apiWantErr(t, s.c.adm.Do("GET", promos+"/prm_nope", nil), 404, "NOT_FOUND")

		// A free order after a 100% code is paid at once and spends a use.
		all := apiWant(t, s.c.adm.Do("POST", promos, map[string]any{"code": "FREE", "percentOff": 100, "maxUses": 1}), 201)
		o = apiWant(t, s.u.dev.Do("POST", s.dev+"/orders", map[string]any{"email": "f@example.com", "items": apiTicket(s.tt), "promotionCode": "FREE"}), 201)
		assert.EqualValues(t, 0, o["totalAmount"])
		c := apiWant(t, s.u.dev.Do("POST", s.dev+"/orders/"+apiS(o, "orderNumber")+"/confirm", map[string]any{}), 200)
		assert.Equal(t, "paid", c["status"])
		assert.Equal(t, "exhausted", apiWant(t, s.c.adm.Do("GET", promos+"/"+apiS(all, "id"), nil), 200)["status"])

		// The redemption-code lookup prices the code's ticket type under a
		// promotion code.
		apiWant(t, s.u.dev.Do("POST", s.dev+"/redemption-codes", map[string]any{"registrationTypeId": s.tt, "code": "VIP"}), 201)
		l := apiWant(t, s.u.sf.Do("GET", s.sf+"/redemption-codes/lookup?code=VIP&promotionCode=half", nil), 200)
		assert.EqualValues(t, 99.99, l["priceAmount"])
		assert.EqualValues(t, 49.99, l["discountedPriceAmount"])
		l = apiWant(t, s.u.sf.Do("GET", s.sf+"/redemption-codes/lookup?code=VIP", nil), 200)
		assert.EqualValues(t, 99.99, l["discountedPriceAmount"])
		apiWant400(t, s.u.sf.Do("GET", s.sf+"/redemption-codes/lookup?code=VIP&promotionCode=NOPE", nil), "promotionCode")
	})

	t.Run("site and translations: siteUrl, description, ?lang= with fallback", func(t *testing.T) {
		t.Parallel()
		s := newSalesFx(t, f, 10)
		site := s.c.path("/site")
		apiWant400(t, s.c.adm.Do("PATCH", site, map[string]any{"siteUrl": "http://conf.example"}), "siteUrl")
		apiWant400(t, s.c.adm.Do("PATCH", site, map[string]any{"siteUrl": "not a url"}), "siteUrl")
		ev := apiWant(t, s.c.adm.Do("PATCH", site, map[string]any{"siteUrl": "https://conf.example/", "description": "The Go conference"}), 200)
		assert.Equal(t, "https://conf.example/", ev["siteUrl"])
		assert.Equal(t, "The Go conference", ev["description"])
		apiWant(t, s.c.adm.Do("PATCH", site, map[string]any{"siteUrl": "http://localhost:3000"}), 200)

		events := apiData(t, apiWant(t, s.u.sf.Do("GET", "/storefront/v1/events", nil), 200))
		require.Len(t, events, 1)
		assert.Equal(t, "http://localhost:3000", events[0]["siteUrl"], "the storefront list carries the event's siteUrl")
		assert.Equal(t, "Gophercon", events[0]["name"])

		tr := s.c.path("/translations")
		apiWant400(t, s.c.adm.Do("PUT", tr+"/x_1", map[string]any{"name": "?"}), "lang")
		apiWant400(t, s.c.adm.Do("PUT", tr+"/de", map[string]any{"ticketTypes": map[string]any{"tt_nope": map[string]any{"name": "?"}}}), "ticketTypes.tt_nope")
		zh := apiWant(t, s.c.adm.Do("PUT", tr+"/zh-cn", map[string]any{"name": "地鼠大会", "description": "Go 语言大会",
			"ticketTypes": map[string]any{s.tt: map[string]any{"name": "普通票", "description": "入场"}}}), 200)
		assert.Equal(t, "zh-CN", zh["lang"])
		apiWant(t, s.c.adm.Do("PUT", tr+"/de", map[string]any{"description": "Die Go-Konferenz"}), 200)
		langs := apiData(t, apiWant(t, s.c.adm.Do("GET", tr, nil), 200))
		assert.Len(t, langs, 2)
		assert.Equal(t, "地鼠大会", apiWant(t, s.c.adm.Do("GET", tr+"/zh-CN", nil), 200)["name"])

		events = apiData(t, apiWant(t, s.u.sf.Do("GET", "/storefront/v1/events?lang=zh-CN", nil), 200))
		assert.Equal(t, "地鼠大会", events[0]["name"])
		assert.Equal(t, "Go 语言大会", events[0]["description"])
		// Per field fallback: German translates only the description.
		events = apiData(t, apiWant(t, s.u.sf.Do("GET", "/storefront/v1/events?lang=de", nil), 200))
		assert.Equal(t, "Gophercon", events[0]["name"])
		assert.Equal(t, "Die Go-Konferenz", events[0]["description"])
		// An unknown language falls back entirely, without an error.
		cat := apiWant(t, s.u.sf.Do("GET", s.sf+"?lang=fr", nil), 200)
		assert.Equal(t, "Gophercon", apiM(cat, "event")["name"])
		assert.Equal(t, "The Go conference", apiM(cat, "event")["description"])
		cat = apiWant(t, s.u.sf.Do("GET", s.sf+"?lang=zh-CN", nil), 200)
		assert.Equal(t, "地鼠大会", apiM(cat, "event")["name"])
		tt := apiData(t, map[string]any{"data": cat["ticketTypes"]})[0]
		assert.Equal(t, "普通票", tt["name"])
		assert.Equal(t, "入场", tt["description"])

		apiWant(t, s.c.adm.Do("DELETE", tr+"/de", nil), 200)
		apiWantErr(t, s.c.adm.Do("GET", tr+"/de", nil), 404, "NOT_FOUND")
	})

	t.Run("hosted checkout asks the published form and applies the session's promotion code", func(t *testing.T) {
		t.Parallel()
		s := newSalesFx(t, f, 40)
		apiWant(t, s.c.adm.Do("PUT", s.c.path("/ticket-types/"+s.tt+"/form"), map[string]any{"questions": []map[string]any{
			{"id": "tshirt", "type": "select", "label": "T-shirt size", "required": true, "options": []string{"S", "M"}},
			{"id": "diet", "type": "multi_select", "label": "Diet", "options": []string{"veg", "halal"}},
			{"id": "terms", "type": "checkbox", "label": "I accept the terms", "required": true},
			{"id": "company", "type": "text", "label": "Company"},
		}}), 200)
		apiWant(t, s.c.adm.Do("POST", s.c.path("/ticket-types/"+s.tt+"/form/publish"), nil), 200)
		apiWant(t, s.c.adm.Do("POST", s.c.path("/promotion-codes"), map[string]any{"code": "QUARTER", "percentOff": 25}), 201)
		cs := apiWant(t, s.u.sf.Do("POST", s.sf+"/checkout-sessions", map[string]any{"items": apiTicket(s.tt),
			"promotionCode": "QUARTER", "responses": map[string]any{"company": "Gophers"}}), 201)

		b := apptest.NewBrowser(t)
		p := b.Get(apiS(cs, "url"))
		require.Equal(t, 200, p.Status, p.Body)
		assert.Contains(t, p.Body, `<label for="q-tshirt">T-shirt size<span class="req" aria-hidden="true">*</span></label>
<select id="q-tshirt" name="q.tshirt" required>`)
		assert.Contains(t, p.Body, `name="q.diet" value="halal"`)
		assert.Contains(t, p.Body, `<td class="num total">$30.00</td>`, "the page shows the discounted total")
		assert.Contains(t, p.Body, `<input type="checkbox" id="q-terms" name="q.terms" required><label for="q-terms">I accept the terms<span class="req" aria-hidden="true">*</span></label>`)
		// A wrong answer stays on the form, next to its question.
		p = b.Post(apiS(cs, "url"), url.Values{"form": {"checkout"}, "email": {"lin@example.com"}, "q.tshirt": {"XL"}, "q.terms": {"on"}})
		require.Equal(t, 400, p.Status, p.Body)
		assert.Contains(t, p.Body, `<p class="field-error" id="err-q-tshirt">Choose one of the options.</p>`)
		assert.NotContains(t, p.Body, "responses.tshirt", "buyers never see field paths")
		p = b.Post(apiS(cs, "url"), url.Values{"form": {"checkout"}, "email": {"lin@example.com"}, "q.tshirt": {"M"},
			"q.diet": {"veg", "halal"}, "q.terms": {"on"}})
		require.Equal(t, 303, p.Status, p.Body)
		orders := apiData(t, apiWant(t, s.u.dev.Do("GET", s.dev+"/orders", nil), 200))
		require.Len(t, orders, 1)
		o := orders[0]
		assert.Equal(t, "QUARTER", o["promotionCode"])
		assert.EqualValues(t, 30, o["totalAmount"])
		assert.EqualValues(t, 10, o["discountAmount"])
		assert.Equal(t, map[string]any{"tshirt": "M", "diet": []any{"veg", "halal"}, "terms": true, "company": "Gophers"}, o["responses"])
	})

	t.Run("isolation: another unit's event is 404 on the Developer and Storefront APIs", func(t *testing.T) {
		t.Parallel()
		s := newSalesFx(t, f, 0)
		other := f.unit(t)
		apiWant(t, s.c.adm.Do("POST", s.c.path("/promotion-codes"), map[string]any{"code": "MINE", "percentOff": 10}), 201)
		apiWantErr(t, other.dev.Do("POST", s.dev+"/orders", map[string]any{"email": "x@example.com", "items": apiTicket(s.tt), "promotionCode": "MINE"}), 404, "NOT_FOUND")
		apiWantErr(t, other.sf.Do("POST", s.sf+"/orders", map[string]any{"email": "x@example.com", "items": apiTicket(s.tt), "promotionCode": "MINE"}), 404, "NOT_FOUND")
		apiWantErr(t, other.sf.Do("GET", s.sf+"?lang=de", nil), 404, "NOT_FOUND")
		assert.Empty(t, apiData(t, apiWant(t, other.sf.Do("GET", "/storefront/v1/events?lang=de", nil), 200)))
		// Codes are per event: another event of the same service knows none.
		s2 := newSalesFx(t, f, 0)
		apiWant400(t, s2.u.dev.Do("POST", s2.dev+"/orders", map[string]any{"email": "x@example.com", "items": apiTicket(s2.tt), "promotionCode": "MINE"}), "promotionCode")
		// The console answers 404 for an unknown event and needs the admin key.
		apiWantErr(t, s.c.adm.Do("GET", "/admin/v1/events/evt_nope/promotion-codes", nil), 404, "NOT_FOUND")
		r := s.u.dev.Do("GET", s.c.path("/promotion-codes"), nil)
		assert.Contains(t, []int{401, 403}, r.Status)
		// An archived event is final: console writes are 412, reads stay.
		apiWant(t, s.u.dev.Do("POST", s.dev+"/archive", nil), 200)
		apiWantErr(t, s.c.adm.Do("POST", s.c.path("/promotion-codes"), map[string]any{"code": "LATE", "percentOff": 5}), 412, "FAILED_PRECONDITION")
		apiWantErr(t, s.c.adm.Do("PUT", s.c.path("/translations/de"), map[string]any{"name": "K"}), 412, "FAILED_PRECONDITION")
		apiWant(t, s.c.adm.Do("GET", s.c.path("/promotion-codes"), nil), 200)
	})
}
