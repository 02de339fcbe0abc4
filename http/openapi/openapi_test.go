package openapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	thttp "ticketd/http"
	"ticketd/http/openapi"
)

// The golden file is rewritten with `go test ./http -run TestOpenAPIGolden
// -rewrite`. The flag is registered only if no other test file of the
// package did, since both test packages share one flag set.
func init() {
	if flag.Lookup("rewrite") == nil {
		flag.Bool("rewrite", false, "rewrite golden files in testdata/")
	}
}

func rewriteGolden() bool {
	f := flag.Lookup("rewrite")
	return f != nil && f.Value.String() == "true"
}

// toyMoney mirrors the core's Money: integer minor units on the wire as a
// decimal number, described by its own JSONSchema.
type toyMoney int64

func (toyMoney) JSONSchema() map[string]any {
	return map[string]any{"type": "number", "multipleOf": 0.01, "minimum": 0}
}

func (m toyMoney) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(float64(m)/100, 'f', 2, 64)), nil
}

// toyOpt mirrors the core's Opt[T]: present-or-absent, documented as T.
type toyOpt[T any] struct {
	V   T
	Set bool
}

func (toyOpt[T]) OptionalElem() any { var z T; return z }

func (o toyOpt[T]) MarshalJSON() ([]byte, error) {
	if !o.Set {
		return []byte("null"), nil
	}
	return json.Marshal(o.V)
}

type toyList[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"hasMore"`
	NextCursor *string `json:"nextCursor"`
}

type toyItem struct {
	ItemType string `json:"itemType" v:"required,enum=registration_type|addon|bundle"`
	ItemID   string `json:"itemId" v:"required,minLen=1,maxLen=100"`
	Quantity int    `json:"quantity" v:"required,min=1,max=100"`
}

type toyCreate struct {
	EventID   string         `json:"-"`
	Name      string         `json:"name" v:"required,minLen=1,maxLen=200" doc:"Display name."`
	Email     string         `json:"email,omitempty" v:"format=email,maxLen=320"`
	Capacity  toyOpt[int]    `json:"capacity" v:"nullable,min=0"`
	Price     toyMoney       `json:"priceAmount"`
	Items     []toyItem      `json:"items" v:"required,minItems=1,maxItems=50"`
	Locale    string         `json:"locale,omitempty" v:"enum=en|zh-CN"`
	Tags      []string       `json:"tags,omitempty" v:"maxItems=5,minLen=1,maxLen=20"`
	Responses map[string]any `json:"responses,omitempty"`
	StartsAt  *time.Time     `json:"startsAt,omitempty"`
}

func (toyCreate) Example() any {
	return toyCreate{Name: "Gophercon", Price: 4999, Items: []toyItem{{ItemType: "addon", ItemID: "ao_1", Quantity: 2}}}
}

type toyThing struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Price     toyMoney        `json:"priceAmount"`
	Capacity  *int            `json:"capacity" v:"nullable"`
	Items     []toyItem       `json:"items"`
	Note      string          `json:"note,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	OpensAt   *time.Time      `json:"opensAt"`
	ClosesAt  *time.Time      `json:"closesAt,omitempty"`
	Limit     toyOpt[int]     `json:"limit,omitzero"`
	Meta      json.RawMessage `json:"meta"`
}

type toyListQuery struct {
	Status string `query:"status" v:"enum=open|closed" doc:"Only things in this status."`
	Limit  int    `query:"limit" v:"min=1,max=100"`
	Cursor string `query:"cursor"`
}

type toyPatch struct {
	Name   *string `json:"name,omitempty" v:"minLen=1"`
	Status string  `json:"status,omitempty" v:"enum=open|closed"`
}

type toyUnit struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type toyUnitCreate struct {
	Name string `json:"name" v:"required,maxLen=100"`
}

// toyRoutes is a small table covering every generator feature: path and
// query parameters, strict bodies, an array body, alternative successes,
// actions without a body, three surfaces, and a public route to skip.
func toyRoutes() []thttp.Route {
	return []thttp.Route{
		{Surface: thttp.Developer, Method: "GET", Path: "/v1/events/{eventId}/things", OperationID: "listThings",
			Summary: "List things", Tag: "Things", Query: toyListQuery{}, Success: 200,
			Response: toyList[toyThing]{}, Errors: []int{404}},
		{Surface: thttp.Developer, Method: "POST", Path: "/v1/events/{eventId}/things", OperationID: "createThing",
			Summary: "Create a thing", Tag: "Things", Body: toyCreate{}, Success: 201, AltSuccess: []int{200},
			Response: toyThing{}, Errors: []int{404, 412}},
		{Surface: thttp.Developer, Method: "GET", Path: "/v1/events/{eventId}/things/{thingId}", OperationID: "getThing",
			Summary: "Get a thing", Tag: "Things", Success: 200, Response: toyThing{}, Errors: []int{404}},
		{Surface: thttp.Developer, Method: "PATCH", Path: "/v1/events/{eventId}/things/{thingId}", OperationID: "updateThing",
			Summary: "Update a thing", Tag: "Things", Body: toyPatch{}, Success: 200, Response: toyThing{}, Errors: []int{404}},
		{Surface: thttp.Developer, Method: "PUT", Path: "/v1/events/{eventId}/things/{thingId}/items", OperationID: "replaceThingItems",
			Summary: "Replace the items", Tag: "Things", Body: []toyItem{}, Success: 200, Response: toyThing{}, Errors: []int{404}},
		{Surface: thttp.Developer, Method: "POST", Path: "/v1/events/{eventId}/things/{thingId}/archive", OperationID: "archiveThing",
			Summary: "Archive a thing", Tag: "Actions", Success: 200, Response: toyThing{}, Errors: []int{404, 412}},
		{Surface: thttp.Storefront, Method: "GET", Path: "/storefront/v1/events/{publicId}/things", OperationID: "storefrontListThings",
			Summary: "List public things", Tag: "Catalog", Success: 200, Response: toyList[toyThing]{}, Errors: []int{404}},
		{Surface: thttp.Admin, Method: "POST", Path: "/admin/v1/business-units", OperationID: "createBusinessUnit",
			Summary: "Create a business unit", Tag: "Business units", Body: toyUnitCreate{}, Success: 201, Response: toyUnit{}},
		{Surface: thttp.Admin, Method: "DELETE", Path: "/admin/v1/business-units/{unitId}", OperationID: "deleteBusinessUnit",
			Summary: "Delete a business unit", Tag: "Business units", Success: 204, Errors: []int{404}},
		{Surface: thttp.Admin, Method: "POST", Path: "/admin/v1/api-keys/{keyId}/revoke", OperationID: "revokeKey",
			Summary: "Revoke a key", Tag: "API keys", Success: 200, Errors: []int{404}},
		{Surface: thttp.Public, Method: "GET", Path: "/checkout/{sessionId}", OperationID: "checkoutPage", Success: 200},
	}
}

var toyInfo = openapi.DocInfo{Version: thttp.CurrentVersion}

func genDoc(t *testing.T, routes []thttp.Route, s thttp.Surface) map[string]any {
	t.Helper()
	b, err := openapi.Document(routes, s, toyInfo)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// dig walks a decoded JSON document by keys and array indices.
func dig(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[k]
			require.Truef(t, ok, "no key %q in path %v", k, keys)
			v = next
		case []any:
			i, err := strconv.Atoi(k)
			require.NoError(t, err)
			require.Less(t, i, len(x))
			v = x[i]
		default:
			t.Fatalf("cannot index %T with %q (path %v)", v, k, keys)
		}
	}
	return v
}

func TestOpenAPIGolden(t *testing.T) {
	got, err := openapi.Document(toyRoutes(), thttp.Developer, toyInfo)
	require.NoError(t, err)
	golden := filepath.Join("testdata", "openapi_golden.json")
	if rewriteGolden() {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run with -rewrite to create the golden file")
	if !bytes.Equal(want, got) {
		t.Errorf("document differs from %s (run with -rewrite after checking the diff):\n%s", golden, firstDiff(want, got))
	}
}

func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return "(same lines)"
}

func TestOpenAPIDeterministic(t *testing.T) {
	for _, s := range []thttp.Surface{thttp.Developer, thttp.Storefront, thttp.Admin} {
		first, err := openapi.Document(toyRoutes(), s, toyInfo)
		require.NoError(t, err)
		for i := 0; i < 5; i++ {
			again, err := openapi.Document(toyRoutes(), s, toyInfo)
			require.NoError(t, err)
			require.Equal(t, string(first), string(again))
		}
	}
}

// TestOpenAPIRoutesMatchDocument checks both directions: every route of a
// surface is in its document, and every documented operation is a route.
func TestOpenAPIRoutesMatchDocument(t *testing.T) {
	routes := toyRoutes()
	for _, s := range []thttp.Surface{thttp.Developer, thttp.Storefront, thttp.Admin} {
		doc := genDoc(t, routes, s)
		documented := map[string]string{}
		for p, item := range doc["paths"].(map[string]any) {
			for m, op := range item.(map[string]any) {
				documented[strings.ToUpper(m)+" "+p] = op.(map[string]any)["operationId"].(string)
			}
		}
		want := map[string]string{}
		for _, r := range routes {
			if r.Surface == s {
				want[r.Method+" "+r.Path] = r.OperationID
			}
		}
		assert.Equal(t, want, documented, "surface %d", s)
	}
}

func TestOpenAPIRequestSchemaRules(t *testing.T) {
	doc := genDoc(t, toyRoutes(), thttp.Developer)
	schemas := dig(t, doc, "components", "schemas").(map[string]any)
	in := schemas["ToyCreate"].(map[string]any)
	props := in["properties"].(map[string]any)

	assert.Equal(t, false, in["additionalProperties"], "request bodies are strict")
	assert.Equal(t, []any{"name", "items"}, in["required"], "required comes from v:\"required\" only")
	assert.NotContains(t, props, "EventID", `json:"-" fields are not on the wire`)

	assert.Equal(t, map[string]any{"type": "string", "minLength": 1.0, "maxLength": 200.0, "description": "Display name."}, props["name"])
	assert.Equal(t, map[string]any{"type": "string", "format": "email", "maxLength": 320.0}, props["email"])
	assert.Equal(t, map[string]any{"type": []any{"integer", "null"}, "minimum": 0.0}, props["capacity"],
		"an optional wrapper is its inner type, nullable by tag")
	assert.Equal(t, map[string]any{"type": "number", "multipleOf": 0.01, "minimum": 0.0}, props["priceAmount"],
		"a JSONSchema method overrides reflection")
	assert.Equal(t, map[string]any{"$ref": "#/components/schemas/Locale"}, props["locale"], "one named schema per enum concept")
	assert.Equal(t, map[string]any{"type": "string", "enum": []any{"en", "zh-CN"}, "description": "Language of the hosted pages."}, schemas["Locale"])
	assert.Equal(t, map[string]any{"type": "array", "maxItems": 5.0,
		"items": map[string]any{"type": "string", "minLength": 1.0, "maxLength": 20.0}}, props["tags"],
		"string rules on an array constrain its items")
	assert.Equal(t, map[string]any{"type": "object"}, props["responses"], "free-form object")
	assert.Equal(t, map[string]any{"type": "string", "format": "date-time", "maxLength": 35.0}, props["startsAt"])
	assert.Equal(t, map[string]any{"type": "array", "minItems": 1.0, "maxItems": 50.0,
		"items": map[string]any{"$ref": "#/components/schemas/ToyItemInput"}}, props["items"])

	item := schemas["ToyItemInput"].(map[string]any)
	assert.Equal(t, false, item["additionalProperties"])
	ip := item["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"$ref": "#/components/schemas/ItemType"}, ip["itemType"])
	assert.Equal(t, map[string]any{"type": "integer", "minimum": 1.0, "maximum": 100.0}, ip["quantity"])

	// A type used as request and response has two schemas.
	out := schemas["ToyItem"].(map[string]any)
	assert.NotContains(t, out, "additionalProperties")
	assert.Equal(t, []any{"itemType", "itemId", "quantity"}, out["required"])

	body := dig(t, doc, "paths", "/v1/events/{eventId}/things", "post", "requestBody").(map[string]any)
	assert.Equal(t, true, body["required"])
	assert.Equal(t, map[string]any{"$ref": "#/components/schemas/ToyCreate"}, dig(t, body, "content", "application/json", "schema"))
	assert.Equal(t, "Gophercon", dig(t, body, "content", "application/json", "example", "name"))
	assert.Equal(t, 49.99, dig(t, body, "content", "application/json", "example", "priceAmount"),
		"examples are encoded like responses")

	arr := dig(t, doc, "paths", "/v1/events/{eventId}/things/{thingId}/items", "put", "requestBody", "content", "application/json", "schema")
	assert.Equal(t, map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/ToyItemInput"}}, arr)

	patch := dig(t, doc, "paths", "/v1/events/{eventId}/things/{thingId}", "patch", "requestBody").(map[string]any)
	assert.Equal(t, false, patch["required"], "a body of optional fields may be empty")

	action := dig(t, doc, "paths", "/v1/events/{eventId}/things/{thingId}/archive", "post", "requestBody").(map[string]any)
	assert.Equal(t, false, action["required"])
	assert.Equal(t, map[string]any{"type": "object", "additionalProperties": false},
		dig(t, action, "content", "application/json", "schema"), "actions take nothing or {}")
}

func TestOpenAPIResponseSchemas(t *testing.T) {
	doc := genDoc(t, toyRoutes(), thttp.Developer)
	schemas := dig(t, doc, "components", "schemas").(map[string]any)

	thing := schemas["ToyThing"].(map[string]any)
	assert.Equal(t, []any{"id", "name", "priceAmount", "capacity", "items", "createdAt", "opensAt", "meta"}, thing["required"],
		"every field the encoder always writes is required; omitempty ones are not")
	props := thing["properties"].(map[string]any)
	assert.Contains(t, props, "note")
	assert.Contains(t, props, "name")
	assert.Equal(t, map[string]any{"type": []any{"integer", "null"}}, props["capacity"])
	assert.Equal(t, map[string]any{"type": "string", "format": "date-time", "maxLength": 35.0}, props["createdAt"])
	assert.Equal(t, map[string]any{"type": []any{"string", "null"}, "format": "date-time", "maxLength": 35.0}, props["opensAt"],
		"the encoder writes null for a nil pointer")
	assert.Equal(t, map[string]any{"type": "string", "format": "date-time", "maxLength": 35.0}, props["closesAt"],
		"an omitempty pointer is left out, never null")
	assert.Equal(t, map[string]any{"type": []any{"integer", "null"}}, props["limit"], "an optional can be null")
	assert.Equal(t, map[string]any{}, props["meta"], "raw JSON is any value")

	list := schemas["ToyThingToyList"].(map[string]any)
	lp := list["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/ToyThing"}}, lp["data"])
	assert.Equal(t, map[string]any{"type": []any{"string", "null"}}, lp["nextCursor"])

	ops := dig(t, doc, "paths", "/v1/events/{eventId}/things", "post", "responses").(map[string]any)
	var statuses []string
	for k := range ops {
		statuses = append(statuses, k)
	}
	sort.Strings(statuses)
	assert.Equal(t, []string{"200", "201", "400", "401", "404", "405", "409", "412", "413", "422", "429", "503"}, statuses,
		"a POST documents 503: its outcome is unknown, retried with the same Idempotency-Key; every operation 405")
	assert.Equal(t, map[string]any{"$ref": "#/components/schemas/ToyThing"}, dig(t, ops, "200", "content", "application/json", "schema"))
	assert.Equal(t, []any{"AUTH_THROTTLED", "RATE_LIMITED"}, dig(t, ops, "429", "x-reasons"))
	assert.Equal(t, []any{"FAILED_PRECONDITION"}, dig(t, ops, "412", "x-reasons"), "a 412 without listed reasons keeps the generic one")
	assert.Contains(t, dig(t, ops, "405", "headers"), "Allow")
	for _, h := range []string{"service-version", "Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Idempotent-Replayed"} {
		assert.Contains(t, dig(t, ops, "201", "headers"), h)
	}

	get := dig(t, doc, "paths", "/v1/events/{eventId}/things/{thingId}", "get", "responses").(map[string]any)
	assert.NotContains(t, get, "413", "no body, no 413")
	assert.NotContains(t, get, "422", "idempotency errors are for POSTs")

	tooMany := ops["429"].(map[string]any)
	assert.Contains(t, tooMany["headers"], "Retry-After")
	assert.Equal(t, map[string]any{"$ref": "#/components/schemas/ErrorEnvelope"}, dig(t, tooMany, "content", "application/json", "schema"))
	assert.NotContains(t, dig(t, doc, "components"), "responses", "no response components nothing uses")
	env := dig(t, doc, "components", "schemas", "ErrorEnvelope", "properties", "error").(map[string]any)
	assert.Equal(t, []any{"code", "status", "message", "reason"}, env["required"])
	assert.Equal(t, map[string]any{"$ref": "#/components/schemas/ErrorReason"}, dig(t, env, "properties", "reason"))
	assert.Equal(t, map[string]any{"$ref": "#/components/schemas/ErrorDetail"}, dig(t, env, "properties", "details", "items"))

	admin := genDoc(t, toyRoutes(), thttp.Admin)
	del := dig(t, admin, "paths", "/admin/v1/business-units/{unitId}", "delete", "responses").(map[string]any)
	assert.NotContains(t, del["204"], "content", "204 has no body")
	assert.Contains(t, del, "429", "failed authentications are throttled per address, on every surface")
	assert.Equal(t, []any{"INVALID_ARGUMENT"}, dig(t, del, "400", "x-reasons"), "a path id over its maxLength")
	revoke := dig(t, admin, "paths", "/admin/v1/api-keys/{keyId}/revoke", "post", "responses").(map[string]any)
	assert.Contains(t, revoke, "400", "a POST without fields still refuses a body other than {}")
	assert.Contains(t, dig(t, revoke, "200", "headers"), "Idempotent-Replayed")
	assert.NotContains(t, dig(t, get, "200", "headers"), "Idempotent-Replayed")
	assert.NotContains(t, dig(t, del, "204", "headers"), "service-version")
}

func TestOpenAPIParametersAndSecurity(t *testing.T) {
	doc := genDoc(t, toyRoutes(), thttp.Developer)
	list := dig(t, doc, "paths", "/v1/events/{eventId}/things", "get").(map[string]any)
	assert.Equal(t, "listThings", list["operationId"])
	assert.Equal(t, "List things", list["summary"])
	assert.Equal(t, []any{"Things"}, list["tags"])
	assert.Equal(t, []any{
		map[string]any{"name": "eventId", "in": "path", "required": true, "description": "The event's id (evt_...).",
			"schema": map[string]any{"type": "string", "minLength": 1.0, "maxLength": 100.0}},
		map[string]any{"name": "status", "in": "query", "required": false, "description": "Only things in this status.",
			"schema": map[string]any{"type": "string", "enum": []any{"open", "closed"}}},
		map[string]any{"name": "limit", "in": "query", "required": false,
			"schema": map[string]any{"type": "integer", "minimum": 1.0, "maximum": 100.0, "default": 50.0}},
		map[string]any{"name": "cursor", "in": "query", "required": false,
			"schema": map[string]any{"type": "string", "maxLength": 512.0}}, // the binder's own bound
		map[string]any{"$ref": "#/components/parameters/ServiceVersion"},
	}, list["parameters"])
	post := dig(t, doc, "paths", "/v1/events/{eventId}/things", "post", "parameters").([]any)
	assert.Equal(t, map[string]any{"$ref": "#/components/parameters/IdempotencyKey"}, post[len(post)-1])
	assert.Equal(t, "Idempotency-Key", dig(t, doc, "components", "parameters", "IdempotencyKey", "name"))
	assert.Equal(t, "service-version", dig(t, doc, "components", "parameters", "ServiceVersion", "name"))
	assert.Equal(t, []any{map[string]any{"name": "Things", "description": "Things."}, map[string]any{"name": "Actions", "description": "Actions."}}, doc["tags"], "tags in table order")

	for s, scheme := range map[thttp.Surface]string{thttp.Developer: "secretKey", thttp.Storefront: "publishableKey", thttp.Admin: "adminToken"} {
		d := genDoc(t, toyRoutes(), s)
		assert.Equal(t, "3.1.0", d["openapi"])
		assert.Equal(t, []any{map[string]any{scheme: []any{}}}, d["security"])
		sec := dig(t, d, "components", "securitySchemes", scheme).(map[string]any)
		assert.Equal(t, "http", sec["type"])
		assert.Equal(t, "bearer", sec["scheme"])
		assert.Len(t, dig(t, d, "components", "securitySchemes"), 1)
	}
	assert.Contains(t, dig(t, genDoc(t, toyRoutes(), thttp.Developer), "components", "securitySchemes", "secretKey", "description"), "sk_")
	assert.Contains(t, dig(t, genDoc(t, toyRoutes(), thttp.Storefront), "components", "securitySchemes", "publishableKey", "description"), "pk_")
}

type toyOpaque struct{}

func (toyOpaque) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

type toyBadTag struct {
	N int `json:"n" v:"minimum=1"`
}

type toyBadBound struct {
	Items []toyItem `json:"items" v:"maxLen=3"`
}

func TestOpenAPIRefusesInconsistentTables(t *testing.T) {
	base := thttp.Route{Surface: thttp.Developer, Method: "GET", Path: "/v1/x", OperationID: "getX", Success: 200}
	cases := map[string][]thttp.Route{
		"duplicate operationId": {base, func() thttp.Route { r := base; r.Path = "/v1/y"; return r }()},
		"duplicate path":        {base, func() thttp.Route { r := base; r.OperationID = "getX2"; return r }()},
		"no operationId":        {func() thttp.Route { r := base; r.OperationID = ""; return r }()},
		"no success status":     {func() thttp.Route { r := base; r.Success = 0; return r }()},
		"unknown method":        {func() thttp.Route { r := base; r.Method = "TRACE"; return r }()},
		"catch-all path":        {func() thttp.Route { r := base; r.Path = "/v1/{rest:*}"; return r }()},
		"marshaler w/o schema":  {func() thttp.Route { r := base; r.Response = toyOpaque{}; return r }()},
		"unknown v rule":        {func() thttp.Route { r := base; r.Method = "POST"; r.Body = toyBadTag{}; return r }()},
		"string rule on objs":   {func() thttp.Route { r := base; r.Method = "POST"; r.Body = toyBadBound{}; return r }()},
		"status both ok and err": {func() thttp.Route {
			r := base
			r.Errors = []int{200}
			return r
		}()},
	}
	for name, routes := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := openapi.Document(routes, thttp.Developer, toyInfo)
			assert.Error(t, err)
		})
	}
	_, err := openapi.Document([]thttp.Route{base}, thttp.Public, toyInfo)
	assert.Error(t, err, "public routes have no document")
	_, err = openapi.Document([]thttp.Route{base}, thttp.Developer, openapi.DocInfo{})
	assert.Error(t, err, "a document needs a version")
}

func TestOpenAPIPathPatterns(t *testing.T) {
	r := thttp.Route{Surface: thttp.Developer, Method: "GET", Path: `/v1/things/{id:[0-9]+}`, OperationID: "getNum", Success: 200}
	doc := genDoc(t, []thttp.Route{r}, thttp.Developer)
	assert.Contains(t, doc["paths"], "/v1/things/{id}", "regex constraints are dropped")
}

type toyBase struct {
	ID      string  `json:"id"`
	Name    string  `json:"name"`
	SiteURL *string `json:"siteUrl"`
}

type toyOther struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

type toyShadow struct {
	toyBase
	*toyOther
	SiteURL string `json:"siteUrl"`
	Extra   int    `json:"extra"`
}

// TestOpenAPIEmbeddedFieldsFollowEncodingJSON checks that the schema of a
// type with embedded structs lists exactly the members encoding/json writes:
// the outer field shadows the embedded one, and two embedded fields of the
// same name at the same depth hide each other.
func TestOpenAPIEmbeddedFieldsFollowEncodingJSON(t *testing.T) {
	r := thttp.Route{Surface: thttp.Developer, Method: "GET", Path: "/v1/shadow", OperationID: "getShadow",
		Success: 200, Response: toyShadow{}}
	doc := genDoc(t, []thttp.Route{r}, thttp.Developer)
	props := dig(t, doc, "components", "schemas", "ToyShadow", "properties").(map[string]any)

	b, err := json.Marshal(toyShadow{toyOther: &toyOther{}})
	require.NoError(t, err)
	var wire map[string]any
	require.NoError(t, json.Unmarshal(b, &wire))
	var gotKeys, wireKeys []string
	for k := range props {
		gotKeys = append(gotKeys, k)
	}
	for k := range wire {
		wireKeys = append(wireKeys, k)
	}
	sort.Strings(gotKeys)
	sort.Strings(wireKeys)
	assert.Equal(t, wireKeys, gotKeys)
	assert.Equal(t, map[string]any{"type": "string"}, props["siteUrl"], "the outer field wins")
	assert.NotContains(t, props, "name", "a tie at one depth hides both")
}

// TestOpenAPIPostsSayHowToRetry: every POST operation of every surface
// says that a 503, a timeout or a dropped connection leaves the outcome
// unknown and that a retry carries the same Idempotency-Key, declares that
// header and documents the 503; other methods do not claim the header.
func TestOpenAPIPostsSayHowToRetry(t *testing.T) {
	for _, s := range []thttp.Surface{thttp.Developer, thttp.Storefront, thttp.Admin} {
		doc := genDoc(t, toyRoutes(), s)
		posts := 0
		for p, item := range doc["paths"].(map[string]any) {
			for m, raw := range item.(map[string]any) {
				op := raw.(map[string]any)
				params, _ := op["parameters"].([]any)
				hasKey := slices.ContainsFunc(params, func(p any) bool {
					return reflect.DeepEqual(p, map[string]any{"$ref": "#/components/parameters/IdempotencyKey"})
				})
				if m != "post" {
					assert.False(t, hasKey, "%s %s", m, p)
					continue
				}
				posts++
				assert.True(t, hasKey, "POST %s declares Idempotency-Key", p)
				desc, _ := op["description"].(string)
				for _, want := range []string{"503", "timeout", "dropped connection", "unknown", "same `Idempotency-Key`", "24 hours"} {
					assert.Contains(t, desc, want, "POST %s", p)
				}
				assert.Contains(t, dig(t, op, "responses", "503", "description"), "Idempotency-Key", "POST %s", p)
			}
		}
		if s != thttp.Storefront {
			assert.Positive(t, posts, "surface %d has POSTs", s)
		}
		assert.Contains(t, dig(t, doc, "components", "parameters", "IdempotencyKey", "description"), "unknown")
	}
}
