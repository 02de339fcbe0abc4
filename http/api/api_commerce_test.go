package api_test

// Black-box tests of the selling half of the Developer API: redemption
// codes, add-ons, bundles, orders with holds, the sandbox payment provider's
// webhook and page, checkout sessions, and Idempotency-Key.

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/payments"
)

// apiShop is a published event with an open free ticket type, ready to sell.
type apiShop struct {
	c  *apiClient
	ev string
	tt string
}

func (f *apiFx) shop(t *testing.T, typeExtra map[string]any) apiShop {
	t.Helper()
	c := f.unit(t).dev
	ev := apiPublished(t, c)
	return apiShop{c: c, ev: ev, tt: apiOpenType(t, c, ev, typeExtra)}
}

func (s apiShop) path(p string) string { return "/v1/events/" + s.ev + p }

// order places an order of one ticket of typeID (with extra members).
func (s apiShop) order(t testing.TB, typeID, email string, extra map[string]any) *apiResp {
	t.Helper()
	return s.c.Do("POST", s.path("/orders"), apiMerge(map[string]any{"email": email, "items": apiTicket(typeID)}, extra))
}

// mint mints codes and returns them.
func (s apiShop) mint(t testing.TB, body map[string]any) []map[string]any {
	t.Helper()
	m := apiWant(t, s.c.Do("POST", s.path("/redemption-codes"), body), 201)
	return apiData(t, map[string]any{"data": m["redemptionCodes"]})
}

func TestAPIRedemptionCodes(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("mint single, batch, custom, unlimited", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, nil)
		one := s.mint(t, map[string]any{"registrationTypeId": s.tt, "label": "press"})
		require.Len(t, one, 1)
		assert.Regexp(t, `^rc_`, one[0]["id"])
		assert.EqualValues(t, 1, one[0]["maxUses"], "maxUses defaults to 1")
		assert.EqualValues(t, 0, one[0]["uses"])
		assert.Equal(t, "active", one[0]["status"])
		assert.Equal(t, "press", one[0]["label"])
		assert.Equal(t, s.tt, one[0]["registrationTypeId"])
		assert.NotEmpty(t, one[0]["code"])

		batch := s.mint(t, map[string]any{"registrationTypeId": s.tt, "count": 5})
		require.Len(t, batch, 5)
		codes := map[string]bool{}
		for _, c := range batch {
			codes[apiS(c, "code")] = true
		}
		assert.Len(t, codes, 5, "distinct codes")

		custom := s.mint(t, map[string]any{"registrationTypeId": s.tt, "code": "SPEAKER-2030", "count": 3})
		require.Len(t, custom, 1, "a custom code forces count 1")
		assert.Equal(t, "SPEAKER-2030", custom[0]["code"])
		e := apiWantErr(t, s.c.Do("POST", s.path("/redemption-codes"), map[string]any{"registrationTypeId": s.tt, "code": "SPEAKER-2030"}), 409, "ALREADY_EXISTS")
		assert.Contains(t, e["message"], "SPEAKER-2030")

		unl := s.mint(t, map[string]any{"registrationTypeId": s.tt, "maxUses": nil})
		assert.Nil(t, unl[0]["maxUses"], "null is unlimited")

		bad := s.c.AllowInvalidRequest()
		apiWant400(t, bad.Do("POST", s.path("/redemption-codes"), map[string]any{}), "registrationTypeId")
		apiWant400(t, bad.Do("POST", s.path("/redemption-codes"), map[string]any{"registrationTypeId": "tt_nope"}), "registrationTypeId")
		apiWant400(t, bad.Do("POST", s.path("/redemption-codes"), map[string]any{"registrationTypeId": s.tt, "code": ""}), "code")
		apiWant400(t, bad.Do("POST", s.path("/redemption-codes"), map[string]any{"registrationTypeId": s.tt, "code": apiRepeat("A", 65)}), "code")
		apiWant400(t, bad.Do("POST", s.path("/redemption-codes"), map[string]any{"registrationTypeId": s.tt, "count": 0}), "count")
		apiWant400(t, bad.Do("POST", s.path("/redemption-codes"), map[string]any{"registrationTypeId": s.tt, "maxUses": 0}), "maxUses")

		list := apiWant(t, s.c.Do("GET", s.path("/redemption-codes"), nil), 200)
		assert.Len(t, apiData(t, list), 1+5+1+1)
		p1 := apiWant(t, s.c.Do("GET", s.path("/redemption-codes?limit=3"), nil), 200)
		assert.Len(t, apiData(t, p1), 3)
		assert.Equal(t, true, p1["hasMore"])
	})

	t.Run("lookup reaches hidden types; every invalid code is the same 404", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, nil)
		hidden := apiOpenType(t, s.c, s.ev, map[string]any{"name": "Backstage", "isPublic": false, "priceAmount": 20})
		good := s.mint(t, map[string]any{"registrationTypeId": hidden, "code": "BACKSTAGE"})[0]
		lk := apiWant(t, s.c.Do("GET", s.path("/redemption-codes/lookup?code=BACKSTAGE"), nil), 200)
		assert.Equal(t, "BACKSTAGE", lk["code"])
		assert.Equal(t, hidden, apiM(lk, "registrationType")["id"])
		assert.EqualValues(t, 20, lk["priceAmount"])
		assert.Contains(t, lk, "discountedPriceAmount")
		assert.NotNil(t, lk["perks"])

		disabled := s.mint(t, map[string]any{"registrationTypeId": hidden, "code": "OFF"})[0]
		dis := apiWant(t, s.c.Do("POST", s.path("/redemption-codes/"+apiS(disabled, "id")+"/disable"), nil), 200)
		assert.Equal(t, "disabled", dis["status"])
		past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		expired := s.c.Do("POST", s.path("/redemption-codes"), map[string]any{"registrationTypeId": hidden, "code": "OLD", "expiresAt": past})
		expiredMinted := expired.Status == 201
		exhausted := s.mint(t, map[string]any{"registrationTypeId": hidden, "code": "ONCE"})[0]
		assert.Equal(t, "active", exhausted["status"])
		o := apiWant(t, s.order(t, hidden, "once@example.com", map[string]any{"redemptionCode": "ONCE"}), 201)
		assert.Equal(t, "ONCE", o["redemptionCode"])
		apiWant(t, s.c.Do("POST", s.path("/orders/"+apiS(o, "orderNumber")+"/confirm"), map[string]any{
			"successUrl": "https://shop.example.com/ok", "cancelUrl": "https://shop.example.com/no"}), 200)

		var first map[string]any
		invalid := []string{"NOPE", "OFF", "ONCE", "backstage-x"}
		if expiredMinted {
			invalid = append(invalid, "OLD")
		}
		for _, code := range invalid {
			e := apiWantErr(t, s.c.Do("GET", s.path("/redemption-codes/lookup?code="+code), nil), 404, "NOT_FOUND")
			if first == nil {
				first = e
			}
			assert.Equalf(t, first, e, "lookup of %s", code)
		}
		apiWant400(t, s.c.AllowInvalidRequest().Do("GET", s.path("/redemption-codes/lookup"), nil), "code")
		codes := map[string]map[string]any{}
		for _, c := range apiData(t, apiWant(t, s.c.Do("GET", s.path("/redemption-codes"), nil), 200)) {
			codes[apiS(c, "code")] = c
		}
		assert.EqualValues(t, 1, codes["ONCE"]["uses"], "a placed order reserves a use")
		assert.Equal(t, "exhausted", codes["ONCE"]["status"])
		assert.Equal(t, "disabled", codes["OFF"]["status"])
		assert.Equal(t, "active", codes["BACKSTAGE"]["status"])
		assert.Equal(t, good["id"], codes["BACKSTAGE"]["id"])
		apiWantErr(t, s.c.Do("POST", s.path("/redemption-codes/rc_nope/disable"), nil), 404, "NOT_FOUND")
	})

	t.Run("an expired code is refused like an invalid one", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, nil)
		at := time.Now().Add(1200 * time.Millisecond).UTC().Truncate(time.Second).Add(time.Second)
		s.mint(t, map[string]any{"registrationTypeId": s.tt, "code": "SOON", "expiresAt": at.Format(time.RFC3339)})
		apiWant(t, s.c.Do("GET", s.path("/redemption-codes/lookup?code=SOON"), nil), 200)
		time.Sleep(time.Until(at) + 100*time.Millisecond)
		nope := apiWantErr(t, s.c.Do("GET", s.path("/redemption-codes/lookup?code=NEVER"), nil), 404, "NOT_FOUND")
		assert.Equal(t, nope, apiWantErr(t, s.c.Do("GET", s.path("/redemption-codes/lookup?code=SOON"), nil), 404, "NOT_FOUND"))
		apiWantErr(t, s.order(t, s.tt, "late@example.com", map[string]any{"redemptionCode": "SOON"}), 400, "INVALID_ARGUMENT")
	})

	t.Run("a cancelled registration admitted by a code gives the use back", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, nil)
		hidden := apiOpenType(t, s.c, s.ev, map[string]any{"isPublic": false})
		s.mint(t, map[string]any{"registrationTypeId": hidden, "code": "GUEST"})
		o := apiWant(t, s.order(t, hidden, "guest@example.com", map[string]any{"redemptionCode": "GUEST"}), 201)
		paid := apiWant(t, s.c.Do("POST", s.path("/orders/"+apiS(o, "orderNumber")+"/confirm"), map[string]any{}), 200)
		require.Equal(t, "paid", paid["status"])
		reg := apiS(paid, "registrationId")
		require.NotEmpty(t, reg)
		code := func() map[string]any {
			return apiData(t, apiWant(t, s.c.Do("GET", s.path("/redemption-codes"), nil), 200))[0]
		}
		assert.EqualValues(t, 1, code()["uses"])
		assert.Equal(t, "exhausted", code()["status"])
		apiWant(t, s.c.Do("POST", s.path("/registrations/"+reg+"/cancel"), nil), 200)
		assert.EqualValues(t, 0, code()["uses"])
		assert.Equal(t, "active", code()["status"])
		apiWant(t, s.c.Do("GET", s.path("/redemption-codes/lookup?code=GUEST"), nil), 200)
	})
}

func TestAPIAddonsAndBundles(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("add-on CRUD and lifecycle", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, nil)
		a := apiWant(t, s.c.Do("POST", s.path("/addons"), map[string]any{"name": "T-shirt", "priceAmount": 15, "capacity": 5}), 201)
		assert.Regexp(t, `^ao_`, a["id"])
		assert.Equal(t, "draft", a["status"])
		assert.EqualValues(t, 15, a["priceAmount"])
		assert.EqualValues(t, 5, a["capacity"])
		p := s.path("/addons/" + apiS(a, "id"))
		up := apiWant(t, s.c.Do("PATCH", p, map[string]any{"name": "Hoodie", "priceAmount": 35.5, "capacity": nil}), 200)
		assert.Equal(t, "Hoodie", up["name"])
		assert.EqualValues(t, 35.5, up["priceAmount"])
		assert.Nil(t, up["capacity"])
		assert.Equal(t, "Hoodie", apiWant(t, s.c.Do("GET", p, nil), 200)["name"])
		apiWantErr(t, s.c.Do("PATCH", p, map[string]any{"status": "closed"}), 412, "FAILED_PRECONDITION")
		for _, st := range []string{"open", "closed", "open", "closed", "archived"} {
			apiSetStatus(t, s.c, p, st)
		}
		apiWantErr(t, s.c.Do("PATCH", p, map[string]any{"status": "open"}), 412, "FAILED_PRECONDITION")
		apiWant(t, s.c.Do("POST", s.path("/addons"), map[string]any{"name": "Lunch"}), 201)
		assert.Len(t, apiData(t, apiWant(t, s.c.Do("GET", s.path("/addons"), nil), 200)), 2)
		apiWant400(t, s.c.AllowInvalidRequest().Do("POST", s.path("/addons"), map[string]any{"priceAmount": 1}), "name")
		apiWant400(t, s.c.AllowInvalidRequest().Do("POST", s.path("/addons"), map[string]any{"name": "x", "size": "XL"}), "size")
		apiWantErr(t, s.c.Do("GET", s.path("/addons/ao_nope"), nil), 404, "NOT_FOUND")
		apiWantErr(t, s.c.Do("PATCH", s.path("/addons/ao_nope"), map[string]any{"name": "x"}), 404, "NOT_FOUND")
	})

	t.Run("bundle CRUD, items replaced, foreign items refused", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, nil)
		other := f.shop(t, nil) // another unit's event: its type is not an item of s
		ao := apiS(apiWant(t, s.c.Do("POST", s.path("/addons"), map[string]any{"name": "Lunch", "priceAmount": 10}), 201), "id")
		items := []map[string]any{{"itemType": "registration_type", "itemId": s.tt, "quantity": 1}, {"itemType": "addon", "itemId": ao, "quantity": 2}}
		b := apiWant(t, s.c.Do("POST", s.path("/bundles"), map[string]any{"name": "Full day", "priceAmount": 40, "capacity": 3, "items": items}), 201)
		assert.Regexp(t, `^bdl_`, b["id"])
		assert.Equal(t, "draft", b["status"])
		assert.Len(t, b["items"], 2)
		p := s.path("/bundles/" + apiS(b, "id"))
		assert.Equal(t, b["items"], apiWant(t, s.c.Do("GET", p, nil), 200)["items"])

		rep := apiWant(t, s.c.Do("PUT", p+"/items", []map[string]any{{"itemType": "addon", "itemId": ao, "quantity": 3}}), 200)
		assert.Equal(t, []any{map[string]any{"itemType": "addon", "itemId": ao, "quantity": 3.0}}, rep["items"])
		apiWant400(t, s.c.Do("PUT", p+"/items", []map[string]any{{"itemType": "registration_type", "itemId": other.tt, "quantity": 1}}), "[0].itemId")
		apiWant400(t, s.c.Do("PUT", p+"/items", []map[string]any{{"itemType": "addon", "itemId": ao, "quantity": 1}, {"itemType": "addon", "itemId": "ao_nope", "quantity": 1}}), "[1].itemId")
		apiWant400(t, s.c.AllowInvalidRequest().Do("PUT", p+"/items", []map[string]any{{"itemType": "addon", "itemId": ao, "quantity": 0}}), "[0].quantity")
		apiWant400(t, s.c.Do("POST", s.path("/bundles"), map[string]any{"name": "bad", "items": []map[string]any{{"itemType": "registration_type", "itemId": "tt_nope", "quantity": 1}}}), "items[0].itemId")
		assert.Len(t, apiWant(t, s.c.Do("GET", p, nil), 200)["items"], 1, "refused PUTs change nothing")

		up := apiWant(t, s.c.Do("PATCH", p, map[string]any{"name": "Two days", "priceAmount": 70}), 200)
		assert.Equal(t, "Two days", up["name"])
		for _, st := range []string{"open", "closed", "archived"} {
			apiSetStatus(t, s.c, p, st)
		}
		assert.Len(t, apiData(t, apiWant(t, s.c.Do("GET", s.path("/bundles"), nil), 200)), 1)
		apiWantErr(t, s.c.Do("GET", s.path("/bundles/bdl_nope"), nil), 404, "NOT_FOUND")
		apiWantErr(t, s.c.Do("PUT", s.path("/bundles/bdl_nope/items"), []any{}), 404, "NOT_FOUND")
	})

	t.Run("add-on and bundle capacity is enforced in orders", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"capacity": nil})
		ao := apiS(apiWant(t, s.c.Do("POST", s.path("/addons"), map[string]any{"name": "Dinner", "priceAmount": 0, "capacity": 1}), 201), "id")
		apiSetStatus(t, s.c, s.path("/addons/"+ao), "open")
		line := func(typ, id string) []map[string]any {
			return []map[string]any{{"itemType": typ, "itemId": id, "quantity": 1}}
		}
		apiWant(t, s.c.Do("POST", s.path("/orders"), map[string]any{"email": "a@example.com", "items": append(apiTicket(s.tt), line("addon", ao)...)}), 201)
		addon := apiWant(t, s.c.Do("GET", s.path("/addons/"+ao), nil), 200)
		assert.EqualValues(t, 1, addon["held"])
		apiWantErr(t, s.c.Do("POST", s.path("/orders"), map[string]any{"email": "b@example.com", "items": append(apiTicket(s.tt), line("addon", ao)...)}), 412, "FAILED_PRECONDITION")

		b := apiS(apiWant(t, s.c.Do("POST", s.path("/bundles"), map[string]any{"name": "VIP", "priceAmount": 0, "capacity": 1,
			"items": apiTicket(s.tt)}), 201), "id")
		apiSetStatus(t, s.c, s.path("/bundles/"+b), "open")
		apiWant(t, s.c.Do("POST", s.path("/orders"), map[string]any{"email": "c@example.com", "items": line("bundle", b)}), 201)
		apiWantErr(t, s.c.Do("POST", s.path("/orders"), map[string]any{"email": "d@example.com", "items": line("bundle", b)}), 412, "FAILED_PRECONDITION")
		assert.EqualValues(t, 1, apiWant(t, s.c.Do("GET", s.path("/bundles/"+b), nil), 200)["held"])
	})
}

func TestAPIOrders(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	urls := map[string]any{"successUrl": "https://shop.example.com/ok", "cancelUrl": "https://shop.example.com/cancel"}

	t.Run("place holds, snapshots the price, reads by id and number", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"priceAmount": 49.99, "capacity": 5})
		before := time.Now()
		o := apiWant(t, s.order(t, s.tt, "buyer@example.com", map[string]any{"name": "Buyer", "responses": map[string]any{"diet": "vegan"}}), 201)
		assert.Regexp(t, `^ord_`, o["id"])
		assert.Equal(t, "open", o["status"])
		assert.EqualValues(t, 49.99, o["totalAmount"])
		assert.Equal(t, "USD", o["currency"])
		assert.Equal(t, false, o["alreadyRegistered"])
		num := apiS(o, "orderNumber")
		require.NotEmpty(t, num)
		assert.Equal(t, f.s.URL+"/orders/"+num, o["orderUrl"])
		assert.NotEmpty(t, o["checkoutUrl"], "present while open")
		assert.Nil(t, o["paymentUrl"])
		hold, err := time.Parse(time.RFC3339, apiS(o, "holdExpiresAt"))
		require.NoError(t, err)
		assert.WithinDuration(t, before.Add(15*time.Minute), hold, time.Minute)
		items := o["items"].([]any)
		require.Len(t, items, 1)
		assert.EqualValues(t, 49.99, items[0].(map[string]any)["unitPriceAmount"])
		assert.EqualValues(t, 1, apiAvailability(t, s.c, s.ev, s.tt)["held"])

		apiWant(t, s.c.Do("PATCH", s.path("/ticket-types/"+s.tt), map[string]any{"priceAmount": 99}), 200)
		byNum := apiWant(t, s.c.Do("GET", s.path("/orders/"+num), nil), 200)
		byID := apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "id")), nil), 200)
		assert.Equal(t, byNum, byID)
		assert.EqualValues(t, 49.99, byNum["totalAmount"], "repricing never rewrites an order")
		assert.EqualValues(t, 99, apiWant(t, s.order(t, s.tt, "later@example.com", nil), 201)["totalAmount"])
		apiWantErr(t, s.c.Do("GET", s.path("/orders/ord_nope"), nil), 404, "NOT_FOUND")
		apiWantErr(t, s.c.Do("POST", s.path("/orders/nope-12345678/confirm"), urls), 404, "NOT_FOUND")
	})

	t.Run("refusals: sold out, hidden, sale window, one admission, bad body", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"capacity": 1})
		apiWant(t, s.order(t, s.tt, "first@example.com", nil), 201)
		apiWantErr(t, s.order(t, s.tt, "second@example.com", nil), 412, "FAILED_PRECONDITION")

		hidden := apiOpenType(t, s.c, s.ev, map[string]any{"isPublic": false})
		apiWantErr(t, s.order(t, hidden, "h@example.com", nil), 412, "FAILED_PRECONDITION")
		assert.EqualValues(t, 0, apiAvailability(t, s.c, s.ev, hidden)["held"], "no hold was taken")

		soon := apiOpenType(t, s.c, s.ev, map[string]any{"opensAt": "2030-01-01T00:00:00Z"})
		apiWantErr(t, s.order(t, soon, "early@example.com", nil), 412, "FAILED_PRECONDITION")
		closed := apiOpenType(t, s.c, s.ev, map[string]any{"closesAt": "2020-01-01T00:00:00Z"})
		apiWantErr(t, s.order(t, closed, "late@example.com", nil), 412, "FAILED_PRECONDITION")
		draft := apiS(apiType(t, s.c, s.ev, nil), "id")
		apiWantErr(t, s.order(t, draft, "draft@example.com", nil), 412, "FAILED_PRECONDITION")

		free := apiOpenType(t, s.c, s.ev, map[string]any{"capacity": nil})
		two := []map[string]any{{"itemType": "registration_type", "itemId": free, "quantity": 2}}
		apiWant400(t, s.c.Do("POST", s.path("/orders"), map[string]any{"email": "two@example.com", "items": two}), "items[0].quantity")
		pair := append(apiTicket(free), apiTicket(free)...)
		apiWant400(t, s.c.Do("POST", s.path("/orders"), map[string]any{"email": "pair@example.com", "items": pair}), "items")
		apiWant400(t, s.c.AllowInvalidRequest().Do("POST", s.path("/orders"), map[string]any{"items": apiTicket(free)}), "email")
		apiWant400(t, s.c.AllowInvalidRequest().Do("POST", s.path("/orders"), map[string]any{"email": "x@example.com"}), "items")
		apiWant400(t, s.c.AllowInvalidRequest().Do("POST", s.path("/orders"), map[string]any{"email": "x@example.com", "items": []any{}}), "items")
		apiWant400(t, s.order(t, "tt_nope", "x@example.com", nil), "items[0].itemId")
		assert.EqualValues(t, 0, apiAvailability(t, s.c, s.ev, free)["held"])

		draftEv := apiS(apiEvent(t, s.c, nil), "id")
		dtt := apiOpenType(t, s.c, draftEv, nil)
		apiWantErr(t, s.c.Do("POST", "/v1/events/"+draftEv+"/orders", map[string]any{"email": "d@example.com", "items": apiTicket(dtt)}), 412, "FAILED_PRECONDITION")
	})

	t.Run("redemption codes in orders", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, nil)
		hidden := apiOpenType(t, s.c, s.ev, map[string]any{"isPublic": false})
		s.mint(t, map[string]any{"registrationTypeId": s.tt, "code": "PUBLIC-ONLY"})
		off := s.mint(t, map[string]any{"registrationTypeId": hidden, "code": "OFF"})[0]
		apiWant(t, s.c.Do("POST", s.path("/redemption-codes/"+apiS(off, "id")+"/disable"), nil), 200)
		s.mint(t, map[string]any{"registrationTypeId": hidden, "code": "TWICE", "maxUses": 2})
		// A code of another type: a hidden type still "needs a redemption
		// code" (412); on a public type the code is a bad argument (400).
		apiWantErr(t, s.order(t, hidden, "a@example.com", map[string]any{"redemptionCode": "PUBLIC-ONLY"}), 412, "FAILED_PRECONDITION")
		apiWant400(t, s.order(t, s.tt, "a@example.com", map[string]any{"redemptionCode": "TWICE"}), "redemptionCode")
		apiWant400(t, s.order(t, hidden, "a@example.com", map[string]any{"redemptionCode": "OFF"}), "redemptionCode")
		apiWant400(t, s.order(t, hidden, "a@example.com", map[string]any{"redemptionCode": "NOPE"}), "redemptionCode")
		assert.EqualValues(t, 0, apiAvailability(t, s.c, s.ev, hidden)["held"])

		uses := func() any {
			for _, c := range apiData(t, apiWant(t, s.c.Do("GET", s.path("/redemption-codes"), nil), 200)) {
				if c["code"] == "TWICE" {
					return c["uses"]
				}
			}
			return nil
		}
		o1 := apiWant(t, s.order(t, hidden, "one@example.com", map[string]any{"redemptionCode": "TWICE"}), 201)
		apiWant(t, s.order(t, hidden, "two@example.com", map[string]any{"redemptionCode": "TWICE"}), 201)
		assert.EqualValues(t, 2, uses())
		// An exhausted code is refused (412 "needs a redemption code", while
		// unknown and disabled codes answer 400 on redemptionCode).
		r := s.order(t, hidden, "three@example.com", map[string]any{"redemptionCode": "TWICE"})
		assert.Contains(t, []int{400, 412}, r.Status, "%s", r.Body)
		apiWant(t, s.c.Do("POST", s.path("/orders/"+apiS(o1, "orderNumber")+"/cancel"), nil), 200)
		assert.EqualValues(t, 1, uses(), "a cancelled order gives its use back")
		apiWant(t, s.order(t, hidden, "three@example.com", map[string]any{"redemptionCode": "TWICE"}), 201)
	})

	t.Run("an already registered buyer is told so and holds nothing", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, nil)
		apiRegister(t, s.c, s.ev, s.tt, "known@example.com")
		o := apiWant(t, s.order(t, s.tt, "Known@example.com", nil), 201)
		assert.Equal(t, true, o["alreadyRegistered"])
		av := apiAvailability(t, s.c, s.ev, s.tt)
		assert.EqualValues(t, 0, av["held"])
		assert.EqualValues(t, 1, av["confirmed"])
	})

	t.Run("confirm free pays and registers", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, nil)
		o := apiWant(t, s.order(t, s.tt, "free@example.com", nil), 201)
		paid := apiWant(t, s.c.Do("POST", s.path("/orders/"+apiS(o, "orderNumber")+"/confirm"), nil), 200)
		assert.Equal(t, "paid", paid["status"])
		assert.Nil(t, paid["checkoutUrl"])
		reg := apiWant(t, s.c.Do("GET", s.path("/registrations/"+apiS(paid, "registrationId")), nil), 200)
		assert.Equal(t, "confirmed", reg["status"])
		assert.Equal(t, "free@example.com", reg["email"])
		av := apiAvailability(t, s.c, s.ev, s.tt)
		assert.EqualValues(t, 1, av["confirmed"])
		assert.EqualValues(t, 0, av["held"])
		again := apiWant(t, s.c.Do("POST", s.path("/orders/"+apiS(o, "orderNumber")+"/confirm"), nil), 200)
		assert.Equal(t, "paid", again["status"], "confirming again is harmless")
		apiWantErr(t, s.c.Do("POST", s.path("/orders/"+apiS(o, "orderNumber")+"/cancel"), nil), 412, "FAILED_PRECONDITION")
	})

	t.Run("confirm paid needs good return URLs", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"priceAmount": 25})
		num := apiS(apiWant(t, s.order(t, s.tt, "pay@example.com", nil), 201), "orderNumber")
		p := s.path("/orders/" + num + "/confirm")
		apiWant400(t, s.c.Do("POST", p, map[string]any{}), "successUrl")
		apiWant400(t, s.c.Do("POST", p, map[string]any{"successUrl": "https://shop.example.com/ok"}), "cancelUrl")
		apiWant400(t, s.c.Do("POST", p, map[string]any{"successUrl": "http://shop.example.com/ok", "cancelUrl": "https://shop.example.com/no"}), "successUrl")
		apiWant400(t, s.c.Do("POST", p, map[string]any{"successUrl": "https://shop.example.com/ok", "cancelUrl": "ftp://shop.example.com/no"}), "cancelUrl")
		apiWant400(t, s.c.AllowInvalidRequest().Do("POST", p, map[string]any{"successUrl": "/relative", "cancelUrl": "https://shop.example.com/no"}), "successUrl")
		assert.Equal(t, "open", apiWant(t, s.c.Do("GET", s.path("/orders/"+num), nil), 200)["status"])

		aw := apiWant(t, s.c.Do("POST", p, map[string]any{"successUrl": "http://localhost:3000/ok", "cancelUrl": "http://127.0.0.1:3000/no"}), 200)
		assert.Equal(t, "awaiting_payment", aw["status"])
		assert.True(t, strings.HasPrefix(apiS(aw, "paymentUrl"), f.s.URL+"/pay/"), aw["paymentUrl"])
		assert.Nil(t, aw["registrationId"])
	})

	t.Run("cancel releases the hold and is idempotent", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"capacity": 1})
		o := apiWant(t, s.order(t, s.tt, "c@example.com", nil), 201)
		assert.EqualValues(t, 1, apiAvailability(t, s.c, s.ev, s.tt)["held"])
		p := s.path("/orders/" + apiS(o, "orderNumber") + "/cancel")
		c1 := apiWant(t, s.c.Do("POST", p, nil), 200)
		assert.Equal(t, "cancelled", c1["status"])
		assert.Nil(t, c1["holdExpiresAt"])
		c2 := apiWant(t, s.c.Do("POST", p, map[string]any{}), 200)
		assert.Equal(t, "cancelled", c2["status"])
		assert.EqualValues(t, 0, apiAvailability(t, s.c, s.ev, s.tt)["held"])
		apiWant(t, s.order(t, s.tt, "next@example.com", nil), 201)
		apiWantErr(t, s.c.Do("POST", s.path("/orders/"+apiS(o, "orderNumber")+"/confirm"), nil), 412, "FAILED_PRECONDITION")
	})

	t.Run("list newest first with items", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, nil)
		var ids []string
		for i := range 3 {
			ids = append(ids, apiS(apiWant(t, s.order(t, s.tt, fmt.Sprintf("o%d@example.com", i), nil), 201), "id"))
		}
		apiWant(t, s.c.Do("POST", s.path("/orders/"+ids[1]+"/cancel"), nil), 200)
		list := apiWant(t, s.c.Do("GET", s.path("/orders"), nil), 200)
		assert.Equal(t, []string{ids[2], ids[1], ids[0]}, apiIDs(t, list))
		for _, o := range apiData(t, list) {
			assert.Len(t, o["items"], 1)
		}
		assert.Equal(t, []string{ids[1]}, apiIDs(t, apiWant(t, s.c.Do("GET", s.path("/orders?status=cancelled"), nil), 200)))
		p1 := apiWant(t, s.c.Do("GET", s.path("/orders?limit=2"), nil), 200)
		assert.Equal(t, []string{ids[2], ids[1]}, apiIDs(t, p1))
		p2 := apiWant(t, s.c.Do("GET", s.path("/orders?limit=2&cursor="+apiS(p1, "nextCursor")), nil), 200)
		assert.Equal(t, []string{ids[0]}, apiIDs(t, p2))
	})
}

func TestAPIOrderHoldExpiry(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t, withOrderHold(1500*time.Millisecond)) // long enough for a busy machine to place the blocked order within it
	s := f.shop(t, map[string]any{"capacity": 1})
	hidden := apiOpenType(t, s.c, s.ev, map[string]any{"isPublic": false})
	s.mint(t, map[string]any{"registrationTypeId": hidden, "code": "ONE"})
	coded := apiWant(t, s.order(t, hidden, "coded@example.com", map[string]any{"redemptionCode": "ONE"}), 201)
	o := apiWant(t, s.order(t, s.tt, "slow@example.com", nil), 201)
	apiWantErr(t, s.order(t, s.tt, "blocked@example.com", nil), 412, "FAILED_PRECONDITION")
	var got map[string]any
	require.Eventually(t, func() bool {
		got = apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "orderNumber")), nil), 200)
		return got["status"] == "expired"
	}, 5*time.Second, 50*time.Millisecond, "the hold lapses into expired")
	assert.Nil(t, got["holdExpiresAt"])
	assert.EqualValues(t, 0, apiAvailability(t, s.c, s.ev, s.tt)["held"])
	apiWantErr(t, s.c.Do("POST", s.path("/orders/"+apiS(o, "orderNumber")+"/confirm"), nil), 412, "FAILED_PRECONDITION")
	apiWant(t, s.order(t, s.tt, "next@example.com", nil), 201)

	// The expired order with a code gave its reserved use back.
	assert.Equal(t, "expired", apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(coded, "orderNumber")), nil), 200)["status"])
	codes := apiData(t, apiWant(t, s.c.Do("GET", s.path("/redemption-codes"), nil), 200))
	assert.EqualValues(t, 0, codes[0]["uses"])
	assert.Equal(t, "active", codes[0]["status"])
	apiWant(t, s.order(t, hidden, "again@example.com", map[string]any{"redemptionCode": "ONE"}), 201)
}

func TestAPIAwaitingPaymentExpiry(t *testing.T) {
	t.Parallel()
	// Timestamps have whole seconds (truncated): a hold answered as ending
	// at X ends in [X, X+1s). An 8 s hold extended 3 s later ends at least
	// 3 s later; the checks below are bounded by the times answered, not
	// by how fast this machine is (8 s leaves the confirm 5 s of slack).
	const hold, gap = 8 * time.Second, 3 * time.Second
	f := newAPIFx(t, withOrderHold(hold))
	s := f.shop(t, map[string]any{"capacity": 1, "priceAmount": 10})
	o := apiWant(t, s.order(t, s.tt, "slowpay@example.com", nil), 201)
	placed, err := time.Parse(time.RFC3339Nano, apiS(o, "holdExpiresAt"))
	require.NoError(t, err)
	time.Sleep(gap)
	aw := apiWant(t, s.c.Do("POST", s.path("/orders/"+apiS(o, "orderNumber")+"/confirm"), map[string]any{
		"successUrl": "https://shop.example.com/ok", "cancelUrl": "https://shop.example.com/cancel"}), 200)
	require.Equal(t, "awaiting_payment", aw["status"])
	extended, err := time.Parse(time.RFC3339Nano, apiS(aw, "holdExpiresAt"))
	require.NoError(t, err)
	assert.True(t, extended.After(placed), "confirm of a paid order extends the hold: %v then %v", placed, extended)

	// Every answer before the extended hold's end says awaiting_payment;
	// at least one of them was asked after the first hold had surely
	// ended (placed+1s).
	status := func() string {
		return apiS(apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "orderNumber")), nil), 200), "status")
	}
	pastFirst := 0
	for {
		asked := time.Now()
		st := status()
		if !time.Now().Before(extended) {
			break
		}
		require.Equal(t, "awaiting_payment", st, "held until the extended hold's end %v (asked at %v)", extended, asked)
		if asked.After(placed.Add(time.Second)) {
			pastFirst++
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Positive(t, pastFirst, "no answer between the first hold's end (%v) and the extended one's (%v)", placed, extended)

	var got map[string]any
	require.Eventually(t, func() bool {
		got = apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "orderNumber")), nil), 200)
		return got["status"] == "expired"
	}, time.Until(extended)+15*time.Second, 50*time.Millisecond, "an unpaid order expires after its extended hold")
	assert.EqualValues(t, 0, apiAvailability(t, s.c, s.ev, s.tt)["held"])

	// A payment arriving after expiry is never lost: the place is still
	// free, so the order takes it back and is paid (TestAPILatePayment).
	st, b := apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), apiPaymentBody("dlv_late", "payment.succeeded", aw, "10.00"))
	assert.Equalf(t, 200, st, "late payment: %s", b)
	assert.Equal(t, "paid", apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "orderNumber")), nil), 200)["status"])
	apiWantErr(t, s.order(t, s.tt, "next@example.com", nil), 412, "FAILED_PRECONDITION")
}

// TestAPILatePaymentRefundResumed: a late payment's refund recorded by the
// webhook's settle, with a crash before the provider was asked, is in the
// pending-refund index and the resumer finishes it.
func TestAPILatePaymentRefundResumed(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t, withOrderHold(time.Second))
	s := f.shop(t, map[string]any{"capacity": 1, "priceAmount": 10})
	aw := apiAwaiting(t, s, "crash@example.com")
	number := apiS(aw, "orderNumber")
	require.Eventually(t, func() bool {
		return apiWant(t, s.c.Do("GET", s.path("/orders/"+number), nil), 200)["status"] == "expired"
	}, 10*time.Second, 50*time.Millisecond, "the hold lapses")
	apiWant(t, s.order(t, s.tt, "quick@example.com", nil), 201)

	// The webhook's first step alone, as a crash right after it leaves it.
	res, err := f.s.Sys.Ask(context.Background(), s.ev, event.SettlePayment{
		PaymentID: apiS(aw, "paymentId"), Amount: 1000, Currency: "USD", DeliveryID: "dlv_crash", Outcome: "succeeded"})
	require.NoError(t, err)
	require.Len(t, res.(event.Order).Refunds, 1)
	pending, err := payments.PendingRefunds(f.s.Sys.Store())
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, apiS(aw, "id"), pending[0].OrderID)

	n, err := f.s.Main.Refunds().Resume(0)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	got := apiWant(t, s.c.Do("GET", s.path("/orders/"+number), nil), 200)
	assert.Equal(t, "expired", got["status"])
	refunds := apiRefunds(t, got)
	require.Len(t, refunds, 1)
	assert.Equal(t, "succeeded", refunds[0]["status"])
	assert.EqualValues(t, 10, refunds[0]["amount"])
	pending, err = payments.PendingRefunds(f.s.Sys.Store())
	require.NoError(t, err)
	assert.Empty(t, pending)
}

// TestAPILatePayment: a payment that succeeds after its order's hold
// lapsed (decisions §12), through the real sandbox webhook and pay page.
func TestAPILatePayment(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t, withOrderHold(time.Second))
	expired := func(t *testing.T, s apiShop, aw map[string]any) {
		t.Helper()
		require.Eventually(t, func() bool {
			return apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(aw, "orderNumber")), nil), 200)["status"] == "expired"
		}, 10*time.Second, 50*time.Millisecond, "the hold lapses")
	}
	get := func(t *testing.T, s apiShop, aw map[string]any) map[string]any {
		return apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(aw, "orderNumber")), nil), 200)
	}

	t.Run("places still free: paid and fulfilled, webhook 200", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"capacity": 1, "priceAmount": 10})
		aw := apiAwaiting(t, s, "late@example.com")
		expired(t, s, aw)
		st, b := apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), apiPaymentBody("dlv_late1", "payment.succeeded", aw, "10.00"))
		require.Equalf(t, 200, st, "%s", b)
		assert.Equal(t, "paid", apiDecode(b)["status"])
		o := get(t, s, aw)
		assert.Equal(t, "paid", o["status"])
		assert.Empty(t, o["refunds"])
		reg := apiWant(t, s.c.Do("GET", s.path("/registrations/"+apiS(o, "registrationId")), nil), 200)
		assert.Equal(t, "confirmed", reg["status"])
		assert.EqualValues(t, 1, apiAvailability(t, s.c, s.ev, s.tt)["confirmed"])
		// The provider's retry changes nothing.
		st, _ = apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), apiPaymentBody("dlv_late1", "payment.succeeded", aw, "10.00"))
		assert.Equal(t, 200, st)
		assert.EqualValues(t, 1, apiAvailability(t, s.c, s.ev, s.tt)["confirmed"])
	})

	t.Run("places gone: the whole payment is refunded, webhook 200", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"capacity": 1, "priceAmount": 10})
		aw := apiAwaiting(t, s, "late@example.com")
		expired(t, s, aw)
		apiWant(t, s.order(t, s.tt, "quick@example.com", nil), 201)
		st, b := apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), apiPaymentBody("dlv_late2", "payment.succeeded", aw, "10.00"))
		require.Equalf(t, 200, st, "%s", b)
		o := get(t, s, aw)
		assert.Equal(t, "expired", o["status"])
		assert.Nil(t, o["registrationId"])
		refunds := apiRefunds(t, o)
		require.Len(t, refunds, 1)
		assert.EqualValues(t, 10, refunds[0]["amount"])
		assert.Equal(t, "succeeded", refunds[0]["status"], "the sandbox refunds at once")
		assert.Equal(t, true, refunds[0]["full"])
		// A retry neither refunds twice nor fulfils.
		st, _ = apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), apiPaymentBody("dlv_late2", "payment.succeeded", aw, "10.00"))
		assert.Equal(t, 200, st)
		assert.Len(t, apiRefunds(t, get(t, s, aw)), 1)
		assert.EqualValues(t, 0, apiAvailability(t, s.c, s.ev, s.tt)["confirmed"])
	})

	t.Run("the pay page sends to successUrl only for a fulfilled order", func(t *testing.T) {
		t.Parallel()
		form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
		pay := []byte(url.Values{"action": {"pay"}}.Encode())

		s := f.shop(t, map[string]any{"capacity": 1, "priceAmount": 10})
		gone := apiAwaiting(t, s, "gone@example.com")
		expired(t, s, gone)
		apiWant(t, s.order(t, s.tt, "quick@example.com", nil), 201)
		resp, b := apiRaw(t, "POST", apiS(gone, "paymentUrl"), form, pay)
		require.Equalf(t, 303, resp.StatusCode, "%s", b)
		assert.Equal(t, apiS(gone, "orderUrl"), resp.Header.Get("Location"), "not successUrl: the order was refunded")
		o := get(t, s, gone)
		assert.Equal(t, "expired", o["status"])
		require.Len(t, apiRefunds(t, o), 1)

		s2 := f.shop(t, map[string]any{"capacity": 1, "priceAmount": 10})
		free := apiAwaiting(t, s2, "free@example.com")
		expired(t, s2, free)
		resp, b = apiRaw(t, "POST", apiS(free, "paymentUrl"), form, pay)
		require.Equalf(t, 303, resp.StatusCode, "%s", b)
		assert.Equal(t, "https://shop.example.com/ok", resp.Header.Get("Location"))
		assert.Equal(t, "paid", get(t, s2, free)["status"])
	})
}

// apiAwaiting places a paid order and confirms it; it returns the order
// awaiting payment.
func apiAwaiting(t *testing.T, s apiShop, email string) map[string]any {
	t.Helper()
	o := apiWant(t, s.order(t, s.tt, email, nil), 201)
	aw := apiWant(t, s.c.Do("POST", s.path("/orders/"+apiS(o, "orderNumber")+"/confirm"), map[string]any{
		"successUrl": "https://shop.example.com/ok", "cancelUrl": "https://shop.example.com/cancel"}), 200)
	require.Equal(t, "awaiting_payment", aw["status"])
	require.NotEmpty(t, apiS(aw, "paymentId"))
	return aw
}

// apiPaymentBody is a sandbox payment webhook body.
func apiPaymentBody(delivery, typ string, o map[string]any, amount string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"type":%q,"data":{"paymentId":%q,"orderNumber":%q,"amount":%s,"currency":%q}}`,
		delivery, typ, apiS(o, "paymentId"), apiS(o, "orderNumber"), amount, apiS(o, "currency")))
}

func TestAPIPayments(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("webhook: forged, stale, valid, replayed", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"priceAmount": 25})
		o := apiAwaiting(t, s, "payer@example.com")
		status := func() string {
			return apiS(apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "orderNumber")), nil), 200), "status")
		}
		body := apiPaymentBody("dlv_1", "payment.succeeded", o, "25.00")
		now := time.Now().Unix()

		st, b := apiWebhook(t, f.s.URL, "whsec_forged", now, body)
		assert.Equalf(t, 400, st, "forged: %s", b)
		st, b = apiWebhook(t, f.s.URL, apiWebhookSecret, now-6*60, body)
		assert.Equalf(t, 400, st, "stale: %s", b)
		resp, b := apiRaw(t, "POST", f.s.URL+"/webhooks/payments/sandbox", map[string]string{"Content-Type": "application/json"}, body)
		assert.Equalf(t, 400, resp.StatusCode, "unsigned: %s", b)
		tampered := apiPaymentBody("dlv_1", "payment.succeeded", o, "1.00")
		resp, b = apiRaw(t, "POST", f.s.URL+"/webhooks/payments/sandbox", map[string]string{
			"Content-Type": "application/json", "Payment-Signature": apiSign(apiWebhookSecret, now, body)}, tampered)
		assert.Equalf(t, 400, resp.StatusCode, "body changed after signing: %s", b)
		assert.Equal(t, "awaiting_payment", status(), "refused deliveries change nothing")

		st, b = apiWebhook(t, f.s.URL, apiWebhookSecret, now, body)
		require.Equalf(t, 200, st, "valid: %s", b)
		paid := apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "orderNumber")), nil), 200)
		assert.Equal(t, "paid", paid["status"])
		reg := apiWant(t, s.c.Do("GET", s.path("/registrations/"+apiS(paid, "registrationId")), nil), 200)
		assert.Equal(t, "confirmed", reg["status"])

		st, b = apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), body)
		assert.Equalf(t, 200, st, "replayed: %s", b)
		assert.Equal(t, paid, apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "orderNumber")), nil), 200), "a replay changes nothing more")
		assert.Len(t, apiData(t, apiWant(t, s.c.Do("GET", s.path("/registrations"), nil), 200)), 1)
		assert.EqualValues(t, 1, apiAvailability(t, s.c, s.ev, s.tt)["confirmed"])
	})

	t.Run("unknown payments and failed outcomes do not settle", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"priceAmount": 25})
		o := apiAwaiting(t, s, "fail@example.com")
		ghost := apiMerge(o, map[string]any{"paymentId": "pay_" + strings.TrimPrefix(s.ev, "evt_") + ".nope"})
		st, b := apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), apiPaymentBody("dlv_ghost", "payment.succeeded", ghost, "25.00"))
		assert.Equalf(t, 404, st, "unknown payment: %s", b)
		st, b = apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), []byte(`{"id":"dlv_x","type":"payment.succeeded"}`))
		assert.Equalf(t, 400, st, "body without data: %s", b)
		st, b = apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), apiPaymentBody("dlv_fail", "payment.failed", o, "25.00"))
		assert.Equalf(t, 200, st, "failed outcome: %s", b)
		got := apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "orderNumber")), nil), 200)
		assert.NotEqual(t, "paid", got["status"])
		assert.Nil(t, got["registrationId"])
	})

	t.Run("a wrong amount does not settle", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"priceAmount": 25})
		o := apiAwaiting(t, s, "cheap@example.com")
		st, _ := apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), apiPaymentBody("dlv_cheap", "payment.succeeded", o, "1.00"))
		assert.NotEqual(t, 500, st)
		got := apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "orderNumber")), nil), 200)
		assert.Equal(t, "awaiting_payment", got["status"])
		assert.Nil(t, got["registrationId"])
		assert.Empty(t, apiData(t, apiWant(t, s.c.Do("GET", s.path("/registrations"), nil), 200)))
	})

	t.Run("the hosted pay page settles with a 303", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"priceAmount": 12.5})
		o := apiAwaiting(t, s, "page@example.com")
		resp, b := apiRaw(t, "GET", apiS(o, "paymentUrl"), nil, nil)
		require.Equal(t, 200, resp.StatusCode)
		assert.Contains(t, resp.Header.Get("Content-Type"), "text/html")
		assert.Contains(t, string(b), apiS(o, "orderNumber"))
		assert.Contains(t, string(b), `name="action"`)
		resp, b = apiRaw(t, "POST", apiS(o, "paymentUrl"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
			[]byte(url.Values{"action": {"pay"}}.Encode()))
		require.Equalf(t, 303, resp.StatusCode, "%s", b)
		assert.Equal(t, "https://shop.example.com/ok", resp.Header.Get("Location"))
		assert.Equal(t, "paid", apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "orderNumber")), nil), 200)["status"])
		resp, _ = apiRaw(t, "GET", f.s.URL+"/pay/pay_nope", nil, nil)
		assert.Equal(t, 404, resp.StatusCode)
	})

	t.Run("decline keeps the order unpaid and returns to cancelUrl", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"priceAmount": 12.5})
		o := apiAwaiting(t, s, "decline@example.com")
		resp, b := apiRaw(t, "POST", apiS(o, "paymentUrl"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
			[]byte(url.Values{"action": {"decline"}}.Encode()))
		require.Equalf(t, 303, resp.StatusCode, "%s", b)
		assert.Equal(t, "https://shop.example.com/cancel", resp.Header.Get("Location"))
		assert.NotEqual(t, "paid", apiWant(t, s.c.Do("GET", s.path("/orders/"+apiS(o, "orderNumber")), nil), 200)["status"])
	})
}

// apiSessionBounds are the checkout-session bodies the spec's table refuses,
// each with the field its 400 must name.
func apiSessionBounds(tt string) []struct {
	name  string
	body  map[string]any
	field string
} {
	item := func(m map[string]any) []map[string]any {
		return []map[string]any{apiMerge(map[string]any{"itemType": "registration_type", "itemId": tt, "quantity": 1}, m)}
	}
	many := make([]map[string]any, 51)
	for i := range many {
		many[i] = map[string]any{"itemType": "addon", "itemId": fmt.Sprint("ao_", i), "quantity": 1}
	}
	ok := apiTicket(tt)
	return []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"no items", map[string]any{"items": []any{}}, "items"},
		{"items missing", map[string]any{}, "items"},
		{"51 items", map[string]any{"items": many}, "items"},
		{"quantity 0", map[string]any{"items": item(map[string]any{"quantity": 0})}, "items[0].quantity"},
		{"quantity 101", map[string]any{"items": item(map[string]any{"quantity": 101})}, "items[0].quantity"},
		{"itemId empty", map[string]any{"items": item(map[string]any{"itemId": ""})}, "items[0].itemId"},
		{"itemId 101", map[string]any{"items": item(map[string]any{"itemId": apiRepeat("x", 101)})}, "items[0].itemId"},
		{"itemType unknown", map[string]any{"items": item(map[string]any{"itemType": "voucher"})}, "items[0].itemType"},
		{"email bad", map[string]any{"items": ok, "email": "nope"}, "email"},
		{"email 321", map[string]any{"items": ok, "email": apiRepeat("a", 309) + "@example.com"}, "email"},
		{"name 201", map[string]any{"items": ok, "name": apiRepeat("n", 201)}, "name"},
		{"redemptionCode empty", map[string]any{"items": ok, "redemptionCode": ""}, "redemptionCode"},
		{"redemptionCode 65", map[string]any{"items": ok, "redemptionCode": apiRepeat("R", 65)}, "redemptionCode"},
		{"promotionCode empty", map[string]any{"items": ok, "promotionCode": ""}, "promotionCode"},
		{"promotionCode 65", map[string]any{"items": ok, "promotionCode": apiRepeat("P", 65)}, "promotionCode"},
		{"returnUrl 2001", map[string]any{"items": ok, "returnUrl": "https://shop.example.com/" + apiRepeat("r", 2001-25)}, "returnUrl"},
		{"locale fr", map[string]any{"items": ok, "locale": "fr"}, "locale"},
		{"unknown member", map[string]any{"items": ok, "coupon": "x"}, "coupon"},
	}
}

func TestAPICheckoutSessions(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("create answers id, url and a 24 hour expiry, holding no seat", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, map[string]any{"capacity": 1})
		// Checkout sessions check their promotion code.
		apiWant(t, f.admin(t).Do("POST", "/admin/v1/events/"+s.ev+"/promotion-codes", map[string]any{"code": "P1", "percentOff": 10}), 201)
		// ... and their redemption code, as order placement does.
		apiWant(t, s.c.Do("POST", s.path("/redemption-codes"), map[string]any{"registrationTypeId": s.tt, "code": "R1"}), 201)
		before := time.Now()
		cs := apiWant(t, s.c.Do("POST", s.path("/checkout-sessions"), map[string]any{
			"items": apiTicket(s.tt), "email": "buyer@example.com", "name": "Buyer", "redemptionCode": "R1",
			"promotionCode": "P1", "returnUrl": "https://shop.example.com/done", "locale": "zh-CN",
			"responses": map[string]any{"company": "Gophers"}}), 201)
		assert.Regexp(t, `^cs_`, cs["id"])
		assert.Equal(t, f.s.URL+"/checkout/"+apiS(cs, "id"), cs["url"])
		exp, err := time.Parse(time.RFC3339, apiS(cs, "expiresAt"))
		require.NoError(t, err)
		assert.WithinDuration(t, before.Add(24*time.Hour), exp, time.Minute)
		av := apiAvailability(t, s.c, s.ev, s.tt)
		assert.EqualValues(t, 0, av["held"])
		assert.EqualValues(t, 1, av["remaining"])
		resp, _ := apiRaw(t, "GET", apiS(cs, "url"), nil, nil)
		assert.Less(t, resp.StatusCode, 500, "the session's url answers")
		apiWant(t, s.order(t, s.tt, "other@example.com", nil), 201) // the place was still free
	})

	t.Run("every bound of the request table answers 400 with its field", func(t *testing.T) {
		t.Parallel()
		s := f.shop(t, nil)
		c := s.c.AllowInvalidRequest()
		for _, tc := range apiSessionBounds(s.tt) {
			t.Run(tc.name, func(t *testing.T) {
				apiWant400(t, c.WithT(t).Do("POST", s.path("/checkout-sessions"), tc.body), tc.field)
			})
		}
		apiWant(t, s.c.Do("POST", s.path("/redemption-codes"), map[string]any{"registrationTypeId": s.tt, "code": apiRepeat("R", 64)}), 201)
		apiWant(t, s.c.Do("POST", s.path("/checkout-sessions"), map[string]any{"items": apiTicket(s.tt), "name": apiRepeat("n", 200),
			"redemptionCode": apiRepeat("R", 64), "returnUrl": "https://shop.example.com/" + apiRepeat("r", 2000-25)}), 201)
	})

	t.Run("an unpublished event answers 412", func(t *testing.T) {
		t.Parallel()
		c := f.unit(t).dev
		ev := apiS(apiEvent(t, c, nil), "id")
		tt := apiOpenType(t, c, ev, nil)
		apiWantErr(t, c.Do("POST", "/v1/events/"+ev+"/checkout-sessions", map[string]any{"items": apiTicket(tt)}), 412, "FAILED_PRECONDITION")
	})
}

func TestAPIIdempotencyKey(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	u := f.unit(t)
	c := u.dev.WithHeader("Idempotency-Key", "idem-1")
	first := c.Do("POST", "/v1/events", map[string]any{"name": "Once", "timezone": "UTC"})
	ev := apiWant(t, first, 201)
	again := c.Do("POST", "/v1/events", map[string]any{"name": "Once", "timezone": "UTC"})
	assert.Equal(t, 201, again.Status)
	assert.JSONEq(t, string(first.Body), string(again.Body), "the same key and body replay the first answer")
	assert.Equal(t, []string{apiS(ev, "id")}, apiIDs(t, apiWant(t, u.dev.Do("GET", "/v1/events", nil), 200)), "one event created")
	apiWantErr(t, c.Do("POST", "/v1/events", map[string]any{"name": "Twice", "timezone": "UTC"}), 422, "INVALID_ARGUMENT")

	// Replays keep error answers too, and keys are per API key.
	bad := u.dev.WithHeader("Idempotency-Key", "idem-2").AllowInvalidRequest()
	apiWant400(t, bad.Do("POST", "/v1/events", map[string]any{"name": "x"}), "timezone")
	apiWant400(t, bad.Do("POST", "/v1/events", map[string]any{"name": "x"}), "timezone")
	other := f.unit(t).dev.WithHeader("Idempotency-Key", "idem-1")
	apiWant(t, other.Do("POST", "/v1/events", map[string]any{"name": "Twice", "timezone": "UTC"}), 201)

	// An order placed twice with one key holds one place.
	ev2 := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev2, map[string]any{"capacity": 2})
	oc := u.dev.WithHeader("Idempotency-Key", "order-1")
	o1 := apiWant(t, oc.Do("POST", "/v1/events/"+ev2+"/orders", map[string]any{"email": "a@example.com", "items": apiTicket(tt)}), 201)
	o2 := apiWant(t, oc.Do("POST", "/v1/events/"+ev2+"/orders", map[string]any{"email": "a@example.com", "items": apiTicket(tt)}), 201)
	assert.Equal(t, o1["id"], o2["id"])
	assert.EqualValues(t, 1, apiAvailability(t, u.dev, ev2, tt)["held"])
}
