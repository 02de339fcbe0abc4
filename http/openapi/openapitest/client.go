package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	thttp "ticketd/http"
	"ticketd/http/openapi"
)

// Bounds of the harness: a response body over contractMaxBody is a test
// failure, not something to buffer.
const (
	contractMaxBody = 16 << 20
	contractTimeout = 30 * time.Second
)

// contractDocs are the three loaded and validated documents of one server.
type contractDocs struct {
	bySurface map[thttp.Surface]*contractDoc
}

type contractDoc struct {
	path   string // where it was fetched, for messages
	doc    *openapi3.T
	router routers.Router
}

// contractCache holds the loaded documents per base URL for the whole test
// binary, so a server shared by many tests is fetched and validated once.
// It keeps the contractCacheMax most recent servers: every test starts its
// own server on a new port, and a finished one's documents need not stay
// in memory. It is the only package-level state, and only tests touch it.
var contractCache = struct {
	sync.Mutex
	byBase map[string]*contractEntry
	order  []string // oldest first
}{byBase: map[string]*contractEntry{}}

const contractCacheMax = 8

type contractEntry struct {
	mu   sync.Mutex // held while loading, so one server is loaded once
	docs *contractDocs
}

// contractDocsOf returns the documents of a server, loading them on first
// use. A failed load is not remembered: the next client tries again.
func contractDocsOf(hc *nethttp.Client, base string) (*contractDocs, error) {
	contractCache.Lock()
	e, ok := contractCache.byBase[base]
	if !ok {
		e = &contractEntry{}
		contractCache.byBase[base] = e
		contractCache.order = append(contractCache.order, base)
		if len(contractCache.order) > contractCacheMax {
			delete(contractCache.byBase, contractCache.order[0])
			contractCache.order = contractCache.order[1:]
		}
	}
	contractCache.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.docs == nil {
		docs, err := loadContractDocs(hc, base)
		if err != nil {
			return nil, err
		}
		e.docs = docs
	}
	return e.docs, nil
}

// Client sends requests to a live ticketd and checks them against its
// OpenAPI documents. It is immutable: WithKey and WithHeader return copies,
// so one Client may be shared by parallel subtests.
type Client struct {
	t         testing.TB
	base      string
	docs      *contractDocs
	header    nethttp.Header
	checkReq  bool
	transport *nethttp.Client
}

// Response is what a request answered, already read and closed.
type Response struct {
	Status int
	Header nethttp.Header
	Body   []byte
	t      testing.TB
}

// NewClient returns a client of the server at baseURL (e.g.
// "http://127.0.0.1:41234"). The first call for a base URL fetches
// /openapi.json, /storefront/openapi.json and /admin/openapi.json from the
// server and validates each as an OpenAPI 3.1 document; an invalid document
// fails the test at once.
func NewClient(t testing.TB, baseURL string) *Client {
	t.Helper()
	baseURL = strings.TrimRight(baseURL, "/")
	hc := &nethttp.Client{Timeout: contractTimeout}
	docs, err := contractDocsOf(hc, baseURL)
	if err != nil {
		t.Fatalf("contract: %v", err)
	}
	return &Client{t: t, base: baseURL, docs: docs, header: nethttp.Header{}, checkReq: true, transport: hc}
}

func loadContractDocs(hc *nethttp.Client, base string) (*contractDocs, error) {
	out := &contractDocs{bySurface: map[thttp.Surface]*contractDoc{}}
	for _, s := range []thttp.Surface{thttp.Developer, thttp.Storefront, thttp.Admin, thttp.Door} {
		p := openapi.DocumentPath(s)
		resp, err := hc.Get(base + p)
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", p, err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, contractMaxBody))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		if resp.StatusCode != 200 {
			return nil, fmt.Errorf("fetch %s: status %d", p, resp.StatusCode)
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(b)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", p, err)
		}
		if !doc.IsOpenAPI31OrLater() || doc.OpenAPI != "3.1.0" {
			return nil, fmt.Errorf("%s: openapi is %q, want 3.1.0", p, doc.OpenAPI)
		}
		if err := doc.Validate(context.Background()); err != nil {
			return nil, fmt.Errorf("%s is not a valid OpenAPI 3.1 document: %w", p, err)
		}
		// Match requests against the server under test whatever the
		// document's servers say (it says "/": relative to itself).
		doc.Servers = openapi3.Servers{{URL: base}}
		contractTighten(doc)
		r, err := legacy.NewRouter(doc)
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", p, err)
		}
		out.bySurface[s] = &contractDoc{path: p, doc: doc, router: r}
	}
	return out, nil
}

// contractTighten forbids undocumented members in every object schema
// that lists its properties and leaves additionalProperties open, and lets
// the schema {} accept null as JSON Schema says it does. The
// published documents keep response objects open, so that clients generated
// from them tolerate fields added later; the contract tests must not, or a
// field the server sends but the document lacks would go unnoticed.
func contractTighten(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(*openapi3.SchemaRef)
	walk = func(ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		if (s.Type == nil || len(*s.Type) == 0) && s.AllOf == nil && s.AnyOf == nil && s.OneOf == nil && s.Not == nil {
			// {} admits any JSON value, null included (JSON Schema 2020-12),
			// but kin-openapi v0.152 checks null against a 3.1 schema by its
			// type list alone: spell "any value" out as every type.
			all := openapi3.Types{"array", "boolean", "null", "number", "object", "string"}
			s.Type = &all
		}
		if len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
			no := false
			s.AdditionalProperties.Has = &no
		}
		for _, p := range s.Properties {
			walk(p)
		}
		walk(s.Items)
		walk(s.AdditionalProperties.Schema)
		for _, list := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
			for _, x := range list {
				walk(x)
			}
		}
	}
	if doc.Components != nil {
		for _, ref := range doc.Components.Schemas {
			walk(ref)
		}
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, resp := range op.Responses.Map() {
				if resp.Value == nil {
					continue
				}
				for _, mt := range resp.Value.Content {
					walk(mt.Schema)
				}
			}
		}
	}
}

// WithKey returns a copy of c that sends Authorization: Bearer key.
func (c *Client) WithKey(key string) *Client {
	return c.WithHeader("Authorization", "Bearer "+key)
}

// WithHeader returns a copy of c that sends the header on every request.
func (c *Client) WithHeader(name, value string) *Client {
	cp := *c
	cp.header = c.header.Clone()
	cp.header.Set(name, value)
	return &cp
}

// SharesDocuments reports whether c and o validate against the same loaded
// documents (one load per server).
func (c *Client) SharesDocuments(o *Client) bool { return c.docs == o.docs }

// WithT returns a copy of c that reports to t: use it in subtests so a
// failure is charged to the subtest that made the request.
func (c *Client) WithT(t testing.TB) *Client {
	cp := *c
	cp.t = t
	return &cp
}

// AllowInvalidRequest returns a copy of c that does not check requests, for
// tests that send a bad request on purpose; responses are still checked.
func (c *Client) AllowInvalidRequest() *Client {
	cp := *c
	cp.checkReq = false
	return &cp
}

// Do sends a request and returns the response, reporting with t.Errorf every
// way the exchange breaks the contract. body is nil (no body), []byte (sent
// as is, not checked: raw bytes are how tests send malformed JSON) or any
// other value, sent as JSON. path may carry a query string.
func (c *Client) Do(method, path string, body any) *Response {
	c.t.Helper()
	var raw []byte
	rawBody := false
	switch b := body.(type) {
	case nil:
	case []byte:
		raw, rawBody = b, true
	case json.RawMessage:
		raw, rawBody = b, true
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			c.t.Fatalf("contract: encode body of %s %s: %v", method, path, err)
		}
		raw = enc
	}

	req, err := c.newRequest(method, path, raw, body != nil)
	if err != nil {
		c.t.Fatalf("contract: %s %s: %v", method, path, err)
	}
	surface := contractSurface(req.URL.Path)
	d := c.docs.bySurface[surface]
	route, pathParams, findErr := d.router.FindRoute(req)
	if findErr != nil {
		c.t.Errorf("contract: %s %s is not documented in %s: %v", method, req.URL.Path, d.path, findErr)
	}

	ctx := context.Background()
	var reqInput *openapi3filter.RequestValidationInput
	if route != nil {
		vreq, _ := c.newRequest(method, path, raw, body != nil)
		reqInput = &openapi3filter.RequestValidationInput{
			Request:    vreq,
			PathParams: pathParams,
			Route:      route,
			Options: &openapi3filter.Options{
				// Authentication is the server's job and is tested by its
				// answers (401 is documented everywhere).
				AuthenticationFunc:                openapi3filter.NoopAuthenticationFunc,
				MultiError:                        true,
				ExcludeRequestBody:                rawBody,
				RejectWhenRequestBodyNotSpecified: true,
			},
		}
		if c.checkReq {
			if err := openapi3filter.ValidateRequest(ctx, reqInput); err != nil {
				c.t.Errorf("contract: request %s %s does not match %s (use AllowInvalidRequest to send it on purpose):\n%v",
					method, path, d.path, err)
			}
		}
	}

	resp, err := c.transport.Do(req)
	if err != nil {
		c.t.Fatalf("contract: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, contractMaxBody+1))
	if err != nil {
		c.t.Fatalf("contract: read response of %s %s: %v", method, path, err)
	}
	if len(b) > contractMaxBody {
		c.t.Fatalf("contract: response of %s %s is over %d bytes", method, path, contractMaxBody)
	}
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Body: b, t: c.t}

	if route != nil {
		c.checkResponse(ctx, reqInput, out, method, path, d)
	}
	return out
}

func (c *Client) checkResponse(ctx context.Context, in *openapi3filter.RequestValidationInput, r *Response, method, path string, d *contractDoc) {
	c.t.Helper()
	// The response is checked against the request as sent; give the
	// validator a fresh copy of it (ValidateRequest consumed the body).
	vreq, _ := c.newRequest(method, path, nil, false)
	in.Request = vreq
	rin := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 r.Status,
		Header:                 r.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	rin.SetBodyBytes(r.Body)
	if err := openapi3filter.ValidateResponse(ctx, rin); err != nil {
		c.t.Errorf("contract: response %d of %s %s does not match %s:\n%v\nbody: %s",
			r.Status, method, path, d.path, err, contractSnippet(r.Body))
		return
	}
	// An error's reason must be one the operation documents for that
	// status (x-reasons): a client switching on reasons relies on the list.
	if ref := in.Route.Operation.Responses.Status(r.Status); r.Status >= 400 && ref != nil && ref.Value != nil {
		if listed, ok := ref.Value.Extensions["x-reasons"].([]any); ok {
			var env struct {
				Error struct {
					Reason string `json:"reason"`
				} `json:"error"`
			}
			_ = json.Unmarshal(r.Body, &env)
			found := false
			for _, x := range listed {
				found = found || x == env.Error.Reason
			}
			if !found {
				c.t.Errorf("contract: response %d of %s %s has reason %q, which %s does not list for it (%v)",
					r.Status, method, path, env.Error.Reason, d.path, listed)
			}
		}
	}
	// kin-openapi checks a body against the documented content only; a body
	// where none is documented (204) is a mismatch too.
	if ref := in.Route.Operation.Responses.Status(r.Status); ref != nil && ref.Value != nil &&
		len(ref.Value.Content) == 0 && len(r.Body) > 0 {
		c.t.Errorf("contract: response %d of %s %s has a body, %s documents none: %s",
			r.Status, method, path, d.path, contractSnippet(r.Body))
	}
}

func (c *Client) newRequest(method, path string, body []byte, hasBody bool) (*nethttp.Request, error) {
	u, err := url.Parse(c.base + path)
	if err != nil {
		return nil, fmt.Errorf("bad path: %w", err)
	}
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(body)
	}
	req, err := nethttp.NewRequest(method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	req.Header = c.header.Clone()
	if hasBody && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// contractSurface says which document describes a path.
func contractSurface(p string) thttp.Surface {
	switch {
	case strings.HasPrefix(p, "/storefront/"):
		return thttp.Storefront
	case strings.HasPrefix(p, "/admin/"):
		return thttp.Admin
	case strings.HasPrefix(p, "/door/"):
		return thttp.Door
	}
	return thttp.Developer
}

func contractSnippet(b []byte) string {
	const max = 2000
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// JSON decodes the body as a JSON object; a body that is not one fails the
// test.
func (r *Response) JSON() map[string]any {
	r.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		r.t.Fatalf("contract: response %d is not a JSON object: %v: %s", r.Status, err, contractSnippet(r.Body))
	}
	return m
}

// Decode decodes the body into dst; a body that does not decode fails the
// test.
func (r *Response) Decode(dst any) {
	r.t.Helper()
	if err := json.Unmarshal(r.Body, dst); err != nil {
		r.t.Fatalf("contract: decode response %d into %T: %v: %s", r.Status, dst, err, contractSnippet(r.Body))
	}
}
