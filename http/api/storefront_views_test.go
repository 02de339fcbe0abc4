package api_test

// The storefront never shows a number of places: not in a body, not in the
// served document. This test walks every operation that
// /storefront/openapi.json lists through the real service, successes and
// refusals alike, and fails on a numeric availability field at any depth.

import (
	"encoding/json"
	"io"
	nethttp "net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sfCountWords are the words of a member name that say "how many places":
// a member named with one of them (camelCase split: soldOut is "sold",
// "out") must never carry a number on the storefront.
var sfCountWords = map[string]bool{
	"capacity": true, "count": true, "counts": true, "remaining": true, "confirmed": true, "waitlisted": true,
	"sold": true, "held": true, "available": true, "availability": true, "left": true, "seats": true,
	"spots": true, "stock": true, "inventory": true, "uses": true, "taken": true, "registered": true,
}

var sfCamelWord = regexp.MustCompile(`[A-Z]?[a-z0-9]+|[A-Z]+`)

// sfCountName reports whether a member name speaks of places.
func sfCountName(name string) bool {
	for _, w := range sfCamelWord.FindAllString(name, -1) {
		if sfCountWords[strings.ToLower(w)] {
			return true
		}
	}
	return false
}

// sfHasNumber reports whether a decoded JSON value holds a number anywhere.
func sfHasNumber(v any) bool {
	switch x := v.(type) {
	case float64, json.Number:
		return true
	case map[string]any:
		for _, vv := range x {
			if sfHasNumber(vv) {
				return true
			}
		}
	case []any:
		for _, vv := range x {
			if sfHasNumber(vv) {
				return true
			}
		}
	}
	return false
}

// sfNumericCounts lists the paths of every member of v that names places
// and holds a number.
func sfNumericCounts(v any, path string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			p := path + "." + k
			if sfCountName(k) && sfHasNumber(vv) {
				out = append(out, p)
				continue
			}
			out = append(out, sfNumericCounts(vv, p)...)
		}
	case []any:
		for _, vv := range x {
			out = append(out, sfNumericCounts(vv, path+"[]")...)
		}
	}
	return out
}

func TestSfCountNames(t *testing.T) {
	for _, n := range []string{"capacity", "counts", "soldCount", "remaining", "placesLeft", "maxUses", "waitlisted", "soldOut"} {
		assert.True(t, sfCountName(n), n)
	}
	for _, n := range []string{"discountAmount", "quantity", "priceAmount", "id", "totalAmount"} {
		assert.False(t, sfCountName(n), n)
	}
	body := map[string]any{"a": []any{map[string]any{"counts": map[string]any{"confirmed": 1.0}, "soldOut": true, "availability": "sold_out"}}}
	assert.Equal(t, []string{"$.a[].counts"}, sfNumericCounts(body, "$"))
}

// sfOperations lists "METHOD path operationId" of every operation of a
// served OpenAPI document.
func sfOperations(t *testing.T, doc map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	paths, _ := doc["paths"].(map[string]any)
	require.NotEmpty(t, paths)
	for p, item := range paths {
		for method, op := range item.(map[string]any) {
			m, ok := op.(map[string]any)
			if !ok || method == "parameters" {
				continue
			}
			id, _ := m["operationId"].(string)
			require.NotEmptyf(t, id, "%s %s has no operationId", method, p)
			out[id] = strings.ToUpper(method) + " " + p
		}
	}
	return out
}

// sfSchemaCounts lists the properties of the document's schemas that name
// places with a numeric schema (directly or through a $ref).
func sfSchemaCounts(doc map[string]any) []string {
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	numeric := func(s any) bool {
		if m, ok := s.(map[string]any); ok {
			if ref, ok := m["$ref"].(string); ok {
				s = schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
			}
		}
		b, _ := json.Marshal(s)
		return strings.Contains(string(b), `"integer"`) || strings.Contains(string(b), `"number"`)
	}
	var out []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok {
				for name, ps := range props {
					if sfCountName(name) && numeric(ps) {
						out = append(out, path+".properties."+name)
					}
				}
			}
			for k, vv := range x {
				walk(vv, path+"."+k)
			}
		case []any:
			for _, vv := range x {
				walk(vv, path+"[]")
			}
		}
	}
	walk(doc, "$")
	sort.Strings(out)
	return out
}

func TestStorefrontNeverShowsCounts(t *testing.T) {
	f := newAPIFx(t)
	s := f.store(t, map[string]any{"name": "General", "capacity": 5, "priceAmount": 20})
	ev := "/v1/events/" + s.ev
	// One of each state a sales page can show.
	waitlist := apiOpenType(t, s.dev, s.ev, map[string]any{"name": "Workshop", "capacity": 1, "allowWaitlist": true})
	apiRegister(t, s.dev, s.ev, waitlist, "w1@example.com")
	full := apiOpenType(t, s.dev, s.ev, map[string]any{"name": "Dinner", "capacity": 1})
	apiRegister(t, s.dev, s.ev, full, "d1@example.com")
	upcoming := apiOpenType(t, s.dev, s.ev, map[string]any{"name": "Late bird", "opensAt": "2030-01-01T00:00:00Z"})
	hidden := apiOpenType(t, s.dev, s.ev, map[string]any{"name": "Backstage", "capacity": 3, "isPublic": false})
	hiddenFull := apiOpenType(t, s.dev, s.ev, map[string]any{"name": "Crew", "capacity": 1, "isPublic": false, "allowWaitlist": true})
	apiRegister(t, s.dev, s.ev, hiddenFull, "c1@example.com")
	for code, typ := range map[string]string{"VIP-1": hidden, "CREW-1": hiddenFull} {
		apiWant(t, s.dev.Do("POST", ev+"/redemption-codes", map[string]any{"registrationTypeId": typ, "code": code, "maxUses": 10}), 201)
	}
	ao := apiS(apiWant(t, s.dev.Do("POST", ev+"/addons", map[string]any{"name": "Shirt", "priceAmount": 15, "capacity": 1}), 201), "id")
	apiSetStatus(t, s.dev, ev+"/addons/"+ao, "open")
	b := apiS(apiWant(t, s.dev.Do("POST", ev+"/bundles", map[string]any{"name": "Combo", "priceAmount": 30, "capacity": 4,
		"items": apiTicket(s.tt)}), 201), "id")
	apiSetStatus(t, s.dev, ev+"/bundles/"+b, "open")
	apiWant(t, s.sfOrder(t, s.sf, s.tt, "shirt@example.com", map[string]any{"items": []map[string]any{
		{"itemType": "registration_type", "itemId": s.tt, "quantity": 1}, {"itemType": "addon", "itemId": ao, "quantity": 1}}}), 201)

	order := func(email string) string {
		return apiS(apiWant(t, s.sfOrder(t, s.sf, s.tt, email, nil), 201), "orderNumber")
	}
	// An event with a waiting room (far from its sale) for the queue's
	// routes; s's event has none (joining it is a refusal).
	qs := f.store(t, nil)
	apiWant(t, qs.dev.Do("PATCH", "/v1/events/"+qs.ev, map[string]any{"waitingRoom": map[string]any{"onSaleAt": "2030-01-01T00:00:00Z"}}), 200)
	var queueID string
	join := func() *apiResp {
		r := qs.sf.Do("POST", qs.sfPath("/queue"), map[string]any{})
		queueID = apiS(apiDecode(r.Body), "queueId")
		return r
	}
	// Every storefront operation and the requests that exercise it: its
	// success and the refusals a buyer can meet.
	walkers := map[string]func() []*apiResp{
		"joinQueue": func() []*apiResp {
			return []*apiResp{join(), s.sf.Do("POST", s.sfPath("/queue"), map[string]any{})}
		},
		"getQueueEntry": func() []*apiResp {
			if queueID == "" {
				join()
			}
			return []*apiResp{qs.sf.Do("GET", qs.sfPath("/queue/"+queueID), nil), qs.sf.Do("GET", qs.sfPath("/queue/q_nope"), nil)}
		},
		"listPublishedEvents": func() []*apiResp {
			return []*apiResp{s.sf.Do("GET", "/storefront/v1/events", nil), s.sf.Do("GET", "/storefront/v1/events?lang=de", nil)}
		},
		"getCatalog": func() []*apiResp {
			cat := s.sf.Do("GET", s.sfPath(""), nil)
			states := map[string]any{}
			m := apiWant(t, cat, 200)
			for _, sec := range []string{"ticketTypes", "upcomingTicketTypes", "addons", "bundles"} {
				for _, x := range m[sec].([]any) {
					states[apiS(x.(map[string]any), "id")] = x.(map[string]any)["availability"]
				}
			}
			assert.Equal(t, map[string]any{s.tt: "available", waitlist: "waitlist", full: "sold_out", upcoming: "upcoming",
				ao: "sold_out", b: "available"}, states)
			return []*apiResp{cat, s.sf.Do("GET", s.sfPath("?lang=de"), nil), s.sf.Do("GET", "/storefront/v1/events/evt_01doesnotexist0000000000", nil)}
		},
		"lookupStorefrontRedemptionCode": func() []*apiResp {
			vip := s.sf.Do("GET", s.sfPath("/redemption-codes/lookup?code=VIP-1"), nil)
			crew := s.sf.Do("GET", s.sfPath("/redemption-codes/lookup?code=CREW-1"), nil)
			assert.Equal(t, "available", apiM(apiWant(t, vip, 200), "registrationType")["availability"])
			rt := apiM(apiWant(t, crew, 200), "registrationType")
			assert.Equal(t, "waitlist", rt["availability"])
			assert.Equal(t, true, rt["soldOut"])
			for _, leaked := range []string{"capacity", "counts", "status", "isPublic"} {
				assert.NotContains(t, rt, leaked)
			}
			return []*apiResp{vip, crew, s.sf.Do("GET", s.sfPath("/redemption-codes/lookup?code=NOPE"), nil)}
		},
		"createStorefrontCheckoutSession": func() []*apiResp {
			return []*apiResp{
				s.sf.Do("POST", s.sfPath("/checkout-sessions"), map[string]any{"items": apiTicket(s.tt)}),
				s.sf.Do("POST", s.sfPath("/checkout-sessions"), map[string]any{"items": apiTicket(hidden), "redemptionCode": "VIP-1"}),
			}
		},
		"placeStorefrontOrder": func() []*apiResp {
			return []*apiResp{
				s.sfOrder(t, s.sf, s.tt, "place@example.com", nil),
				s.sfOrder(t, s.sf, waitlist, "wl@example.com", nil),
				s.sfOrder(t, s.sf, full, "full@example.com", nil),
				s.sfOrder(t, s.sf, hidden, "vip@example.com", map[string]any{"redemptionCode": "VIP-1"}),
			}
		},
		"getStorefrontOrder": func() []*apiResp {
			return []*apiResp{s.sf.Do("GET", s.sfPath("/orders/"+order("poll@example.com")), nil),
				s.sf.Do("GET", s.sfPath("/orders/1-NOPE0000"), nil)}
		},
		"confirmStorefrontOrder": func() []*apiResp {
			n := order("confirm@example.com")
			return []*apiResp{s.sf.Do("POST", s.sfPath("/orders/"+n+"/confirm"), map[string]any{}),
				s.sf.Do("POST", s.sfPath("/orders/"+n+"/confirm"), map[string]any{})}
		},
		"cancelStorefrontOrder": func() []*apiResp {
			n := order("cancel@example.com")
			return []*apiResp{s.sf.Do("POST", s.sfPath("/orders/"+n+"/cancel"), nil),
				s.sf.Do("POST", s.sfPath("/orders/"+n+"/cancel"), nil)}
		},
	}

	res, err := nethttp.Get(f.s.URL + "/storefront/openapi.json")
	require.NoError(t, err)
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	ops := sfOperations(t, doc)
	assert.Empty(t, sfSchemaCounts(doc), "storefront schemas with a numeric count")

	for id, route := range ops {
		walk, ok := walkers[id]
		if !assert.Truef(t, ok, "storefront operation %s (%s) is not walked: add it to walkers", id, route) {
			continue
		}
		succeeded := false
		for _, r := range walk() {
			succeeded = succeeded || r.Status < 300
			var body any
			require.NoErrorf(t, json.Unmarshal(r.Body, &body), "%s: %s", route, r.Body)
			assert.Emptyf(t, sfNumericCounts(body, "$"), "%s answered %d with counts: %s", route, r.Status, r.Body)
		}
		assert.Truef(t, succeeded, "%s: no request succeeded, its success body was not walked", route)
	}
	for id := range walkers {
		assert.Containsf(t, ops, id, "walker %s names no operation of the storefront document", id)
	}
}
