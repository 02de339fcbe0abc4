package http

import (
	"testing"

	"github.com/stretchr/testify/require"
)

const shop = "https://shop.example.com"

func TestCORSPreflight(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("OPTIONS", "/storefront/v1/events/evt_1/orders", "", "",
		"Origin", shop, "Access-Control-Request-Method", "POST")
	require.Equal(t, 204, r.status)
	require.Equal(t, shop, r.header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, r.header.Get("Access-Control-Allow-Methods"), "POST")
	require.Contains(t, r.header.Get("Access-Control-Allow-Headers"), "Authorization")
	require.Contains(t, r.header.Get("Access-Control-Allow-Headers"), "Idempotency-Key")
	require.Equal(t, "600", r.header.Get("Access-Control-Max-Age"))
	require.Equal(t, "Origin", r.header.Get("Vary"))

	r = h.do("OPTIONS", "/storefront/v1/events/evt_1/orders", "", "", "Origin", "https://evil.example")
	require.Equal(t, 204, r.status)
	require.Empty(t, r.header.Get("Access-Control-Allow-Origin"))
	require.Empty(t, r.header.Get("Access-Control-Allow-Methods"))

	r = h.do("OPTIONS", "/v1/events", "", "", "Origin", shop)
	require.Empty(t, r.header.Get("Access-Control-Allow-Origin"), "the Developer API is not for browsers")
	require.Equal(t, 404, h.do("OPTIONS", "/storefront/v1/nope", "", "", "Origin", shop).status)
}

func TestCORSOrigins(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("GET", "/storefront/v1/events/evt_1", pkLive, "", "Origin", shop)
	require.Equal(t, 200, r.status)
	require.Equal(t, shop, r.header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, r.header.Get("Access-Control-Expose-Headers"), "RateLimit-Remaining")
	require.Equal(t, "Origin", r.header.Get("Vary"))

	r = h.do("GET", "/storefront/v1/events/evt_1", pkLive, "", "Origin", "https://evil.example")
	require.Equal(t, 401, r.status)
	require.Equal(t, msgUnauthenticated, r.envelope(t).Message)
	require.Empty(t, r.header.Get("Access-Control-Allow-Origin"))

	r = h.do("GET", "/storefront/v1/events/evt_1", pkLive, "")
	require.Equal(t, 200, r.status, "no Origin: servers and curl are not restricted")
	require.Empty(t, r.header.Get("Access-Control-Allow-Origin"))

	r = h.do("GET", "/storefront/v1/events/evt_1", "pk_revoked", "", "Origin", shop)
	require.Equal(t, 401, r.status)
	require.Equal(t, shop, r.header.Get("Access-Control-Allow-Origin"), "a listed origin may read its 401")
}
