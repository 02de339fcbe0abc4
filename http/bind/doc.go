// Package bind decodes request bodies and query strings strictly into Go
// values, for the http pipeline's Ctx.Bind and Ctx.BindQuery.
//
// A body goes through a strict RFC 8259 parser (no duplicate members, no
// trailing data, valid UTF-8, nesting at most 64) that builds a tree of
// slices of the body; the tree is walked against the target type by
// reflection, collecting every problem with its path ("items[0].quantity")
// into one *event.Error INVALID_ARGUMENT of at most 50 details. Types
// implementing json.Unmarshaler get their raw JSON, and their error becomes
// that field's detail. The `v` tag rules (tags.go, ParseRules) are checked
// on the JSON values; http/openapi documents the same rules, so a schema
// says exactly what is accepted. The binder checks JSON shape and the
// tags' bounds; what a value means is the core's to validate.
//
// A plain body (objects, arrays, printable-ASCII strings without escapes,
// integers, booleans; every member known, once; every rule met) is
// decoded in one pass straight into the target (fast.go), with the same
// rule checks; anything else goes through the parser and the tree as
// above, so every refusal and its details are the general path's.
//
// ListQuery, NewList and the cursor functions are the paging of every list
// operation: limit 1 to 100 (default 50), opaque cursors of at most 512
// bytes.
//
// # Concurrency
//
// A Binder is safe for concurrent use and needs no constructor. Per-type
// plans are built once (Prepare, PrepareQuery, or the first request) and
// cached in sync.Maps; parsers, their node arenas and problem paths are
// pooled.
package bind
