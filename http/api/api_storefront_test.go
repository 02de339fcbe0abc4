package api_test

// Black-box tests of the Storefront API (/storefront/v1, publishable keys):
// the published catalog, code lookup, the place / confirm / poll / cancel
// flow, checkout sessions, CORS by the key's origins, rate limits, and the
// concurrent on-sale drop.

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const apiShopOrigin = "https://shop.example.com"

// apiStore is a unit with a published event and an open public ticket type.
type apiStore struct {
	apiUnit
	ev string
	tt string
}

func (f *apiFx) store(t *testing.T, typeExtra map[string]any) apiStore {
	t.Helper()
	u := f.unit(t, apiShopOrigin, "http://localhost:3000")
	ev := apiPublished(t, u.dev)
	return apiStore{apiUnit: u, ev: ev, tt: apiOpenType(t, u.dev, ev, typeExtra)}
}

func (s apiStore) sfPath(p string) string { return "/storefront/v1/events/" + s.ev + p }

func (s apiStore) sfOrder(t testing.TB, c *apiClient, typeID, email string, extra map[string]any) *apiResp {
	t.Helper()
	return c.Do("POST", s.sfPath("/orders"), apiMerge(map[string]any{"email": email, "items": apiTicket(typeID)}, extra))
}

func TestAPIStorefront(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("events: only published ones, each with siteUrl", func(t *testing.T) {
		t.Parallel()
		s := f.store(t, nil)
		draft := apiS(apiEvent(t, s.dev, nil), "id")
		archived := apiPublished(t, s.dev)
		apiWant(t, s.dev.Do("POST", "/v1/events/"+archived+"/archive", nil), 200)
		second := apiPublished(t, s.dev)
		list := apiWant(t, s.sf.Do("GET", "/storefront/v1/events", nil), 200)
		assert.Equal(t, []string{second, s.ev}, apiIDs(t, list), "published only, newest first")
		for _, e := range apiData(t, list) {
			assert.Contains(t, e, "siteUrl")
			assert.Nil(t, e["siteUrl"], "null until set in the console")
			assert.Equal(t, "published", e["status"])
		}
		p1 := apiWant(t, s.sf.Do("GET", "/storefront/v1/events?limit=1", nil), 200)
		assert.Equal(t, []string{second}, apiIDs(t, p1))
		assert.Equal(t, true, p1["hasMore"])
		var rest []string
		cursor := apiS(p1, "nextCursor")
		for i := 0; cursor != "" && i < 10; i++ {
			p := apiWant(t, s.sf.Do("GET", "/storefront/v1/events?limit=1&cursor="+cursor, nil), 200)
			rest = append(rest, apiIDs(t, p)...)
			cursor = apiS(p, "nextCursor")
		}
		assert.Equal(t, []string{s.ev}, rest)
		apiWant400(t, s.sf.AllowInvalidRequest().Do("GET", "/storefront/v1/events?limit=0", nil), "limit")

		missing := apiWantErr(t, s.sf.Do("GET", "/storefront/v1/events/evt_01doesnotexist0000000000", nil), 404, "NOT_FOUND")
		assert.Equal(t, missing, apiWantErr(t, s.sf.Do("GET", "/storefront/v1/events/"+draft, nil), 404, "NOT_FOUND"))
		assert.Equal(t, missing, apiWantErr(t, s.sf.Do("GET", "/storefront/v1/events/"+archived, nil), 404, "NOT_FOUND"))
	})

	t.Run("catalog: public types with soldOut, never a count", func(t *testing.T) {
		t.Parallel()
		s := f.store(t, map[string]any{"name": "General", "priceAmount": 30})
		full := apiOpenType(t, s.dev, s.ev, map[string]any{"name": "Tiny", "capacity": 1})
		apiRegister(t, s.dev, s.ev, full, "first@example.com")
		hidden := apiOpenType(t, s.dev, s.ev, map[string]any{"name": "Secret backstage", "isPublic": false})
		upcoming := apiOpenType(t, s.dev, s.ev, map[string]any{"name": "Late bird", "opensAt": "2030-01-01T00:00:00Z", "priceAmount": 60})
		draft := apiS(apiType(t, s.dev, s.ev, map[string]any{"name": "Draft type"}), "id")
		ao := apiS(apiWant(t, s.dev.Do("POST", "/v1/events/"+s.ev+"/addons", map[string]any{"name": "Shirt", "priceAmount": 15, "capacity": 3}), 201), "id")
		apiSetStatus(t, s.dev, "/v1/events/"+s.ev+"/addons/"+ao, "open")
		b := apiS(apiWant(t, s.dev.Do("POST", "/v1/events/"+s.ev+"/bundles", map[string]any{"name": "Combo", "priceAmount": 40, "capacity": 2,
			"items": []map[string]any{{"itemType": "registration_type", "itemId": s.tt, "quantity": 1}, {"itemType": "addon", "itemId": ao, "quantity": 1}}}), 201), "id")
		apiSetStatus(t, s.dev, "/v1/events/"+s.ev+"/bundles/"+b, "open")

		r := s.sf.Do("GET", s.sfPath(""), nil)
		cat := apiWant(t, r, 200)
		assert.Equal(t, s.ev, apiM(cat, "event")["id"])
		types := map[string]map[string]any{}
		for _, x := range cat["ticketTypes"].([]any) {
			m := x.(map[string]any)
			types[apiS(m, "id")] = m
		}
		require.Contains(t, types, s.tt)
		require.Contains(t, types, full)
		assert.Equal(t, false, types[s.tt]["soldOut"])
		assert.Equal(t, true, types[full]["soldOut"])
		assert.EqualValues(t, 30, types[s.tt]["priceAmount"])
		assert.NotContains(t, types, hidden)
		assert.NotContains(t, types, draft)
		assert.NotContains(t, string(r.Body), hidden, "hidden types are absent")
		assert.NotContains(t, string(r.Body), "Secret backstage")
		assert.NotContains(t, string(r.Body), draft)
		var up []string
		for _, x := range cat["upcomingTicketTypes"].([]any) {
			m := x.(map[string]any)
			up = append(up, apiS(m, "id"))
			if m["id"] == upcoming {
				assert.Equal(t, "Late bird", m["name"])
				assert.EqualValues(t, 60, m["priceAmount"])
				assert.Equal(t, "2030-01-01T00:00:00Z", m["opensAt"])
			}
		}
		assert.Equal(t, []string{upcoming}, up)
		assert.NotContains(t, types, upcoming, "not on sale yet")
		assert.Len(t, cat["addons"], 1)
		assert.Len(t, cat["bundles"], 1)

		var counts []string
		apiWalkKeys(apiDecode(r.Body), func(k string) {
			switch k {
			case "capacity", "remaining", "confirmed", "held", "waitlisted", "counts", "sold":
				counts = append(counts, k)
			}
		})
		assert.Empty(t, counts, "the storefront never exposes numeric availability")
	})

	t.Run("bundles and add-ons in the catalog and in orders", func(t *testing.T) {
		t.Parallel()
		s := f.store(t, map[string]any{"capacity": 1})
		hidden := apiOpenType(t, s.dev, s.ev, map[string]any{"isPublic": false})
		ao := apiS(apiWant(t, s.dev.Do("POST", "/v1/events/"+s.ev+"/addons", map[string]any{"name": "Cap", "priceAmount": 5, "capacity": 1}), 201), "id")
		apiSetStatus(t, s.dev, "/v1/events/"+s.ev+"/addons/"+ao, "open")
		bundle := func(typeID string) string {
			b := apiS(apiWant(t, s.dev.Do("POST", "/v1/events/"+s.ev+"/bundles", map[string]any{"name": "B " + typeID, "priceAmount": 10,
				"items": apiTicket(typeID)}), 201), "id")
			apiSetStatus(t, s.dev, "/v1/events/"+s.ev+"/bundles/"+b, "open")
			return b
		}
		pub := bundle(s.tt)
		sec := bundle(hidden)
		line := func(typ, id string) []map[string]any {
			return []map[string]any{{"itemType": typ, "itemId": id, "quantity": 1}}
		}
		// A bundle holding a hidden type is as unseen as the type.
		apiWant400(t, s.sf.Do("POST", s.sfPath("/orders"), map[string]any{"email": "h@example.com", "items": line("bundle", sec)}), "items[0].itemId")
		apiWant(t, s.sf.Do("POST", s.sfPath("/orders"), map[string]any{"email": "a@example.com", "items": line("addon", ao)}), 201)
		apiWant(t, s.sf.Do("POST", s.sfPath("/orders"), map[string]any{"email": "p@example.com", "items": line("bundle", pub)}), 201)

		soldOut := map[string]any{}
		cat := apiWant(t, s.sf.Do("GET", s.sfPath(""), nil), 200)
		for _, sec := range []string{"ticketTypes", "addons", "bundles"} {
			for _, x := range cat[sec].([]any) {
				m := x.(map[string]any)
				soldOut[apiS(m, "id")] = m["soldOut"]
			}
		}
		assert.Equal(t, true, soldOut[s.tt], "the bundle's order holds the only place")
		assert.Equal(t, true, soldOut[ao])
		assert.Equal(t, true, soldOut[pub], "a bundle whose ticket is sold out cannot be bought")
		apiWantErr(t, s.sf.Do("POST", s.sfPath("/orders"), map[string]any{"email": "q@example.com", "items": line("bundle", pub)}), 412, "FAILED_PRECONDITION")
	})

	t.Run("code lookup reaches hidden types; invalid codes are one 404", func(t *testing.T) {
		t.Parallel()
		s := f.store(t, nil)
		hidden := apiOpenType(t, s.dev, s.ev, map[string]any{"isPublic": false, "priceAmount": 80})
		apiWant(t, s.dev.Do("POST", "/v1/events/"+s.ev+"/redemption-codes", map[string]any{"registrationTypeId": hidden, "code": "VIP-1"}), 201)
		off := apiWant(t, s.dev.Do("POST", "/v1/events/"+s.ev+"/redemption-codes", map[string]any{"registrationTypeId": hidden, "code": "VIP-OFF"}), 201)
		offID := apiS(apiData(t, map[string]any{"data": off["redemptionCodes"]})[0], "id")
		apiWant(t, s.dev.Do("POST", "/v1/events/"+s.ev+"/redemption-codes/"+offID+"/disable", nil), 200)
		lk := apiWant(t, s.sf.Do("GET", s.sfPath("/redemption-codes/lookup?code=VIP-1"), nil), 200)
		assert.Equal(t, hidden, apiM(lk, "registrationType")["id"])
		nope := apiWantErr(t, s.sf.Do("GET", s.sfPath("/redemption-codes/lookup?code=NOPE"), nil), 404, "NOT_FOUND")
		assert.Equal(t, nope, apiWantErr(t, s.sf.Do("GET", s.sfPath("/redemption-codes/lookup?code=VIP-OFF"), nil), 404, "NOT_FOUND"))

		// Without its code a hidden type answers as an unknown id.
		apiWant400(t, s.sfOrder(t, s.sf, hidden, "h@example.com", nil), "items[0].itemId")
		o := apiWant(t, s.sfOrder(t, s.sf, hidden, "h@example.com", map[string]any{"redemptionCode": "VIP-1"}), 201)
		assert.EqualValues(t, 80, o["totalAmount"])
	})

	t.Run("place, poll, confirm and cancel", func(t *testing.T) {
		t.Parallel()
		s := f.store(t, map[string]any{"capacity": 2})
		paid := apiOpenType(t, s.dev, s.ev, map[string]any{"priceAmount": 19.5})

		o := apiWant(t, s.sfOrder(t, s.sf, s.tt, "buyer@example.com", map[string]any{"name": "Buyer"}), 201)
		num := apiS(o, "orderNumber")
		assert.Equal(t, "open", o["status"])
		assert.Equal(t, f.s.URL+"/orders/"+num, o["orderUrl"])
		assert.NotEmpty(t, o["checkoutUrl"])
		assert.EqualValues(t, 1, apiAvailability(t, s.dev, s.ev, s.tt)["held"])

		poll := apiWant(t, s.sf.Do("GET", s.sfPath("/orders/"+num), nil), 200)
		assert.Equal(t, "b***@example.com", poll["email"], "the poll masks the email")
		assert.Nil(t, poll["name"])
		assert.NotContains(t, string(s.sf.Do("GET", s.sfPath("/orders/"+num), nil).Body), "buyer@example.com")
		apiWantErr(t, s.sf.Do("GET", s.sfPath("/orders/"+apiS(o, "id")), nil), 404, "NOT_FOUND")
		apiWantErr(t, s.sf.Do("GET", s.sfPath("/orders/nope-12345678"), nil), 404, "NOT_FOUND")

		done := apiWant(t, s.sf.Do("POST", s.sfPath("/orders/"+num+"/confirm"), nil), 200)
		assert.Equal(t, "paid", done["status"])
		assert.Equal(t, "paid", apiWant(t, s.sf.Do("GET", s.sfPath("/orders/"+num), nil), 200)["status"])
		assert.EqualValues(t, 1, apiAvailability(t, s.dev, s.ev, s.tt)["confirmed"])

		po := apiWant(t, s.sfOrder(t, s.sf, paid, "payer@example.com", nil), 201)
		pnum := apiS(po, "orderNumber")
		apiWant400(t, s.sf.Do("POST", s.sfPath("/orders/"+pnum+"/confirm"), map[string]any{"successUrl": "http://shop.example.com/ok"}), "successUrl")
		aw := apiWant(t, s.sf.Do("POST", s.sfPath("/orders/"+pnum+"/confirm"), map[string]any{}), 200)
		assert.Equal(t, "awaiting_payment", aw["status"], "return URLs are optional on the storefront")
		assert.True(t, strings.HasPrefix(apiS(aw, "paymentUrl"), f.s.URL+"/pay/"))

		co := apiWant(t, s.sfOrder(t, s.sf, s.tt, "quitter@example.com", nil), 201)
		cnum := apiS(co, "orderNumber")
		assert.Equal(t, "cancelled", apiWant(t, s.sf.Do("POST", s.sfPath("/orders/"+cnum+"/cancel"), nil), 200)["status"])
		assert.Equal(t, "cancelled", apiWant(t, s.sf.Do("POST", s.sfPath("/orders/"+cnum+"/cancel"), nil), 200)["status"])
		assert.EqualValues(t, 0, apiAvailability(t, s.dev, s.ev, s.tt)["held"])

		apiWant400(t, s.sf.AllowInvalidRequest().Do("POST", s.sfPath("/orders"), map[string]any{"items": apiTicket(s.tt)}), "email")
		draft := apiS(apiEvent(t, s.dev, nil), "id")
		dtt := apiOpenType(t, s.dev, draft, nil)
		apiWantErr(t, s.sf.Do("POST", "/storefront/v1/events/"+draft+"/orders", map[string]any{"email": "d@example.com", "items": apiTicket(dtt)}), 404, "NOT_FOUND")
	})

	t.Run("checkout sessions: 201, bounds, unpublished 404, no seat held", func(t *testing.T) {
		t.Parallel()
		s := f.store(t, map[string]any{"capacity": 1})
		cs := apiWant(t, s.sf.Do("POST", s.sfPath("/checkout-sessions"), map[string]any{"items": apiTicket(s.tt), "locale": "en"}), 201)
		assert.Regexp(t, `^cs_`, cs["id"])
		assert.Equal(t, f.s.URL+"/checkout/"+apiS(cs, "id"), cs["url"])
		assert.NotEmpty(t, cs["expiresAt"])
		assert.EqualValues(t, 0, apiAvailability(t, s.dev, s.ev, s.tt)["held"])
		resp, _ := apiRaw(t, "GET", apiS(cs, "url"), nil, nil)
		assert.Less(t, resp.StatusCode, 500)
		c := s.sf.AllowInvalidRequest()
		for _, tc := range apiSessionBounds(s.tt) {
			t.Run(tc.name, func(t *testing.T) {
				apiWant400(t, c.WithT(t).Do("POST", s.sfPath("/checkout-sessions"), tc.body), tc.field)
			})
		}
		draft := apiS(apiEvent(t, s.dev, nil), "id")
		dtt := apiOpenType(t, s.dev, draft, nil)
		apiWantErr(t, s.sf.Do("POST", "/storefront/v1/events/"+draft+"/checkout-sessions", map[string]any{"items": apiTicket(dtt)}), 404, "NOT_FOUND")
	})

	t.Run("checkout sessions are refused like orders; unseen ids answer like unknown ones", func(t *testing.T) {
		t.Parallel()
		s := f.store(t, nil)
		hidden := apiOpenType(t, s.dev, s.ev, map[string]any{"isPublic": false})
		draftType := apiS(apiType(t, s.dev, s.ev, nil), "id")
		closed := apiOpenType(t, s.dev, s.ev, nil)
		apiSetStatus(t, s.dev, "/v1/events/"+s.ev+"/ticket-types/"+closed, "closed")
		later := apiOpenType(t, s.dev, s.ev, map[string]any{"opensAt": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)})
		sessions, orders := s.sfPath("/checkout-sessions"), s.sfPath("/orders")
		devSessions := "/v1/events/" + s.ev + "/checkout-sessions"
		body := func(typeID string) map[string]any {
			return map[string]any{"email": "b@example.com", "items": apiTicket(typeID)}
		}

		// What a storefront buyer cannot see answers byte for byte as an
		// id that does not exist, on sessions and on orders.
		for _, path := range []string{sessions, orders} {
			missing := apiWantErr(t, s.sf.Do("POST", path, body("tt_doesnotexist")), 400, "INVALID_ARGUMENT")
			assert.Equal(t, []string{"items[0].itemId"}, apiFields(missing))
			for _, id := range []string{hidden, draftType} {
				assert.Equal(t, missing, apiWantErr(t, s.sf.Do("POST", path, body(id)), 400, "INVALID_ARGUMENT"), "%s %s", path, id)
			}
		}
		// Visible but not on sale: the reasons order placement gives.
		for _, path := range []string{sessions, devSessions} {
			c := s.sf
			if path == devSessions {
				c = s.dev
			}
			apiWantErr(t, c.Do("POST", path, body(closed)), 412, "FAILED_PRECONDITION")
			apiWantErr(t, c.Do("POST", path, body(later)), 412, "FAILED_PRECONDITION")
			two := map[string]any{"items": []map[string]any{{"itemType": "registration_type", "itemId": s.tt, "quantity": 2}}}
			apiWant400(t, c.Do("POST", path, two), "items[0].quantity")
		}
		// The Developer API owns its ids: it gets the precise reasons.
		apiWantErr(t, s.dev.Do("POST", devSessions, body(hidden)), 412, "FAILED_PRECONDITION")
		apiWantErr(t, s.dev.Do("POST", devSessions, body(draftType)), 412, "FAILED_PRECONDITION")
		// A code unlocks its hidden type for the session.
		apiWant(t, s.dev.Do("POST", "/v1/events/"+s.ev+"/redemption-codes", map[string]any{"registrationTypeId": hidden, "code": "INSIDER"}), 201)
		apiWant(t, s.sf.Do("POST", sessions, apiMerge(body(hidden), map[string]any{"redemptionCode": "INSIDER"})), 201)
	})
}

func TestAPIStorefrontCORS(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	s := f.store(t, nil)
	url := f.s.URL + s.sfPath("/orders")

	t.Run("preflight from a listed origin", func(t *testing.T) {
		resp, _ := apiRaw(t, "OPTIONS", url, map[string]string{
			"Origin": apiShopOrigin, "Access-Control-Request-Method": "POST",
			"Access-Control-Request-Headers": "authorization, content-type"}, nil)
		assert.Equal(t, 204, resp.StatusCode)
		assert.Equal(t, apiShopOrigin, resp.Header.Get("Access-Control-Allow-Origin"))
		assert.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")
		assert.Contains(t, strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "authorization")
		resp, _ = apiRaw(t, "OPTIONS", url, map[string]string{"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST"}, nil)
		assert.Equal(t, "http://localhost:3000", resp.Header.Get("Access-Control-Allow-Origin"))
	})

	t.Run("preflight from an unlisted origin has no CORS headers", func(t *testing.T) {
		resp, _ := apiRaw(t, "OPTIONS", url, map[string]string{"Origin": "https://evil.example.com", "Access-Control-Request-Method": "POST"}, nil)
		assert.Less(t, resp.StatusCode, 500)
		assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
		assert.Empty(t, resp.Header.Get("Access-Control-Allow-Methods"))
	})

	t.Run("requests by origin", func(t *testing.T) {
		r := s.sf.WithHeader("Origin", "https://evil.example.com").Do("GET", s.sfPath(""), nil)
		e := apiWantErr(t, r, 401, "UNAUTHENTICATED")
		assert.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
		bad := apiWantErr(t, s.raw.WithKey("pk_unknown000000000000").Do("GET", s.sfPath(""), nil), 401, "UNAUTHENTICATED")
		assert.Equal(t, bad, e, "an unlisted origin answers like a bad key")

		r = s.sf.WithHeader("Origin", apiShopOrigin).Do("GET", s.sfPath(""), nil)
		apiWant(t, r, 200)
		assert.Equal(t, apiShopOrigin, r.Header.Get("Access-Control-Allow-Origin"))
		r = s.sf.WithHeader("Origin", apiShopOrigin).Do("POST", s.sfPath("/orders"), map[string]any{"email": "cors@example.com", "items": apiTicket(s.tt)})
		apiWant(t, r, 201)
		assert.Equal(t, apiShopOrigin, r.Header.Get("Access-Control-Allow-Origin"))

		r = s.sf.Do("GET", s.sfPath(""), nil)
		apiWant(t, r, 200)
		assert.Empty(t, r.Header.Get("Access-Control-Allow-Origin"), "no Origin, no CORS headers")
	})
}

func TestAPIRateLimits(t *testing.T) {
	t.Parallel()

	t.Run("storefront per (key, IP) on order placement", func(t *testing.T) {
		t.Parallel()
		f := newAPIFx(t, withStorefrontIPLimit(3))
		s := f.store(t, map[string]any{"capacity": nil})
		for i := range 3 {
			r := s.sfOrder(t, s.sf, s.tt, fmt.Sprintf("r%d@example.com", i), nil)
			apiWant(t, r, 201)
			assert.Equal(t, "3", r.Header.Get("RateLimit-Limit"))
			assert.Equal(t, fmt.Sprint(2-i), r.Header.Get("RateLimit-Remaining"))
		}
		r := s.sfOrder(t, s.sf, s.tt, "r3@example.com", nil)
		apiWantErr(t, r, 429, "RESOURCE_EXHAUSTED")
		assert.NotEmpty(t, r.Header.Get("Retry-After"))
		assert.Equal(t, "3", r.Header.Get("RateLimit-Limit"))
		assert.Equal(t, "0", r.Header.Get("RateLimit-Remaining"))
		assert.NotEmpty(t, r.Header.Get("RateLimit-Reset"))
		// The catalog is not limited per IP; the refused order held nothing.
		apiWant(t, s.sf.Do("GET", s.sfPath(""), nil), 200)
		assert.EqualValues(t, 3, apiAvailability(t, s.dev, s.ev, s.tt)["held"])
	})

	t.Run("storefront per (key, IP) on checkout sessions and order reads, not on the catalog", func(t *testing.T) {
		t.Parallel()
		f := newAPIFx(t, withStorefrontIPLimit(2))
		s := f.store(t, map[string]any{"capacity": nil})
		for range 2 {
			apiWant(t, s.sf.Do("POST", s.sfPath("/checkout-sessions"), map[string]any{"items": apiTicket(s.tt)}), 201)
		}
		apiWantErr(t, s.sf.Do("POST", s.sfPath("/checkout-sessions"), map[string]any{"items": apiTicket(s.tt)}), 429, "RESOURCE_EXHAUSTED")
		for range 5 {
			apiWant(t, s.sf.Do("GET", s.sfPath(""), nil), 200)
		}
		// Order reads are limited too; another key has its own (key, IP) budget.
		other := f.unit(t)
		ev := apiPublished(t, other.dev)
		tt := apiOpenType(t, other.dev, ev, nil)
		num := apiS(apiWant(t, other.sf.Do("POST", "/storefront/v1/events/"+ev+"/orders", map[string]any{"email": "a@example.com", "items": apiTicket(tt)}), 201), "orderNumber")
		apiWant(t, other.sf.Do("GET", "/storefront/v1/events/"+ev+"/orders/"+num, nil), 200)
		r := other.sf.Do("GET", "/storefront/v1/events/"+ev+"/orders/"+num, nil)
		apiWantErr(t, r, 429, "RESOURCE_EXHAUSTED")
		assert.NotEmpty(t, r.Header.Get("Retry-After"))
	})

	t.Run("X-Forwarded-For counts only from trusted proxies", func(t *testing.T) {
		t.Parallel()
		trusted := newAPIFx(t, withStorefrontIPLimit(1), withTrustedProxies("127.0.0.0/8"))
		s := trusted.store(t, map[string]any{"capacity": nil})
		for i, ip := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"} {
			apiWant(t, s.sfOrder(t, s.sf.WithHeader("X-Forwarded-For", ip), s.tt, fmt.Sprintf("x%d@example.com", i), nil), 201)
		}
		apiWantErr(t, s.sfOrder(t, s.sf.WithHeader("X-Forwarded-For", "203.0.113.1"), s.tt, "again@example.com", nil), 429, "RESOURCE_EXHAUSTED")

		untrusted := newAPIFx(t, withStorefrontIPLimit(1))
		s = untrusted.store(t, map[string]any{"capacity": nil})
		apiWant(t, s.sfOrder(t, s.sf.WithHeader("X-Forwarded-For", "203.0.113.1"), s.tt, "a@example.com", nil), 201)
		apiWantErr(t, s.sfOrder(t, s.sf.WithHeader("X-Forwarded-For", "203.0.113.2"), s.tt, "b@example.com", nil), 429, "RESOURCE_EXHAUSTED")
	})

	t.Run("storefront per key", func(t *testing.T) {
		t.Parallel()
		f := newAPIFx(t, withStorefrontKeyLimit(3))
		s := f.store(t, nil)
		for range 3 {
			apiWant(t, s.sf.Do("GET", s.sfPath(""), nil), 200)
		}
		r := s.sf.Do("GET", "/storefront/v1/events", nil)
		apiWantErr(t, r, 429, "RESOURCE_EXHAUSTED")
		assert.NotEmpty(t, r.Header.Get("Retry-After"))
		assert.Equal(t, "3", r.Header.Get("RateLimit-Limit"))
		apiWant(t, s.dev.Do("GET", "/v1/events", nil), 200) // the unit's secret key is not affected
	})

	t.Run("developer per key", func(t *testing.T) {
		t.Parallel()
		f := newAPIFx(t, withDevRateLimit(5))
		u := f.unit(t)
		for i := range 5 {
			r := u.dev.Do("GET", "/v1/events", nil)
			apiWant(t, r, 200)
			assert.Equal(t, fmt.Sprint(4-i), r.Header.Get("RateLimit-Remaining"))
		}
		r := u.dev.Do("GET", "/v1/events", nil)
		apiWantErr(t, r, 429, "RESOURCE_EXHAUSTED")
		assert.NotEmpty(t, r.Header.Get("Retry-After"))
		assert.Equal(t, "5", r.Header.Get("RateLimit-Limit"))
		assert.NotEmpty(t, r.Header.Get("RateLimit-Reset"))
		assert.Equal(t, "2026-08-22", r.Header.Get("service-version"))
		// Another key of another unit has its own budget.
		apiWant(t, f.unit(t).dev.Do("GET", "/v1/events", nil), 200)
	})
}

func TestAPIStorefrontIdempotencyAndVersions(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	s := f.store(t, map[string]any{"capacity": 5})
	c := s.sf.WithHeader("Idempotency-Key", "sf-order-1")
	o1 := apiWant(t, s.sfOrder(t, c, s.tt, "idem@example.com", nil), 201)
	o2 := apiWant(t, s.sfOrder(t, c, s.tt, "idem@example.com", nil), 201)
	assert.Equal(t, o1["orderNumber"], o2["orderNumber"])
	assert.EqualValues(t, 1, apiAvailability(t, s.dev, s.ev, s.tt)["held"])
	apiWantErr(t, s.sfOrder(t, c, s.tt, "other@example.com", nil), 422, "INVALID_ARGUMENT")

	r := s.raw.Do("GET", "/storefront/v1/events", nil)
	apiWantErr(t, r, 401, "UNAUTHENTICATED")
	assert.Equal(t, "2026-08-22", r.Header.Get("service-version"))
	k := apiKey(t, f.admin(t), s.ID, map[string]any{"type": "publishable", "version": "2026-03-15"})
	r = s.raw.WithKey(apiS(k, "key")).Do("GET", "/storefront/v1/events", nil)
	apiWant(t, r, 200)
	assert.Equal(t, "2026-03-15", r.Header.Get("service-version"), "a publishable key is pinned too")
}

// TestAPIStorefrontIdempotencyKeyPerClient (issue 31 finding 9): a
// publishable key is every visitor's, so its Idempotency-Keys are scoped
// per (key, client address): a visitor sending the key another one used
// neither replays the other's answer (with their order) nor is refused
// 422 for another body; each visitor's own retry replays their answer.
func TestAPIStorefrontIdempotencyKeyPerClient(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t, withTrustedProxies("127.0.0.0/8"))
	s := f.store(t, map[string]any{"capacity": 5})
	victim := s.sf.WithHeader("Idempotency-Key", "checkout-1").WithHeader("X-Forwarded-For", "203.0.113.7")
	other := s.sf.WithHeader("Idempotency-Key", "checkout-1").WithHeader("X-Forwarded-For", "198.51.100.9")
	first := s.sfOrder(t, victim, s.tt, "victim@example.com", nil)
	o1 := apiWant(t, first, 201)

	// Same key and body from another address: its own answer, not the
	// victim's (here the one-open-order-per-email rule's 409, decisions
	// §22, which names the open order but holds nothing of the victim's).
	same := s.sfOrder(t, other, s.tt, "victim@example.com", nil)
	e := apiWantErr(t, same, 409, "ALREADY_EXISTS")
	assert.Equal(t, "ORDER_ALREADY_OPEN", e["reason"])
	assert.NotEqual(t, string(first.Body), string(same.Body), "another address never sees the victim's answer")
	assert.Empty(t, same.Header.Get("Idempotent-Replayed"))
	_ = o1
	// Same key, another body, from a third address: no 422.
	third := s.sf.WithHeader("Idempotency-Key", "checkout-1").WithHeader("X-Forwarded-For", "192.0.2.44")
	apiWant(t, s.sfOrder(t, third, s.tt, "third@example.com", nil), 201)

	// Each visitor's retry replays their own first answer.
	again := s.sfOrder(t, victim, s.tt, "victim@example.com", nil)
	assert.Equal(t, 201, again.Status)
	assert.Equal(t, string(first.Body), string(again.Body))
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	again = s.sfOrder(t, other, s.tt, "victim@example.com", nil)
	assert.Equal(t, string(same.Body), string(again.Body))
	apiWantErr(t, s.sfOrder(t, victim, s.tt, "changed@example.com", nil), 422, "INVALID_ARGUMENT")
	assert.EqualValues(t, 2, apiAvailability(t, s.dev, s.ev, s.tt)["held"])
}

func TestAPIStorefrontDrop(t *testing.T) {
	t.Parallel()
	// Each buyer comes from its own address (through a trusted proxy), as
	// in a real drop: one address may hold only a few open orders.
	f := newAPIFx(t, withTrustedProxies("127.0.0.1/32"))
	s := f.store(t, map[string]any{"capacity": 50})
	const buyers = 300
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
		orders   = map[string]bool{}
	)
	start := make(chan struct{})
	for i := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c := s.sf.WithHeader("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i%250+1))
			r := s.sfOrder(t, c, s.tt, fmt.Sprintf("fan%03d@example.com", i), nil)
			m := apiDecode(r.Body)
			mu.Lock()
			defer mu.Unlock()
			statuses[r.Status]++
			if r.Status == 201 {
				orders[apiS(m, "orderNumber")] = true
			} else if e := apiM(m, "error"); r.Status == 412 && !strings.Contains(apiS(e, "message"), "sold out") {
				statuses[-1]++ // a 412 for another reason
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, map[int]int{201: 50, 412: 250}, statuses)
	assert.Len(t, orders, 50)
	av := apiAvailability(t, s.dev, s.ev, s.tt)
	assert.EqualValues(t, 50, av["held"])
	assert.EqualValues(t, 0, av["remaining"])
	assert.EqualValues(t, 0, av["confirmed"])

	// Every holder confirms at once: the 50 holds become 50 registrations.
	var cwg sync.WaitGroup
	confirmed := make(chan int, len(orders))
	for num := range orders {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			r := s.sf.Do("POST", s.sfPath("/orders/"+num+"/confirm"), nil)
			if r.Status == 200 && apiS(apiDecode(r.Body), "status") == "paid" {
				confirmed <- 1
			}
		}()
	}
	cwg.Wait()
	close(confirmed)
	assert.Len(t, confirmed, 50)
	av = apiAvailability(t, s.dev, s.ev, s.tt)
	assert.EqualValues(t, 50, av["confirmed"])
	assert.EqualValues(t, 0, av["held"])
	assert.Len(t, apiData(t, apiWant(t, s.dev.Do("GET", "/v1/events/"+s.ev+"/registrations?limit=100&status=confirmed", nil), 200)), 50)
}
