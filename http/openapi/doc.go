// Package openapi generates the OpenAPI 3.1 documents of the Developer,
// Storefront and Admin surfaces from the http route table and serves them
// with the interactive references (/docs, /storefront/docs, /admin/docs)
// and their embedded Swagger UI assets.
//
// The route table is the one source of truth: the router is built from
// it too, so a document cannot describe an endpoint that is not served.
// Request schemas follow the v tags that http/bind enforces (one parser of
// them, bind.ParseRules), so a schema says exactly what the binder
// accepts; response schemas list every field the JSON encoder writes. The
// output is deterministic: the same table gives the same bytes, which
// testdata/openapi_golden.json pins.
//
// # Concurrency
//
// Document is a pure function of its arguments. RegisterDocs builds every
// document, page and asset once, at registration; the handlers it
// registers only copy cached bytes (gzip variants are built once, on
// first use, under a sync.Once) and are safe for concurrent use.
package openapi
