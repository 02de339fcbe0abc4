package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	thttp "ticketd/http"
	"ticketd/http/openapi"
)

// TestEveryRouteIsDocumentedAndEveryDocumentedPathRouted compares the
// served OpenAPI documents with the live server's route table in both
// directions, and checks that each documented operation is routed: a
// request to it never answers the router's own 404 or 405.
func TestEveryRouteIsDocumentedAndEveryDocumentedPathRouted(t *testing.T) {
	s := startService(t)
	routes := s.Main.Server().Routes()
	for _, surface := range []thttp.Surface{thttp.Developer, thttp.Storefront, thttp.Admin} {
		resp, err := http.Get(s.URL + openapi.DocumentPath(surface))
		require.NoError(t, err)
		var doc struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
		resp.Body.Close()

		documented := map[string]bool{}
		for path, ops := range doc.Paths {
			for method := range ops {
				if m := strings.ToUpper(method); m == "GET" || m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE" {
					documented[m+" "+path] = true
				}
			}
		}
		routed := map[string]bool{}
		for _, r := range routes {
			if r.Surface == surface {
				routed[r.Method+" "+r.Path] = true
			}
		}
		require.NotEmpty(t, routed)
		assert.Equal(t, routed, documented, "surface %d: the document and the route table differ", surface)

		for op := range documented {
			method, path, _ := strings.Cut(op, " ")
			concrete := strings.NewReplacer("{eventId}", "evt_x", "{publicId}", "evt_x").Replace(path)
			for strings.Contains(concrete, "{") {
				i := strings.Index(concrete, "{")
				j := strings.Index(concrete[i:], "}")
				concrete = concrete[:i] + "x" + concrete[i+j+1:]
			}
			req, err := http.NewRequest(method, s.URL+concrete, nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			var env struct {
				Error struct{ Message string } `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&env)
			resp.Body.Close()
			assert.NotEqual(t, 405, resp.StatusCode, "%s is documented but not routed", op)
			assert.NotEqual(t, "no such path", env.Error.Message, "%s is documented but not routed", op)
		}
	}
}

// TestHotRoutesStand: the drop's routes and the door's poll marked hot are
// matched ahead of the router in the service's own table (none shares
// paths with another route, table or page), so they do not fall back to it
// unnoticed.
func TestHotRoutesStand(t *testing.T) {
	s := startService(t)
	require.ElementsMatch(t, []string{"placeStorefrontOrder", "joinQueue", "getQueueEntry", "recordCheckin", "listPasses"}, s.Main.Server().HotRoutes())
}
