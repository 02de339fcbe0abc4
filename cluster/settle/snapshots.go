package settle

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"

	"github.com/nats-io/nats.go/jetstream"
)

// Snapshot storage: the states in an object store, and per event the seqs
// of its snapshots kept in a key-value bucket (its key is the event id, its
// value the seqs, comma-separated, oldest first). Both are replicated like
// the event streams. Only an event's owner saves its snapshots (its
// snapshotter), so an index update races only with an owner that lost the
// event, and the revision check makes one of them fail.
const (
	SnapsKept   = 2
	snapTimeout = 30 * time.Second
)

// SnapshotTailMax bounds the records after an event's last snapshot in
// cluster mode (actors.Config.SnapshotTailMax): the tail a failover
// replays, while the event's writes wait, stays about that long however
// big the event grows, instead of up to the records the last snapshot
// covers (all of a big event's records, read while its writes wait:
// measured in bench/results/20261129-cluster-history.md). A big event pays for
// it with more snapshots: at 400,000 records, one every 100,000 instead
// of every 400,000, each costing about the state's size.
const SnapshotTailMax = 100_000

// Snapshots is the actors.SnapshotStore of cluster mode.
type Snapshots struct {
	Log *eventlog.Log

	mu  sync.Mutex // the store handles, looked up once
	obs jetstream.ObjectStore
	kv  jetstream.KeyValue

	smu      sync.Mutex                            // the trimmer's (see settle)
	want     func(eventID string, seq uint64) bool // the snapshotter's WantSnapshot
	settling map[string]uint64                     // event -> seq the trimmer asked a snapshot at
	asked    map[string]uint64                     // event -> its shard's seen when last asked
	loop     sync.Once
	// carrier carries what an event owes to the settled stream before a
	// trim (owed.carry); nil without a local store (nothing owed there).
	carrier *Owed
	// Feeds carries the change feed past the log's trim (feed.go), and
	// imports it at a claim (the log's ImportClaimed, set by app); nil
	// without a local store.
	Feeds *Feeds
}

// NewSnapshots returns the snapshot store whose trims apply to log.
func NewSnapshots(log *eventlog.Log) *Snapshots {
	s := &Snapshots{Log: log, settling: map[string]uint64{}, asked: map[string]uint64{}}
	if log.Local() != nil {
		// Its own instance (the router's follows the owned events): the
		// settled subject's fence orders their writes.
		s.carrier = &Owed{Node: log.Node(), Log: log, Store: log.Local()}
		s.Feeds = NewFeeds(log)
	}
	return s
}

// carry makes the settled stream carry what eventID owes by this node's
// store before its log is trimmed (see owed.carry): the entries it does
// not carry yet. An error says the trim must wait.
func (s *Snapshots) carry(ctx context.Context, eventID string) error {
	if s.carrier == nil {
		return nil
	}
	// The feed's entries first: kept apart from the owed work, and a
	// failure holds the trim back alike.
	if err := s.Feeds.Carry(ctx, eventID); err != nil {
		return err
	}
	return s.carrier.carry(ctx, eventID)
}

// snapLag is how long a snapshot the index lists may read as missing (a
// replica behind) before it is taken as gone.
const snapLag = 3 * time.Second

// errLastChunk ends a snapshot's read at its last chunk.
var errLastChunk = errors.New("cluster: last chunk read")

// snapTry bounds one request to the snapshot stores: a request sent while
// a stream has no leader (an election) is answered by nobody, and waits
// for its whole deadline; retried, the next one reaches the new leader.
const snapTry = 2 * time.Second

// retry runs fn with deadlines of try until it succeeds or ctx ends.
func retry(ctx context.Context, try time.Duration, fn func(ctx context.Context) error) error {
	for {
		tctx, cancel := context.WithTimeout(ctx, try)
		err := fn(tctx)
		cancel()
		if err == nil || errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrObjectNotFound) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func SnapName(eventID string, seq uint64) string {
	return eventID + "." + strconv.FormatUint(seq, 10)
}

// copySuffix names the second copy of a settled event's snapshot (see
// settle): its index lists the seq twice, "s,s".
const copySuffix = ".b"

// objName is the object name of the i-th snapshot of an event's list:
// the first of two at one seq is the copy.
func objName(eventID string, list []uint64, i int) string {
	if i+1 < len(list) && list[i+1] == list[i] {
		return SnapName(eventID, list[i]) + copySuffix
	}
	return SnapName(eventID, list[i])
}

func (s *Snapshots) Stores(ctx context.Context) (jetstream.ObjectStore, jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.obs != nil && s.kv != nil {
		return s.obs, s.kv, nil
	}
	if err := retry(ctx, snapTry, func(ctx context.Context) (err error) {
		s.obs, err = s.Log.Node().JetStream().ObjectStore(ctx, node.SnapBucket)
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("cluster: snapshot store: %w", err)
	}
	if err := retry(ctx, snapTry, func(ctx context.Context) (err error) {
		s.kv, err = s.Log.Node().JetStream().KeyValue(ctx, node.SnapIndex)
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("cluster: snapshot index: %w", err)
	}
	return s.obs, s.kv, nil
}

// Seqs reads an event's snapshot seqs, oldest first, and the index
// entry's revision (0 when none): from the bucket stream's leader when
// leader is set, else with the bucket's direct get, which any replica
// answers (see directget.go).
//
// A save reads from the leader: its update is fenced on the revision,
// which must be the last one. A load reads from a replica, so that it
// does not wait for the election of the bucket's leader when that was
// the node lost (a SIGSTOP run's load waited 10 s for it); only when the
// replica has no entry is the leader asked, in one try (a replica that
// has not applied an event's first save; TestSnapshotReadChunkByChunk
// caught it). A replica that has not applied the last save yet answers
// the list before it:
// its newest snapshot is still correct to load (the log keeps the
// records after the older snapshot kept), only older, so the load
// replays more. Two saves behind (its snapshots deleted) or no entry
// yet (a log trimmed behind the snapshots), the load fails on the gap
// between snapshot and log (actors' restore checks FirstSeq), never
// loads a state with records missing, and the next activation reads
// again. Both need a replica that missed saves made 50,000 records
// apart or more: not seen. An event with no record in the log (settled,
// see settle.go) shows no gap: LoadNewestWith reads its list from the
// leader then.
func (s *Snapshots) Seqs(ctx context.Context, eventID string, leader bool) ([]uint64, uint64, error) {
	list, rev, _, err := s.seqsFrom(ctx, eventID, leader)
	return list, rev, err
}

// seqsFrom is seqs, and whether the answer is the leader's (sure: every
// save acknowledged is in it) rather than a replica's.
func (s *Snapshots) seqsFrom(ctx context.Context, eventID string, leader bool) ([]uint64, uint64, bool, error) {
	var value []byte
	var rev uint64
	sure := leader
	err := retry(ctx, snapTry, func(ctx context.Context) error {
		fromLeader := func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
			return node.LeaderGet(ctx, s.Log.Node().Conn(), "KV_"+node.SnapIndex, node.MsgGetRequest{LastFor: "$KV." + node.SnapIndex + "." + eventID})
		}
		var m *jetstream.RawStreamMsg
		var err error
		if leader {
			m, err = fromLeader(ctx)
		} else {
			m, err = node.DirectLast(ctx, s.Log.Node().Conn(), "KV_"+node.SnapIndex, "$KV."+node.SnapIndex+"."+eventID)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				// None on the replica that answered: it may not have
				// applied the first save yet. The leader is asked once,
				// in one try; without an answer (an election), none it is.
				tctx, cancel := context.WithTimeout(ctx, snapTry)
				lm, lerr := fromLeader(tctx)
				cancel()
				if lerr == nil || errors.Is(lerr, jetstream.ErrMsgNotFound) {
					m, err, sure = lm, lerr, true
				}
			}
		}
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return jetstream.ErrKeyNotFound
		}
		if err != nil {
			return err
		}
		value, rev = m.Data, m.Sequence
		if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			value = nil
		}
		return nil
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, sure, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	var out []uint64
	for _, f := range strings.Split(string(value), ",") {
		if f == "" {
			continue
		}
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, 0, false, fmt.Errorf("bad snapshot index of %s: %q", eventID, value)
		}
		out = append(out, v)
	}
	return out, rev, sure, nil
}

// LoadNewestWith returns the newest readable snapshot of the event; an
// unreadable newest one falls back to the older one kept.
func (s *Snapshots) LoadNewestWith(eventID string, _ int) (uint64, []byte, bool, error) {
	return s.loadNewest(eventID, nil)
}

// LoadNewestPaced is LoadNewestWith as background work (a preload ahead
// of a planned move, the snapshot worker's rebuild): pace is called after
// each chunk read (actors.PacedSnapshotStore), so the next batch of
// chunks is asked only when pace returns.
func (s *Snapshots) LoadNewestPaced(eventID string, pace func()) (uint64, []byte, bool, error) {
	return s.loadNewest(eventID, pace)
}

func (s *Snapshots) loadNewest(eventID string, pace func()) (uint64, []byte, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), snapTimeout)
	defer cancel()
	// No store handle: looking one up asks the streams' leaders (stream
	// info), which a load must not wait for (a SIGSTOP run's load waited
	// 13 s for them on a node just restarted).
	list, _, sure, err := s.seqsFrom(ctx, eventID, false)
	if err == nil && !sure {
		// A replica's answer may be behind. The log's records after the
		// snapshot tell a stale list (restore fails on the gap); an event
		// with no record kept (all covered by its settled snapshot, or
		// none yet) has none to tell it, so its list is the leader's,
		// waiting for its election if need be.
		var first uint64
		if first, err = s.Log.FirstSeq(eventID); err == nil && first == 0 {
			list, _, err = s.Seqs(ctx, eventID, true)
		}
	}
	if err != nil {
		return 0, nil, false, fmt.Errorf("cluster: snapshots of %s: %w", eventID, err)
	}
	if len(list) >= SnapsKept {
		// The shard's log keeps this event's records after the older one.
		s.Log.Event(eventID).Shard.SetKeep(eventID, list[0])
	}
	var firstErr error
	for i := len(list) - 1; i >= 0; i-- {
		b, err := s.getObject(ctx, objName(eventID, list, i), pace)
		if err == nil {
			return list[i], b, true, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		s.Log.Node().Config().Logger.Warn("cluster: snapshot unreadable", "event", eventID, "seq", list[i], "err", err)
	}
	if firstErr != nil && len(list) > 0 {
		// Every snapshot unreadable: the log may be trimmed behind them.
		return 0, nil, false, fmt.Errorf("cluster: snapshots of %s unreadable: %w", eventID, firstErr)
	}
	return 0, nil, false, nil
}

// SaveAndTrim saves the state of the event at seq, keeps the newest
// snapsKept snapshots, and trims the log through the older one kept: an
// unreadable newest snapshot still has an older one and the records after
// it. What the event owes is carried first (owed.carry); a carry that
// fails holds the trim back (the older one kept stays where it was).
func (s *Snapshots) SaveAndTrim(eventID string, seq uint64, state []byte) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), snapTimeout)
	defer cancel()
	obs, kv, err := s.Stores(ctx)
	if err != nil {
		return 0, err
	}
	list, rev, err := s.Seqs(ctx, eventID, true)
	if err != nil {
		return 0, fmt.Errorf("cluster: snapshots of %s: %w", eventID, err)
	}
	s.smu.Lock()
	asked := s.settling[eventID]
	if asked > 0 && seq >= asked {
		delete(s.settling, eventID)
	}
	s.smu.Unlock()
	if asked > 0 && seq >= asked {
		return s.keepSettled(ctx, obs, kv, eventID, seq, state, list, rev)
	}
	if slices.Contains(list, seq) {
		return 0, nil
	}
	all := append(slices.Clone(list), seq)
	slices.Sort(all)
	kept := all[max(0, len(all)-SnapsKept):]
	if !slices.Contains(kept, seq) {
		return 0, nil // older than those kept
	}
	held := false
	if len(kept) >= SnapsKept {
		// The log is trimmed through kept[0] below: what the event owes
		// goes along first (the entries not carried yet). Without that
		// copy the trim waits: the snapshot is kept as the newest, with
		// the older one kept (list[0]) that the log is trimmed through
		// already, so a load anywhere keeps the log there too.
		if err := s.carry(ctx, eventID); err != nil {
			level := slog.LevelWarn
			if errors.Is(err, errNotOwner) {
				level = slog.LevelDebug // a move: the next owner carries
			}
			s.Log.Node().Config().Logger.Log(ctx, level, "cluster: snapshot: entries owed not carried, the trim waits", "event", eventID, "through", kept[0], "err", err)
			if len(list) < SnapsKept {
				// The one snapshot kept and its log stay as they are.
				return 0, fmt.Errorf("cluster: snapshot of %s at %d not kept: %w", eventID, seq, err)
			}
			if seq != all[len(all)-1] {
				return 0, nil // older than the newest: nothing to keep
			}
			kept, held = []uint64{list[0], seq}, true
		}
	}
	if _, err := obs.PutBytes(ctx, SnapName(eventID, seq), state); err != nil {
		return 0, fmt.Errorf("cluster: save snapshot %s at %d: %w", eventID, seq, err)
	}
	if err := s.putIndex(ctx, kv, eventID, kept, rev); err != nil {
		return 0, err
	}
	s.deleteDropped(ctx, obs, eventID, all, kept)
	if len(kept) < SnapsKept || held {
		return 0, nil
	}
	through := kept[0]
	if err := s.Log.Trim(ctx, eventID, through); err != nil {
		// The snapshot is saved; the log keeps more than it needs until
		// the next snapshot trims it.
		s.Log.Node().Config().Logger.Warn("cluster: trim", "event", eventID, "through", through, "err", err)
		return 0, nil
	}
	return through, nil
}

// putIndex writes an event's snapshot list, fenced on the revision read
// (0: none yet).
func (s *Snapshots) putIndex(ctx context.Context, kv jetstream.KeyValue, eventID string, list []uint64, rev uint64) error {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = strconv.FormatUint(v, 10)
	}
	value := []byte(strings.Join(parts, ","))
	var err error
	if rev == 0 {
		_, err = kv.Create(ctx, eventID, value)
	} else {
		_, err = kv.Update(ctx, eventID, value, rev)
	}
	if err != nil {
		return fmt.Errorf("cluster: snapshot index of %s: %w", eventID, err)
	}
	return nil
}

// deleteDropped deletes the objects of the list before that the list
// now no longer names. A failed delete leaves garbage, never a gap.
func (s *Snapshots) deleteDropped(ctx context.Context, obs jetstream.ObjectStore, eventID string, before, now []uint64) {
	keep := map[string]bool{}
	for i := range now {
		keep[objName(eventID, now, i)] = true
	}
	for i := range before {
		if name := objName(eventID, before, i); !keep[name] {
			if err := obs.Delete(ctx, name); err != nil {
				s.Log.Node().Config().Logger.Warn("cluster: delete old snapshot", "event", eventID, "name", name, "err", err)
			}
		}
	}
}

// getObject reads an object of the snapshot bucket: its info with a
// direct get, then its chunks in batched direct gets (readThrough), which
// any replica answers (see directget.go), so a load does not wait for
// the election of the bucket's leader when that was the node lost. The
// object store's own reader makes an ordered consumer, whose creation
// needs the JetStream meta leader: when the node that led the meta group
// is lost or paused, a new owner's snapshot read waited for that election
// (25 s in a SIGSTOP run) though the bucket's stream had a leader again.
// An object's chunks are stored before its info, so a replica that has
// the info has them (a replica's state is a prefix of the stream's); one
// that lags behind another answers fewer, and the leader answers the
// rest. The size and digest the info records are checked.
func (s *Snapshots) getObject(ctx context.Context, name string, pace func()) ([]byte, error) {
	// Every request has a try of its own (snapTry): one sent to a leader
	// that was just lost or paused waits no longer than that, and the
	// next reaches the new one; ctx bounds the whole read.
	// A replica that has not applied the object yet answers "not found"
	// for a snapshot the index listed, so that is asked again for a while.
	var info *jetstream.ObjectInfo
	for lagging := time.Now().Add(snapLag); ; {
		err := retry(ctx, snapTry, func(ctx context.Context) error {
			meta := "$O." + node.SnapBucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
			m, err := node.DirectLast(ctx, s.Log.Node().Conn(), "OBJ_"+node.SnapBucket, meta)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				// Its replica may lag (without a leader, it cannot catch
				// up): the leader, in one try.
				tctx, cancel := context.WithTimeout(ctx, snapTry)
				m, err = node.LeaderGet(tctx, s.Log.Node().Conn(), "OBJ_"+node.SnapBucket, node.MsgGetRequest{LastFor: meta})
				cancel()
				if err != nil {
					return jetstream.ErrObjectNotFound
				}
			}
			if err != nil {
				return err
			}
			info = &jetstream.ObjectInfo{}
			if err := json.Unmarshal(m.Data, info); err != nil {
				return fmt.Errorf("cluster: snapshot %s: info: %w", name, err)
			}
			if info.Deleted {
				return jetstream.ErrObjectNotFound
			}
			return nil
		})
		if err == nil {
			break
		}
		if !errors.Is(err, jetstream.ErrObjectNotFound) || time.Now().After(lagging) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
	nc, stream := s.Log.Node().Conn(), "OBJ_"+node.SnapBucket
	subj := "$O." + node.SnapBucket + ".C." + info.NUID
	out := make([]byte, 0, info.Size)
	sum := sha256.New()
	next, chunks := uint64(1), uint32(0)
	for chunks < info.Chunks {
		// Through the object's last chunk: a failed request is tried again
		// from the next chunk.
		err := node.ReadThrough(ctx, nc, stream, subj, next, math.MaxUint64, snapTry, true, func(m *jetstream.RawStreamMsg) error {
			out = append(out, m.Data...)
			sum.Write(m.Data)
			next = m.Sequence + 1
			if chunks++; chunks == info.Chunks {
				return errLastChunk
			}
			if pace != nil {
				pace()
			}
			return nil
		})
		if err == nil || errors.Is(err, errLastChunk) {
			break
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cluster: snapshot %s: chunk after %d: %w", name, next-1, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if uint64(len(out)) != info.Size || chunks != info.Chunks {
		return nil, fmt.Errorf("cluster: snapshot %s: read %d bytes in %d chunks of %d in %d", name, len(out), chunks, info.Size, info.Chunks)
	}
	if d := "SHA-256=" + base64.URLEncoding.EncodeToString(sum.Sum(nil)); d != info.Digest {
		return nil, fmt.Errorf("cluster: snapshot %s: digest %s, its info says %s", name, d, info.Digest)
	}
	return out, nil
}
