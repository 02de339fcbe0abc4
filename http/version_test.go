package http

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersions(t *testing.T) {
	require.True(t, ValidVersion(CurrentVersion))
	require.True(t, ValidVersion("2026-03-15"))
	require.False(t, ValidVersion("2026-03-16"))
	require.Equal(t, CurrentVersion, KnownVersions()[len(KnownVersions())-1])

	h := newHarness(t, nil)
	r := h.do("GET", "/v1/events", skOld, "")
	require.Equal(t, 200, r.status)
	require.Equal(t, "2026-03-15", r.header.Get("Service-Version"), "the key's pin applies")
	require.Equal(t, "2026-03-15", r.result(t).Version)

	r = h.do("GET", "/v1/events", skOld, "", "SERVICE-VERSION", CurrentVersion)
	require.Equal(t, 200, r.status)
	require.Equal(t, CurrentVersion, r.header.Get("service-version"), "the header overrides, any case")
	require.Equal(t, CurrentVersion, r.result(t).Version)

	r = h.do("GET", "/v1/events", skOld, "", "service-version", "2020-01-01")
	require.Equal(t, 400, r.status)
	e := r.envelope(t)
	require.Equal(t, "INVALID_ARGUMENT", e.Status)
	require.Equal(t, "service-version", e.Details[0].Field)
	require.Equal(t, "2026-03-15", r.header.Get("service-version"), "echo the version that would have applied")

	r = h.do("GET", "/storefront/v1/events/evt_1", pkLive, "", "service-version", "2026-03-15")
	require.Equal(t, "2026-03-15", r.header.Get("service-version"))

	r = h.do("POST", "/v1/events/evt_1/orders", skLive, `{`)
	require.Equal(t, 400, r.status)
	require.Equal(t, CurrentVersion, r.header.Get("service-version"), "errors echo too")
	r = h.do("GET", "/v1/nothing-here", skLive, "", "service-version", "2026-03-15")
	require.Equal(t, 404, r.status)
	require.Equal(t, "2026-03-15", r.header.Get("service-version"), "unrouted /v1 paths echo too")
	r = h.do("GET", "/openapi.json", "", "")
	require.Empty(t, r.header.Get("service-version"))
}
