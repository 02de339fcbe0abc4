// Package persistence is ticketd's write-ahead log and its small durable
// indexes, kept together in one Pebble database.
//
// The actor shell owns one stream per ticketed event ("evt_..." ids) plus the
// "directory" stream (business units, API keys, and the console's members
// and their invitation and reset links: no key prefix of their own). Each stream is an ordered log of opaque records, numbered
// by the caller with consecutive sequence numbers starting at 1. Records are
// encoded by the core; this package never looks inside them. Small index
// entries (API key hashes, idempotency keys, the outbox) live in a separate
// namespace of the same database, so one Batch can append records and update
// indexes atomically.
//
// # Durability
//
// Store.Commit returns only after the batch is in the Pebble WAL and the WAL is
// fsynced (pebble.Sync). Concurrent Commit calls share one fsync: Pebble's
// commit pipeline queues batches that arrive while a sync is running and
// syncs them together (group commit). A batch is all or nothing: after a crash
// either every mutation of a batch is visible or none is. Readers may see a
// batch before its fsync completes, so callers must answer clients only after
// Commit returns, never from what they read.
//
// Options.NoSync exists only for the benchmark that measures the cost of
// fsync. It is never a service mode: with it, acknowledged writes can be lost.
//
// # Restart cost
//
// Pebble's Open replays the WAL of the memtable that was not flushed and
// flushes it before returning. Close therefore flushes first, so a clean
// restart opens in milliseconds (BenchmarkOpen, 1M records: 728 ms before,
// 13 ms after), and the memtable is kept small (16 MiB) because it bounds
// what a restart after a crash replays (about 0.1 s; 0.45 s at 64 MiB).
// Tables use 32 KiB data blocks: a replay reads a stream front to back, and
// bigger blocks cost one read, allocation and decompression per ~150
// records instead of per ~20 (BenchmarkRecoverEvent scan-only, 1M records:
// 573-638 ns/record at 4 KiB, 313-345 at 32 KiB). Existing tables keep
// their block size until compacted; both read the same.
//
// # Concurrency
//
// Store methods are safe for concurrent use. A Batch belongs to one goroutine
// from NewBatch to Close. Replay and Scan read a consistent point-in-time view
// (a Pebble iterator), so concurrent commits do not tear what they see.
// Close waits for operations in flight (for at most Options.CloseTimeout)
// and then makes every method return ErrClosed; the callbacks of Replay,
// Scan and ViewSnapshots must therefore not call back into the Store.
//
// # Storage faults
//
// A failed WAL write or fsync is final: the store fails (ErrFailed), every
// operation from then on, reads included, returns that error at once,
// Failed is closed, and the service exits so that its supervisor restarts
// it (fail-stop). The reasons:
//
//   - After a failed fsync the kernel may already have dropped the dirty
//     pages and cleared the error, so a retried fsync can succeed without
//     the data being on disk; PostgreSQL learned this in 2018 and since
//     then PANICs on a failed fsync and recovers from its WAL.
//   - Pebble does not recover either. Its WAL writer (record.LogWriter)
//     keeps the first write or sync error and hands it to every later sync
//     waiter; once a block fills, the next write returns it and
//     DB.commitWrite panics while holding the commit pipeline's mutex, so
//     every later commit blocks for good. A commit that fails in the
//     synchronous path is logged through Logger.Fatalf ("the commit
//     pipeline will be horked"), and a failed MANIFEST sync is Fatalf too;
//     Pebble's default Fatalf is os.Exit(1). Worse, a WAL rotation after a
//     WAL error ends the process with a fatal error, so the store keeps
//     WAL errors from Pebble altogether: see "WAL rotation" below.
//   - The memtable and the state of the actors already hold the records of
//     the failed batches: serving reads from them would show what may never
//     have reached the disk.
//
// Recovery is the ordinary crash recovery: the restarted process replays
// the WAL, which holds everything that was synced, so every acknowledged
// write is there (answers go out only after their sync succeeded). A write
// answered with an error at the fault may be there too (it was synced but
// its answer lost the race with the fault): an error at a fault means
// "unknown", and a client retries with the same idempotency key.
//
// A full disk (ENOSPC) takes the same path, for the same reason: the WAL
// has lost what it could not write (and is frozen, see "WAL rotation"),
// and the database cannot be reopened in-process while it holds the
// directory lock. Staying up to serve reads would serve from that
// untrustworthy memory. So the process exits; while the disk stays full a
// restart exits non-zero again: Open must flush the WAL it replayed, and
// since Pebble retries a failed flush without end, Open gives up on the
// first disk error of that flush instead of hanging (or, with little to
// flush, the first MANIFEST write after Open fails and Pebble's Fatalf
// ends the process). Once space is freed the next restart writes again.
//
// A fault can also come without an error: a disk that stops answering, or
// a write stall that cannot end because Pebble's flushes keep failing (a
// flush error is only logged and retried). A watchdog fails the store when
// commits wait and none completes for Options.StallTimeout (3 s by
// default), so callers are answered within seconds, not never.
//
// Close after a fault does not flush and does not wait for operations
// stuck inside Pebble: it closes the database only if nothing is in
// flight and otherwise leaves it to the process exit. A panic inside
// Pebble during a commit (and Logger.Fatalf, which panics) fails the
// store too.
//
// # WAL rotation
//
// Pebble rotates the WAL when the memtable is full, for a batch of half a
// memtable or more, and when a flush or an ingest needs the memtable
// flushed. In v2.1.7 DB.rotateWAL releases DB.mu, closes the old WAL (a
// last write and sync) and creates the next one (with a directory sync),
// and panics on any error there (db.go:2822, 2835) while its caller holds
// a deferred DB.mu.Unlock (commitWrite, db.go:979-981; AsyncFlush; the
// ingest paths). The unwinding unlocks the released mutex: "fatal error:
// sync: unlock of unlocked mutex", which ends the process and which no
// recover can stop. Closing a WAL whose writer kept a write or sync error
// always fails, so once a WAL sync had failed the first rotation ended the
// process (TestFailedSyncFailsStore hit it in about 1 of 8 CI runs, when a
// rotation met the injected fault).
//
// So a WAL fault never reaches Pebble. The store stands between Pebble
// and its WAL files (walGuardFS, over Options.FS): the first failed write,
// sync or close of a WAL, failed creation of one, or failed directory
// sync inside rotateWAL fails the store before the call returns, and then
// freezes the WAL: that call and every later call on a WAL file succeed
// without reaching the disk, and a WAL created later exists in memory
// only. Pebble carries on, rotations included, and the store acknowledges
// nothing more: Commit and CommitAsync's wait succeed only if the store
// has not failed when Pebble reports the batch durable, and since the
// fault is recorded before the call that would let Pebble report it
// returns, a batch whose sync was not real is never acknowledged.
//
// What the disk holds is what a crash at the fault would leave: the WALs
// up to the fault, the last one ending in a torn tail, which Open takes as
// the end of the log; no WAL is written after it (after a torn WAL, a
// newer one would make Open call the torn one corrupt). Tables and the
// MANIFEST are not frozen: a memtable flush after the fault may write
// batches that were never acknowledged (allowed: an error at a fault means
// "unknown"), and only then does Pebble drop the WALs the flush covers.
// While pebble.Open runs, WAL errors go to Pebble, which returns them.
//
// The guard knows rotateWAL's directory sync by the function's name on
// the stack (only when a directory sync has failed); other directory syncs
// (a new MANIFEST's) must fail as they do. A Pebble upgrade that renames
// it makes TestWALRotationFaultFailsStore/dirsync die of the fatal error.
// The rotation tests force a rotation into each fault: a large batch in a
// commit (failed sync, write, directory sync; TestWALRotationFaultFailsStore),
// the flush of a healthy Close (TestWALFaultInCloseFlush) and a flushable
// ingest (TestWALFaultInIngestRotation); each died of the fatal error
// without the guard. On the healthy path the guard is an atomic load per
// WAL call: BenchmarkCommitSequential and BenchmarkCommitConcurrent showed
// no difference beyond noise (4 alternated runs each, 2026-11-28).
//
// # Recovery positions
//
// LastSeq and FirstSeq report the records present, not a high-water mark:
// once Trim has removed every record of a stream both are 0. A stream's
// position is its snapshot's seq plus the records replayed after it, and a
// recovery can check FirstSeq <= snapshot seq + 1 to prove the log has no
// gap behind the snapshot.
//
// # Key schema
//
// Every key starts with a one-byte namespace:
//
//	'l' log record:      'l' | stream | 0x00 | seq (8 bytes, big-endian uint64)
//	'x' index entry:     'x' | user key
//	's' snapshot chunk:  's' | stream | 0x00 | seq (8 bytes BE) | part (4 bytes BE)
//
// Streams are 1 to MaxStreamLen bytes and contain no 0x00 byte, so the 0x00
// separator keeps one stream's keys from interleaving with another whose name
// extends it ("evt_1" vs "evt_10"): all keys of stream S lie in
// ['l'|S|0x00, 'l'|S|0x01). Big-endian sequence numbers make byte order equal
// numeric order, so Replay is a forward scan and LastSeq one reverse seek. The
// snapshot namespace belongs to package snapshots, which writes it through
// Store.IngestSnapshotParts (a snapshot's payload, as one ingested table),
// Batch.SetSnapshotPart and Batch.DeleteSnapshots and reads it through
// Store.ViewSnapshots; this package only builds its keys. An ingest writes
// its table as Dir/ingest-<n>.sst, beside the database, before Pebble links
// it in; Open removes such a file that a crash left behind. The namespace
// lies between the log and the indexes, so a table from a log's last
// records to the first index entries spans it; Open turns on Pebble's
// ingest-time split so such a table does not push a snapshot into level 0,
// where compactions rewrote it (BenchmarkDoorBurstCompaction).
//
// # Value format
//
// Log values are the record bytes verbatim; the core's record encoding
// carries its own format version, so wrapping it again here would only add a
// byte per record. Index values are the caller's bytes verbatim. Trim removes
// log records with one range deletion, which Pebble turns into a single
// tombstone, so trimming a million records costs one key.
//
// # Index key prefixes
//
// Every prefix of an index key is defined once, in schema.go (Prefix*
// constants), and listed in Schema with its owner (the package that writes
// and reads those entries, whose doc.go gives the value format) and the
// key's shape; owners take their prefix from there. Store.CheckSchema
// reads every key a store holds and reports any that no entry claims (a
// test runs the whole service and then checks its store). No prefix is a
// prefix of another ("mail/" and "mailorder/" differ at the slash), so
// each key has one owner:
//
//	ev/<eventId>                    the event's unit id (actors/index)
//	evpub/<eventId>                 1 byte: the event is published or not (actors/index)
//	feed/<eventId>/<16 hex feed seq> change feed entry (or a span of entries, keyed by its last), kept 30 days, not trimmed with the log (actors/feed)
//	mail/<eventId>/<seq>-<i>        mail owed, not tried yet: the mail inbox (mail; written by mail.Owed in the change's batch)
//	mail/directory/<seq>-0000       a console link's mail, owed by a directory change (mail)
//	mailorder/<eventId>/<orderId>/<seq>-<i>  index of that mail by order, kept once sent (mail)
//	hook/<eventId>/<seq>-<i>        webhook event owed, not fanned out yet: the webhook inbox (webhooks)
//	refund/<eventId>/<refundId>     refund durably pending, until it settles (payments)
//	checkout-close/<eventId>/<orderId>  hosted payment page to close at the provider (payments)
//	provider-event/<provider>/<id>  hosted provider's webhook event acted on, for de-duplication (payments)
//	obx/<queue>/s/<id>              owed entry that was tried: retrying or parked (outbox)
//	obx/<queue>/d/<due ns>/<id>     due index of retrying entries (outbox)
//	whep/<endpointId>               webhook endpoint (webhooks)
//	whlog/<endpointId>/<ns>-<seq>   webhook delivery log (webhooks)
//	whq/<due ns>/<endpointId>/<h>   webhook task of earlier versions, carried into obx/webhooks/ at start (webhooks)
//	whpend/<hook>                   cluster mode: a fanned-out webhook event's deliveries not yet settled (webhooks)
//	wdev/<device>/<serial>          Apple Wallet device registration of a pass, push token (wallet)
//	wreg/<serial>/<device>          the same, by pass (wallet)
//	wgoo/<serial>                   a Google Wallet Save link was made for the pass (wallet)
//	csess/, csessseen/, csessend/   cluster mode: console sessions, their last use, sign-outs everywhere (http/console)
//	secret/<name>                   cluster mode: a secret made once for the cluster (app)
//	clusterpos/index                cluster mode: last stream sequence of the shared index copied here (cluster)
//	idem/<scope>/<hex sha256(key)>  an Idempotency-Key's answer, put in the batch of the write it answers (http, actors, outbox, webhooks)
//	audit/<unitId>/<chunk>          a chunk of a unit's audit log (audit)
package persistence
