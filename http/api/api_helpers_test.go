package api_test

// This file holds the helpers of the black-box API suite (api_*_test.go):
// every API request of those tests goes through apiClient to the real
// service started by startService (service_test.go); the paths that no
// OpenAPI document describes (the payment webhook, the hosted pages, CORS
// preflight) use apiRaw. Helper names start with "api" so they cannot
// collide with the other test files of package http_test.
//
// apiClient wraps the contract harness's Client (contract_test.go), so every
// API exchange of this suite is validated against the OpenAPI documents.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	nethttp "net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	thttp "ticketd/http"
	"ticketd/http/openapi/openapitest"
)

// apiStartsAt is a start time far enough ahead to publish with.
const apiStartsAt = "2030-06-01T09:00:00Z"

// apiClient is the suite's client: the contract harness's Client, so that
// every exchange is also checked against the served OpenAPI documents (an
// undocumented status, field or path fails the test).
type apiClient struct {
	c *openapitest.Client
	t testing.TB // the test c reports to, for Helper
}

// apiResp is what a request answered, already read and closed.
type apiResp = openapitest.Response

func newAPIClient(t testing.TB, base string) *apiClient {
	return &apiClient{openapitest.NewClient(t, base), t}
}

// WithKey returns a copy of c that sends Authorization: Bearer key.
func (c *apiClient) WithKey(key string) *apiClient { return &apiClient{c.c.WithKey(key), c.t} }

// WithHeader returns a copy of c that sends the header on every request.
func (c *apiClient) WithHeader(name, value string) *apiClient {
	return &apiClient{c.c.WithHeader(name, value), c.t}
}

// WithT returns a copy of c that reports to t.
func (c *apiClient) WithT(t testing.TB) *apiClient { return &apiClient{c.c.WithT(t), t} }

// AllowInvalidRequest returns a copy of c for requests that break the
// documents on purpose; responses are still checked.
func (c *apiClient) AllowInvalidRequest() *apiClient {
	return &apiClient{c.c.AllowInvalidRequest(), c.t}
}

// Do sends a request: body nil (none), []byte (raw, e.g. malformed JSON)
// or any value (sent as JSON).
func (c *apiClient) Do(method, path string, body any) *apiResp {
	c.t.Helper()
	return c.c.Do(method, path, body)
}

// apiFx is one running service shared by the subtests of a top-level test;
// each subtest takes its own business unit, so they can run in parallel.
type apiFx struct {
	s *service
}

// apiAdminToken is the admin token of the suite's services. startService's
// own token is shorter than the 16 characters the server requires, so the
// suite sets its own (the option runs after startService chose its token).
const apiAdminToken = "adm_api_suite_token_0123456789"

func newAPIFx(t *testing.T, opts ...serviceOption) *apiFx {
	t.Helper()
	token := func(c *app.Config) { c.AdminToken = apiAdminToken }
	opts = append([]serviceOption{token}, opts...)
	s := startService(t, opts...)
	// The contract Client keeps its connections in net/http's default pool;
	// close them before the service shuts down (this cleanup runs first),
	// since fasthttp's Shutdown waits for open keep-alive connections up to
	// the cleanup's deadline.
	t.Cleanup(func() {
		if tr, ok := nethttp.DefaultTransport.(*nethttp.Transport); ok {
			tr.CloseIdleConnections()
		}
	})
	return &apiFx{s: s}
}

// client returns a client without a key reporting to t.
func (f *apiFx) client(t testing.TB) *apiClient { return newAPIClient(t, f.s.URL) }

// apiUnit is a business unit with a Developer client (secret key) and a
// Storefront client (publishable key), both reporting to one test.
type apiUnit struct {
	unit
	dev *apiClient
	sf  *apiClient
	raw *apiClient // no key
}

// unit makes a fresh business unit whose clients report to t.
func (f *apiFx) unit(t testing.TB, origins ...string) apiUnit {
	t.Helper()
	u := f.s.NewUnit("unit "+t.Name(), origins...)
	c := f.client(t)
	return apiUnit{unit: u, dev: c.WithKey(u.Secret), sf: c.WithKey(u.Publishable), raw: c}
}

// admin returns a client of the admin API reporting to t.
func (f *apiFx) admin(t testing.TB) *apiClient {
	return f.client(t).WithKey(f.s.Admin)
}

// apiWant asserts the status of r and returns its JSON object (nil for an
// empty body).
func apiWant(t testing.TB, r *apiResp, status int) map[string]any {
	t.Helper()
	require.Equalf(t, status, r.Status, "body: %s", r.Body)
	if len(bytes.TrimSpace(r.Body)) == 0 {
		return nil
	}
	var m map[string]any
	require.NoErrorf(t, json.Unmarshal(r.Body, &m), "body: %s", r.Body)
	return m
}

// apiWantErr asserts an error answer in the envelope and returns its
// error object.
func apiWantErr(t testing.TB, r *apiResp, status int, name string) map[string]any {
	t.Helper()
	m := apiWant(t, r, status)
	e, ok := m["error"].(map[string]any)
	require.Truef(t, ok, "no error envelope: %s", r.Body)
	require.EqualValues(t, status, e["code"])
	require.Equal(t, name, e["status"])
	require.NotEmpty(t, e["message"])
	return e
}

// apiWant400 asserts a 400 whose details name field and returns the fields.
func apiWant400(t testing.TB, r *apiResp, field string) []string {
	t.Helper()
	e := apiWantErr(t, r, 400, "INVALID_ARGUMENT")
	fields := apiFields(e)
	require.Containsf(t, fields, field, "details of %s", r.Body)
	return fields
}

// apiFields lists the field names of an error object's details.
func apiFields(e map[string]any) []string {
	var out []string
	ds, _ := e["details"].([]any)
	for _, d := range ds {
		if m, ok := d.(map[string]any); ok {
			f, _ := m["field"].(string)
			out = append(out, f)
		}
	}
	return out
}

// apiData returns the data array of a list envelope.
func apiData(t testing.TB, m map[string]any) []map[string]any {
	t.Helper()
	raw, ok := m["data"].([]any)
	require.Truef(t, ok, "no data array in %v", m)
	out := make([]map[string]any, len(raw))
	for i, x := range raw {
		out[i] = x.(map[string]any)
	}
	return out
}

// apiIDs returns the ids of a list's data, in order.
func apiIDs(t testing.TB, m map[string]any) []string {
	t.Helper()
	var ids []string
	for _, d := range apiData(t, m) {
		ids = append(ids, d["id"].(string))
	}
	return ids
}

// apiS reads a string member ("" when absent or not a string).
func apiS(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// apiM reads an object member.
func apiM(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

// apiMerge returns base with extra's members set over it.
func apiMerge(base, extra map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// apiEvent creates a draft event (name and timezone defaulted) and returns it.
func apiEvent(t testing.TB, c *apiClient, extra map[string]any) map[string]any {
	t.Helper()
	return apiWant(t, c.Do("POST", "/v1/events", apiMerge(map[string]any{"name": "Gophercon", "timezone": "Europe/Berlin"}, extra)), 201)
}

// apiPublished creates an event with a start time and publishes it.
func apiPublished(t testing.TB, c *apiClient) string {
	t.Helper()
	id := apiS(apiEvent(t, c, map[string]any{"startsAt": apiStartsAt}), "id")
	ev := apiWant(t, c.Do("PATCH", "/v1/events/"+id, map[string]any{"status": "published"}), 200)
	require.Equal(t, "published", ev["status"])
	return id
}

// apiType creates a ticket type (draft) and returns it.
func apiType(t testing.TB, c *apiClient, eventID string, extra map[string]any) map[string]any {
	t.Helper()
	return apiWant(t, c.Do("POST", "/v1/events/"+eventID+"/ticket-types",
		apiMerge(map[string]any{"name": "General", "capacity": 10, "priceAmount": 0}, extra)), 201)
}

// apiOpenType creates a ticket type, opens it and returns its id.
func apiOpenType(t testing.TB, c *apiClient, eventID string, extra map[string]any) string {
	t.Helper()
	id := apiS(apiType(t, c, eventID, extra), "id")
	apiSetStatus(t, c, "/v1/events/"+eventID+"/ticket-types/"+id, "open")
	return id
}

// apiSetStatus PATCHes a sellable's status and requires 200.
func apiSetStatus(t testing.TB, c *apiClient, path, status string) map[string]any {
	t.Helper()
	m := apiWant(t, c.Do("PATCH", path, map[string]any{"status": status}), 200)
	require.Equal(t, status, m["status"])
	return m
}

// apiRegister registers an email and returns the registration.
func apiRegister(t testing.TB, c *apiClient, eventID, typeID, email string) map[string]any {
	t.Helper()
	return apiWant(t, c.Do("POST", "/v1/events/"+eventID+"/registrations",
		map[string]any{"email": email, "registrationTypeId": typeID}), 201)
}

// apiTicket is one order line of a ticket type.
func apiTicket(typeID string) []map[string]any {
	return []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}
}

// apiAvailability reads a ticket type's availability object.
func apiAvailability(t testing.TB, c *apiClient, eventID, typeID string) map[string]any {
	t.Helper()
	return apiWant(t, c.Do("GET", "/v1/events/"+eventID+"/ticket-types/"+typeID+"/availability", nil), 200)
}

// apiRaw sends a request outside the OpenAPI documents (hosted pages,
// webhook, preflight) on a connection of its own and returns the response
// with its body read. It does not follow redirects.
func apiRaw(t testing.TB, method, url string, header map[string]string, body []byte) (*nethttp.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := nethttp.NewRequest(method, url, rd)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	hc := &nethttp.Client{
		Timeout:       30 * time.Second,
		Transport:     &nethttp.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse },
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	require.NoError(t, err)
	return resp, b
}

// apiRawJSON is apiRaw for a JSON answer: it returns the status, the
// headers and the decoded object.
func apiRawJSON(t testing.TB, method, url, key string, header map[string]string) (int, nethttp.Header, map[string]any) {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + key}
	for k, v := range header {
		h[k] = v
	}
	resp, b := apiRaw(t, method, url, h, nil)
	var m map[string]any
	require.NoErrorf(t, json.Unmarshal(b, &m), "body: %s", b)
	return resp.StatusCode, resp.Header, m
}

// apiWebhookSecret is the sandbox provider's secret of startService.
const apiWebhookSecret = "whsec_test"

// apiSign returns the Payment-Signature header of body at unix time ts.
func apiSign(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	t := strconv.FormatInt(ts, 10)
	mac.Write([]byte(t + "."))
	mac.Write(body)
	return "t=" + t + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// apiWebhook posts a payment webhook signed at ts with secret.
func apiWebhook(t testing.TB, base, secret string, ts int64, body []byte) (int, []byte) {
	t.Helper()
	resp, b := apiRaw(t, "POST", base+"/webhooks/payments/sandbox", map[string]string{
		"Content-Type": "application/json", "Payment-Signature": apiSign(secret, ts, body),
	}, body)
	return resp.StatusCode, b
}

// apiWalkKeys calls fn with every object key anywhere in a decoded JSON value.
func apiWalkKeys(v any, fn func(key string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			fn(k)
			apiWalkKeys(vv, fn)
		}
	case []any:
		for _, vv := range x {
			apiWalkKeys(vv, fn)
		}
	}
}

// apiProgram creates a venue or session (kind "venues" or "sessions") of an
// event through the console API and returns its id, or "" while the
// console's program routes are not built (their path answers 404). It uses
// apiRaw: the admin document may not describe these paths yet.
func (f *apiFx) apiProgram(t testing.TB, eventID, kind string, body map[string]any) string {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	resp, out := apiRaw(t, "POST", f.s.URL+"/admin/v1/events/"+eventID+"/"+kind, map[string]string{
		"Authorization": "Bearer " + f.s.Admin, "Content-Type": "application/json"}, b)
	if resp.StatusCode == 404 || resp.StatusCode == 405 {
		return ""
	}
	require.Equalf(t, 201, resp.StatusCode, "create %s: %s", kind, out)
	id := apiS(apiDecode(out), "id")
	require.NotEmpty(t, id)
	return id
}

// door returns the id of a session or venue door of the event: a real one
// when the console can create it, else a made-up id (check-ins did not
// check subject ids before the program existed).
func (f *apiFx) door(t testing.TB, eventID, kind string) string {
	t.Helper()
	var id string
	switch kind {
	case "session":
		id = f.apiProgram(t, eventID, "sessions", map[string]any{"title": "Keynote",
			"startsAt": "2030-06-01T09:00:00Z", "endsAt": "2030-06-01T10:00:00Z"})
		if id == "" {
			id = "ses_keynote"
		}
	case "venue":
		id = f.apiProgram(t, eventID, "venues", map[string]any{"name": "Main hall"})
		if id == "" {
			id = "ven_hall"
		}
	}
	return id
}

// withOrderHold sets the order hold period.
func withOrderHold(d time.Duration) serviceOption {
	return func(c *app.Config) { c.OrderHold = d }
}

// withDevRateLimit sets the Developer API budget per key to a bucket of n
// requests (2n a minute: a bucket holds half a minute's), on an HTTP clock
// that stands still so that no request comes back mid-test.
func withDevRateLimit(n int) serviceOption {
	return func(c *app.Config) { c.RateLimitPerMinute = 2 * n; freezeHTTPClock(c) }
}

// withStorefrontIPLimit sets the storefront budget per (key, IP) to a
// bucket of n requests, like withDevRateLimit.
func withStorefrontIPLimit(n int) serviceOption {
	return func(c *app.Config) { c.StorefrontIPPerMinute = 2 * n; freezeHTTPClock(c) }
}

// withStorefrontKeyLimit sets the storefront budget per publishable key to
// a bucket of n requests, like withDevRateLimit.
func withStorefrontKeyLimit(n int) serviceOption {
	return func(c *app.Config) { c.StorefrontKeyPerMinute = 2 * n; freezeHTTPClock(c) }
}

// freezeHTTPClock makes the HTTP server's clock stand at the moment the
// service starts: budgets refill continuously, and a test counting
// requests must not see one come back because the machine was slow.
func freezeHTTPClock(c *app.Config) {
	var t app.Tuning
	if c.Tune != nil {
		t = *c.Tune
	}
	prev := t.HTTP
	t.HTTP = func(hc *thttp.Config) {
		if prev != nil {
			prev(hc)
		}
		at := time.Now()
		hc.Now = func() time.Time { return at }
	}
	c.Tune = &t
}

// withTrustedProxies trusts X-Forwarded-For from the given CIDRs.
func withTrustedProxies(cidrs ...string) serviceOption {
	return func(hc *app.Config) {
		for _, c := range cidrs {
			hc.TrustedProxies = append(hc.TrustedProxies, netip.MustParsePrefix(c))
		}
	}
}

// apiRepeat returns s repeated to n characters.
func apiRepeat(s string, n int) string { return strings.Repeat(s, n)[:n] }

// apiDecode decodes a JSON object, nil when it is not one (for goroutines,
// which must not call require).
func apiDecode(b []byte) map[string]any {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}
