package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Snapshot storage: the states in an object store, and per event the seqs
// of its snapshots kept in a key-value bucket (its key is the event id, its
// value the seqs, comma-separated, oldest first). Both are replicated like
// the event streams. Only an event's owner saves its snapshots (its
// snapshotter), so an index update races only with an owner that lost the
// event, and the revision check makes one of them fail.
const (
	snapBucket  = "TICKETD_SNAPSHOTS"
	snapIndex   = "TICKETD_SNAPINDEX"
	snapsKept   = 2
	snapTimeout = 30 * time.Second
)

// Snapshots is the actors.SnapshotStore of cluster mode.
type Snapshots struct {
	log *Log

	mu  sync.Mutex // the store handles, looked up once
	obs jetstream.ObjectStore
	kv  jetstream.KeyValue
}

// NewSnapshots returns the snapshot store whose trims apply to log.
func NewSnapshots(log *Log) *Snapshots { return &Snapshots{log: log} }

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

func snapName(eventID string, seq uint64) string {
	return eventID + "." + strconv.FormatUint(seq, 10)
}

func (s *Snapshots) stores(ctx context.Context) (jetstream.ObjectStore, jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.obs != nil && s.kv != nil {
		return s.obs, s.kv, nil
	}
	if err := retry(ctx, snapTry, func(ctx context.Context) (err error) {
		s.obs, err = s.log.n.js.ObjectStore(ctx, snapBucket)
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("cluster: snapshot store: %w", err)
	}
	if err := retry(ctx, snapTry, func(ctx context.Context) (err error) {
		s.kv, err = s.log.n.js.KeyValue(ctx, snapIndex)
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("cluster: snapshot index: %w", err)
	}
	return s.obs, s.kv, nil
}

// seqs reads an event's snapshot seqs, oldest first, and the index
// entry's revision (0 when none).
//
// The entry is read from the bucket stream's leader, not with the bucket's
// direct get: a replica that has not applied the last save yet would
// answer the list before it. That list still names a snapshot that is
// correct to load (the log keeps the records after the older snapshot
// kept), but older, so the load replays more; two saves behind, both its
// snapshots are deleted; and an entry not there yet on a replica would
// load the event from a log trimmed behind its snapshots. It also makes
// the revision a save updates on the last one.
func seqs(ctx context.Context, nc *nats.Conn, eventID string) ([]uint64, uint64, error) {
	var m *jetstream.RawStreamMsg
	err := retry(ctx, snapTry, func(ctx context.Context) (err error) {
		m, err = leaderGet(ctx, nc, "KV_"+snapIndex, msgGetRequest{LastFor: "$KV." + snapIndex + "." + eventID})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return jetstream.ErrKeyNotFound
		}
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
		return nil, m.Sequence, nil
	}
	var out []uint64
	for _, f := range strings.Split(string(m.Data), ",") {
		if f == "" {
			continue
		}
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("bad snapshot index of %s: %q", eventID, m.Data)
		}
		out = append(out, v)
	}
	return out, m.Sequence, nil
}

// LoadNewestWith returns the newest readable snapshot of the event; an
// unreadable newest one falls back to the older one kept.
func (s *Snapshots) LoadNewestWith(eventID string, _ int) (uint64, []byte, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), snapTimeout)
	defer cancel()
	list, _, err := seqs(ctx, s.log.n.nc, eventID)
	if err != nil {
		return 0, nil, false, fmt.Errorf("cluster: snapshots of %s: %w", eventID, err)
	}
	if len(list) >= snapsKept {
		// The shard's log keeps this event's records after the older one.
		s.log.event(eventID).s.setKeep(eventID, list[0])
	}
	var firstErr error
	for i := len(list) - 1; i >= 0; i-- {
		b, err := s.getObject(ctx, snapName(eventID, list[i]))
		if err == nil {
			return list[i], b, true, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		s.log.n.cfg.Logger.Warn("cluster: snapshot unreadable", "event", eventID, "seq", list[i], "err", err)
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
// it.
func (s *Snapshots) SaveAndTrim(eventID string, seq uint64, state []byte) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), snapTimeout)
	defer cancel()
	obs, kv, err := s.stores(ctx)
	if err != nil {
		return 0, err
	}
	list, rev, err := seqs(ctx, s.log.n.nc, eventID)
	if err != nil {
		return 0, fmt.Errorf("cluster: snapshots of %s: %w", eventID, err)
	}
	if slices.Contains(list, seq) {
		return 0, nil
	}
	if _, err := obs.PutBytes(ctx, snapName(eventID, seq), state); err != nil {
		return 0, fmt.Errorf("cluster: save snapshot %s at %d: %w", eventID, seq, err)
	}
	list = append(list, seq)
	slices.Sort(list)
	var dropped []uint64
	if len(list) > snapsKept {
		dropped = list[:len(list)-snapsKept]
		list = list[len(list)-snapsKept:]
	}
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = strconv.FormatUint(v, 10)
	}
	value := []byte(strings.Join(parts, ","))
	if rev == 0 {
		_, err = kv.Create(ctx, eventID, value)
	} else {
		_, err = kv.Update(ctx, eventID, value, rev)
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: snapshot index of %s: %w", eventID, err)
	}
	for _, d := range dropped {
		if err := obs.Delete(ctx, snapName(eventID, d)); err != nil {
			s.log.n.cfg.Logger.Warn("cluster: delete old snapshot", "event", eventID, "seq", d, "err", err)
		}
	}
	if len(list) < snapsKept {
		return 0, nil
	}
	through := list[0]
	if err := s.log.trim(ctx, eventID, through); err != nil {
		// The snapshot is saved; the log keeps more than it needs until
		// the next snapshot trims it.
		s.log.n.cfg.Logger.Warn("cluster: trim", "event", eventID, "through", through, "err", err)
		return 0, nil
	}
	return through, nil
}

// getObject reads an object of the snapshot bucket: its info from the
// bucket stream's leader, then its chunks in batched direct gets, the
// leader answering a chunk the replica that answered does not have yet
// (readThrough). The object store's own reader makes an ordered consumer,
// whose creation needs the JetStream meta leader: when the node that led
// the meta group is lost or paused, a new owner's snapshot read waited for
// that election (25 s in a SIGSTOP run) though the bucket's own stream had
// a leader again. The size and digest the object's info records are
// checked.
func (s *Snapshots) getObject(ctx context.Context, name string) ([]byte, error) {
	// Every request has a try of its own (snapTry): one sent to a leader
	// that was just lost or paused waits no longer than that, and the
	// next reaches the new one; ctx bounds the whole read.
	nc := s.log.n.nc
	stream := "OBJ_" + snapBucket
	var info jetstream.ObjectInfo
	err := retry(ctx, snapTry, func(ctx context.Context) error {
		m, err := leaderGet(ctx, nc, stream, msgGetRequest{LastFor: "$O." + snapBucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return jetstream.ErrObjectNotFound
		}
		if err != nil {
			return err
		}
		info = jetstream.ObjectInfo{}
		if err := json.Unmarshal(m.Data, &info); err != nil {
			return fmt.Errorf("cluster: snapshot %s: info: %w", name, err)
		}
		if info.Deleted {
			return jetstream.ErrObjectNotFound
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	subj := "$O." + snapBucket + ".C." + info.NUID
	var end uint64
	if err := retry(ctx, snapTry, func(ctx context.Context) (err error) {
		end, err = leaderLast(ctx, nc, stream, subj)
		return err
	}); err != nil {
		return nil, fmt.Errorf("cluster: snapshot %s: last chunk: %w", name, err)
	}
	out := make([]byte, 0, info.Size)
	sum := sha256.New()
	next, chunks := uint64(1), uint32(0)
	for next <= end && chunks < info.Chunks {
		// A failed request is tried again from the next chunk.
		err := readThrough(ctx, nc, stream, subj, next, end, snapTry, true, func(m *jetstream.RawStreamMsg) error {
			out = append(out, m.Data...)
			sum.Write(m.Data)
			next = m.Sequence + 1
			chunks++
			return nil
		})
		if err == nil {
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
