package api_test

// Black-box test of the served OpenAPI documents: every POST tells clients
// that a 503, a timeout or a dropped connection leaves the outcome unknown
// and that a retry carries the same Idempotency-Key.

import (
	"encoding/json"
	"io"
	nethttp "net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAPIDocumentsSayHowToRetryAPost(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	for _, path := range []string{"/openapi.json", "/storefront/openapi.json", "/admin/openapi.json"} {
		resp, err := nethttp.Get(f.s.URL + path)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode, path)
		var doc struct {
			Paths map[string]map[string]struct {
				Description string           `json:"description"`
				Parameters  []map[string]any `json:"parameters"`
				Responses   map[string]any   `json:"responses"`
			} `json:"paths"`
		}
		require.NoError(t, json.Unmarshal(b, &doc), path)
		posts := 0
		for p, item := range doc.Paths {
			op, ok := item["post"]
			if !ok {
				continue
			}
			posts++
			for _, want := range []string{"503", "timeout", "dropped connection", "outcome is unknown", "same `Idempotency-Key`", "24 hours"} {
				assert.Contains(t, op.Description, want, "%s POST %s", path, p)
			}
			assert.Contains(t, op.Parameters, map[string]any{"$ref": "#/components/parameters/IdempotencyKey"}, "%s POST %s", path, p)
			assert.Contains(t, op.Responses, "503", "%s POST %s", path, p)
		}
		assert.Positive(t, posts, path)
	}
}
