package openapi

// This file serves the OpenAPI documents and the interactive references
// (/docs, /storefront/docs, /admin/docs). Everything is built once, at
// registration, from the route table and from assets embedded in the
// binary: no key is needed, nothing is fetched from a CDN, and a request
// only copies cached bytes.

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"

	thttp "ticketd/http"
)

//go:embed docs/page.html docs/assets
var docsFS embed.FS

// DocsRouter is what RegisterDocs needs of a router: fasthttp/router's
// *Router and the Server both have this method.
type DocsRouter interface {
	Handle(method, path string, h fasthttp.RequestHandler)
}

// DocsAssetsPath is the folder the embedded docs assets are served under.
const DocsAssetsPath = "/docs/assets"

// docsCSP lets the page run only its own scripts: no inline script, no
// eval, no third-party origin. Inline style attributes are allowed because
// Swagger UI's React components set them; requests (the document and
// try-it-out) go to this origin only.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// RegisterDocs builds the OpenAPI documents of the Developer, Storefront
// and Admin surfaces from routes and registers, on r, GET /openapi.json,
// /storefront/openapi.json, /admin/openapi.json, the three docs pages and
// their assets under /docs/assets/. None of them needs a key. It fails if a
// document cannot be built, so a bad table stops the server at start.
func RegisterDocs(r DocsRouter, routes []thttp.Route, info DocInfo) error {
	surfaces := []thttp.Surface{thttp.Developer, thttp.Storefront, thttp.Admin, thttp.Door}
	for _, s := range surfaces {
		doc, err := Document(routes, s, info)
		if err != nil {
			return fmt.Errorf("docs: %w", err)
		}
		f, err := newDocsFile("application/json", doc)
		if err != nil {
			return fmt.Errorf("docs: %s: %w", DocumentPath(s), err)
		}
		// The document describes the live table: revalidate (ETag) rather
		// than keep a stale copy.
		r.Handle("GET", DocumentPath(s), f.handler("no-cache", ""))
	}

	tmpl, err := template.ParseFS(docsFS, "docs/page.html")
	if err != nil {
		return fmt.Errorf("docs: parse page: %w", err)
	}
	for _, s := range surfaces {
		page, err := docsRenderPage(tmpl, s, info, surfaces)
		if err != nil {
			return err
		}
		f, err := newDocsFile("text/html; charset=utf-8", page)
		if err != nil {
			return fmt.Errorf("docs: %s: %w", DocsPath(s), err)
		}
		r.Handle("GET", DocsPath(s), f.handler("no-cache", docsCSP))
	}

	entries, err := fs.ReadDir(docsFS, "docs/assets")
	if err != nil {
		return fmt.Errorf("docs: list assets: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := docsFS.ReadFile("docs/assets/" + e.Name())
		if err != nil {
			return fmt.Errorf("docs: read asset %s: %w", e.Name(), err)
		}
		ctype := docsContentType(e.Name())
		f, err := newDocsFile(ctype, b)
		if err != nil {
			return fmt.Errorf("docs: asset %s: %w", e.Name(), err)
		}
		// Assets change only with the binary; an hour of caching plus the
		// ETag keeps a reload cheap.
		r.Handle("GET", DocsAssetsPath+"/"+e.Name(), f.handler("public, max-age=3600", ""))
	}
	return nil
}

type docsLink struct {
	Name    string
	Docs    string
	Current bool
}

func docsRenderPage(tmpl *template.Template, s thttp.Surface, info DocInfo, all []thttp.Surface) ([]byte, error) {
	title := info.Title
	if title == "" {
		title = oaDefaultTitle(s)
	}
	var links []docsLink
	for _, o := range all {
		links = append(links, docsLink{Name: oaDefaultTitle(o), Docs: DocsPath(o), Current: o == s})
	}
	var buf bytes.Buffer
	err := tmpl.Execute(&buf, map[string]any{
		"Title":    title + " reference",
		"Spec":     DocumentPath(s),
		"Assets":   DocsAssetsPath,
		"Surfaces": links,
	})
	if err != nil {
		return nil, fmt.Errorf("docs: render %s: %w", DocsPath(s), err)
	}
	return buf.Bytes(), nil
}

// docsFile is a response computed once: the body, its gzip form (made on
// the first request that accepts it, so starting a server stays cheap) and
// a strong ETag.
type docsFile struct {
	ctype  string
	body   []byte
	etag   string
	gzOnce sync.Once
	gz     []byte // nil when gzip would not make it smaller
}

func newDocsFile(ctype string, body []byte) (*docsFile, error) {
	sum := sha256.Sum256(body)
	return &docsFile{ctype: ctype, body: body, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}, nil
}

func (f *docsFile) gzipped() []byte {
	f.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		if err != nil {
			return
		}
		if _, err := zw.Write(f.body); err != nil {
			return
		}
		if err := zw.Close(); err != nil {
			return
		}
		if buf.Len() < len(f.body) {
			f.gz = buf.Bytes()
		}
	})
	return f.gz
}

func (f *docsFile) handler(cacheControl, csp string) fasthttp.RequestHandler {
	return func(rc *fasthttp.RequestCtx) {
		h := &rc.Response.Header
		h.Set("Cache-Control", cacheControl)
		h.Set("ETag", f.etag)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Vary", "Accept-Encoding")
		if csp != "" {
			h.Set("Content-Security-Policy", csp)
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("X-Frame-Options", "DENY")
		}
		if inm := rc.Request.Header.Peek("If-None-Match"); len(inm) > 0 && docsETagMatches(string(inm), f.etag) {
			rc.SetStatusCode(fasthttp.StatusNotModified)
			return
		}
		h.SetContentType(f.ctype)
		if docsAcceptsGzip(rc.Request.Header.Peek("Accept-Encoding")) {
			if gz := f.gzipped(); gz != nil {
				h.Set("Content-Encoding", "gzip")
				rc.SetBody(gz)
				return
			}
		}
		rc.SetBody(f.body)
	}
}

func docsETagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// docsAcceptsGzip reads Accept-Encoding loosely: gzip listed and not refused
// with q=0.
func docsAcceptsGzip(ae []byte) bool {
	for _, part := range strings.Split(string(ae), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// docsContentType is fixed here rather than read from the system's MIME
// table, which differs between machines.
func docsContentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".json":
		return "application/json"
	case ".png":
		return "image/png"
	case ".svg":
		return "image/svg+xml"
	}
	return "text/plain; charset=utf-8"
}
