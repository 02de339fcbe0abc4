package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	thttp "ticketd/http"
	"ticketd/http/bind"
)

// TestContractEdgesFoundByFuzzing: the edges a third-party fuzzer
// (Schemathesis) found between the documents and what the service did,
// each through the real service and the contract client (which validates
// every answer, and every request not marked invalid, against the
// documents).
func TestContractEdgesFoundByFuzzing(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("an amount is any JSON number with at most two decimals of value", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		ev := apiS(apiEvent(t, u.dev, nil), "id")
		for raw, want := range map[string]float64{`1e2`: 100, `4999e-2`: 49.99, `10.000`: 10, `0.5E1`: 5} {
			tt := apiWant(t, u.dev.Do("POST", "/v1/events/"+ev+"/ticket-types",
				[]byte(`{"name":"T `+raw+`","capacity":5,"priceAmount":`+raw+`}`)), 201)
			assert.EqualValues(t, want, tt["priceAmount"], raw)
		}
		for _, raw := range []string{`1e-3`, `1.001`, `-1e2`} {
			apiWant400(t, u.dev.AllowInvalidRequest().Do("POST", "/v1/events/"+ev+"/ticket-types",
				[]byte(`{"name":"T","capacity":5,"priceAmount":`+raw+`}`)), "priceAmount")
		}
	})

	t.Run("an empty Idempotency-Key or service-version is not a header left out", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		r := u.dev.AllowInvalidRequest().WithHeader("Idempotency-Key", "").Do("POST", "/v1/events", map[string]any{"name": "X", "timezone": "UTC"})
		apiWant400(t, r, "Idempotency-Key")
		r = u.dev.AllowInvalidRequest().WithHeader("service-version", "").Do("GET", "/v1/events", nil)
		apiWant400(t, r, "service-version")
		assert.Equal(t, thttp.CurrentVersion, r.Header.Get("service-version"))
		list := apiData(t, apiWant(t, u.dev.Do("GET", "/v1/events", nil), 200))
		assert.Empty(t, list, "the refused create made nothing")
	})

	t.Run("promotion codes: the code pattern, one of percentOff and amountOff, maxUses bounds on update", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		ev := apiPublished(t, u.dev)
		adm := f.admin(t)
		promos := "/admin/v1/events/" + ev + "/promotion-codes"
		for _, code := range []string{"TWO WORDS", " LEAD", "TAB\t", "NBSP\u00a0X", "IDEO\u3000X", "BOM\ufeffX"} {
			apiWant400(t, adm.AllowInvalidRequest().Do("POST", promos, map[string]any{"code": code, "percentOff": 5}), "code")
		}
		wide := strings.Repeat("é", 64) // 64 characters, 128 bytes: within maxLength
		p := apiWant(t, adm.Do("POST", promos, map[string]any{"code": wide, "percentOff": 5}), 201)
		assert.Equal(t, strings.ToUpper(wide), p["code"])
		apiWant400(t, adm.AllowInvalidRequest().Do("POST", promos, map[string]any{"code": wide + "e", "percentOff": 5}), "code")
		apiWant400(t, adm.AllowInvalidRequest().Do("POST", promos, map[string]any{"code": "BOTH", "percentOff": 5, "amountOff": 1}), "percentOff")
		apiWant400(t, adm.AllowInvalidRequest().Do("POST", promos, map[string]any{"code": "NONE"}), "percentOff")
		apiWant400(t, adm.AllowInvalidRequest().Do("POST", promos, map[string]any{"code": "NULLS", "percentOff": nil, "amountOff": nil}), "percentOff")
		apiWant(t, adm.Do("POST", promos, map[string]any{"code": "AMOUNT", "amountOff": 1e1, "percentOff": nil}), 201)
		id := apiS(p, "id")
		for _, n := range []int{0, -1, 10000001} {
			apiWant400(t, adm.AllowInvalidRequest().Do("PATCH", promos+"/"+id, map[string]any{"maxUses": n}), "maxUses")
		}
		assert.EqualValues(t, 3, apiWant(t, adm.Do("PATCH", promos+"/"+id, map[string]any{"maxUses": 3}), 200)["maxUses"])
	})

	t.Run("the site update needs a field; timestamps before 1970 are refused as the schema says", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		ev := apiPublished(t, u.dev)
		adm := f.admin(t)
		apiWant400(t, adm.AllowInvalidRequest().Do("PATCH", "/admin/v1/events/"+ev+"/site", map[string]any{}), "siteUrl")
		apiWant(t, adm.Do("PATCH", "/admin/v1/events/"+ev+"/site", map[string]any{"description": "x"}), 200)
		r := u.dev.AllowInvalidRequest().Do("POST", "/v1/events", map[string]any{"name": "Old", "timezone": "UTC", "startsAt": "1969-12-31T23:00:00Z"})
		apiWant400(t, r, "startsAt")
		// The year as written: 1970 with an offset is 1969 in UTC, and taken.
		apiWant(t, u.dev.Do("POST", "/v1/events", map[string]any{"name": "Edge", "timezone": "UTC", "startsAt": "1970-01-01T00:30:00+01:00"}), 201)
	})

	t.Run("an API key's version is one of the known versions", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		adm := f.admin(t)
		keys := "/admin/v1/business-units/" + u.ID + "/api-keys"
		apiWant400(t, adm.AllowInvalidRequest().Do("POST", keys, map[string]any{"type": "secret", "version": "2020-01-01"}), "version")
		k := apiWant(t, adm.Do("POST", keys, map[string]any{"type": "secret", "version": "2026-03-15"}), 201)
		assert.Equal(t, "2026-03-15", k["version"])
		r := bind.ParseRules(`enum=2026-03-15|2026-08-22`)
		require.Equal(t, thttp.KnownVersions(), r.Enum, "the tag of CreateKeyRequest.version lists the known versions")
	})
}
