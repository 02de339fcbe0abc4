package settle

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"
	"ticketd/event"
	"ticketd/internal/pace"
	"ticketd/persistence"
)

// The change feed of an event (decisions §20, package actors/feed) is
// written with its changes, and in cluster mode its entries travel with
// the commit's index entries to the owner's local store alone. Every node
// that may become the owner must answer the whole retained feed after a
// failover, so:
//
//   - an owner imports the feed at each claim, before the claim is
//     answered (Log.ImportClaimed: the actor answers no read before): the
//     entries the feed stream carries and those the log's messages before
//     the claim put, less those its store has already (an entry never
//     changes once written: the same seq is the same bytes on every node);
//     ahead of a planned move, the taker's preload fetches what the
//     stream carries and what the log's messages put so far (Prefetch,
//     paced), and notes the log's message it read through: the claim
//     reads only the log's messages after it (see feedPoint);
//   - before the log is trimmed through messages of an event (its own
//     snapshot or the trimmer settling it: Snapshots.carry), its owner
//     makes the event's subject of the feed stream (TICKETD_FEED,
//     feed.<eventId>) carry the entries its store has that the subject
//     does not yet: only the new ones, so each entry is published once.
//     A carry that fails holds the trim back, as for owed work.
//
// The feed stream keeps a message event.FeedRetention and feedKeepExtra
// (stream MaxAge): a message is stored after the entries it carries
// happened, so each is kept at least the 30 days the contract promises,
// and the stream is bounded by the retention, not the events ever sold.
// The entries are not owed work (nothing is sent, nothing settled), so
// they do not go through the settled stream: a drop's feed (100,000
// orders, about 100 MB of objects) would exceed its rollups.
//
// Message format (version 1): a version byte, then per stored record a
// uvarint seq (its key's), a uvarint length and the record's value
// (actors/feed's value, byte for byte: one entry, or a span of a door
// batch's entries keyed by its last seq); header Ticketd-Feed-Last: the
// last seq it carries. Messages of a subject carry ascending seqs.
const (
	// FeedStream is the stream of the carried feed entries.
	FeedStream  = "TICKETD_FEED"
	feedSubj    = "feed."
	feedFormat  = 1
	hdrFeedLast = "Ticketd-Feed-Last"
	// feedPartBytes bounds a carried message's body (an entry bigger
	// goes alone, within node.MaxMessageBytes).
	feedPartBytes = 1 << 20
	// feedKeepExtra is kept past event.FeedRetention: a clock skew
	// between nodes must not take an entry the contract still promises.
	feedKeepExtra = 24 * time.Hour
	// feedImportBatch bounds the entries of one local commit of Import.
	feedImportBatch = 4096
	// feedImportFor bounds an import's reads of the feed stream.
	feedImportFor = time.Minute
)

// feedPrefix is persistence.PrefixFeed: the key of an entry is
// feedPrefix + eventId + "/" + 16 hex digits of its seq (actors/feed).
const feedPrefix = persistence.PrefixFeed

// Feeds carries the change feed's entries past the log's trim and imports
// them into a new owner's store (see above).
type Feeds struct {
	n     *node.Node
	log   *eventlog.Log
	store *persistence.Store
	st    *node.ReplicatedStream

	mu sync.Mutex
	// reached: per event, the point its prefetches reached (consumed
	// by the claim's Import).
	reached map[string]feedPoint
	// running: per event, the prefetch under way (an import stops it
	// and goes on from its point).
	running map[string]*prefetchRun
	// last is the last import's reads (tests).
	last importStats
	// noted, when set, is told each point a prefetch notes (tests).
	noted func(feedPoint)
}

// prefetchRun is a prefetch under way: cancel stops it, done is closed
// once it has noted its point and returned.
type prefetchRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// feedPoint is where a prefetch reached: the store holds every feed entry
// (within the retention) the log's messages through stream sequence
// through put, and held is the highest entry seq it held then. A later
// import reads only the messages after through while the point holds:
// the store still holds through held (nothing but imports and the
// owner's commits write an event's feed here, and only retention takes
// entries: a store that lost some is read whole again) and the claim
// came after it (through < epoch: a shard stream made anew is read
// whole). A trim between the prefetch and the claim needs nothing more:
// the log is trimmed only after its owner carried the entries of the
// messages it purges to the feed stream (Carry), which every import reads
// unless the store holds them all; reading after through then reads from
// the first message kept, as a whole read would.
//
// A prefetch notes its point as it goes, not only at its end: stream is
// the message of the event's subject of the feed stream whose entries
// (and every earlier message's) the store holds, and through advances
// after each log message whose entries were committed
// (eventlog.Log.ReadIndexAfterEach). One cut short (the leaving owner
// gave up on it, the move came first, the preload's bound) leaves the
// claim only the rest to read: in the chaos run's rolling restart, the
// claim after an unfinished prefetch read the whole feed again and the
// 1.2M-order event's writes waited 37 s for it (moves2.md, run 9).
//
// The point also keeps the import's view of the store (have: each record
// seq the store holds, with its entries) while it is fresh
// (feedHaveFresh), so the next import, the claim's, need not scan the
// store's whole feed of the event again: a hot event's (1-2M entries)
// took seconds, while its writes waited for the claim. The view stays
// exact: nothing but the imports, one at a time, writes an event's feed
// on a node that does not own it; it is dropped when a commit fails, and
// used only while the store still holds the point's last entry.
type feedPoint struct {
	through, held, stream uint64
	have                  map[uint64]uint64
	at                    time.Time
}

// feedHaveFresh is how long a point's view of the store serves the next
// import.
const feedHaveFresh = 5 * time.Minute

// importStats is what an import read: the log's messages after after
// through through (after 0: the whole tail), and the feed entries they
// and the stream put, those the store lacked (imported) included.
type importStats struct {
	after, through   uint64
	logSeen, streams uint64
	imported         int
}

// NewFeeds returns the feed carrier of log's node; its stream is made
// with the node's others (before it is ready).
func NewFeeds(log *eventlog.Log) *Feeds {
	n := log.Node()
	st := node.NewReplicatedStream(n, jetstream.StreamConfig{Name: FeedStream, Subjects: []string{feedSubj + ">"},
		MaxAge: event.FeedRetention + feedKeepExtra})
	return &Feeds{n: n, log: log, store: log.Local(), st: st}
}

func feedEventPrefix(eventID string) []byte { return []byte(feedPrefix + eventID + "/") }

func feedKey(eventID string, seq uint64) []byte {
	return fmt.Appendf(feedEventPrefix(eventID), "%016x", seq)
}

// feedSeqOf is the seq of a feed key of eventID's (prefix len plen), 0
// when malformed.
func feedSeqOf(key []byte, plen int) uint64 {
	rest := key[plen:]
	if len(rest) != 16 {
		return 0
	}
	seq, err := strconv.ParseUint(string(rest), 16, 64)
	if err != nil {
		return 0
	}
	return seq
}

// feedAt is when the entry of stored value v happened (false: too short).
func feedAt(v []byte) (time.Time, bool) {
	if len(v) < 10 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v[2:10]))), true
}

// errFeedFormat is a carried message this version cannot read.
var errFeedFormat = errors.New("cluster: feed message of unknown format")

// decodeFeedMsg calls fn for each entry of a carried message.
func decodeFeedMsg(b []byte, fn func(seq uint64, v []byte)) error {
	if len(b) == 0 || b[0] != feedFormat {
		return errFeedFormat
	}
	b = b[1:]
	for len(b) > 0 {
		seq, k := binary.Uvarint(b)
		if k <= 0 {
			return errFeedFormat
		}
		b = b[k:]
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return errFeedFormat
		}
		fn(seq, b[k:k+int(n)])
		b = b[k+int(n):]
	}
	return nil
}

// Import writes to the local store the feed entries of eventID it lacks:
// those the feed stream carries and those the log's messages before the
// claim epoch put; entries past the retention are left out. It is
// Log.ImportClaimed: a claim is answered only once it is done. A
// prefetch of the event under way is stopped first, and the import goes
// on from the point it reached.
func (f *Feeds) Import(eventID string, epoch uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), feedImportFor)
	defer cancel()
	return f.importFeed(ctx, eventID, epoch, true, nil)
}

// Prefetch writes to the local store the feed entries of eventID that the
// feed stream carries and the log's messages put so far and the store
// lacks, paced (feedPrefetchSlice), and notes the log's message it read
// through (feedPoint): the bulk of a big event's feed (the stream's) and
// of its log's tail (up to SnapshotTailMax records since its last trim).
// The router calls it while it preloads a shard ahead of a planned move
// (and again at the handover's catch-up, which reads only the log's
// messages since), so the claim's Import reads only the messages written
// since: a drop's feed (about 100 MB for 100,000 orders) and a hot
// event's tail (92,304 entries read in 5.3 s at the claim, issue 31) are
// read before the giver stops serving the event, not while its writes
// wait for the claim.
//
// It is background work, the event's owner serving it meanwhile: paced by
// this process's own load (package pace: at full speed while nothing
// here waits for a core), within ctx, counting the entries it reads in
// progress (nil: not counted). Cut short, it keeps the point it reached
// (feedPoint).
func (f *Feeds) Prefetch(ctx context.Context, eventID string, progress *pace.Progress) error {
	ctx, cancel := context.WithTimeout(ctx, feedImportFor)
	defer cancel()
	return f.importFeed(ctx, eventID, 0, false, progress)
}

// stopPrefetch stops eventID's prefetch under way, if any, and waits
// until it has noted its point; register, when set, registers run as the
// event's prefetch under way once the last has stopped.
func (f *Feeds) stopPrefetch(eventID string, register *prefetchRun) {
	for {
		f.mu.Lock()
		run := f.running[eventID]
		if run == nil {
			if register != nil {
				if f.running == nil {
					f.running = map[string]*prefetchRun{}
				}
				f.running[eventID] = register
			}
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		run.cancel()
		<-run.done
	}
}

// importFeed is Import (claim set: the log's messages before epoch, then
// the point is consumed) or Prefetch (the log's messages so far, paced,
// the point noted as it goes). Either reads the feed stream and the log
// only after the point the prefetches reached while it holds (feedPoint).
func (f *Feeds) importFeed(ctx context.Context, eventID string, epoch uint64, claim bool, progress *pace.Progress) error {
	if f.store == nil {
		return nil
	}
	t0 := time.Now()
	// One import of an event at a time: a claim stops the prefetch under
	// way (it goes on from its point, at full speed); a prefetch waits
	// for the last to stop.
	var run *prefetchRun
	if claim {
		f.stopPrefetch(eventID, nil)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		run = &prefetchRun{cancel: cancel, done: make(chan struct{})}
		f.stopPrefetch(eventID, run)
		defer func() {
			cancel()
			f.mu.Lock()
			if f.running[eventID] == run {
				delete(f.running, eventID)
			}
			f.mu.Unlock()
			close(run.done)
		}()
	}
	yield := func() {}
	if !claim {
		yield = pace.New().Yield
	}
	f.mu.Lock()
	point, pointed := f.reached[eventID]
	f.mu.Unlock()
	prefix := feedEventPrefix(eventID)
	// have: the seqs of the records the store holds, each with the
	// entries it holds (a span's: actors/feed); the point's while it is
	// fresh and the store still holds its last entry, else scanned.
	var have map[uint64]uint64
	var held uint64
	if pointed && point.have != nil && time.Since(point.at) < feedHaveFresh {
		if _, ok, err := f.store.Get(feedKey(eventID, point.held)); err == nil && (ok || point.held == 0) {
			have, held = point.have, point.held
		}
	}
	var err error
	if have == nil {
		have = map[uint64]uint64{}
		err = f.store.Scan(prefix, func(key, v []byte) error {
			if seq := feedSeqOf(key, len(prefix)); seq > 0 {
				have[seq] = feedEntries(v)
				held = max(held, seq)
			}
			if len(have)%feedImportBatch == 0 {
				return ctx.Err() // a claim stops a prefetch here too
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("cluster: import the feed of %s: %w", eventID, err)
	}
	// The point (read before the scan: it is noted after its entries
	// were committed) still holds, or the stream and the log are read
	// whole.
	var after, streamAfter uint64
	if pointed && held >= point.held {
		streamAfter = point.stream
		if !claim || point.through < epoch {
			after = point.through
		}
	}
	var st importStats
	st.after = after
	horizon := time.Now().Add(-event.FeedRetention)
	b := f.store.NewBatch()
	defer func() { b.Close() }()
	n, pending := 0, 0
	put := func(seq uint64, v []byte) {
		if seq == 0 {
			return
		}
		if _, ok := have[seq]; ok {
			return
		}
		if at, ok := feedAt(v); !ok || at.Before(horizon) {
			return
		}
		have[seq] = feedEntries(v)
		held = max(held, seq)
		b.Put(feedKey(eventID, seq), v)
		n++
		pending++
	}
	// reached is the point this import has made good so far: noted by a
	// prefetch after each commit, so one cut short keeps it.
	reached := feedPoint{through: after, stream: streamAfter}
	commit := func(force bool) error {
		if pending == 0 || (!force && pending < feedImportBatch) {
			return nil
		}
		if err := f.store.Commit(b); err != nil {
			return err
		}
		b.Close()
		b = f.store.NewBatch()
		pending = 0
		return nil
	}
	note := func() {
		if claim {
			return
		}
		// The imports of an event run one at a time, each from the point
		// the last reached (or from nothing, when it no longer held).
		reached.held, reached.have, reached.at = held, have, time.Now()
		f.mu.Lock()
		if f.reached == nil {
			f.reached = map[string]feedPoint{}
		}
		f.reached[eventID] = reached
		f.sweepLocked()
		noted := f.noted
		f.mu.Unlock()
		if noted != nil {
			noted(reached)
		}
	}
	fail := func(err error) error {
		// What was read is kept: committed, and its point noted. A view
		// with entries the store may lack is no view.
		if cerr := commit(true); cerr == nil {
			note()
		} else {
			f.mu.Lock()
			if p, ok := f.reached[eventID]; ok {
				p.have = nil
				f.reached[eventID] = p
			}
			f.mu.Unlock()
		}
		return fmt.Errorf("cluster: import the feed of %s: %w", eventID, err)
	}
	// The stream first: it carries what the log's trim took, the log the
	// rest (an entry in both is the same bytes).
	if _, err := f.st.Stream(ctx); err != nil {
		return fail(err)
	}
	subj := feedSubj + eventID
	last, err := f.st.Last(ctx, subj)
	if err != nil {
		return fail(err)
	}
	// A store that holds the feed from seq 1 through what the stream
	// carries (this node owned the event before: an actor reloaded, a
	// shard gained back) reads none of it again.
	if last != nil && last.Sequence > streamAfter && !holdsThrough(have, last.Header.Get(hdrFeedLast)) {
		err = node.ReadThrough(ctx, f.n.Conn(), FeedStream, subj, streamAfter+1, last.Sequence, f.n.Config().RequestTimeout, false, func(m *jetstream.RawStreamMsg) error {
			st.streams++
			if err := decodeFeedMsg(m.Data, func(seq uint64, v []byte) { yield(); progress.Entries(1); put(seq, v) }); err != nil {
				return err
			}
			stop := ctx.Err()
			if err := commit(stop != nil); err != nil {
				return err
			}
			if pending == 0 {
				reached.stream = m.Sequence
				note()
			}
			return stop
		})
		if err != nil {
			return fail(err)
		}
	}
	if last != nil {
		// Read through it, or held already.
		reached.stream = max(reached.stream, last.Sequence)
	}
	// The log after the point; a prefetch notes it after each message
	// whose entries it committed.
	before := uint64(0)
	if claim {
		before = epoch
	}
	st.through, err = f.log.ReadIndexAfterEach(eventID, after, before, func(op byte, k, v []byte) {
		yield()
		if op == 'p' && bytes.HasPrefix(k, prefix) {
			st.logSeen++
			progress.Entries(1)
			put(feedSeqOf(k, len(prefix)), v)
		}
	}, func(msgSeq uint64) error {
		stop := ctx.Err()
		if err := commit(stop != nil); err != nil {
			return err
		}
		if pending == 0 {
			reached.through = msgSeq
			note()
		}
		return stop
	})
	if err == nil {
		err = commit(true)
	}
	if err != nil {
		return fail(err)
	}
	reached.through = st.through
	note()
	st.imported = n
	f.mu.Lock()
	f.last = st
	if claim {
		delete(f.reached, eventID)
		f.sweepLocked()
	}
	f.mu.Unlock()
	if n > 0 || st.logSeen > 0 || claim {
		// A claim's always: what its writes waited for (issue 31).
		f.n.Config().Logger.Debug("cluster: feed entries imported", "event", eventID, "entries", n, "claim", claim,
			"stream_after", streamAfter, "log_after", st.after, "log_through", st.through, "log_entries", st.logSeen,
			"ms", time.Since(t0).Milliseconds())
	}
	return nil
}

// sweepLocked drops the views of the points past feedHaveFresh (an event
// prefetched and never claimed here: a refused move). f.mu is held.
func (f *Feeds) sweepLocked() {
	for id, p := range f.reached {
		if p.have != nil && time.Since(p.at) >= feedHaveFresh {
			p.have = nil
			f.reached[id] = p
		}
	}
}

// holdsThrough reports whether have (record seq -> entries it holds)
// holds every seq from 1 through the decimal seq last.
func holdsThrough(have map[uint64]uint64, last string) bool {
	k, err := strconv.ParseUint(last, 10, 64)
	if err != nil {
		return false
	}
	// From the last record down, each record's first entry follows the
	// record before it.
	for seq := k; seq > 0; {
		n, ok := have[seq]
		if !ok || n == 0 || n > seq {
			return false
		}
		seq -= n
	}
	return true
}

// feedEntries is the feed entries a stored record holds: one, or a
// span's n (actors/feed: version 2, n a uvarint after the 10-byte
// header); 0 when it cannot be read.
func feedEntries(v []byte) uint64 {
	if len(v) < 10 {
		return 0
	}
	if v[0] != 2 {
		return 1
	}
	n, k := binary.Uvarint(v[10:])
	if k <= 0 {
		return 0
	}
	return n
}

// Carry makes eventID's subject of the feed stream carry the feed entries
// this node's store has after the last one it carries (the owner's store
// has every entry: it imported them at its claim, and its commits put the
// rest). Called before the log is trimmed (Snapshots.carry); an error
// says the trim must wait. The trim goes through the older snapshot kept
// (or, by the trimmer, an idle event's last record): the commits it
// takes were answered, and a commit is answered once its index entries
// are in this store (eventlog: a stored message's entries are applied
// before its commits are answered).
func (f *Feeds) Carry(ctx context.Context, eventID string) error {
	if f.store == nil {
		return nil
	}
	prefix := feedEventPrefix(eventID)
	found := false
	if err := f.store.Scan(prefix, func(_, _ []byte) error { found = true; return errFound }); err != nil && !errors.Is(err, errFound) {
		return fmt.Errorf("cluster: carry the feed of %s: %w", eventID, err)
	}
	if !found {
		return nil // no feed entry: nothing to carry, no read
	}
	subj := feedSubj + eventID
	for try := 0; ; try++ {
		last, err := f.st.Last(ctx, subj)
		if err != nil {
			return fmt.Errorf("cluster: carry the feed of %s: %w", eventID, err)
		}
		carried, expected := uint64(0), uint64(0)
		if last != nil {
			expected = last.Sequence
			if carried, err = strconv.ParseUint(last.Header.Get(hdrFeedLast), 10, 64); err != nil {
				return fmt.Errorf("cluster: carry the feed of %s: message %d: %w", eventID, last.Sequence, errFeedFormat)
			}
		}
		err = f.carryFrom(ctx, eventID, subj, carried, expected)
		if errors.Is(err, node.ErrConflict) && try < settledTries {
			continue // another writer (an older owner finishing) moved it
		}
		if err != nil {
			return fmt.Errorf("cluster: carry the feed of %s: %w", eventID, err)
		}
		return nil
	}
}

// carryFrom publishes the entries after seq carried, in parts, each fenced
// on the subject's last message (expected).
func (f *Feeds) carryFrom(ctx context.Context, eventID, subj string, carried, expected uint64) error {
	prefix := feedEventPrefix(eventID)
	var from []byte
	if carried > 0 {
		from = feedKey(eventID, carried)
	}
	body := []byte{feedFormat}
	var first, lastSeq uint64
	publish := func() error {
		if lastSeq == 0 {
			return nil
		}
		m := node.FencedMsg(subj, fmt.Sprintf("%s.%d-%d", subj, first, lastSeq), expected, body)
		m.Header.Set(hdrFeedLast, strconv.FormatUint(lastSeq, 10))
		ack, err := f.st.Publish(ctx, m)
		if err != nil {
			return err
		}
		expected = ack.Sequence
		body, first, lastSeq = []byte{feedFormat}, 0, 0
		return nil
	}
	var perr error
	err := f.store.ScanRange(prefix, from, nil, func(key, v []byte) error {
		seq := feedSeqOf(key, len(prefix))
		if seq <= carried {
			return nil
		}
		if len(body) > 1 && len(body)+len(v)+2*binary.MaxVarintLen64 > feedPartBytes {
			// The store must not be called from a scan: the part
			// goes out after it (below), the scan resumes after it.
			perr = errPartFull
			return errPartFull
		}
		if first == 0 {
			first = seq
		}
		lastSeq = seq
		body = binary.AppendUvarint(body, seq)
		body = binary.AppendUvarint(body, uint64(len(v)))
		body = append(body, v...)
		return nil
	})
	if err != nil && !errors.Is(err, errPartFull) {
		return err
	}
	through := lastSeq
	if err := publish(); err != nil {
		return err
	}
	if errors.Is(perr, errPartFull) {
		return f.carryFrom(ctx, eventID, subj, through, expected)
	}
	return nil
}

// errPartFull ends a carry's scan at a full part.
var errPartFull = errors.New("cluster: feed part full")
