package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/webhooks"
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

// TestAPIWebhookDeliveryRefusedWithoutTheFlag: an endpoint saved while
// TICKETD_WEBHOOK_ALLOW_PRIVATE was on (a loopback receiver) gets nothing
// once the service restarts without it: the delivery is checked again,
// logged as refused and not sent. Back with the flag, it is delivered.
func TestAPIWebhookDeliveryRefusedWithoutTheFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rc := newHookReceiver(t, 0)
	opts := func(allow bool) serviceOption {
		return func(c *app.Config) {
			c.DataDir, c.WebhookAllowPrivate = dir, allow
			c.Tune = &app.Tuning{Webhooks: func(w *webhooks.Config) {
				w.BackoffMin, w.BackoffMax = 10*time.Millisecond, 40*time.Millisecond
				w.PollInterval, w.Timeout = 10*time.Millisecond, 2*time.Second
			}}
		}
	}
	var secret, unitID, epID, ev, tt string
	t.Run("saved while allowed", func(t *testing.T) {
		f := newAPIFx(t, opts(true))
		u := f.unit(t)
		secret, unitID = u.Secret, u.ID
		ep := apiWant(t, f.admin(t).Do("POST", "/admin/v1/business-units/"+u.ID+"/webhook-endpoints",
			map[string]any{"url": rc.srv.URL + "/hooks", "eventTypes": []string{"registration.created"}}), 201)
		epID = apiS(ep, "id")
		rc.trust(apiS(ep, "secret"))
		ev = apiPublished(t, u.dev)
		tt = apiOpenType(t, u.dev, ev, nil)
	})
	deliveries := "/admin/v1/business-units/" + unitID + "/webhook-endpoints/" + epID + "/deliveries"
	t.Run("refused without the flag", func(t *testing.T) {
		f := newAPIFx(t, opts(false))
		adm := f.admin(t)
		apiRegister(t, f.client(t).WithKey(secret), ev, tt, "refused@example.com")
		var logged []map[string]any
		require.Eventually(t, func() bool {
			logged = apiData(t, apiWant(t, adm.Do("GET", deliveries, nil), 200))
			return len(logged) > 0
		}, 10*time.Second, 20*time.Millisecond)
		d := logged[0]
		assert.Equal(t, true, d["refused"])
		assert.Equal(t, false, d["succeeded"])
		assert.Nil(t, d["statusCode"])
		assert.Contains(t, d["error"], "refused, not sent: http is not https")
		assert.Empty(t, rc.deliveries(), "nothing reached the loopback receiver")
	})
	t.Run("delivered with the flag", func(t *testing.T) {
		f := newAPIFx(t, opts(true))
		require.Eventually(t, func() bool { return len(rc.deliveries()) == 1 }, 10*time.Second, 20*time.Millisecond)
		logged := apiData(t, apiWant(t, f.admin(t).Do("GET", deliveries, nil), 200))
		assert.Equal(t, true, logged[0]["succeeded"], "the retry went through")
	})
}
