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
// A span (version 2) holds the n entries of one change, all of one type
// and time (a batch of door scans' check-ins), keyed by its last seq:
// bytes 1-9 as above, a uvarint n, then the span's data
// (event.AppendFeedSpan), from which a reader renders each entry's object
// (event.ExpandFeedSpan): the event's actor writes one record and renders
// nothing. The ring renders a span once, on its first read, for every
// entry's readers; a page read from the store expands it.
//
// Byte order of the keys is seq order, so a page is one range scan (the
// first record after a position's key holds its next entry). An
// entry is deleted only by Trim, event.FeedRetention after it happened;
// the log's trim behind snapshots leaves it.
//
// # Concurrency
//
// A Ring is put to by its event's actor only and read from any goroutine
// (under its lock; the values it holds never change once put). Each of
// its entries has a memo of its renderings (event.FeedMemo), filled by
// the readers, safe for concurrent use, and dropped with the entry, so a
// rendering can never answer for another entry. The ring also keeps the
// last whole pages read from it, each with a memo of its wire forms
// (event.FeedPageMemo), for the next follower reading from the same
// position; they answer only while their entries are in the ring.
// ReadPage and Trim are safe from any goroutine.
package feed
