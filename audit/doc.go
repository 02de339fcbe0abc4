// Package audit is the audit-log storage engine: every successful change
// made through the Developer API or the console, per business unit,
// durable in Pebble and kept for a retention (DefaultRetention, 90 days).
// The HTTP layer decides what is audited and builds each AuditEntry (the
// type keeps its name because the OpenAPI documents call its schema
// AuditEntry); this package buffers, encodes, stores, lists and prunes.
//
// # Durability
//
// Record appends to a buffer; a timer commits the buffer as one batch (one
// fsync) within 100 ms, or at once when 256 entries wait. An entry is
// therefore durable shortly after its response, not before: a crash in
// that window loses the last entries. When the store fails, at most 10,000
// entries wait in memory; beyond that new ones are dropped and logged.
// Close flushes what is buffered.
//
// # Key schema and byte format
//
//	audit/<unitId>/<suffix>   one chunk of a unit's entries, newest first
//
// suffix is 16 hex digits of (2^64-1 - unix nanoseconds of the chunk's
// newest entry) + "-" + 8 hex digits of a per-process counter, so a
// forward scan of a unit's prefix reads newest first. A chunk value is the
// version byte 2, then an S2 block of the entries, each a uvarint length
// and the entry's JSON with "v":1 (the bytes json.Marshal gives, written
// by hand in audit_encode.go). A value starting with '{' is one entry's
// JSON, an older layout that is still read. An entry's id is "aud_" + the
// chunk's suffix + "-" + 4 hex digits of its place in the chunk.
//
// # Concurrency
//
// A Log is safe for concurrent use: Record takes one mutex for an append;
// flushes run one at a time so batches commit in order; List reads the
// store without blocking Record.
package audit
