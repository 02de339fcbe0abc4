package http

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// setCanonical must put the same bytes on the wire as Header.Set did for
// every header the pipeline sets through it.
func TestSetCanonicalMatchesSet(t *testing.T) {
	for _, c := range []struct{ key, canonical, value string }{
		{"Request-Id", hdrRequestID, "req_0123abcd_1z"},
		{"X-Content-Type-Options", hdrContentTypeOptions, "nosniff"},
		{versionHeader, hdrVersion, CurrentVersion},
		{"Vary", hdrVary, "Origin"},
		{"Cache-Control", hdrCacheControl, "no-store"},
	} {
		var a, b fasthttp.ResponseHeader
		a.Set(c.key, c.value)
		setCanonical(&b, c.canonical, c.value)
		require.Equal(t, a.String(), b.String(), c.key)
		// Setting again replaces, as Set does.
		a.Set(c.key, "x")
		setCanonical(&b, c.canonical, "x")
		require.Equal(t, a.String(), b.String(), c.key)
	}
}
