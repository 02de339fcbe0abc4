package snapshots

import (
	"fmt"
	"hash/crc32"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"ticketd/persistence"
)

// MaxSnapshotsListed bounds List and the candidates LoadNewest tries. Far
// more than any sane keep, it only stops a runaway stream from costing
// unbounded memory.
const MaxSnapshotsListed = 1024

// Store saves and loads snapshots in a persistence.Store.
type Store struct {
	db   *persistence.Store
	keep int
	// chunkBytes is a field so tests can force many parts with small
	// states.
	chunkBytes uint32
	// afterParts, when set by a test, runs once the payload parts are
	// durable and the header is not: where a crash leaves orphan parts.
	afterParts func()
}

// New returns a Store keeping the newest keep snapshots of each stream.
// A keep below 1 is taken as 1: a snapshot store that keeps nothing would
// make Save useless.
func New(db *persistence.Store, keep int) *Store {
	return &Store{db: db, keep: max(keep, 1), chunkBytes: ChunkBytes}
}

// Save durably stores state as the snapshot of stream at seq, then deletes
// snapshots beyond retention. It returns after the snapshot is fsynced.
func (s *Store) Save(stream string, seq uint64, state []byte) error {
	_, err := s.save(stream, seq, state, false)
	return err
}

// SaveAndTrim is Save that also trims the log of stream through the seq of
// the oldest snapshot kept, in the same atomic batch as the snapshot's
// header. It returns that seq: records after it remain for replay.
func (s *Store) SaveAndTrim(stream string, seq uint64, state []byte) (trimmedThrough uint64, err error) {
	return s.save(stream, seq, state, true)
}

func (s *Store) save(stream string, seq uint64, state []byte, trim bool) (uint64, error) {
	if len(state) > MaxStateBytes {
		return 0, fmt.Errorf("snapshots: save %s/%d: %w: %d bytes", stream, seq, ErrTooLarge, len(state))
	}
	if seq == ^uint64(0) {
		return 0, fmt.Errorf("snapshots: save %s: seq out of range", stream)
	}
	existing, err := s.List(stream)
	if err != nil {
		return 0, fmt.Errorf("snapshots: save %s/%d: %w", stream, seq, err)
	}
	h := header{
		seq:        seq,
		length:     uint64(len(state)),
		chunkBytes: s.chunkBytes,
		crc:        crc32.Checksum(state, castagnoli),
	}

	// Payload parts first, durable before the header that makes them a
	// snapshot: ingested as one table (persistence.IngestSnapshotParts), so
	// the actors' log commits never queue behind them and the bytes are
	// written once instead of through the WAL, a flush and compactions. But
	// if a snapshot at seq already exists, overwriting its parts before the
	// new header is durable would destroy it, and with keep == 1 the log
	// behind it is gone: then write everything in the one final batch
	// instead (rare: a re-save after restart or a format change).
	n := h.parts()
	replace := slices.Contains(existing, seq)
	var b *persistence.Batch
	if replace {
		b = s.db.NewBatchSized(s.batchBytes(stream, n))
		b.DeleteSnapshots(stream, seq, seq+1)
		for part := uint64(1); part <= n; part++ {
			b.SetSnapshotPart(stream, seq, uint32(part), h.part(state, part))
		}
	} else {
		parts := make([][]byte, n)
		for part := uint64(1); part <= n; part++ {
			parts[part-1] = h.part(state, part)
		}
		if err := s.db.IngestSnapshotParts(stream, seq, parts); err != nil {
			return 0, fmt.Errorf("snapshots: save %s/%d: %w", stream, seq, err)
		}
		if s.afterParts != nil {
			s.afterParts()
		}
		b = s.db.NewBatchSized(s.batchBytes(stream, 0))
	}
	// Then the header, which makes the snapshot exist, with retention and
	// the trim. Everything earlier is already durable, and this batch is
	// atomic, so no crash leaves a visible torn snapshot or a log trimmed
	// past the newest durable snapshot.
	defer b.Close()
	b.SetSnapshotPart(stream, seq, 0, appendHeader(make([]byte, 0, HeaderLen), h))
	kept := append(slices.DeleteFunc(existing, func(x uint64) bool { return x == seq }), seq)
	slices.Sort(kept)
	oldestKept := kept[max(len(kept)-s.keep, 0)]
	b.DeleteSnapshots(stream, 0, oldestKept)
	if trim {
		b.Trim(stream, oldestKept)
	}
	if err := s.db.Commit(b); err != nil {
		return 0, fmt.Errorf("snapshots: save %s/%d: %w", stream, seq, err)
	}
	return oldestKept, nil
}

// batchBytes estimates the size of a batch holding parts payload parts.
func (s *Store) batchBytes(stream string, parts uint64) int {
	const overhead = 64 // header part, range deletes, record framing
	return int(parts)*(int(s.chunkBytes)+len(stream)+overhead) + overhead
}

// List returns the seqs of the snapshots of stream, oldest first. A listed
// snapshot has a header; its payload is checked only when loaded.
func (s *Store) List(stream string) ([]uint64, error) {
	var seqs []uint64
	err := s.db.ViewSnapshots(stream, func(it *pebble.Iterator) error {
		var err error
		seqs, err = list(it, stream)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("snapshots: list %s: %w", stream, err)
	}
	return seqs, nil
}

// list collects the seqs that have a header (part 0), seeking past the
// payload parts of each so listing costs one seek per snapshot.
func list(it *pebble.Iterator, stream string) ([]uint64, error) {
	var seqs []uint64
	for valid := it.First(); valid; {
		seq, part, ok := persistence.ParseSnapshotKey(stream, it.Key())
		if !ok {
			return nil, fmt.Errorf("%w: stray key %q", ErrCorrupt, it.Key())
		}
		if part == 0 {
			if len(seqs) == MaxSnapshotsListed {
				return nil, fmt.Errorf("more than %d snapshots", MaxSnapshotsListed)
			}
			seqs = append(seqs, seq)
		}
		if seq == ^uint64(0) {
			break
		}
		next, _ := persistence.SnapshotKey(stream, seq+1, 0)
		valid = it.SeekGE(next)
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	return seqs, nil
}

// LoadNewest returns the newest valid snapshot of stream. A snapshot that
// fails its checks (corrupt, unknown version, missing parts) is skipped for
// the next older one. ok is false with a nil error when the stream has no
// snapshot. When snapshots exist but none is valid, the error wraps
// ErrCorrupt or ErrVersion: the log may have been trimmed behind them, so
// replaying it from the start could silently build a wrong state.
func (s *Store) LoadNewest(stream string) (seq uint64, state []byte, ok bool, err error) {
	return s.LoadNewestWith(stream, 1)
}

// minPartsPerReader is the fewest parts (of ChunkBytes) worth a reader
// goroutine of their own.
const minPartsPerReader = 8

// LoadNewestWith is LoadNewest reading the parts of a large snapshot with
// up to readers goroutines, each with its own iterator over one consistent
// view: every part has a fixed place in the payload, so the ranges are
// independent. An actor's load uses the cores it has this way; the
// background snapshot worker reads with one.
func (s *Store) LoadNewestWith(stream string, readers int) (seq uint64, state []byte, ok bool, err error) {
	err = s.db.ViewSnapshotsN(stream, max(readers, 1), func(its []*pebble.Iterator) error {
		seqs, err := list(its[0], stream)
		if err != nil {
			return err
		}
		var firstErr error
		for i := len(seqs) - 1; i >= 0; i-- {
			st, err := load(its, stream, seqs[i])
			if err == nil {
				seq, state, ok = seqs[i], st, true
				return nil
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		if firstErr != nil {
			return fmt.Errorf("no valid snapshot of %d: %w", len(seqs), firstErr)
		}
		return nil
	})
	if err != nil {
		return 0, nil, false, fmt.Errorf("snapshots: load %s: %w", stream, err)
	}
	return seq, state, ok, nil
}

// load reads and checks the snapshot of stream at seq; the parts are split
// among the iterators (see LoadNewestWith).
func load(its []*pebble.Iterator, stream string, seq uint64) ([]byte, error) {
	it := its[0]
	key, _ := persistence.SnapshotKey(stream, seq, 0)
	if !it.SeekGE(key) {
		return nil, fmt.Errorf("%w: %d: header missing", ErrCorrupt, seq)
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", seq, err)
	}
	h, err := decodeHeader(v)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", seq, err)
	}
	if len(v) != HeaderLen || h.seq != seq {
		return nil, fmt.Errorf("%w: %d: header does not match its key", ErrCorrupt, seq)
	}
	// The length is trusted only after the header checksum, and is bounded
	// by MaxStateBytes.
	state := make([]byte, h.length)
	n := h.parts()
	readers := min(uint64(len(its)), max(n/minPartsPerReader, 1))
	per := (n + readers - 1) / readers
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for r := range readers {
		first, last := r*per+1, min((r+1)*per, n)
		if r == 0 {
			continue // this goroutine's share, below
		}
		wg.Go(func() { errs[r] = readParts(its[r], stream, seq, h, state, first, last, true) })
	}
	errs[0] = readParts(it, stream, seq, h, state, 1, min(per, n), false)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if crc32.Checksum(state, castagnoli) != h.crc {
		return nil, fmt.Errorf("%w: %d: payload checksum", ErrCorrupt, seq)
	}
	return state, nil
}

// readParts copies parts first..last of the snapshot of header h into
// their places in state. The iterator stands on the header (seek false) or
// anywhere (seek true: it seeks to part first).
func readParts(it *pebble.Iterator, stream string, seq uint64, h header, state []byte, first, last uint64, seek bool) error {
	n := h.parts()
	for part := first; part <= last; part++ {
		var valid bool
		if part == first && seek {
			key, _ := persistence.SnapshotKey(stream, seq, uint32(part))
			valid = it.SeekGE(key)
		} else {
			valid = it.Next()
		}
		if !valid {
			return fmt.Errorf("%w: %d: part %d of %d missing", ErrCorrupt, seq, part, n)
		}
		gotSeq, gotPart, ok := persistence.ParseSnapshotKey(stream, it.Key())
		if !ok || gotSeq != seq || uint64(gotPart) != part {
			return fmt.Errorf("%w: %d: part %d of %d missing", ErrCorrupt, seq, part, n)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("snapshot %d: %w", seq, err)
		}
		dst := h.part(state, part)
		if len(v) != len(dst) {
			return fmt.Errorf("%w: %d: part %d is %d bytes, want %d", ErrCorrupt, seq, part, len(v), len(dst))
		}
		copy(dst, v)
	}
	return nil
}
