package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/fasthttp/router"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	thttp "ticketd/http"
	"ticketd/http/openapi"
	"ticketd/http/openapi/openapitest"
)

func TestOpenAPIValidatesAsOpenAPI31(t *testing.T) {
	for _, s := range []thttp.Surface{thttp.Developer, thttp.Storefront, thttp.Admin} {
		b, err := openapi.Document(toyRoutes(), s, toyInfo)
		require.NoError(t, err)
		doc, err := openapi3.NewLoader().LoadFromData(b)
		require.NoError(t, err)
		require.True(t, doc.IsOpenAPI31OrLater())
		require.NoError(t, doc.Validate(context.Background()), "surface %d", s)
	}
}

// TestOpenAPIValidatorIsReal shows the validation above can fail: a
// document with a broken schema is refused.
func TestOpenAPIValidatorIsReal(t *testing.T) {
	b, err := openapi.Document(toyRoutes(), thttp.Developer, toyInfo)
	require.NoError(t, err)
	broken := strings.Replace(string(b), `"type": "integer"`, `"type": "integr"`, 1)
	require.NotEqual(t, string(b), broken)
	doc, err := openapi3.NewLoader().LoadFromData([]byte(broken))
	if err == nil {
		err = doc.Validate(context.Background())
	}
	assert.Error(t, err)
}

// recTB records what the harness reports instead of failing the test, so
// the tests can assert that drift is caught.
type recTB struct {
	testing.TB
	mu    sync.Mutex
	errs  []string
	fatal bool
}

func (r *recTB) Helper() {}

func (r *recTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recTB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.mu.Lock()
	r.fatal = true
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recTB) reported() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n---\n")
}

// toyServer serves the documents of toyRoutes and hand-written handlers
// for them, like a real server would. The X-Toy-Mode request header makes
// a handler break the contract in one chosen way.
func toyServer(t *testing.T) string {
	t.Helper()
	r := router.New()
	require.NoError(t, openapi.RegisterDocs(r, toyRoutes(), toyInfo))

	send := func(rc *fasthttp.RequestCtx, status int, v any) {
		rc.Response.Header.Set("Request-Id", "req_1")
		if strings.HasPrefix(string(rc.Path()), "/v1/") || strings.HasPrefix(string(rc.Path()), "/storefront/") {
			if string(rc.Request.Header.Peek("X-Toy-Mode")) != "no-version" {
				rc.Response.Header.Set("service-version", thttp.CurrentVersion)
			}
			rc.Response.Header.Set("RateLimit-Limit", "120")
			rc.Response.Header.Set("RateLimit-Remaining", "119")
			rc.Response.Header.Set("RateLimit-Reset", "60")
		}
		rc.SetStatusCode(status)
		if v == nil {
			return
		}
		rc.SetContentType("application/json")
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		rc.SetBody(b)
	}
	thing := func(rc *fasthttp.RequestCtx) map[string]any {
		m := map[string]any{
			"id": "thg_1", "name": string(rc.Request.Header.Peek("Authorization")), "priceAmount": 49.99,
			"capacity": nil, "items": []any{map[string]any{"itemType": "addon", "itemId": "ao_1", "quantity": 2}},
			"createdAt": "2026-08-22T10:00:00Z", "opensAt": nil, "meta": nil,
		}
		switch string(rc.Request.Header.Peek("X-Toy-Mode")) {
		case "extra-field":
			m["colour"] = "red"
		case "missing-field":
			delete(m, "createdAt")
		case "wrong-type":
			m["priceAmount"] = "49.99"
		case "bad-enum":
			m["items"] = []any{map[string]any{"itemType": "seat", "itemId": "s_1", "quantity": 1}}
		}
		return m
	}
	r.GET("/v1/events/{eventId}/things", func(rc *fasthttp.RequestCtx) {
		send(rc, 200, map[string]any{"data": []any{thing(rc)}, "hasMore": false, "nextCursor": nil})
	})
	r.POST("/v1/events/{eventId}/things", func(rc *fasthttp.RequestCtx) {
		if string(rc.Request.Header.Peek("X-Toy-Mode")) == "undocumented-status" {
			send(rc, 418, map[string]any{"error": map[string]any{"code": 418, "status": "INTERNAL", "message": "teapot"}})
			return
		}
		var body map[string]any
		if err := json.Unmarshal(rc.PostBody(), &body); err != nil {
			send(rc, 400, map[string]any{"error": map[string]any{"code": 400, "status": "INVALID_ARGUMENT", "reason": "INVALID_ARGUMENT",
				"message": "malformed JSON", "details": []any{map[string]any{"field": "", "reason": err.Error()}}}})
			return
		}
		switch string(rc.Request.Header.Peek("X-Toy-Mode")) {
		case "replay":
			rc.Response.Header.Set("Idempotent-Replayed", "true")
		case "bad-replay-header":
			rc.Response.Header.Set("Idempotent-Replayed", "yes")
		}
		send(rc, 201, thing(rc))
	})
	r.GET("/v1/events/{eventId}/things/{thingId}", func(rc *fasthttp.RequestCtx) {
		if rc.UserValue("thingId") == "missing" {
			env := map[string]any{"error": map[string]any{"code": 404, "status": "NOT_FOUND", "reason": "NOT_FOUND", "message": "no such thing"}}
			if string(rc.Request.Header.Peek("X-Toy-Mode")) == "bad-envelope" {
				env = map[string]any{"message": "no such thing"}
			}
			send(rc, 404, env)
			return
		}
		send(rc, 200, thing(rc))
	})
	r.GET("/storefront/v1/events/{publicId}/things", func(rc *fasthttp.RequestCtx) {
		send(rc, 200, map[string]any{"data": []any{}, "hasMore": false, "nextCursor": nil})
	})
	r.DELETE("/admin/v1/business-units/{unitId}", func(rc *fasthttp.RequestCtx) {
		send(rc, 204, nil)
	})
	r.POST("/admin/v1/api-keys/{keyId}/revoke", func(rc *fasthttp.RequestCtx) {
		if string(rc.Request.Header.Peek("X-Toy-Mode")) == "body-where-none" {
			send(rc, 200, map[string]any{"revoked": true})
			return
		}
		send(rc, 200, nil)
	})
	return serveRouter(t, r)
}

func TestContractAcceptsAConformingServer(t *testing.T) {
	base := toyServer(t)
	rec := &recTB{TB: t}
	c := openapitest.NewClient(rec, base).WithKey("sk_test")
	require.Empty(t, rec.reported())

	// One client shared by parallel subtests, as the black-box suite does.
	t.Run("group", func(t *testing.T) {
		for i := 0; i < 8; i++ {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				r := c.Do("GET", "/v1/events/evt_1/things?status=open&limit=10", nil)
				assert.Equal(t, 200, r.Status)
				assert.Equal(t, false, r.JSON()["hasMore"])

				r = c.WithHeader("Idempotency-Key", "k1").Do("POST", "/v1/events/evt_1/things", map[string]any{
					"name": "Gophercon", "items": []any{map[string]any{"itemType": "addon", "itemId": "ao_1", "quantity": 1}},
				})
				assert.Equal(t, 201, r.Status)
				r = c.WithHeader("Idempotency-Key", "k1").WithHeader("X-Toy-Mode", "replay").Do("POST", "/v1/events/evt_1/things", map[string]any{
					"name": "Gophercon", "items": []any{map[string]any{"itemType": "addon", "itemId": "ao_1", "quantity": 1}},
				})
				assert.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
				var got struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				}
				r.Decode(&got)
				assert.Equal(t, "thg_1", got.ID)

				r = c.Do("GET", "/v1/events/evt_1/things/missing", nil)
				assert.Equal(t, 404, r.Status)
				assert.Equal(t, "NOT_FOUND", r.JSON()["error"].(map[string]any)["status"])

				assert.Equal(t, 200, c.WithKey("pk_test").Do("GET", "/storefront/v1/events/evt_1/things", nil).Status)
				assert.Equal(t, 204, c.WithKey("admin").Do("DELETE", "/admin/v1/business-units/bu_1", nil).Status)
				assert.Equal(t, 200, c.WithKey("admin").Do("POST", "/admin/v1/api-keys/key_1/revoke", nil).Status)
			})
		}
	})
	assert.Empty(t, rec.reported(), "a conforming server passes")
}

func TestContractClientCopiesAreIndependent(t *testing.T) {
	base := toyServer(t)
	c := openapitest.NewClient(t, base)
	a := c.WithKey("sk_a")
	b := a.WithKey("sk_b")
	var got struct {
		Name string `json:"name"`
	}
	a.Do("GET", "/v1/events/evt_1/things/thg_1", nil).Decode(&got)
	assert.Equal(t, "Bearer sk_a", got.Name, "WithKey on a copy does not change the original")
	b.Do("GET", "/v1/events/evt_1/things/thg_1", nil).Decode(&got)
	assert.Equal(t, "Bearer sk_b", got.Name)
	c.Do("GET", "/v1/events/evt_1/things/thg_1", nil).Decode(&got)
	assert.Equal(t, "", got.Name)
	assert.True(t, c.SharesDocuments(openapitest.NewClient(t, base)), "documents are fetched once per server")
}

// TestContractCatchesDrift breaks the contract in each way the harness must
// notice and checks that it reports it.
func TestContractCatchesDrift(t *testing.T) {
	base := toyServer(t)
	cases := []struct {
		mode, method, path string
		body               any
		want               string
	}{
		{"extra-field", "GET", "/v1/events/evt_1/things/thg_1", nil, "colour"},
		{"missing-field", "GET", "/v1/events/evt_1/things/thg_1", nil, "createdAt"},
		{"wrong-type", "GET", "/v1/events/evt_1/things", nil, "priceAmount"},
		{"bad-enum", "GET", "/v1/events/evt_1/things/thg_1", nil, "itemType"},
		{"bad-envelope", "GET", "/v1/events/evt_1/things/missing", nil, "error"},
		{"undocumented-status", "POST", "/v1/events/evt_1/things", map[string]any{"name": "x", "items": []any{}}, "status is not supported"},
		{"bad-replay-header", "POST", "/v1/events/evt_1/things", map[string]any{"name": "x", "items": []any{}}, "Idempotent-Replayed"},
		{"no-version", "GET", "/v1/events/evt_1/things/thg_1", nil, "service-version"},
		{"body-where-none", "POST", "/admin/v1/api-keys/key_1/revoke", nil, "has a body"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			rec := &recTB{TB: t}
			c := openapitest.NewClient(rec, base).WithHeader("X-Toy-Mode", tc.mode)
			c.Do(tc.method, tc.path, tc.body)
			got := rec.reported()
			require.NotEmpty(t, got, "drift %q went unnoticed", tc.mode)
			assert.Contains(t, got, tc.want)
		})
	}
}

func TestContractRefusesUndocumentedRequests(t *testing.T) {
	base := toyServer(t)
	cases := []struct {
		name, method, path string
		body               any
		want               string
	}{
		{"unknown path", "GET", "/v1/nothing-here", nil, "not documented"},
		{"unknown method", "DELETE", "/v1/events/evt_1/things", nil, "not documented"},
		{"admin path in no document", "GET", "/admin/v1/units", nil, "not documented in /admin/openapi.json"},
		{"missing required field", "POST", "/v1/events/evt_1/things", map[string]any{"items": []any{}}, "name"},
		{"unknown field", "POST", "/v1/events/evt_1/things", map[string]any{"name": "x", "items": []any{}, "colour": 1}, "colour"},
		{"query out of bounds", "GET", "/v1/events/evt_1/things?limit=0", nil, "limit"},
		{"bad version header", "GET", "/v1/events/evt_1/things/thg_1", nil, "service-version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recTB{TB: t}
			c := openapitest.NewClient(rec, base)
			if tc.name == "bad version header" {
				c = c.WithHeader("service-version", "tuesday")
			}
			c.Do(tc.method, tc.path, tc.body)
			got := rec.reported()
			require.NotEmpty(t, got)
			assert.Contains(t, got, tc.want)
		})
	}

	t.Run("on purpose", func(t *testing.T) {
		rec := &recTB{TB: t}
		c := openapitest.NewClient(rec, base)
		r := c.AllowInvalidRequest().Do("POST", "/v1/events/evt_1/things", map[string]any{"items": []any{}})
		assert.Equal(t, 201, r.Status)
		r = c.Do("POST", "/v1/events/evt_1/things", []byte(`{"name":`))
		assert.Equal(t, 400, r.Status, "raw bytes are sent unchecked")
		assert.Equal(t, "INVALID_ARGUMENT", r.JSON()["error"].(map[string]any)["status"])
		assert.Empty(t, rec.reported(), "the responses were documented")
	})
}

func TestContractRefusesAnInvalidDocument(t *testing.T) {
	r := router.New()
	r.GET("/openapi.json", func(rc *fasthttp.RequestCtx) {
		rc.SetContentType("application/json")
		rc.SetBodyString(`{"openapi":"3.1.0","info":{"title":"x","version":"1"},"paths":{"/v1/x":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"integr"}}}}}}}}}`)
	})
	base := serveRouter(t, r)
	rec := &recTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		openapitest.NewClient(rec, base)
	}()
	<-done
	assert.True(t, rec.fatal, "an invalid document stops the test")
	assert.Contains(t, rec.reported(), "/openapi.json")
}

// TestContractRetriesAFailedLoad shows a failed fetch is not cached: the
// next client of the same server loads the documents again.
func TestContractRetriesAFailedLoad(t *testing.T) {
	r := router.New()
	require.NoError(t, openapi.RegisterDocs(r, toyRoutes(), toyInfo))
	var mu sync.Mutex
	failed := false
	outer := router.New()
	outer.NotFound = func(rc *fasthttp.RequestCtx) {
		mu.Lock()
		first := !failed
		failed = true
		mu.Unlock()
		if first {
			rc.SetStatusCode(500)
			return
		}
		r.Handler(rc)
	}
	base := serveRouter(t, outer)

	rec := &recTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		openapitest.NewClient(rec, base)
	}()
	<-done
	require.True(t, rec.fatal, "the first load fails")
	assert.Contains(t, rec.reported(), "status 500")

	rec = &recTB{TB: t}
	c := openapitest.NewClient(rec, base)
	assert.Empty(t, rec.reported(), "the second load succeeds")
	assert.True(t, c.SharesDocuments(openapitest.NewClient(t, base)), "the second load is kept")
}
