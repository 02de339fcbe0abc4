// Package feed stores the change feed of events (decisions §20): the key
// and byte format of its entries, the in-memory ring of an event's newest
// entries that its followers read, reads of a page from the store, and
// the retention trim. The event actors of package actors write the
// entries, in the batch of the change each describes, and answer the
// reads; this package holds no actor.
//
// # Key schema and byte format
//
//	key:   "feed/" + event id + "/" + 16 lower-case hex digits of the feed seq
//	value: byte 0     version (1)
//	       byte 1     type (event.FeedTypeCode)
//	       bytes 2-9  when the change happened, Unix nanoseconds, big-endian
//	       rest       the record as its GET answered just after the change
//	                  (JSON, in the current API version)
//
// Byte order of the keys is seq order, so a page is one range scan. An
// entry is deleted only by Trim, event.FeedRetention after it happened;
// the log's trim behind snapshots leaves it.
//
// # Concurrency
//
// A Ring is put to by its event's actor only and read from any goroutine
// (under its lock; the values it holds never change once put). Each of
// its entries has a memo of its renderings (event.FeedMemo), filled by
// the readers, safe for concurrent use, and dropped with the entry, so a
// rendering can never answer for another entry. ReadPage and Trim are
// safe from any goroutine.
package feed
