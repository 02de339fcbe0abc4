package openapi

// This file generates the OpenAPI 3.1 documents of the three surfaces from
// the Route table and the Go types named in it (Body, Query, Response). The
// table is the one source of truth: the router is built from it too, so the
// documents cannot drift from what is served.
//
// Schemas follow the struct tags that the binder enforces (see route.go and
// tags.go): a request schema says exactly what the strict binder accepts
// (additionalProperties false, required from v:"required", the v bounds), a
// response schema lists every field the JSON encoder writes (required unless
// omitempty or omitzero). A type can describe itself with a
// `JSONSchema() map[string]any` method (money, timestamps) and an optional
// wrapper with `OptionalElem() any`.
//
// Output is deterministic: encoding/json sorts map keys, and nothing here
// depends on map iteration order, so the same table gives the same bytes.

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"path"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/bind"
)

// DocInfo is what a document says about itself beyond the route table.
type DocInfo struct {
	// Version is info.version: the current API date version, e.g. CurrentVersion.
	Version string
	// ServerURL is servers[0].url. Empty means "/": relative to the host that
	// serves the document, which keeps the docs' try-it-out on the same
	// origin whatever address the browser used.
	ServerURL string
	// Title overrides the surface's default title ("ticketd Developer API").
	Title string
	// Description is info.description (CommonMark); empty gives a default.
	Description string
	// Webhooks are the outbound webhooks, documented in the webhooks
	// section of the Developer and Admin documents (see Webhooks).
	Webhooks []Webhook
}

// Limits of the generator: a table or type graph beyond them is a bug, not
// something to document.
const (
	oaOpenAPIVersion     = "3.1.0"
	oaMaxSchemaDepth     = 64 // nesting of anonymous types inside one field
	oaMaxComponentsCount = 2000
)

// Document returns the OpenAPI 3.1.0 JSON document of one surface
// (Developer, Storefront or Admin), built by reflection from the routes of
// that surface. It fails on an inconsistent table: duplicate operationId or
// method and path, a missing success status, a type it cannot describe.
func Document(routes []thttp.Route, surface thttp.Surface, info DocInfo) ([]byte, error) {
	doc, err := oaOpenAPIMap(routes, surface, info)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("openapi: encode %s document: %w", oaSurfaceName(surface), err)
	}
	return buf.Bytes(), nil
}

// DocumentPath returns where the document of a surface is served.
func DocumentPath(s thttp.Surface) string {
	switch s {
	case thttp.Storefront:
		return "/storefront/openapi.json"
	case thttp.Admin:
		return "/admin/openapi.json"
	case thttp.Door:
		return "/door/openapi.json"
	}
	return "/openapi.json"
}

// DocsPath returns where the interactive reference of a surface is served.
func DocsPath(s thttp.Surface) string {
	switch s {
	case thttp.Storefront:
		return "/storefront/docs"
	case thttp.Admin:
		return "/admin/docs"
	case thttp.Door:
		return "/door/docs"
	}
	return "/docs"
}

func oaSurfaceName(s thttp.Surface) string {
	switch s {
	case thttp.Developer:
		return "developer"
	case thttp.Storefront:
		return "storefront"
	case thttp.Admin:
		return "admin"
	case thttp.Door:
		return "door"
	case thttp.Public:
		return "public"
	}
	return "surface " + strconv.Itoa(int(s))
}

// oaVersioned reports whether a surface speaks date versions (service-version
// header in and out, 400 for an unknown date) and is rate limited.
func oaVersioned(s thttp.Surface) bool { return s == thttp.Developer || s == thttp.Storefront }

func oaOpenAPIMap(routes []thttp.Route, surface thttp.Surface, info DocInfo) (map[string]any, error) {
	if surface != thttp.Developer && surface != thttp.Storefront && surface != thttp.Admin && surface != thttp.Door {
		return nil, fmt.Errorf("openapi: %s has no document", oaSurfaceName(surface))
	}
	if info.Version == "" {
		return nil, fmt.Errorf("openapi: DocInfo.Version is empty")
	}
	g := oaNewGenerator()
	paths := map[string]any{}
	var tags []any
	seenTag := map[string]bool{}
	seenOp := map[string]string{}
	for i := range routes {
		r := &routes[i]
		if r.Surface != surface {
			continue
		}
		where := r.Method + " " + r.Path
		if r.OperationID == "" {
			return nil, fmt.Errorf("openapi: route %s: empty OperationID", where)
		}
		if prev, ok := seenOp[r.OperationID]; ok {
			return nil, fmt.Errorf("openapi: operationId %q used by %s and %s", r.OperationID, prev, where)
		}
		seenOp[r.OperationID] = where
		p, pathParams, err := oaOpenAPIPathOf(r.Path)
		if err != nil {
			return nil, fmt.Errorf("openapi: route %s: %w", r.OperationID, err)
		}
		method := strings.ToLower(r.Method)
		switch method {
		case "get", "post", "put", "patch", "delete":
		default:
			return nil, fmt.Errorf("openapi: route %s: unsupported method %q", r.OperationID, r.Method)
		}
		item, _ := paths[p].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[p] = item
		}
		if _, dup := item[method]; dup {
			return nil, fmt.Errorf("openapi: route %s: %s %s documented twice", r.OperationID, r.Method, p)
		}
		op, err := g.operation(r, surface, pathParams)
		if err != nil {
			return nil, fmt.Errorf("openapi: route %s: %w", r.OperationID, err)
		}
		item[method] = op
		if r.Tag != "" && !seenTag[r.Tag] {
			seenTag[r.Tag] = true
			tags = append(tags, map[string]any{"name": r.Tag, "description": oaTagDoc(r.Tag)})
		}
	}

	var hooks map[string]any
	if len(info.Webhooks) > 0 && surface != thttp.Storefront {
		var err error
		if hooks, err = g.webhooks(info.Webhooks); err != nil {
			return nil, err
		}
		tags = append(tags, map[string]any{"name": "Webhooks", "description": "Outbound webhooks: what the service POSTs to the endpoints a business unit configures."})
	}
	components, err := g.components(surface)
	if err != nil {
		return nil, err
	}
	title := info.Title
	if title == "" {
		title = oaDefaultTitle(surface)
	}
	desc := info.Description
	if desc == "" {
		desc = oaDefaultDescription(surface)
	}
	server := map[string]any{"url": "/", "description": "The host that serves this document."}
	if info.ServerURL != "" {
		server = map[string]any{"url": strings.TrimSuffix(info.ServerURL, "/"), "description": "This service (its TICKETD_BASE_URL)."}
	}
	scheme := oaSecuritySchemeName(surface)
	doc := map[string]any{
		"openapi": oaOpenAPIVersion,
		"info": map[string]any{"title": title, "version": info.Version, "description": desc,
			"contact": map[string]any{"name": "ticketd"},
			"license": map[string]any{"name": "Proprietary: no public license is granted", "identifier": "LicenseRef-Proprietary"}},
		"servers":    []any{server},
		"paths":      paths,
		"components": components,
		"security":   []any{map[string]any{scheme: []any{}}},
	}
	if len(tags) > 0 {
		doc["tags"] = tags
	}
	if hooks != nil {
		doc["webhooks"] = hooks
	}
	// Placeholders become $refs only now, when every component has its
	// final (collision-free) name.
	resolved, err := g.resolve(doc)
	if err != nil {
		return nil, err
	}
	oaPruneSchemas(resolved.(map[string]any))
	return resolved.(map[string]any), nil
}

// oaPruneSchemas drops the component schemas nothing refers to (the
// named enums and error schemas are offered to every document; each keeps
// those it uses).
func oaPruneSchemas(doc map[string]any) {
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for {
		used := map[string]bool{}
		var walk func(v any, skip string)
		walk = func(v any, skip string) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					if ref, ok := e.(string); ok && k == "$ref" {
						if n, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok && n != skip {
							used[n] = true
						}
					}
					walk(e, skip)
				}
			case []any:
				for _, e := range x {
					walk(e, skip)
				}
			}
		}
		for k, v := range doc {
			if k != "components" {
				walk(v, "")
			}
		}
		for k, v := range doc["components"].(map[string]any) {
			if k != "schemas" {
				walk(v, "")
			}
		}
		for name, s := range schemas {
			walk(s, name)
		}
		removed := false
		for name := range schemas {
			if !used[name] {
				delete(schemas, name)
				removed = true
			}
		}
		if !removed {
			return
		}
	}
}

func oaDefaultTitle(s thttp.Surface) string {
	switch s {
	case thttp.Storefront:
		return "ticketd Storefront API"
	case thttp.Admin:
		return "ticketd Admin API"
	case thttp.Door:
		return "ticketd Door API"
	}
	return "ticketd Developer API"
}

func oaDefaultDescription(s thttp.Surface) string {
	switch s {
	case thttp.Storefront:
		return "Browser-side API under /storefront/v1: the published catalog, checkout sessions and " +
			"rate-limited order placement. Authenticate with a publishable key: `Authorization: Bearer pk_...`. " +
			"Errors use one envelope: `{\"error\":{\"code\",\"status\",\"message\",\"details\"}}`."
	case thttp.Door:
		return "Door devices' API under /door/v1 (decisions §18): the event, its passes with a change cursor, batched scans " +
			"and a Server-Sent Events stream of pass changes. Authenticate with a device key: `Authorization: Bearer dk_...`, " +
			"which POST /door/v1/device/initialize hands out once for a setup code. 600 requests per minute per device; " +
			"a batch of scans counts once. " +
			"Errors use one envelope: `{\"error\":{\"code\",\"status\",\"message\",\"details\"}}`."
	case thttp.Admin:
		return "Console API under /admin/v1: business units, API keys and the console records of events. " +
			"Authenticate with the admin token: `Authorization: Bearer <TICKETD_ADMIN_TOKEN>`."
	}
	return "Server-side API under /v1. Authenticate with a secret key: `Authorization: Bearer sk_...`. " +
		"Send `service-version: YYYY-MM-DD` to choose a version; every response echoes the one in effect. " +
		"Errors use one envelope: `{\"error\":{\"code\",\"status\",\"message\",\"details\"}}`."
}

func oaSecuritySchemeName(s thttp.Surface) string {
	switch s {
	case thttp.Storefront:
		return "publishableKey"
	case thttp.Admin:
		return "adminToken"
	case thttp.Door:
		return "deviceKey"
	}
	return "secretKey"
}

// oaOpenAPIPathOf turns a fasthttp/router pattern into an OpenAPI path and the
// names of its parameters, in order. Regex constraints ({id:[0-9]+}) are
// dropped; optional and catch-all parameters cannot be expressed, so they
// are refused.
func oaOpenAPIPathOf(p string) (string, []string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", nil, fmt.Errorf("path %q does not start with /", p)
	}
	var out strings.Builder
	var names []string
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '{' {
			out.WriteByte(c)
			continue
		}
		end := strings.IndexByte(p[i:], '}')
		if end < 0 {
			return "", nil, fmt.Errorf("path %q: unclosed {", p)
		}
		inner := p[i+1 : i+end]
		name, constraint, _ := strings.Cut(inner, ":")
		if strings.HasSuffix(name, "?") || constraint == "*" {
			return "", nil, fmt.Errorf("path %q: optional or catch-all parameter %q", p, inner)
		}
		if name == "" {
			return "", nil, fmt.Errorf("path %q: empty parameter name", p)
		}
		for _, n := range names {
			if n == name {
				return "", nil, fmt.Errorf("path %q: parameter %q twice", p, name)
			}
		}
		names = append(names, name)
		out.WriteString("{" + name + "}")
		i += end
	}
	return out.String(), names, nil
}

// Interfaces a type may implement to shape its own schema.
type (
	oaJSONSchemaer interface{ JSONSchema() map[string]any }
	oaOptionaler   interface{ OptionalElem() any }
	oaExampler     interface{ Example() any }
	// oaAnyOfer is a value that is one of several record types (the change
	// feed's object): its schema is anyOf theirs.
	oaAnyOfer interface{ AnyOf() []any }
)

var (
	oaTimeType          = reflect.TypeOf(time.Time{})
	oaRawMessageType    = reflect.TypeOf(json.RawMessage(nil))
	oaJSONSchemaerType  = reflect.TypeOf((*oaJSONSchemaer)(nil)).Elem()
	oaOptionalerType    = reflect.TypeOf((*oaOptionaler)(nil)).Elem()
	oaExampleType       = reflect.TypeOf((*oaExampler)(nil)).Elem()
	oaAnyOferType       = reflect.TypeOf((*oaAnyOfer)(nil)).Elem()
	oaJSONMarshalerType = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	oaTextMarshalerType = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
)

// oaSchemaKey identifies one component schema: a named struct type seen as a
// request (strict: additionalProperties false, required from v tags) or as
// a response (required = what the encoder always writes).
type oaSchemaKey struct {
	t     reflect.Type
	input bool
}

// oaSchemaRef is a placeholder for a $ref to a component, replaced by resolve
// once all component names are known.
type oaSchemaRef struct{ key oaSchemaKey }

type oaGenerator struct {
	schemas map[oaSchemaKey]map[string]any
	order   []oaSchemaKey // first-seen order, for deterministic naming errors
	names   map[oaSchemaKey]string
}

func oaNewGenerator() *oaGenerator {
	return &oaGenerator{schemas: map[oaSchemaKey]map[string]any{}}
}

func (g *oaGenerator) operation(r *thttp.Route, surface thttp.Surface, pathParams []string) (map[string]any, error) {
	op := map[string]any{"operationId": r.OperationID}
	if r.Summary != "" {
		op["summary"] = r.Summary
	}
	doc := oaOperationDocs[r.OperationID]
	if r.Tag != "" {
		op["tags"] = []any{r.Tag}
	}

	params := []any{}
	for _, name := range pathParams {
		params = append(params, map[string]any{
			"name": name, "in": "path", "required": true,
			"description": oaPathParamDoc(name),
			"schema":      map[string]any{"type": "string", "minLength": 1, "maxLength": thttp.MaxPathParamLen},
		})
	}
	if r.Query != nil {
		qp, err := g.queryParams(reflect.TypeOf(r.Query))
		if err != nil {
			return nil, err
		}
		params = append(params, qp...)
	}
	if oaVersioned(surface) {
		params = append(params, map[string]any{"$ref": "#/components/parameters/ServiceVersion"})
	}
	if r.Method == "POST" {
		params = append(params, map[string]any{"$ref": "#/components/parameters/IdempotencyKey"})
	}
	if r.QueueToken {
		params = append(params, map[string]any{"$ref": "#/components/parameters/QueueToken"})
	}
	op["parameters"] = params

	hasBody := r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH"
	if r.Body != nil {
		bt := reflect.TypeOf(r.Body)
		s, err := g.schemaOf(bt, true, 0)
		if err != nil {
			return nil, fmt.Errorf("body %s: %w", bt, err)
		}
		if extra, ok := oaBodyExtras[r.OperationID]; ok {
			// On the schema itself: the body's component when it has one.
			sm, _ := s.(map[string]any)
			if ref, isRef := s.(*oaSchemaRef); isRef {
				sm = g.schemas[ref.key]
			}
			if sm == nil {
				return nil, fmt.Errorf("body %s: no schema to add %v to", bt, extra)
			}
			for k, v := range extra {
				sm[k] = oaDeepCopy(v)
			}
		}
		media := map[string]any{"schema": s}
		if ex, ok, err := oaExampleOf(bt); err != nil {
			return nil, fmt.Errorf("body %s: %w", bt, err)
		} else if ok {
			media["example"] = ex
		}
		_, nonEmpty := oaBodyExtras[r.OperationID]["minProperties"]
		op["requestBody"] = map[string]any{
			"required": nonEmpty || !oaAllOptional(bt),
			"content":  map[string]any{"application/json": media},
		}
	} else if r.Method == "POST" {
		// Actions that need no field take an empty body or {}.
		op["requestBody"] = map[string]any{
			"required":    false,
			"description": "Empty, or an empty JSON object.",
			"content": map[string]any{"application/json": map[string]any{
				"schema": map[string]any{"type": "object", "additionalProperties": false},
			}},
		}
	}

	responses := map[string]any{}
	if r.Success == 0 {
		return nil, fmt.Errorf("no Success status")
	}
	var body any
	var bodyExample any
	hasExample := false
	if r.Response != nil {
		rt := reflect.TypeOf(r.Response)
		s, err := g.schemaOf(rt, false, 0)
		if err != nil {
			return nil, fmt.Errorf("response %s: %w", rt, err)
		}
		body = s
		ex, ok, err := oaExampleOf(rt)
		if err != nil {
			return nil, fmt.Errorf("response %s: %w", rt, err)
		}
		bodyExample, hasExample = ex, ok
	}
	for _, st := range append([]int{r.Success}, r.AltSuccess...) {
		if st < 200 || st > 299 {
			return nil, fmt.Errorf("success status %d is not 2xx", st)
		}
		key := strconv.Itoa(st)
		if _, dup := responses[key]; dup {
			return nil, fmt.Errorf("success status %d twice", st)
		}
		headers := oaResponseHeaders(surface, 0)
		for name, desc := range r.Headers {
			headers[name] = map[string]any{"description": desc, "schema": map[string]any{"type": "string", "maxLength": 512}}
		}
		if r.Method == "POST" {
			headers["Idempotent-Replayed"] = map[string]any{"$ref": "#/components/headers/IdempotentReplayed"}
		}
		if r.RetryAfter {
			headers["Retry-After"] = map[string]any{"$ref": "#/components/headers/RetryAfter"}
		}
		resp := map[string]any{
			"description": nethttp.StatusText(st),
			"headers":     headers,
		}
		if body != nil && st != 204 {
			media := map[string]any{"schema": body}
			if hasExample {
				media["example"] = bodyExample
			}
			ct := r.ContentType
			if ct == "" {
				ct = "application/json"
			}
			content := map[string]any{ct: media}
			for mt, v := range oaSuccessExtraContent[r.OperationID] {
				content[mt] = oaDeepCopy(v)
			}
			resp["content"] = content
		}
		responses[key] = resp
	}
	byStatus, err := oaReasonsOf(r, surface, hasBody, doc.reasons)
	if err != nil {
		return nil, err
	}
	statuses := make([]int, 0, len(byStatus))
	for st := range byStatus {
		statuses = append(statuses, st)
	}
	sort.Ints(statuses)
	for _, st := range statuses {
		key := strconv.Itoa(st)
		if _, dup := responses[key]; dup {
			return nil, fmt.Errorf("status %d is both a success and an error", st)
		}
		responses[key] = oaErrorResponse(surface, st, byStatus[st])
	}
	op["responses"] = responses
	if r.NoKey {
		op["security"] = []any{}
	}
	op["description"] = oaOperationDescription(r, doc.text, statuses, byStatus)
	return op, nil
}

// oaAllOptional reports whether a body type accepts an empty object: then the
// request body itself is optional (the binder accepts an empty body).
func oaAllOptional(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == oaTimeType {
		return false
	}
	ok := true
	oaWalkFields(t, "json", func(f reflect.StructField, _ string) {
		if bind.ParseRules(f.Tag.Get("v")).Required {
			ok = false
		}
	})
	return ok
}

// oaReasonsOf lists the error responses of a route with the reasons each
// can carry: those every route of the surface can answer (authentication,
// rate limits, versions, bodies, idempotency, availability), the route's
// own statuses with their generic reason, and the specific reasons of its
// description table entry under their statuses.
func oaReasonsOf(r *thttp.Route, surface thttp.Surface, hasBody bool, specific []string) (map[int][]string, error) {
	out := map[int][]string{}
	add := func(st int, reasons ...string) {
		for _, rs := range reasons {
			if !slices.Contains(out[st], rs) {
				out[st] = append(out[st], rs)
			}
		}
	}
	add(401, event.ReasonUnauthenticated)
	add(429, event.ReasonAuthThrottled) // too many failed authentications from one address
	add(405, event.ReasonMethodNotAllowed)
	if oaVersioned(surface) {
		add(400, event.ReasonUnknownAPIVersion)
		add(429, event.ReasonRateLimited)
	}
	if surface == thttp.Door && !r.NoKey {
		add(429, event.ReasonRateLimited)
	}
	if r.Body != nil || r.Query != nil || len(oaPathParams(r.Path)) > 0 {
		add(400, event.ReasonInvalidArgument)
	}
	if hasBody {
		add(400, event.ReasonInvalidArgument) // a body that does not decode, even where none is expected
		add(413, event.ReasonPayloadTooLarge)
	}
	if r.Method != "GET" {
		// Any write may meet a full queue, a deadline or a storage fault.
		add(503, event.ReasonUnavailable, event.ReasonServiceBusy, event.ReasonStorageUnavailable)
		if strings.Contains(r.Path, "{eventId}") || strings.Contains(r.Path, "{publicId}") {
			add(503, event.ReasonEventBusy)
		}
	}
	if r.Method == "POST" {
		add(409, event.ReasonIdempotencyKeyInProgress)
		add(422, event.ReasonIdempotencyKeyReused)
	}
	catalogue := map[string]int{}
	for _, ri := range event.Reasons() {
		catalogue[ri.Name] = ri.Status
	}
	named := map[int]bool{}
	for _, rs := range specific {
		st, ok := catalogue[rs]
		if !ok {
			return nil, fmt.Errorf("reason %s is not in the catalogue", rs)
		}
		add(st, rs)
		named[st] = true
	}
	for _, st := range r.Errors {
		if !named[st] && len(out[st]) == 0 {
			// A 412 should name its reasons in oaOperationDocs (a test of
			// the served table checks); the generic one keeps the
			// document true meanwhile.
			add(st, event.DefaultReason(st))
		}
	}
	for st := range out {
		sort.Strings(out[st])
	}
	return out, nil
}

// oaPathParams returns the parameter names of a router pattern.
func oaPathParams(p string) []string {
	_, names, _ := oaOpenAPIPathOf(p)
	return names
}

// oaErrorResponse is one error response of an operation: the envelope,
// the reasons this operation answers with that status (in its description
// and, for tools, as x-reasons), and the headers of the status.
func oaErrorResponse(surface thttp.Surface, st int, reasons []string) map[string]any {
	var b strings.Builder
	b.WriteString(oaStatusSentence(st))
	b.WriteString(" `error.reason`: ")
	for i, rs := range reasons {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("`" + rs + "`")
	}
	b.WriteString(" (see ErrorReason).")
	headers := oaResponseHeaders(surface, st)
	if st == 405 {
		headers["Allow"] = map[string]any{"$ref": "#/components/headers/Allow"}
	}
	return map[string]any{
		"description": b.String(),
		"headers":     headers,
		"content": map[string]any{"application/json": map[string]any{
			"schema": map[string]any{"$ref": "#/components/schemas/ErrorEnvelope"},
		}},
		"x-reasons": oaStrings(reasons),
	}
}

func oaStatusSentence(st int) string {
	switch st {
	case 405:
		return "Method not allowed: answered for a method this path does not serve, with the Allow header; never for this operation's own method."
	case 503:
		return "Unavailable: whether the request was applied is unknown; retry with the same Idempotency-Key and body: a write that was applied replays its answer, one that was not runs then."
	case 429:
		return "Too many requests: retry after Retry-After seconds."
	}
	return nethttp.StatusText(st) + "."
}

// oaOperationDescription is an operation's description: what it does and
// its rules (oaOperationDocs), the error causes with their reasons, and
// for a POST how to retry it.
func oaOperationDescription(r *thttp.Route, text string, statuses []int, byStatus map[int][]string) string {
	var b strings.Builder
	if text == "" {
		text = r.Summary + "."
	}
	b.WriteString(text)
	b.WriteString("\n\n**Errors** (status: `error.reason`):")
	for _, st := range statuses {
		b.WriteString("\n- " + strconv.Itoa(st) + ": ")
		for i, rs := range byStatus[st] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("`" + rs + "`")
		}
	}
	if r.Method == "POST" {
		b.WriteString("\n\n" + oaRetryNote)
	}
	return b.String()
}

// oaRetryNote ends the description of every POST operation. A write that
// answers 503, times out or loses its connection may still have been
// applied, so a client cannot tell "not applied" from "unknown"; the
// idempotency key is its way out: a write commits its key's answer with
// itself (decisions §20), so a retry after a 503 too replays a write that
// was applied, and runs one that was not.
const oaRetryNote = "**Retrying:** a 503, a timeout or a dropped connection does not say whether this request " +
	"was applied: the outcome is unknown. Send an `Idempotency-Key` header with every POST, and retry with the " +
	"same `Idempotency-Key` and the same body: keys are kept 24 hours, and once the first request has completed " +
	"a retry replays its answer (`Idempotent-Replayed: true`) instead of applying it again. A write commits its " +
	"key's answer together with itself, so this holds after a 503, a crash or a failover too: a retry of a request " +
	"that was applied replays its answer, one of a request that was not runs then. While the first request is " +
	"still running, and for up to 15 seconds after a 503 whose write may still land, a retry answers 409 (retry " +
	"later). On the storefront a key is its client's: keys are kept per publishable key and client address."

// oaErrorReasonSchema is the enum of every reason, each value described.
func oaErrorReasonSchema() map[string]any {
	var names []any
	descs := map[string]any{}
	var b strings.Builder
	b.WriteString("The stable identifier of an error's cause, for programs to switch on; `message` is for people. " +
		"Two causes never share a reason and a reason keeps its meaning; new reasons may be added, so treat an " +
		"unknown one by its HTTP status. A 401 has one reason whatever the cause.\n\n| reason | status | cause |\n|---|---|---|")
	for _, ri := range event.Reasons() {
		names = append(names, ri.Name)
		descs[ri.Name] = ri.Description
		b.WriteString("\n| `" + ri.Name + "` | " + strconv.Itoa(ri.Status) + " | " + ri.Description + " |")
	}
	return map[string]any{"type": "string", "enum": names, "x-enumDescriptions": descs, "description": b.String()}
}

func oaErrorStatusSchema() map[string]any {
	return map[string]any{"type": "string", "description": "The class of the error, one per HTTP status (413 and 422 are INVALID_ARGUMENT).",
		"enum": oaStrings([]string{"INVALID_ARGUMENT", "UNAUTHENTICATED", "PERMISSION_DENIED", "NOT_FOUND",
			"UNIMPLEMENTED", "ALREADY_EXISTS", "FAILED_PRECONDITION", "RESOURCE_EXHAUSTED", "INTERNAL", "UNAVAILABLE"})}
}

func oaStrings(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// oaResponseHeaders returns the headers of a response with status st (0 for
// a success).
func oaResponseHeaders(surface thttp.Surface, st int) map[string]any {
	h := map[string]any{
		"Request-Id": map[string]any{"$ref": "#/components/headers/RequestId"},
	}
	if oaVersioned(surface) {
		h["service-version"] = map[string]any{"$ref": "#/components/headers/ServiceVersion"}
		h["RateLimit-Limit"] = map[string]any{"$ref": "#/components/headers/RateLimitLimit"}
		h["RateLimit-Remaining"] = map[string]any{"$ref": "#/components/headers/RateLimitRemaining"}
		h["RateLimit-Reset"] = map[string]any{"$ref": "#/components/headers/RateLimitReset"}
	}
	if st == 429 {
		// Every surface: AUTH_THROTTLED says when to retry too.
		h["Retry-After"] = map[string]any{"$ref": "#/components/headers/RetryAfter"}
	}
	return h
}

// components returns the components object; schemas are built already.
func (g *oaGenerator) components(surface thttp.Surface) (map[string]any, error) {
	if len(g.schemas) > oaMaxComponentsCount {
		return nil, fmt.Errorf("openapi: %d component schemas, more than %d", len(g.schemas), oaMaxComponentsCount)
	}
	if err := g.assignNames(); err != nil {
		return nil, err
	}
	schemas := map[string]any{
		"ErrorEnvelope": oaErrorEnvelopeSchema(),
		"ErrorDetail": map[string]any{
			"type":                 "object",
			"description":          "One offending field of a request.",
			"required":             []any{"field", "reason"},
			"properties":           map[string]any{"field": map[string]any{"type": "string", "description": "JSON path of the field, e.g. items[0].quantity; empty for the body as a whole."}, "reason": map[string]any{"type": "string", "description": "What is wrong with the field, for people (e.g. \"must be at most 100\")."}},
			"additionalProperties": false,
		},
	}
	for k, s := range g.schemas {
		schemas[g.names[k]] = s
	}

	schemas["ErrorReason"] = oaErrorReasonSchema()
	schemas["ErrorStatus"] = oaErrorStatusSchema()
	for name, vals := range oaEnumSchemas {
		schemas[name] = oaEnumSchema(name, vals)
	}
	// Every surface: the admin API names versions too (an API key's pin);
	// unreferenced schemas are pruned.
	schemas["ApiVersion"] = map[string]any{"type": "string", "enum": oaStrings(thttp.KnownVersions()),
		"description": "A date version of the API (YYYY-MM-DD); " + thttp.CurrentVersion + " is the current one."}

	headers := map[string]any{
		"IdempotentReplayed": map[string]any{
			"description": "true when this answer is the stored first answer of a request with the same Idempotency-Key.",
			"schema":      map[string]any{"type": "string", "enum": []any{"true"}},
		},
		"RequestId": map[string]any{
			"description": "Identifier of this request (the one sent in Request-Id, or a new one); quote it in support requests.",
			"schema":      map[string]any{"type": "string"},
		},
	}
	params := map[string]any{
		"IdempotencyKey": map[string]any{
			"name": "Idempotency-Key", "in": "header", "required": false,
			"description": "Makes a POST safe to retry for 24 hours: the same key and body replay the first answer " +
				"(with Idempotent-Replayed: true); the same key with another body answers 422; while the first " +
				"request is in flight a second one answers 409. Send a fresh key with every POST and keep it for " +
				"its retries: after a timeout or a dropped connection the outcome is unknown, and a retry with " +
				"the same key gets the first answer instead of a second record. A 5xx answer is not kept.",
			"schema": map[string]any{"type": "string", "minLength": 1, "maxLength": 255},
		},
	}
	if surface == thttp.Storefront {
		// Only the storefront takes a waiting room's token (an unused
		// component elsewhere is a lint warning).
		params["QueueToken"] = map[string]any{
			"name": "Queue-Token", "in": "header", "required": false,
			"description": "The queueToken of an admitted waiting-room entry (decisions §19). From the waiting room's onSaleAt a storefront " +
				"order or checkout session of the event needs one: missing answers 412 QUEUE_TOKEN_REQUIRED; unknown, of another event, " +
				"used or past admittedUntil answers 412 QUEUE_TOKEN_INVALID. A token places one order.",
			"schema": map[string]any{"type": "string", "minLength": 1, "maxLength": 100},
		}
	}
	headers["RetryAfter"] = map[string]any{
		"description": "Seconds to wait before retrying.",
		"required":    true,
		"schema":      map[string]any{"type": "integer", "minimum": 0},
	}
	if oaVersioned(surface) {
		headers["ServiceVersion"] = map[string]any{
			"description": "The API version that served the request (YYYY-MM-DD).",
			"required":    true,
			"schema":      oaVersionSchema(),
		}
		headers["RateLimitLimit"] = map[string]any{
			"description": "Requests the budget's token bucket holds: half a minute's; it refills continuously at the per-minute rate.",
			"schema":      map[string]any{"type": "integer", "minimum": 0},
		}
		headers["RateLimitRemaining"] = map[string]any{
			"description": "Requests the bucket still holds.",
			"schema":      map[string]any{"type": "integer", "minimum": 0},
		}
		headers["RateLimitReset"] = map[string]any{
			"description": "Seconds until the bucket is full again.",
			"schema":      map[string]any{"type": "integer", "minimum": 0},
		}
		params["ServiceVersion"] = map[string]any{
			"name": "service-version", "in": "header", "required": false,
			"description": "Serve the request in this API version instead of the key's pinned one; an unknown date answers 400.",
			"schema":      oaVersionSchema(),
		}
	}

	var sec map[string]any
	switch surface {
	case thttp.Storefront:
		sec = map[string]any{"type": "http", "scheme": "bearer",
			"description": "Publishable key (pk_...): public, bound to one business unit and its listed origins."}
	case thttp.Admin:
		sec = map[string]any{"type": "http", "scheme": "bearer",
			"description": "The admin token (TICKETD_ADMIN_TOKEN)."}
	case thttp.Door:
		sec = map[string]any{"type": "http", "scheme": "bearer",
			"description": "Device key (dk_...): one door device of one event; revoked devices answer 401."}
	default:
		sec = map[string]any{"type": "http", "scheme": "bearer",
			"description": "Secret key (sk_...): server-side only, bound to one business unit."}
	}
	headers["Allow"] = map[string]any{
		"description": "The methods this path serves, comma-separated.",
		"required":    true,
		"schema":      map[string]any{"type": "string", "maxLength": 100},
	}
	return map[string]any{
		"schemas":         schemas,
		"headers":         headers,
		"parameters":      params,
		"securitySchemes": map[string]any{oaSecuritySchemeName(surface): sec},
	}, nil
}

func oaVersionSchema() map[string]any {
	return map[string]any{"$ref": "#/components/schemas/ApiVersion"}
}

func oaErrorEnvelopeSchema() map[string]any {
	return map[string]any{
		"type":        "object",
		"description": "The envelope of every error response.",
		"required":    []any{"error"},
		"properties": map[string]any{
			"error": map[string]any{
				"type":     "object",
				"required": []any{"code", "status", "message", "reason"},
				"properties": map[string]any{
					"code":    map[string]any{"type": "integer", "minimum": 400, "maximum": 599, "description": "The HTTP status."},
					"status":  map[string]any{"$ref": "#/components/schemas/ErrorStatus"},
					"message": map[string]any{"type": "string", "description": "A sentence for people; it may change. Programs read reason."},
					"details": map[string]any{
						"type":        "array",
						"description": "Field-level issues of a 400.",
						"items":       map[string]any{"$ref": "#/components/schemas/ErrorDetail"},
					},
					"reason": map[string]any{"$ref": "#/components/schemas/ErrorReason"},
				},
				"additionalProperties": false,
			},
		},
		"additionalProperties": false,
	}
}

// queryParams documents the `query:"name"` fields of a Query struct.
func (g *oaGenerator) queryParams(t reflect.Type) ([]any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("query type %s is not a struct", t)
	}
	var out []any
	var err error
	seen := map[string]bool{}
	oaWalkFields(t, "query", func(f reflect.StructField, name string) {
		if err != nil {
			return
		}
		if seen[name] {
			err = fmt.Errorf("query parameter %q twice in %s", name, t)
			return
		}
		seen[name] = true
		var s any
		var rules bind.Rules
		s, rules, err = g.fieldSchema(f, true, name)
		if err != nil {
			err = fmt.Errorf("query %s.%s: %w", t, f.Name, err)
			return
		}
		if m, ok := s.(map[string]any); ok && name == "limit" {
			m["default"] = bind.DefaultPageSize
		}
		p := map[string]any{"name": name, "in": "query", "required": rules.Required, "schema": s}
		if d := f.Tag.Get("doc"); d != "" {
			// Said once, on the parameter, not again on its schema.
			if m, ok := s.(map[string]any); ok {
				delete(m, "description")
			}
			p["description"] = d
		}
		out = append(out, p)
	})
	return out, err
}

// oaWalkFields calls fn, in field order, for each field that encoding/json
// (tagKey "json") or the query binder (tagKey "query") sees in t, with its
// wire name. Embedded structs without a name are flattened and a field
// shadows the deeper ones of the same name, as encoding/json does: the
// shallowest wins, then the one with a tagged name; a tie hides them all.
func oaWalkFields(t reflect.Type, tagKey string, fn func(f reflect.StructField, name string)) {
	type candidate struct {
		f      reflect.StructField
		name   string
		depth  int
		tagged bool
	}
	var all []candidate
	var collect func(t reflect.Type, depth int)
	collect = func(t reflect.Type, depth int) {
		if depth > oaMaxSchemaDepth {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get(tagKey)
			tagName, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && tagName == "" && tag != "-" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					collect(ft, depth+1)
					continue
				}
			}
			if !f.IsExported() || tag == "-" {
				continue
			}
			var name string
			if tagKey == "json" {
				var ok bool
				if name, ok = bind.JSONName(f); !ok {
					continue
				}
			} else if name = tagName; name == "" {
				continue
			}
			all = append(all, candidate{f: f, name: name, depth: depth, tagged: tagName != ""})
		}
	}
	collect(t, 0)

	byName := map[string][]int{}
	for i, c := range all {
		byName[c.name] = append(byName[c.name], i)
	}
	for i, c := range all {
		best := -1
		tie := false
		for _, j := range byName[c.name] {
			o := all[j]
			switch {
			case best < 0:
				best = j
			case o.depth < all[best].depth || (o.depth == all[best].depth && o.tagged && !all[best].tagged):
				best, tie = j, false
			case o.depth == all[best].depth && o.tagged == all[best].tagged:
				tie = true
			}
		}
		if best == i && !tie {
			fn(c.f, c.name)
		}
	}
}

// fieldSchema returns the schema of a struct field with its v-tag rules,
// nullability and description applied. query is the parameter name for a
// query field, "" for a body or response member.
func (g *oaGenerator) fieldSchema(f reflect.StructField, input bool, query string) (s any, rules bind.Rules, err error) {
	defer func() {
		// parseRules panics on a typo; a generator answering an error names
		// the field instead of crashing the server at start.
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	rules = bind.ParseRules(f.Tag.Get("v"))
	if query != "" {
		// The binder's own bounds of limit and cursor (bind.go).
		rules = bind.QueryParamRules(query, rules)
	}
	s, err = g.schemaOf(f.Type, input, 0)
	if err != nil {
		return nil, rules, err
	}
	if !input && !rules.Nullable && oaMayBeNull(f) {
		// The encoder writes null for a nil pointer or an empty optional:
		// the response schema says so even when the tag forgot.
		rules.Nullable = true
	}
	s, err = oaApplyRules(s, rules)
	if err != nil {
		return nil, rules, err
	}
	if d := f.Tag.Get("doc"); d != "" {
		s = oaWithDescription(s, d)
	}
	return s, rules, nil
}

// oaApplyRules puts the v-tag bounds on a field's schema. On an array of
// scalars the scalar rules (lengths, bounds, enum, format) constrain the
// items, and the item rules constrain the array.
func oaApplyRules(s any, r bind.Rules) (any, error) {
	m, isMap := s.(map[string]any)
	if !isMap {
		if r.Min != nil || r.Max != nil || r.MinLen != nil || r.MaxLen != nil || r.MaxItems != nil ||
			r.MinItems != nil || r.Enum != nil || r.Format != "" || r.Pattern != "" {
			return nil, fmt.Errorf("bounds on an object field")
		}
		if r.Nullable {
			return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}, nil
		}
		return s, nil
	}
	target := m
	if m["type"] == "array" {
		if r.MinItems != nil {
			m["minItems"] = *r.MinItems
		}
		if r.MaxItems != nil {
			m["maxItems"] = *r.MaxItems
		}
		if items, ok := m["items"].(map[string]any); ok {
			target = items
		} else if r.Min != nil || r.Max != nil || r.MinLen != nil || r.MaxLen != nil || r.Enum != nil || r.Format != "" || r.Pattern != "" {
			return nil, fmt.Errorf("scalar bounds on an array of objects")
		}
	} else if r.MinItems != nil || r.MaxItems != nil {
		return nil, fmt.Errorf("minItems/maxItems on a non-array field")
	}
	if r.Min != nil {
		target["minimum"] = *r.Min
	}
	if r.Max != nil {
		target["maximum"] = *r.Max
	}
	if r.MinLen != nil {
		target["minLength"] = *r.MinLen
	}
	if r.MaxLen != nil {
		target["maxLength"] = *r.MaxLen
	}
	if r.Enum != nil {
		if name := oaEnumName(r.Enum); name != "" && target["type"] == "string" {
			// One named schema per concept, so a generated client has one
			// type for it, not a copy per field.
			delete(target, "type")
			target["$ref"] = "#/components/schemas/" + name
		} else {
			vals := make([]any, len(r.Enum))
			for i, v := range r.Enum {
				vals[i] = v
			}
			target["enum"] = vals
		}
	}
	if r.Format != "" {
		target["format"] = r.Format
	}
	if r.Pattern != "" {
		target["pattern"] = bind.Patterns[r.Pattern].ECMA
	}
	if r.Nullable {
		oaMakeNullable(m)
	}
	return m, nil
}

// oaMakeNullable widens a schema to accept null: a 3.1 type array where there
// is a type, null added to an enum.
func oaMakeNullable(m map[string]any) {
	switch t := m["type"].(type) {
	case string:
		m["type"] = []any{t, "null"}
	case []any:
		for _, x := range t {
			if x == "null" {
				return
			}
		}
		m["type"] = append(t, "null")
	case nil:
		if alts, ok := m["anyOf"].([]any); ok {
			m["anyOf"] = append(alts, map[string]any{"type": "null"})
			return
		}
		if _, isRef := m["$ref"]; isRef {
			ref := map[string]any{"$ref": m["$ref"]}
			delete(m, "$ref")
			m["anyOf"] = []any{ref, map[string]any{"type": "null"}}
		}
		// No type and no ref: the schema already admits null.
		return
	}
	if e, ok := m["enum"].([]any); ok {
		m["enum"] = append(e, nil)
	}
}

func oaWithDescription(s any, d string) any {
	if m, ok := s.(map[string]any); ok {
		m["description"] = d
		return m
	}
	// A $ref with a sibling description is valid in 3.1.
	return map[string]any{"allOf": []any{s}, "description": d}
}

// oaImplements reports whether t or *t implements iface, and a value of t (or
// *t) to call its methods on.
func oaImplements(t, iface reflect.Type) (reflect.Value, bool) {
	if t.Implements(iface) {
		if t.Kind() == reflect.Pointer {
			return reflect.New(t.Elem()), true
		}
		return reflect.New(t).Elem(), true
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(iface) {
		return reflect.New(t), true
	}
	return reflect.Value{}, false
}

// schemaOf returns the schema of a type: a fresh map the caller may modify,
// or a *oaSchemaRef to a component.
func (g *oaGenerator) schemaOf(t reflect.Type, input bool, depth int) (any, error) {
	if depth > oaMaxSchemaDepth {
		return nil, fmt.Errorf("type %s nests deeper than %d", t, oaMaxSchemaDepth)
	}
	if v, ok := oaImplements(t, oaJSONSchemaerType); ok {
		s := oaDeepCopy(v.Interface().(oaJSONSchemaer).JSONSchema())
		if m, isMap := s.(map[string]any); isMap && !input {
			// A pattern bounds what a request may send (a timestamp's year
			// as written); an answer is described by what it holds (a
			// timestamp in UTC, whose year may differ by the offset).
			delete(m, "pattern")
		}
		return s, nil
	}
	if v, ok := oaImplements(t, oaAnyOferType); ok {
		var alts []any
		for _, alt := range v.Interface().(oaAnyOfer).AnyOf() {
			s, err := g.schemaOf(reflect.TypeOf(alt), input, depth+1)
			if err != nil {
				return nil, err
			}
			alts = append(alts, s)
		}
		return map[string]any{"anyOf": alts}, nil
	}
	if v, ok := oaImplements(t, oaOptionalerType); ok {
		inner := v.Interface().(oaOptionaler).OptionalElem()
		if inner == nil {
			return map[string]any{}, nil
		}
		return g.schemaOf(reflect.TypeOf(inner), input, depth+1)
	}
	if t == oaTimeType {
		return map[string]any{"type": "string", "format": "date-time", "maxLength": bind.MaxDateTimeLen}, nil
	}
	if t == oaRawMessageType {
		return map[string]any{}, nil
	}
	if t.Kind() == reflect.Pointer {
		return g.schemaOf(t.Elem(), input, depth+1)
	}
	if _, ok := oaImplements(t, oaJSONMarshalerType); ok {
		return nil, fmt.Errorf("type %s marshals itself but has no JSONSchema() map[string]any method", t)
	}
	if _, ok := oaImplements(t, oaTextMarshalerType); ok {
		return map[string]any{"type": "string"}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Interface:
		return map[string]any{}, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}, nil
		}
		items, err := g.schemaOf(t.Elem(), input, depth+1)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		k := t.Key()
		switch k.Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			if _, ok := oaImplements(k, oaTextMarshalerType); !ok {
				return nil, fmt.Errorf("map key type %s cannot be a JSON object key", k)
			}
		}
		m := map[string]any{"type": "object"}
		if t.Elem().Kind() != reflect.Interface {
			vs, err := g.schemaOf(t.Elem(), input, depth+1)
			if err != nil {
				return nil, err
			}
			m["additionalProperties"] = vs
		}
		return m, nil
	case reflect.Struct:
		if t.Name() == "" {
			return g.structSchema(t, input, depth)
		}
		key := oaSchemaKey{t: t, input: input}
		if _, ok := g.schemas[key]; !ok {
			// Reserve the slot first so a recursive type refers to itself.
			g.schemas[key] = nil
			g.order = append(g.order, key)
			s, err := g.structSchema(t, input, depth)
			if err != nil {
				return nil, err
			}
			g.schemas[key] = s
		}
		return &oaSchemaRef{key: key}, nil
	}
	return nil, fmt.Errorf("type %s (%s) has no JSON form", t, t.Kind())
}

func (g *oaGenerator) structSchema(t reflect.Type, input bool, depth int) (map[string]any, error) {
	props := map[string]any{}
	required := []any{}
	var err error
	oaWalkFields(t, "json", func(f reflect.StructField, name string) {
		if err != nil {
			return
		}
		if _, dup := props[name]; dup {
			err = fmt.Errorf("type %s: json name %q twice", t, name)
			return
		}
		var s any
		var rules bind.Rules
		s, rules, err = g.fieldSchema(f, input, "")
		if err != nil {
			err = fmt.Errorf("%s.%s: %w", t, f.Name, err)
			return
		}
		if m, ok := s.(map[string]any); ok && len(m) == 0 && f.Type == oaRawMessageType && name == "responses" {
			// Form answers are a free-form object; a response without
			// any writes null.
			m["type"] = "object"
			if !input {
				m["type"] = []any{"object", "null"}
			}
		}
		if f.Tag.Get("doc") == "" {
			if d := oaPropertyDoc(t, name, input); d != "" {
				s = oaWithDescription(s, d)
			}
		}
		props[name] = s
		if input {
			if rules.Required {
				required = append(required, name)
			}
		} else if !oaOmitted(f) {
			required = append(required, name)
		}
	})
	if err != nil {
		return nil, err
	}
	m := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		m["required"] = required
	}
	if extra, ok := oaTypeExtras[t.Name()]; ok && input && t.PkgPath() == "ticketd/event" {
		for k, v := range oaDeepCopy(extra).(map[string]any) {
			m[k] = v
		}
	}
	if input {
		// The binder decodes strictly: an unknown field is a 400.
		m["additionalProperties"] = false
	}
	return m, nil
}

// oaMayBeNull reports whether the JSON encoder can write null for a field
// of a response: a pointer without omitempty, or an optional wrapper (its
// null state is written as null whatever the tag).
func oaMayBeNull(f reflect.StructField) bool {
	if _, ok := oaImplements(f.Type, oaOptionalerType); ok {
		return true
	}
	if _, ok := oaImplements(f.Type, oaJSONSchemaerType); ok && f.Type.Kind() != reflect.Pointer {
		return false
	}
	return f.Type.Kind() == reflect.Pointer && !oaOmitted(f)
}

// oaOmitted reports whether the encoder may leave a field out.
func oaOmitted(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	for _, o := range strings.Split(opts, ",") {
		if o == "omitempty" || o == "omitzero" {
			return true
		}
	}
	return false
}

// oaExampleOf returns the example of a type with an `Example() any` method,
// as the JSON encoder would write it.
func oaExampleOf(t reflect.Type) (any, bool, error) {
	if t.Kind() == reflect.Slice {
		return nil, false, nil
	}
	v, ok := oaImplements(t, oaExampleType)
	if !ok {
		return nil, false, nil
	}
	b, err := json.Marshal(v.Interface().(oaExampler).Example())
	if err != nil {
		return nil, false, fmt.Errorf("encode example: %w", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, false, fmt.Errorf("decode example: %w", err)
	}
	return out, true, nil
}

// oaDeepCopy copies a schema map, so a type's JSONSchema result can be
// modified (bounds, nullability) without touching what it returned.
func oaDeepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = oaDeepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = oaDeepCopy(e)
		}
		return s
	case []string:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = e
		}
		return s
	}
	return v
}

// assignNames gives each component schema its name: the Go type's name,
// with generic instances spelled as words (List[event.Registration] ->
// RegistrationList). A name used by two types gets the package name in
// front; a type used both as request and response gets "Input" on its
// request form.
func (g *oaGenerator) assignNames() error {
	base := map[oaSchemaKey]string{}
	both := map[reflect.Type]int{}
	for _, k := range g.order {
		both[k.t]++
	}
	byName := map[string][]reflect.Type{}
	for _, k := range g.order {
		n := oaTypeName(k.t.String(), k.t.Name())
		base[k] = n
		list := byName[n]
		found := false
		for _, t := range list {
			if t == k.t {
				found = true
			}
		}
		if !found {
			byName[n] = append(list, k.t)
		}
	}
	reserved := map[string]bool{"ErrorEnvelope": true, "ErrorDetail": true}
	g.names = map[oaSchemaKey]string{}
	used := map[string]oaSchemaKey{}
	for _, k := range g.order {
		n := base[k]
		if len(byName[n]) > 1 || reserved[n] {
			n = oaExportName(path.Base(k.t.PkgPath())) + n
		}
		if k.input && both[k.t] > 1 {
			n += "Input"
		}
		if prev, dup := used[n]; dup || reserved[n] {
			return fmt.Errorf("openapi: schema name %s fits both %s and %s", n, prev.t, k.t)
		}
		used[n] = k
		g.names[k] = n
	}
	return nil
}

// oaTypeName turns a Go type name into a schema name. full is reflect's
// String() ("event.List[ticketd/event.Registration]"), name its
// Name().
func oaTypeName(full, name string) string {
	i := strings.IndexByte(name, '[')
	if i < 0 {
		return oaExportName(name)
	}
	outer := name[:i]
	args := oaSplitTypeArgs(name[i+1 : len(name)-1])
	var b strings.Builder
	for _, a := range args {
		b.WriteString(oaArgName(a))
	}
	b.WriteString(oaExportName(outer))
	return b.String()
}

// oaArgName names one type argument: path and package dropped, pointers
// ignored, slices and maps spelled out.
func oaArgName(a string) string {
	a = strings.TrimSpace(a)
	switch {
	case strings.HasPrefix(a, "*"):
		return oaArgName(a[1:])
	case strings.HasPrefix(a, "[]"):
		return oaArgName(a[2:]) + "Array"
	case strings.HasPrefix(a, "map["):
		depth := 0
		for i := 3; i < len(a); i++ {
			switch a[i] {
			case '[':
				depth++
			case ']':
				depth--
				if depth == 0 {
					return oaArgName(a[i+1:]) + "Map"
				}
			}
		}
	}
	// Strip the import path: the last '/' before any '['.
	head := a
	if i := strings.IndexByte(head, '['); i >= 0 {
		head = head[:i]
	}
	if i := strings.LastIndexByte(head, '/'); i >= 0 {
		a = a[i+1:]
	}
	if i := strings.IndexByte(a, '.'); i >= 0 && (strings.IndexByte(a, '[') < 0 || i < strings.IndexByte(a, '[')) {
		a = a[i+1:]
	}
	return oaTypeName(a, a)
}

// oaSplitTypeArgs splits "A, pkg.B[C, D]" at top-level commas.
func oaSplitTypeArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// oaExportName keeps letters and digits and upper-cases the first letter.
func oaExportName(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			if up && r >= 'a' && r <= 'z' {
				r -= 'a' - 'A'
			}
			up = false
			b.WriteRune(r)
		default:
			up = true
		}
	}
	return b.String()
}

// resolve replaces oaSchemaRef placeholders with $ref objects.
func (g *oaGenerator) resolve(v any) (any, error) {
	switch x := v.(type) {
	case *oaSchemaRef:
		n, ok := g.names[x.key]
		if !ok {
			return nil, fmt.Errorf("openapi: no schema name for %s", x.key.t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + n}, nil
	case map[string]any:
		for k, e := range x {
			r, err := g.resolve(e)
			if err != nil {
				return nil, err
			}
			x[k] = r
		}
		return x, nil
	case []any:
		for i, e := range x {
			r, err := g.resolve(e)
			if err != nil {
				return nil, err
			}
			x[i] = r
		}
		return x, nil
	}
	return v, nil
}
