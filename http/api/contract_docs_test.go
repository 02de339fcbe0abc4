package api_test

import (
	"encoding/json"
	"io"
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/webhooks"
)

// contractDocs fetches the three served documents.
func contractDocs(t *testing.T, base string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for name, p := range map[string]string{"developer": "/openapi.json", "storefront": "/storefront/openapi.json", "admin": "/admin/openapi.json"} {
		resp, err := nethttp.Get(base + p)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m), p)
		out[name] = m
	}
	return out
}

// TestContractDocumentsExplainEverything: every operation of the served
// documents says what it does (the Developer and storefront ones in their
// own words, not only their summary) and lists its error reasons; every
// property of the Developer and storefront schemas is described; every
// error response names reasons of the catalogue, and a 412 names specific
// ones; path parameters are named after what they hold.
func TestContractDocumentsExplainEverything(t *testing.T) {
	f := newAPIFx(t)
	docs := contractDocs(t, f.s.URL)
	catalogue := map[string]bool{}
	for _, r := range event.Reasons() {
		catalogue[r.Name] = true
	}
	for name, doc := range docs {
		ops := 0
		for p, item := range doc["paths"].(map[string]any) {
			assert.NotContains(t, p, "{id}", "%s: a path parameter is named after what it holds", p)
			for m, raw := range item.(map[string]any) {
				op := raw.(map[string]any)
				ops++
				where := name + " " + strings.ToUpper(m) + " " + p
				desc, _ := op["description"].(string)
				require.NotEmpty(t, desc, where)
				first, _, _ := strings.Cut(desc, "\n\n")
				if name != "admin" {
					assert.NotEqual(t, op["summary"].(string)+".", first, "%s: described in its own words", where)
				}
				assert.Contains(t, desc, "**Errors**", where)
				for st, rr := range op["responses"].(map[string]any) {
					resp := rr.(map[string]any)
					if st < "400" {
						continue
					}
					reasons, _ := resp["x-reasons"].([]any)
					require.NotEmptyf(t, reasons, "%s %s lists its reasons", where, st)
					for _, r := range reasons {
						assert.Truef(t, catalogue[r.(string)], "%s %s: reason %v is catalogued", where, st, r)
					}
					if st == "412" {
						assert.NotContainsf(t, reasons, event.ReasonFailedPrecondition, "%s: a 412 names its specific reasons", where)
					}
					if st == "405" {
						assert.Contains(t, resp["headers"], "Allow", where)
					}
				}
				if m != "get" {
					assert.Contains(t, op["responses"], "503", "%s: every write may answer 503", where)
				}
			}
		}
		assert.Positive(t, ops, name)
		schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
		reason := schemas["ErrorReason"].(map[string]any)
		var enum []string
		for _, v := range reason["enum"].([]any) {
			enum = append(enum, v.(string))
		}
		want := []string{}
		for _, r := range event.Reasons() {
			want = append(want, r.Name)
		}
		assert.Equal(t, want, enum, "%s: ErrorReason lists the whole catalogue", name)
		assert.Len(t, reason["x-enumDescriptions"], len(want), name)
		if name == "admin" {
			continue
		}
		for sn, raw := range schemas {
			props, _ := raw.(map[string]any)["properties"].(map[string]any)
			for pn, pr := range props {
				if sn == "ErrorEnvelope" {
					continue
				}
				p := pr.(map[string]any)
				_, ok := p["description"]
				if !ok {
					if ref, isRef := p["$ref"].(string); isRef {
						_, ok = schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)["description"]
					}
				}
				assert.Truef(t, ok, "%s: %s.%s has a description", name, sn, pn)
			}
		}
	}

	hooks := docs["developer"]["webhooks"].(map[string]any)
	for _, typ := range webhooks.HookTypes() {
		assert.Contains(t, hooks, typ, "every outbound event type is documented")
	}
	assert.Contains(t, dig(docs["developer"], "webhooks", "order.paid", "post", "description"), "Webhook-Signature")
	assert.Equal(t, "#/components/schemas/WebhookEventType",
		dig(docs["admin"], "components", "schemas", "CreateWebhookEndpointRequest", "properties", "eventTypes", "items", "$ref"))
	var hookTypes []any
	for _, h := range webhooks.HookTypes() {
		hookTypes = append(hookTypes, h)
	}
	assert.Equal(t, hookTypes, dig(docs["admin"], "components", "schemas", "WebhookEventType", "enum"))
	assert.Equal(t, []any{"2026-03-15", "2026-08-22"}, dig(docs["developer"], "components", "schemas", "ApiVersion", "enum"))
	assert.Equal(t, f.s.URL, dig(docs["developer"], "servers", "0", "url"), "a server a generator can use")
	assert.Contains(t, dig(docs["developer"], "components", "schemas", "RecordCheckin", "oneOf"),
		map[string]any{"required": []any{"registrationId"}},
		"a check-in names exactly one of registrationId and checkinCode")
}

// dig walks a decoded JSON document by keys ("0" indexes an array).
func dig(v any, keys ...string) any {
	for _, k := range keys {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			if k != "0" || len(x) == 0 {
				return nil
			}
			v = x[0]
		default:
			return nil
		}
	}
	return v
}

// TestContractStorefrontWalk walks a buyer's storefront visit through the
// validating client, which checks every request and every response
// (status, headers, body, and an error's reason against those its
// operation lists) against the served storefront document: the list, the
// catalog, a code lookup, a checkout session, a paid order placed, read,
// confirmed and cancelled, a free order placed and confirmed, its pass
// page, and the refusals a buyer meets, each with its reason.
func TestContractStorefrontWalk(t *testing.T) {
	f := newAPIFx(t)
	s := f.store(t, map[string]any{"name": "General", "priceAmount": 79.99, "capacity": 5})
	free := apiOpenType(t, s.dev, s.ev, map[string]any{"name": "Free", "priceAmount": 0, "capacity": 1})
	hidden := apiOpenType(t, s.dev, s.ev, map[string]any{"name": "Backstage", "isPublic": false})
	code := apiData(t, map[string]any{"data": apiWant(t, s.dev.Do("POST", "/v1/events/"+s.ev+"/redemption-codes",
		map[string]any{"registrationTypeId": hidden, "code": "BACKSTAGE"}), 201)["redemptionCodes"]})[0]
	require.Equal(t, "BACKSTAGE", code["code"])
	sf := s.sf

	apiWant(t, sf.Do("GET", "/storefront/v1/events", nil), 200)
	apiWant(t, sf.Do("GET", s.sfPath(""), nil), 200)
	apiWant(t, sf.Do("GET", s.sfPath("/redemption-codes/lookup?code=BACKSTAGE"), nil), 200)
	assert.Equal(t, "NOT_FOUND", apiWantErr(t, sf.Do("GET", s.sfPath("/redemption-codes/lookup?code=NOPE"), nil), 404, "NOT_FOUND")["reason"])
	apiWant(t, sf.Do("POST", s.sfPath("/checkout-sessions"), map[string]any{"items": apiTicket(s.tt)}), 201)

	paid := apiWant(t, s.sfOrder(t, sf, s.tt, "paid@example.com", nil), 201)
	assert.Equal(t, 79.99, paid["totalAmount"], "money reads back exactly")
	num := apiS(paid, "orderNumber")
	apiWant(t, sf.Do("GET", s.sfPath("/orders/"+num), nil), 200)
	aw := apiWant(t, sf.Do("POST", s.sfPath("/orders/"+num+"/confirm"), map[string]any{}), 200)
	assert.Equal(t, "awaiting_payment", aw["status"])
	assert.NotEmpty(t, aw["paymentUrl"])
	apiWant(t, sf.Do("POST", s.sfPath("/orders/"+num+"/cancel"), nil), 200)

	fo := apiWant(t, s.sfOrder(t, sf, free, "free@example.com", nil), 201)
	done := apiWant(t, sf.Do("POST", s.sfPath("/orders/"+apiS(fo, "orderNumber")+"/confirm"), nil), 200)
	assert.Equal(t, "paid", done["status"])
	reg := apiWant(t, s.dev.Do("GET", "/v1/events/"+s.ev+"/registrations/"+apiS(done, "registrationId"), nil), 200)
	resp, _ := apiRaw(t, "GET", apiS(reg, "passUrl"), nil, nil)
	assert.Equal(t, 200, resp.StatusCode, "the pass page answers")

	reasonOf := func(r *apiResp, status int) string {
		return apiS(apiWantErr(t, r, status, map[int]string{404: "NOT_FOUND", 412: "FAILED_PRECONDITION", 400: "INVALID_ARGUMENT"}[status]), "reason")
	}
	assert.Equal(t, event.ReasonSoldOut, reasonOf(s.sfOrder(t, sf, free, "late@example.com", nil), 412))
	assert.Equal(t, event.ReasonInvalidArgument, reasonOf(s.sfOrder(t, sf, hidden, "x@example.com", nil), 400),
		"a hidden type without its code is not there for the storefront")
	apiWant(t, s.sfOrder(t, sf, hidden, "vip@example.com", map[string]any{"redemptionCode": "BACKSTAGE"}), 201)
	assert.Equal(t, event.ReasonInvalidArgument, reasonOf(sf.AllowInvalidRequest().Do("POST", s.sfPath("/orders"),
		map[string]any{"email": " padded@example.com", "items": apiTicket(s.tt)}), 400), "format email refuses surrounding spaces")
	assert.Equal(t, event.ReasonNotFound, reasonOf(sf.Do("GET", s.sfPath("/orders/NOPE-0000"), nil), 404))
	assert.Equal(t, event.ReasonInvalidArgument, reasonOf(sf.AllowInvalidRequest().Do("GET", s.sfPath("/orders/"+strings.Repeat("X", 101)), nil), 400),
		"a path id over its maxLength")
	assert.Equal(t, event.ReasonUnauthenticated, apiS(apiWantErr(t, s.raw.Do("GET", s.sfPath(""), nil), 401, "UNAUTHENTICATED"), "reason"))
	rr, body := apiRaw(t, "DELETE", f.s.URL+s.sfPath(""), nil, nil)
	assert.Equal(t, 405, rr.StatusCode)
	assert.NotEmpty(t, rr.Header.Get("Allow"))
	assert.Contains(t, string(body), `"reason":"METHOD_NOT_ALLOWED"`)
}
