// Package idempotency holds what the front door (package http), the
// actors' commit path and the cluster share about Idempotency-Key
// records: the outcome of claiming a key (State), a completed answer
// (StoredResponse), the stores' interfaces (Store, RecordingStore,
// OriginStore, implemented by http's memory and Pebble stores and by
// cluster/shared's replicated one), the record a keyed write commits
// beside its changes (KeyedWrite, RecordKey, EncodeRecord), and whether
// a record still answers (Live).
//
// # Byte format
//
// A record, the value of its key "idem/" + scope + "/" + hex SHA-256 of
// the key, is a version byte (1), the request's fingerprint (32 bytes),
// the answer's expiry (Unix seconds, big-endian uint64), its status
// (uint16), the length of its content type (uint16), the content type,
// then the body.
//
// # Concurrency
//
// The package has no state: its functions are safe for concurrent use; a
// Store's implementation says its own contract.
package idempotency
