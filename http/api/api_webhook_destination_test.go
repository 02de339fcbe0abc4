package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
)

// TestAPIWebhookURLMustBePublic: with the service's defaults (no
// TICKETD_WEBHOOK_ALLOW_PRIVATE), an endpoint URL that is not https or
// that reaches an internal address is refused with 400 naming the url
// field and the address at fault, on create and on update (decisions §23).
func TestAPIWebhookURLMustBePublic(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t, func(c *app.Config) { c.WebhookAllowPrivate = false })
	u := f.unit(t)
	adm := f.admin(t)
	base := "/admin/v1/business-units/" + u.ID + "/webhook-endpoints"
	for url, want := range map[string]string{
		"https://169.254.169.254/latest/meta-data/": "169.254.169.254 is a link-local address",
		"https://10.0.0.7/hooks":                    "10.0.0.7 is a private address",
		"https://192.168.0.10/hooks":                "192.168.0.10 is a private address",
		"https://[fc00::7]/hooks":                   "fc00::7 is a private address",
		"https://[::1]:8080/hooks":                  "::1 is a loopback address",
		"https://127.0.0.1:8080/hooks":              "127.0.0.1 is a loopback address",
		"https://localhost:8080/hooks":              "localhost resolves to 127.0.0.1, a loopback address",
		"http://127.0.0.1:8080/hooks":               "must be https",
	} {
		e := apiWantErr(t, adm.Do("POST", base, map[string]any{"url": url, "eventTypes": []string{"order.paid"}}), 400, "INVALID_ARGUMENT")
		assert.Equal(t, "INVALID_ARGUMENT", e["reason"], url)
		assert.Contains(t, e["message"], want, url)
		assert.Equal(t, []string{"url"}, apiFields(e), url)
	}
	ep := apiWant(t, adm.Do("POST", base, map[string]any{"url": "https://hooks.example.test/in", "eventTypes": []string{"order.paid"}}), 201)
	id := apiS(ep, "id")
	e := apiWantErr(t, adm.Do("PATCH", base+"/"+id, map[string]any{"url": "https://169.254.169.254/"}), 400, "INVALID_ARGUMENT")
	assert.Equal(t, []string{"url"}, apiFields(e))
	got := apiWant(t, adm.Do("GET", base+"/"+id, nil), 200)
	assert.Equal(t, "https://hooks.example.test/in", got["url"], "a refused update changes nothing")
	list := apiData(t, apiWant(t, adm.Do("GET", base, nil), 200))
	require.Len(t, list, 1, "no refused endpoint was stored")
	assert.False(t, strings.Contains(apiS(list[0], "url"), "169.254"))
}
