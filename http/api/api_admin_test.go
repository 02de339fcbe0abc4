package api_test

// Black-box tests of authentication, versions and the admin API (the
// console) through the real service.

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apiKey creates a key through the admin API and returns the create answer.
func apiKey(t testing.TB, adm *apiClient, unitID string, body map[string]any) map[string]any {
	t.Helper()
	return apiWant(t, adm.Do("POST", "/admin/v1/business-units/"+unitID+"/api-keys", body), 201)
}

func TestAPIAuth(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("every refused key answers the same 401", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		adm := f.admin(t)
		revoked := apiKey(t, adm, u.ID, map[string]any{"type": "secret"})
		apiWant(t, adm.Do("POST", "/admin/v1/api-keys/"+apiS(revoked, "id")+"/revoke", nil), 200)
		// A key cannot be created expired: make one that expires in a
		// second, and wait it out below.
		soon := time.Now().Add(1500 * time.Millisecond).UTC().Truncate(time.Second).Add(time.Second)
		expired := apiKey(t, adm, u.ID, map[string]any{"type": "secret", "expiresAt": soon.Format(time.RFC3339)})
		revokedPK := apiKey(t, adm, u.ID, map[string]any{"type": "publishable"})
		apiWant(t, adm.Do("POST", "/admin/v1/api-keys/"+apiS(revokedPK, "id")+"/revoke", nil), 200)

		refused := map[string]struct {
			c    *apiClient
			path string
		}{
			"missing":                  {u.raw, "/v1/events"},
			"malformed scheme":         {u.raw.WithHeader("Authorization", "Basic "+u.Secret), "/v1/events"},
			"bearer alone":             {u.raw.WithHeader("Authorization", "Bearer"), "/v1/events"},
			"unknown":                  {u.raw.WithKey("sk_doesnotexist0000000000000000"), "/v1/events"},
			"revoked":                  {u.raw.WithKey(apiS(revoked, "key")), "/v1/events"},
			"expired":                  {u.raw.WithKey(apiS(expired, "key")), "/v1/events"},
			"publishable on /v1":       {u.sf, "/v1/events"},
			"admin token on /v1":       {u.raw.WithKey(f.s.Admin), "/v1/events"},
			"secret on storefront":     {u.dev, "/storefront/v1/events"},
			"missing on storefront":    {u.raw, "/storefront/v1/events"},
			"revoked pk on storefront": {u.raw.WithKey(apiS(revokedPK, "key")), "/storefront/v1/events"},
			"unknown pk on storefront": {u.raw.WithKey("pk_doesnotexist0000000000000000"), "/storefront/v1/events"},
			"secret key on admin":      {u.dev, "/admin/v1/business-units"},
			"publishable key on admin": {u.sf, "/admin/v1/business-units"},
			"wrong admin token":        {u.raw.WithKey(f.s.Admin + "x"), "/admin/v1/business-units"},
			"missing token on admin":   {u.raw, "/admin/v1/business-units"},
		}
		time.Sleep(time.Until(soon) + 100*time.Millisecond)
		var first map[string]any
		for name, tc := range refused {
			r := tc.c.WithT(t).Do("GET", tc.path, nil)
			e := apiWantErr(t, r, 401, "UNAUTHENTICATED")
			if first == nil {
				first = e
			}
			assert.Equalf(t, first, e, "%s: 401 bodies must be indistinguishable", name)
		}
		// The good keys still work.
		apiWant(t, u.dev.Do("GET", "/v1/events", nil), 200)
		apiWant(t, u.sf.Do("GET", "/storefront/v1/events", nil), 200)
	})

	t.Run("a key cannot be created already expired", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		adm := f.admin(t).AllowInvalidRequest()
		for _, at := range []string{time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "2020-01-01T00:00:00Z"} {
			e := apiWantErr(t, adm.Do("POST", "/admin/v1/business-units/"+u.ID+"/api-keys", map[string]any{"type": "secret", "expiresAt": at}), 400, "INVALID_ARGUMENT")
			assert.Equal(t, []string{"expiresAt"}, apiFields(e))
		}
		k := apiKey(t, adm, u.ID, map[string]any{"type": "publishable", "expiresAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		assert.NotNil(t, k["expiresAt"])
	})

	t.Run("a key that expires stops working", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		at := time.Now().Add(1500 * time.Millisecond).UTC().Truncate(time.Second).Add(time.Second)
		k := apiKey(t, f.admin(t), u.ID, map[string]any{"type": "secret", "expiresAt": at.Format(time.RFC3339)})
		c := u.raw.WithKey(apiS(k, "key"))
		apiWant(t, c.Do("GET", "/v1/events", nil), 200)
		time.Sleep(time.Until(at) + 100*time.Millisecond)
		apiWantErr(t, c.Do("GET", "/v1/events", nil), 401, "UNAUTHENTICATED")
	})

	t.Run("revoke is effective at once", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		adm := f.admin(t)
		k := apiKey(t, adm, u.ID, map[string]any{"type": "secret"})
		c := u.raw.WithKey(apiS(k, "key"))
		apiWant(t, c.Do("POST", "/v1/events", map[string]any{"name": "x", "timezone": "UTC"}), 201)
		rv := apiWant(t, adm.Do("POST", "/admin/v1/api-keys/"+apiS(k, "id")+"/revoke", nil), 200)
		assert.NotNil(t, rv["revokedAt"])
		apiWantErr(t, c.Do("GET", "/v1/events", nil), 401, "UNAUTHENTICATED")
		apiWantErr(t, adm.Do("POST", "/admin/v1/api-keys/key_nope/revoke", nil), 404, "NOT_FOUND")
	})
}

func TestAPIVersions(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("the effective version is echoed on success and error", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		r := u.dev.Do("GET", "/v1/events", nil)
		apiWant(t, r, 200)
		assert.Equal(t, "2026-08-22", r.Header.Get("service-version"))
		r = u.dev.Do("GET", "/v1/events/evt_nope", nil)
		apiWantErr(t, r, 404, "NOT_FOUND")
		assert.Equal(t, "2026-08-22", r.Header.Get("service-version"))
		r = u.raw.Do("GET", "/v1/events", nil)
		apiWantErr(t, r, 401, "UNAUTHENTICATED")
		assert.Equal(t, "2026-08-22", r.Header.Get("service-version"))
		r = u.dev.WithHeader("Service-Version", "2026-03-15").Do("GET", "/v1/events", nil)
		apiWant(t, r, 200)
		assert.Equal(t, "2026-03-15", r.Header.Get("service-version"))
		r = u.sf.WithHeader("service-version", "2026-03-15").Do("GET", "/storefront/v1/events", nil)
		apiWant(t, r, 200)
		assert.Equal(t, "2026-03-15", r.Header.Get("service-version"))
	})

	t.Run("an unknown date answers 400", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		for _, v := range []string{"2026-01-01", "yesterday"} {
			r := u.dev.AllowInvalidRequest().WithHeader("service-version", v).Do("GET", "/v1/events", nil)
			apiWantErr(t, r, 400, "INVALID_ARGUMENT")
			assert.Equal(t, "2026-08-22", r.Header.Get("service-version"), "echoes the version that would have applied")
			r = u.sf.AllowInvalidRequest().WithHeader("service-version", v).Do("GET", "/storefront/v1/events", nil)
			apiWantErr(t, r, 400, "INVALID_ARGUMENT")
		}
	})

	// The availability of 2026-03-15 is read outside the contract client:
	// the served document describes only the current shape (see the skipped
	// subtest below).
	t.Run("2026-03-15 availability has no held", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		ev := apiS(apiEvent(t, u.dev, nil), "id")
		tt := apiS(apiType(t, u.dev, ev, nil), "id")
		cur := apiAvailability(t, u.dev, ev, tt)
		assert.Contains(t, cur, "held")
		url := f.s.URL + "/v1/events/" + ev + "/ticket-types/" + tt + "/availability"
		st, h, old := apiRawJSON(t, "GET", url, u.Secret, map[string]string{"service-version": "2026-03-15"})
		require.Equal(t, 200, st)
		assert.Equal(t, "2026-03-15", h.Get("service-version"))
		assert.NotContains(t, old, "held")
		for _, k := range []string{"capacity", "confirmed", "waitlisted", "remaining"} {
			assert.Contains(t, old, k)
		}
	})

	t.Run("2026-03-15 availability matches the OpenAPI document", func(t *testing.T) {
		u := f.unit(t)
		ev := apiS(apiEvent(t, u.dev, nil), "id")
		tt := apiS(apiType(t, u.dev, ev, nil), "id")
		apiWant(t, u.dev.WithHeader("service-version", "2026-03-15").Do("GET", "/v1/events/"+ev+"/ticket-types/"+tt+"/availability", nil), 200)
	})

	t.Run("a key created with 2026-03-15 is pinned to it", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		k := apiKey(t, f.admin(t), u.ID, map[string]any{"type": "secret", "version": "2026-03-15"})
		assert.Equal(t, "2026-03-15", k["version"])
		c := u.raw.WithKey(apiS(k, "key"))
		ev := apiS(apiEvent(t, c, nil), "id")
		tt := apiS(apiType(t, c, ev, nil), "id")
		url := f.s.URL + "/v1/events/" + ev + "/ticket-types/" + tt + "/availability"
		st, h, av := apiRawJSON(t, "GET", url, apiS(k, "key"), nil)
		require.Equal(t, 200, st)
		assert.Equal(t, "2026-03-15", h.Get("service-version"))
		assert.NotContains(t, av, "held")
		// The header still overrides per request.
		r := c.WithHeader("service-version", "2026-08-22").Do("GET", "/v1/events/"+ev+"/ticket-types/"+tt+"/availability", nil)
		assert.Contains(t, apiWant(t, r, 200), "held")
		assert.Equal(t, "2026-08-22", r.Header.Get("service-version"))
	})
}

func TestAPIAdmin(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("business units create and list with pagination", func(t *testing.T) {
		adm := f.admin(t)
		var made []string
		for i := range 5 {
			u := apiWant(t, adm.Do("POST", "/admin/v1/business-units", map[string]any{"name": "bu " + strconv.Itoa(i)}), 201)
			require.Contains(t, apiS(u, "id"), "bu_")
			assert.Equal(t, "bu "+strconv.Itoa(i), u["name"])
			assert.NotEmpty(t, u["createdAt"])
			made = append(made, apiS(u, "id"))
		}
		var seen []string
		cursor := ""
		for pages := 0; pages < 100; pages++ {
			p := "/admin/v1/business-units?limit=2"
			if cursor != "" {
				p += "&cursor=" + cursor
			}
			page := apiWant(t, adm.Do("GET", p, nil), 200)
			ids := apiIDs(t, page)
			assert.LessOrEqual(t, len(ids), 2)
			seen = append(seen, ids...)
			if page["hasMore"] != true {
				assert.Nil(t, page["nextCursor"])
				break
			}
			cursor = apiS(page, "nextCursor")
			require.NotEmpty(t, cursor)
		}
		for _, id := range made {
			assert.Contains(t, seen, id)
		}
		assert.Len(t, seen, len(apiUniq(seen)), "no unit twice across pages")
		apiWant400(t, adm.AllowInvalidRequest().Do("GET", "/admin/v1/business-units?limit=0", nil), "limit")
		apiWant400(t, adm.AllowInvalidRequest().Do("GET", "/admin/v1/business-units?limit=101", nil), "limit")
		apiWant400(t, adm.Do("GET", "/admin/v1/business-units?cursor=%21%21", nil), "cursor")
		apiWant400(t, adm.AllowInvalidRequest().Do("POST", "/admin/v1/business-units", map[string]any{}), "name")
	})

	t.Run("keys: secret shown once, masked in lists; publishable whole", func(t *testing.T) {
		adm := f.admin(t)
		bu := apiS(apiWant(t, adm.Do("POST", "/admin/v1/business-units", map[string]any{"name": "keys"}), 201), "id")
		sk := apiKey(t, adm, bu, map[string]any{"type": "secret", "name": "server"})
		assert.Regexp(t, `^sk_`, sk["key"])
		assert.Regexp(t, `^key_`, sk["id"])
		assert.Equal(t, "secret", sk["type"])
		assert.Equal(t, "2026-08-22", sk["version"], "pinned to the current version by default")
		pk := apiKey(t, adm, bu, map[string]any{"type": "publishable", "origins": []string{"https://shop.example.com", "http://localhost:3000"}})
		assert.Regexp(t, `^pk_`, pk["key"])
		assert.Equal(t, []any{"https://shop.example.com", "http://localhost:3000"}, pk["origins"])

		list := apiWant(t, adm.Do("GET", "/admin/v1/business-units/"+bu+"/api-keys", nil), 200)
		byID := map[string]map[string]any{}
		for _, k := range apiData(t, list) {
			byID[apiS(k, "id")] = k
		}
		require.Contains(t, byID, apiS(sk, "id"))
		require.Contains(t, byID, apiS(pk, "id"))
		masked := apiS(byID[apiS(sk, "id")], "key")
		assert.NotEqual(t, sk["key"], masked)
		assert.NotContains(t, string(adm.Do("GET", "/admin/v1/business-units/"+bu+"/api-keys", nil).Body), apiS(sk, "key"),
			"the whole secret never appears again")
		assert.Equal(t, pk["key"], byID[apiS(pk, "id")]["key"])

		// The new secret key works on its own unit only.
		c := f.client(t).WithKey(apiS(sk, "key"))
		apiWant(t, c.Do("GET", "/v1/events", nil), 200)
	})

	t.Run("key validation", func(t *testing.T) {
		adm := f.admin(t)
		bu := apiS(apiWant(t, adm.Do("POST", "/admin/v1/business-units", map[string]any{"name": "v"}), 201), "id")
		path := "/admin/v1/business-units/" + bu + "/api-keys"
		apiWant400(t, adm.Do("POST", path, map[string]any{"type": "publishable", "origins": []string{"http://shop.example.com"}}), "origins[0]")
		apiWant400(t, adm.Do("POST", path, map[string]any{"type": "publishable", "origins": []string{"https://ok.example.com", "https://shop.example.com/path"}}), "origins[1]")
		apiWant400(t, adm.Do("POST", path, map[string]any{"type": "publishable", "origins": []string{"not an origin"}}), "origins[0]")
		apiWant400(t, adm.AllowInvalidRequest().Do("POST", path, map[string]any{"type": "secret", "version": "2026-01-01"}), "version")
		apiWant400(t, adm.AllowInvalidRequest().Do("POST", path, map[string]any{"type": "master"}), "type")
		apiWant400(t, adm.AllowInvalidRequest().Do("POST", path, map[string]any{}), "type")
		apiWantErr(t, adm.Do("POST", "/admin/v1/business-units/bu_nope/api-keys", map[string]any{"type": "secret"}), 404, "NOT_FOUND")
		apiWantErr(t, adm.Do("GET", "/admin/v1/business-units/bu_nope/api-keys", nil), 404, "NOT_FOUND")
	})

	t.Run("wrong token answers 401", func(t *testing.T) {
		c := f.client(t).WithKey("adm_wrong")
		apiWantErr(t, c.Do("GET", "/admin/v1/business-units", nil), 401, "UNAUTHENTICATED")
		apiWantErr(t, c.Do("POST", "/admin/v1/business-units", map[string]any{"name": "x"}), 401, "UNAUTHENTICATED")
	})
}

func TestAPIEnvelope(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	u := f.unit(t)

	t.Run("unknown path and wrong method answer in the envelope", func(t *testing.T) {
		resp, b := apiRaw(t, "GET", f.s.URL+"/v1/nothing-here", map[string]string{"Authorization": "Bearer " + u.Secret}, nil)
		assert.Equal(t, 404, resp.StatusCode)
		e := apiM(apiDecode(b), "error")
		assert.Equal(t, "NOT_FOUND", e["status"])
		assert.Equal(t, "2026-08-22", resp.Header.Get("service-version"))
		resp, b = apiRaw(t, "DELETE", f.s.URL+"/v1/events", map[string]string{"Authorization": "Bearer " + u.Secret}, nil)
		assert.Equal(t, 405, resp.StatusCode)
		assert.EqualValues(t, 405, apiM(apiDecode(b), "error")["code"])
		assert.Contains(t, resp.Header.Get("Allow"), "POST")
	})

	t.Run("a body over 1 MiB answers 413", func(t *testing.T) {
		big := []byte(`{"name":"` + apiRepeat("x", 1<<20+10) + `","timezone":"UTC"}`)
		resp, b := apiRaw(t, "POST", f.s.URL+"/v1/events", map[string]string{
			"Authorization": "Bearer " + u.Secret, "Content-Type": "application/json"}, big)
		assert.Equal(t, 413, resp.StatusCode)
		e := apiM(apiDecode(b), "error")
		assert.EqualValues(t, 413, e["code"])
		assert.Equal(t, "INVALID_ARGUMENT", e["status"])
		assert.Empty(t, apiData(t, apiWant(t, u.dev.Do("GET", "/v1/events", nil), 200)))
	})

	t.Run("empty bodies are accepted on field-less actions", func(t *testing.T) {
		ev := apiPublished(t, u.dev)
		tt := apiOpenType(t, u.dev, ev, nil)
		r := apiRegister(t, u.dev, ev, tt, "a@example.com")
		apiWant(t, u.dev.Do("POST", "/v1/events/"+ev+"/registrations/"+apiS(r, "id")+"/rotate-pass", []byte{}), 200)
		apiWant(t, u.dev.Do("POST", "/v1/events/"+ev+"/registrations/"+apiS(r, "id")+"/rotate-pass", map[string]any{}), 200)
		apiWant(t, u.dev.Do("POST", "/v1/events/"+ev+"/archive", []byte{}), 200)
	})

	t.Run("ids carry their type prefix", func(t *testing.T) {
		adm := f.admin(t)
		bu := apiWant(t, adm.Do("POST", "/admin/v1/business-units", map[string]any{"name": "ids"}), 201)
		assert.Regexp(t, `^bu_`, bu["id"])
		k := apiKey(t, adm, apiS(bu, "id"), map[string]any{"type": "publishable"})
		assert.Regexp(t, `^key_`, k["id"])
		assert.Regexp(t, `^pk_`, k["key"])
	})
}

// apiUniq returns the distinct strings of xs.
func apiUniq(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
