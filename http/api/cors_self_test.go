package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The interactive docs are served by the service itself: their try-it-out
// sends the service's own Origin, which no publishable key lists.
func TestStorefrontAcceptsTheServicesOwnOrigin(t *testing.T) {
	s := startService(t)
	u := s.NewUnit("Docs", "https://shop.example")
	for origin, want := range map[string]int{s.URL: 200, "https://shop.example": 200, "https://evil.example": 401} {
		req, err := http.NewRequest("GET", s.URL+"/storefront/v1/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+u.Publishable)
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, origin)
		if want == 200 {
			assert.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
}
