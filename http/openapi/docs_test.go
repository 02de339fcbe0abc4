package openapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net"
	nethttp "net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/router"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	thttp "ticketd/http"
	"ticketd/http/openapi"
)

// serveRouter serves r on a loopback port until the test ends and returns
// its base URL.
func serveRouter(t testing.TB, r *router.Router) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &fasthttp.Server{Handler: r.Handler, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Shutdown()
		<-done
	})
	return "http://" + ln.Addr().String()
}

func docsServer(t *testing.T) string {
	t.Helper()
	r := router.New()
	require.NoError(t, openapi.RegisterDocs(r, toyRoutes(), toyInfo))
	return serveRouter(t, r)
}

// get fetches a URL without transparent decompression, so the test sees
// exactly what the server sent.
func get(t *testing.T, url string, header map[string]string) (*nethttp.Response, []byte) {
	t.Helper()
	req, err := nethttp.NewRequest("GET", url, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	c := &nethttp.Client{Timeout: 10 * time.Second, Transport: &nethttp.Transport{DisableCompression: true}}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func TestDocsServesTheDocuments(t *testing.T) {
	base := docsServer(t)
	for _, s := range []thttp.Surface{thttp.Developer, thttp.Storefront, thttp.Admin} {
		want, err := openapi.Document(toyRoutes(), s, toyInfo)
		require.NoError(t, err)
		resp, body := get(t, base+openapi.DocumentPath(s), nil)
		require.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		assert.Equal(t, string(want), string(body), "served bytes are the generated document")

		// The same bytes compressed, and a revalidation without a body.
		resp, gz := get(t, base+openapi.DocumentPath(s), map[string]string{"Accept-Encoding": "gzip"})
		require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		require.NoError(t, err)
		plain, err := io.ReadAll(zr)
		require.NoError(t, err)
		assert.Equal(t, want, plain)
		etag := resp.Header.Get("ETag")
		require.NotEmpty(t, etag)
		resp, body = get(t, base+openapi.DocumentPath(s), map[string]string{"If-None-Match": etag})
		assert.Equal(t, 304, resp.StatusCode)
		assert.Empty(t, body)
	}
	resp, _ := get(t, base+"/openapi.json", map[string]string{"Accept-Encoding": "gzip;q=0"})
	assert.Empty(t, resp.Header.Get("Content-Encoding"), "q=0 refuses gzip")
}

func TestDocsPagesUseOnlyEmbeddedAssets(t *testing.T) {
	base := docsServer(t)
	attr := regexp.MustCompile(`(?:src|href)="([^"]*)"`)
	for _, s := range []thttp.Surface{thttp.Developer, thttp.Storefront, thttp.Admin} {
		resp, body := get(t, base+openapi.DocsPath(s), nil)
		require.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
		csp := resp.Header.Get("Content-Security-Policy")
		assert.Contains(t, csp, "script-src 'self';", "no inline script, no eval")
		assert.Contains(t, csp, "connect-src 'self'")
		assert.Contains(t, csp, "frame-ancestors 'none'")
		page := string(body)
		assert.NotContains(t, page, "<script>", "scripts are files, the CSP forbids inline ones")
		assert.Contains(t, page, `data-spec-url="`+openapi.DocumentPath(s)+`"`)

		var scripts int
		for _, m := range attr.FindAllStringSubmatch(page, -1) {
			u := m[1]
			if strings.HasPrefix(u, "data:") {
				continue
			}
			require.True(t, strings.HasPrefix(u, "/"), "%s links off-site: %s", openapi.DocsPath(s), u)
			r, b := get(t, base+u, nil)
			require.Equal(t, 200, r.StatusCode, u)
			require.NotEmpty(t, b, u)
			if strings.HasSuffix(u, ".js") {
				scripts++
				assert.Equal(t, "text/javascript; charset=utf-8", r.Header.Get("Content-Type"))
			}
			if strings.HasSuffix(u, ".css") {
				assert.Equal(t, "text/css; charset=utf-8", r.Header.Get("Content-Type"))
			}
		}
		assert.Equal(t, 2, scripts, "Swagger UI and its initializer")
	}
	resp, body := get(t, base+openapi.DocsAssetsPath+"/swagger-ui-bundle.js", nil)
	require.Equal(t, 200, resp.StatusCode)
	assert.Greater(t, len(body), 1<<20, "the real Swagger UI bundle is embedded")
	assert.Contains(t, resp.Header.Get("Cache-Control"), "max-age")
	resp, _ = get(t, base+openapi.DocsAssetsPath+"/swagger-ui.LICENSE", nil)
	assert.Equal(t, 200, resp.StatusCode, "the license ships with the code")
}

func TestRegisterDocsRefusesABadTable(t *testing.T) {
	bad := append(toyRoutes(), toyRoutes()[0])
	err := openapi.RegisterDocs(router.New(), bad, toyInfo)
	assert.ErrorContains(t, err, "listThings")
}

func TestDocsDocumentIsJSON(t *testing.T) {
	base := docsServer(t)
	_, body := get(t, base+"/admin/openapi.json", nil)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(body, &doc))
	assert.Equal(t, "ticketd Admin API", doc["info"].(map[string]any)["title"])
}
