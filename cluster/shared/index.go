package shared

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/cluster/node"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"ticketd/persistence"
)

// The shared index: index entries every node must see, in the stream
// TICKETD_INDEX, one subject per key (ix.<key token>) that keeps its last
// value, each node copying them into its local store.
const (
	indexStream = "TICKETD_INDEX"
	indexPrefix = "ix."
	// indexPos is the local key of the last stream sequence applied, so
	// a restarted node reads only what it has not applied.
	indexPos = persistence.PrefixClusterPos + "index"
	// indexTimeout bounds one write or read of the shared index.
	indexTimeout = 10 * time.Second
)

// Index is the shared index of cluster mode. Put stores an entry on a
// majority of the nodes; every node follows the stream (an ordered
// consumer) and writes each entry into its local store, where the code
// that reads it (the event index at start, the audit log's pages) reads
// it as on a single node, and hands it to the System's view. Entries are
// put, never deleted through the stream: an entry with an end of life
// (the audit log's retention) carries it as a message TTL, and each node
// prunes its own copy by the same rule.
//
// It keeps the event index (actors.SharedIndex: "ev/" entries, written
// before the event is created, and "evpub/" statuses), the audit log,
// the webhook endpoints ("whep/", webhooks.Service.Share) and delivery
// logs, console sessions, Stripe's event ids acted on and cluster-wide
// secrets (see the package documentation).
type Index struct {
	n     *node.Node
	local *persistence.Store
	st    *node.ReplicatedStream

	caughtUp atomic.Bool
	applied  atomic.Uint64 // the last stream sequence applied
	stop     chan struct{}
	wg       sync.WaitGroup
}

// NewIndex returns the shared index of node n, copied into local.
func NewIndex(n *node.Node, local *persistence.Store) *Index {
	return &Index{n: n, local: local, stop: make(chan struct{}),
		st: node.NewReplicatedStream(n, jetstream.StreamConfig{Name: indexStream, Subjects: []string{indexPrefix + ">"},
			MaxMsgsPerSubject: 1, AllowMsgTTL: true, AllowAtomicPublish: true})}
}

// Put stores key = value on a majority of the nodes (for ttl, 0 for
// ever); every node's copy follows within moments.
func (x *Index) Put(ctx context.Context, key, value []byte, ttl time.Duration) error {
	if _, err := x.st.Publish(ctx, x.msg(key, value, ttl)); err != nil {
		return fmt.Errorf("cluster: index put: %w", err)
	}
	return nil
}

// PutAtomic stores every pair, each for its ttl (0: for ever), on a
// majority of the nodes, all of them or none: one atomic batch of the
// stream, so a write and the Idempotency-Key record of the request that
// made it (a webhook endpoint and its creation's answer) are never kept
// one without the other (decisions §20). Every node's copy follows
// within moments.
func (x *Index) PutAtomic(ctx context.Context, keys, values [][]byte, ttls []time.Duration) error {
	if len(keys) != len(values) || len(keys) != len(ttls) || len(keys) == 0 {
		return errors.New("cluster: index put atomic: one value and one ttl a key, at least one key")
	}
	msgs := make([]*nats.Msg, len(keys))
	for i := range keys {
		msgs[i] = x.msg(keys[i], values[i], ttls[i])
	}
	if err := x.st.PublishBatch(ctx, msgs); err != nil {
		return fmt.Errorf("cluster: index put atomic: %w", err)
	}
	return nil
}

// msg is the message that puts key = value for ttl (0: for ever).
func (x *Index) msg(key, value []byte, ttl time.Duration) *nats.Msg {
	m := &nats.Msg{Subject: indexPrefix + node.KeyToken(key), Data: value, Header: nats.Header{}}
	m.Header.Set(jetstream.MsgIDHeader, "ix."+x.n.Config().NodeName+"."+nuid.Next())
	if ttl > 0 {
		m.Header.Set(jetstream.MsgTTLHeader, ttl.Round(time.Second).String())
	}
	return m
}

// Get reads key's value from the stream's leader.
func (x *Index) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	m, err := x.st.Last(ctx, indexPrefix+node.KeyToken(key))
	if err != nil || m == nil {
		return nil, false, err
	}
	return m.Data, true, nil
}

// PutApplied puts key = value as Put does and returns once this node's
// local copy has applied it (or ctx ends), so a read of the local store
// that follows sees it: a sign-out takes effect at once where it was made.
func (x *Index) PutApplied(ctx context.Context, key, value []byte, ttl time.Duration) error {
	ack, err := x.st.Publish(ctx, x.msg(key, value, ttl))
	if err != nil {
		return fmt.Errorf("cluster: index put: %w", err)
	}
	return x.awaitApplied(ctx, ack.Sequence)
}

// awaitApplied waits until the local copy has applied stream sequence seq.
func (x *Index) awaitApplied(ctx context.Context, seq uint64) error {
	for wait := time.Millisecond; x.applied.Load() < seq; wait = min(2*wait, 50*time.Millisecond) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: index entry %d not applied here: %w", seq, ctx.Err())
		case <-x.stop:
			return errors.New("cluster: index closed")
		case <-time.After(wait):
		}
	}
	return nil
}

// PutOnce stores key = value unless key has a value already, fenced on
// the key's subject being empty, and answers the value that stands: of
// nodes racing to make a cluster-wide secret, all get the first one put.
// The entry is kept for ever (no TTL).
func (x *Index) PutOnce(ctx context.Context, key, value []byte) ([]byte, error) {
	subj := indexPrefix + node.KeyToken(key)
	if m, err := x.st.Last(ctx, subj); err != nil {
		return nil, fmt.Errorf("cluster: index read: %w", err)
	} else if m != nil && len(m.Data) > 0 {
		return m.Data, nil
	}
	_, err := x.st.Publish(ctx, node.FencedMsg(subj, "ix."+x.n.Config().NodeName+"."+nuid.Next(), 0, value))
	if err == nil {
		return value, nil
	}
	if !errors.Is(err, node.ErrConflict) {
		return nil, fmt.Errorf("cluster: index put once: %w", err)
	}
	m, err := x.st.Last(ctx, subj)
	if err != nil || m == nil || len(m.Data) == 0 {
		return nil, fmt.Errorf("cluster: index put once: the standing value not read: %v", err)
	}
	return m.Data, nil
}

// PutAll stores every pair (the audit log's flush), each for ttl, and
// answers the first error.
func (x *Index) PutAll(keys, values [][]byte, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), indexTimeout)
	defer cancel()
	for i := range keys {
		if err := x.Put(ctx, keys[i], values[i], ttl); err != nil {
			return err
		}
	}
	return nil
}

// CaughtUp reports whether the local copy has applied everything the
// stream held when the node started following it.
func (x *Index) CaughtUp() bool { return x.caughtUp.Load() }

// Follow copies the stream into the local store, calling applied for
// each entry once it is there, until Close.
func (x *Index) Follow(applied func(key, value []byte)) {
	x.wg.Add(1)
	go x.follow(applied)
}

func (x *Index) follow(applied func(key, value []byte)) {
	defer x.wg.Done()
	for {
		cc, err := x.consume(applied)
		if err == nil {
			x.awaitCaughtUp()
			<-x.stop
			cc.Stop()
			return
		}
		x.n.Config().Logger.Debug("cluster: index not followed yet", "err", err)
		select {
		case <-x.stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// awaitCaughtUp marks the copy caught up once no message follows the
// last one applied: the consumer says so with the last message it
// delivers, but when the messages after the position kept have all
// expired or been replaced, it delivers none.
func (x *Index) awaitCaughtUp() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for !x.caughtUp.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), indexTimeout)
		if s, err := x.st.Stream(ctx); err == nil {
			_, err = s.GetMsg(ctx, x.applied.Load()+1, jetstream.WithGetMsgSubject(indexPrefix+">"))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				x.caughtUp.Store(true)
			}
		}
		cancel()
		select {
		case <-x.stop:
			return
		case <-t.C:
		}
	}
}

// consume starts an ordered consumer after the last sequence applied; it
// recreates itself from there when its server goes.
func (x *Index) consume(applied func(key, value []byte)) (jetstream.ConsumeContext, error) {
	ctx, cancel := context.WithTimeout(context.Background(), indexTimeout)
	defer cancel()
	s, err := x.st.Stream(ctx)
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	pos := uint64(0)
	if v, ok, err := x.local.Get([]byte(indexPos)); err != nil {
		return nil, err
	} else if ok && len(v) == 8 {
		pos = binary.BigEndian.Uint64(v)
	}
	x.applied.Store(pos)
	if pos >= info.State.LastSeq {
		x.caughtUp.Store(true)
	}
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if pos > 0 {
		cfg = jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: pos + 1}
	}
	c, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c.Consume(func(msg jetstream.Msg) { x.apply(msg, applied) },
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			x.n.Config().Logger.Debug("cluster: index follower", "err", err)
		}))
}

// apply writes one entry and the position it reached in one batch.
func (x *Index) apply(msg jetstream.Msg, applied func(key, value []byte)) {
	meta, err := msg.Metadata()
	if err != nil {
		return
	}
	key, err := node.TokenKey(strings.TrimPrefix(msg.Subject(), indexPrefix))
	if err != nil {
		x.n.Config().Logger.Warn("cluster: index entry with a bad key", "subject", msg.Subject())
		return
	}
	b := x.local.NewBatch()
	defer b.Close()
	b.Put(key, msg.Data())
	b.Put([]byte(indexPos), binary.BigEndian.AppendUint64(nil, meta.Sequence.Stream))
	if err := x.local.Commit(b); err != nil {
		// The local store has failed: the service stops (fail-stop) and
		// a restart applies the entry again from the last position kept.
		x.n.Config().Logger.Error("cluster: index entry not applied", "err", err)
		return
	}
	x.applied.Store(meta.Sequence.Stream)
	if applied != nil {
		applied(key, msg.Data())
	}
	if meta.NumPending == 0 {
		x.caughtUp.Store(true)
	}
}

// Close stops following.
func (x *Index) Close() {
	select {
	case <-x.stop:
	default:
		close(x.stop)
	}
	x.wg.Wait()
}

// EventIndex is the shared index as the actors' event index.
type EventIndex struct{ *Index }

// CreateEvent implements actors.SharedIndex.
func (x EventIndex) CreateEvent(ctx context.Context, eventID, unitID string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, indexTimeout)
		defer cancel()
	}
	return x.Put(ctx, []byte(persistence.PrefixEventIndex+eventID), []byte(unitID), 0)
}

// EventUnit implements actors.SharedIndex.
func (x EventIndex) EventUnit(ctx context.Context, eventID string) (string, bool, error) {
	v, ok, err := x.Get(ctx, []byte(persistence.PrefixEventIndex+eventID))
	return string(v), ok, err
}

// Published implements actors.SharedIndex: the status is put in the
// background (an event's status changes seldom).
func (x EventIndex) Published(eventID string, status byte) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), indexTimeout)
		defer cancel()
		if err := x.Put(ctx, []byte(persistence.PrefixEventPublished+eventID), []byte{status}, 0); err != nil {
			x.n.Config().Logger.Warn("cluster: event status not shared", "event", eventID, "err", err)
		}
	}()
}
