// Package snapshots stores versioned snapshots of a stream's state next to
// its write-ahead log, keeps the newest few, and loads the newest valid one.
//
// Recovery of a stream is LoadNewest, then persistence.Store.Replay of the
// records after the snapshot's seq. Snapshots only bound that replay; the log
// stays the source of truth until a snapshot covering it is durable.
//
// # Envelope byte format (version 1)
//
// A snapshot is an envelope: a fixed 33-byte header followed by the payload
// (the state bytes, encoded by the core, opaque here). All integers are
// big-endian.
//
//	offset size field
//	0      4    magic "TKSN"
//	4      1    format version, 1
//	5      8    seq: the last log record the state includes
//	13     8    payload length in bytes (at most MaxStateBytes)
//	21     4    chunk size: payload bytes per stored part (1..MaxChunkBytes)
//	25     4    CRC-32C (Castagnoli) of the payload
//	29     4    CRC-32C of bytes 0..28 of the header
//	33     n    payload
//
// The header has its own checksum so a flipped length or chunk size is caught
// before it is trusted to size a buffer. An unknown version is an error for
// that snapshot (ErrVersion); a bad magic or checksum is ErrCorrupt.
//
// # Storage
//
// An envelope is stored in the 's' namespace of package persistence (keys
// 's' | stream | 0x00 | seq | part, see persistence.SnapshotKey): part 0
// holds the header, parts 1..n hold consecutive chunk-size slices of the
// payload (256 KiB by default; a snapshot written with another chunk size
// declares it in its header and stays readable). So no Pebble value is
// larger than a chunk, and Save and LoadNewest hold no copy of the state
// beyond the state itself, even for a 200 MB state.
//
// Save writes the payload parts first, as one table ingested into Pebble
// (persistence.Store.IngestSnapshotParts), and then, in one synced batch,
// the header together with the deletion of snapshots beyond retention (and,
// for SaveAndTrim, the log trim). An ingested table is written once and
// never enters the commit pipeline, so the event actors' log commits do not
// queue behind a snapshot's megabytes (when parts were committed as 256 KiB
// batches, every commit of a check-in burst waited behind one), and Pebble
// neither flushes nor compacts the parts: a new snapshot's key range
// overlaps no table, so it lands in the bottom level, and the range deletion
// of its retention later drops the whole table. A snapshot exists only once
// its header does, and the header is written after every part it describes
// is durable, so a crash mid-save leaves orphan parts that no reader sees
// and that a later Save shadows or its retention deletes; it never leaves a
// torn snapshot that LoadNewest would load. The one exception is a Save of
// a seq that already has a snapshot (a re-save after a restart, or after a
// state format change): overwriting its parts first could destroy the only
// snapshot the trimmed log relies on, so that Save writes everything in one
// atomic batch.
//
// # Retention and trimming
//
// Save keeps the newest keep snapshots of a stream. SaveAndTrim also trims
// the log through the seq of the oldest snapshot kept, not the newest: if the
// newest snapshot turns out corrupt, LoadNewest falls back to an older one and
// the log records after it are still there to replay. With keep == 1 it trims
// through the new snapshot itself. Because the header, the retention deletes
// and the trim share one batch, no crash can leave the log trimmed past the
// newest durable snapshot.
//
// # Concurrency
//
// Store methods are safe for concurrent use on different streams. Saves of
// one stream must not overlap: in ticketd their only caller is the actor
// System's snapshot worker, one goroutine that builds each state off the
// event's actor (see package actors). LoadNewest and List read one
// consistent Pebble view, so they may run during a Save of the same stream
// (an actor activating while its event's snapshot is saved) and see either
// the old or the new set; since the log is trimmed only through the older
// snapshot kept, the records after either set's newest are still there.
package snapshots
