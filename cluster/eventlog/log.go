package eventlog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/cluster/node"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"ticketd/persistence"
)

// Headers of the directory's messages (see the package doc).
const (
	HdrLast  = "Ticketd-Last"
	HdrFirst = "Ticketd-First"
)

// FormatV1 is the version byte of the directory's messages.
const FormatV1 = 1

// publishDeadline bounds the retries of one publish: longer than an
// election (4 to 9 s), shorter than the stream's duplicate window, so a
// retry is always settled by its Nats-Msg-Id.
const publishDeadline = 30 * time.Second

// Log is the event log on JetStream (see the package doc). Index entries
// a commit carries are also written to the local store once the commit is
// durable, so the local outbox and indexes see them.
type Log struct {
	n     *node.Node
	local *persistence.Store

	mu     sync.Mutex
	events map[string]*eventLog
	shards map[int]*shardLog

	pubOnce sync.Once
	pubNC   *nats.Conn // see pubConn
	pubJS   jetstream.JetStream

	stats logStats
	// OnIndex, when set (Router.Own), is told the index entries of every
	// commit once they are applied: the entries an owner owes.
	OnIndex func(eventID string, ops []IndexOp)
	// OnClaim, when set (Router.Own), is told of every claim made here.
	OnClaim func(eventID string)
	// ImportClaimed, when set (app: settle.Feeds.Import), is called on
	// the claiming goroutine once a claim is stored, before the claim is
	// answered (so before the claimer serves a read): what the new
	// owner's store must hold from before its claim (the change feed's
	// entries). An error fails the claim: the claimer loads again.
	ImportClaimed func(eventID string, epoch uint64) error
	// SettleLag and settleEvery, when above 0 (set by tests), replace
	// the trimmer's settleLag and settleEvery (see Snapshots.settle).
	SettleLag   atomic.Uint64
	SettleEvery atomic.Int64
	// OneByOne, set by a benchmark only, makes the replays read one
	// message per request from the leader, as before batched reads: the
	// A/B of TestReplayRate.
	OneByOne bool
}

// Node is the cluster node the log is on.
func (l *Log) Node() *node.Node { return l.n }

// Local is the node's local store, where the index entries of the commits
// go once they are durable.
func (l *Log) Local() *persistence.Store { return l.local }

// logStats counts the log's appends since it was made (see Stats).
type logStats struct {
	msgs, bytes, commits, records, ackNanos, lingerNanos, retries, claims, passes, reads atomic.Int64
}

// LogStats is what a Log has appended and read: shard messages stored
// and their bytes, the commits (and claims) and records they carried, the time from a
// message's send to its ack (summed), the time writers held a message
// for commits to come back (linger, summed), publishes retried, claims,
// read passes over a shard and messages they read.
type LogStats struct {
	Messages, Bytes, Commits, Records int64
	AckWait, Linger                   time.Duration
	Retries, Claims                   int64
	Passes, Reads                     int64
}

// Stats returns the log's counts so far.
func (l *Log) Stats() LogStats {
	return LogStats{Messages: l.stats.msgs.Load(), Bytes: l.stats.bytes.Load(), Commits: l.stats.commits.Load(), Records: l.stats.records.Load(),
		AckWait: time.Duration(l.stats.ackNanos.Load()), Linger: time.Duration(l.stats.lingerNanos.Load()), Retries: l.stats.retries.Load(), Claims: l.stats.claims.Load(),
		Passes: l.stats.passes.Load(), Reads: l.stats.reads.Load()}
}

// eventLog is what this node knows of one event.
type eventLog struct {
	id    string
	Shard *shardLog

	mu      sync.Mutex
	current *writer // the latest claim made here, for Epoch
}

// writer is one claim on an event: the incarnation of its actor that made
// it appends through it, so an older incarnation on this node (an evicted
// actor finishing its flight) never writes under the new claim.
type writer struct {
	e           *eventLog
	ShardWriter *shardWriter
	Epoch       uint64 // stream seq of the claim's message, set once stored
}

// fenced reports whether w may no longer append (w.sw.mu held).
func (w *writer) fencedLocked() error {
	if w.ShardWriter.dead != nil {
		return w.ShardWriter.dead
	}
	if w.ShardWriter.current[w.e.id] != w {
		return fmt.Errorf("cluster: append to %s: %w: a newer claim on this node", w.e.id, persistence.ErrFenced)
	}
	return nil
}

// NewLog returns the event log of node n; local receives the index
// entries of the commits.
func NewLog(n *node.Node, local *persistence.Store) *Log {
	return &Log{n: n, local: local, events: map[string]*eventLog{}, shards: map[int]*shardLog{}}
}

func (l *Log) Event(id string) *eventLog {
	s := l.ShardLog(l.n.Shard(id))
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.events[id]
	if !ok {
		e = &eventLog{id: id, Shard: s}
		l.events[id] = e
	}
	return e
}

// Batch is a commit being built: the operations in order, encoded.
type Batch struct {
	stream string
	First  uint64
	Last   uint64
	Ops    []byte
	cuts   []int // offsets of appends: where a too-big message may split
	Index  []IndexOp
	closed bool
}

type IndexOp struct {
	Key, Value []byte
	del        bool
}

// NewBatch returns an empty batch.
func (l *Log) NewBatch() persistence.LogBatch { return &Batch{} }

// Append adds record as number seq of stream (one stream per batch).
func (b *Batch) Append(stream string, seq uint64, record []byte) {
	b.stream = stream
	if b.First == 0 {
		b.First = seq
	}
	b.Last = seq
	b.cuts = append(b.cuts, len(b.Ops))
	b.Ops = append(b.Ops, 'a')
	b.Ops = binary.AppendUvarint(b.Ops, seq)
	b.Ops = binary.AppendUvarint(b.Ops, uint64(len(record)))
	b.Ops = append(b.Ops, record...)
}

// Put sets an index entry with the records.
func (b *Batch) Put(key, value []byte) {
	b.Ops = append(b.Ops, 'p')
	b.Ops = binary.AppendUvarint(b.Ops, uint64(len(key)))
	b.Ops = append(b.Ops, key...)
	b.Ops = binary.AppendUvarint(b.Ops, uint64(len(value)))
	b.Ops = append(b.Ops, value...)
	b.Index = append(b.Index, IndexOp{Key: append([]byte(nil), key...), Value: append([]byte(nil), value...)})
}

// Delete removes an index entry with the records.
func (b *Batch) Delete(key []byte) {
	b.Ops = append(b.Ops, 'd')
	b.Ops = binary.AppendUvarint(b.Ops, uint64(len(key)))
	b.Ops = append(b.Ops, key...)
	b.Index = append(b.Index, IndexOp{Key: append([]byte(nil), key...), del: true})
}

// Close releases the batch.
func (b *Batch) Close() { b.closed = true; b.Ops = nil }

// MaxInFlight is 1: the commits of a claim are queued in order on the
// shard's writer, so more could wait at once, but a hot event then sent
// smaller commits for the same messages and used more CPU per order
// (measured: bench/results/20261129-cluster-history.md); what the
// actor gathers while its commit flies is its next commit.
func (l *Log) MaxInFlight() int { return 1 }

// CommitAsync commits index entries alone (they change no event); a
// batch with records needs the writer Claim returned.
func (l *Log) CommitAsync(lb persistence.LogBatch) (func() error, error) {
	b, err := checkBatch(lb)
	if err != nil || b == nil {
		return func() error { return err }, err
	}
	if b.stream != "" {
		return nil, fmt.Errorf("cluster: append to %s: %w (not claimed)", b.stream, persistence.ErrFenced)
	}
	return func() error { return l.applyIndex(b) }, nil
}

// checkBatch returns lb as a *Batch, nil when it is empty.
func checkBatch(lb persistence.LogBatch) (*Batch, error) {
	b, ok := lb.(*Batch)
	if !ok {
		return nil, fmt.Errorf("cluster: commit: batch of another log (%T)", lb)
	}
	if b.closed {
		return nil, errors.New("cluster: commit: batch closed")
	}
	if len(b.Ops) == 0 {
		return nil, nil
	}
	return b, nil
}

// Claimed is the Log of one claim (see Claim): its commits go through the
// shard's writer the claim was made on.
type Claimed struct {
	*Log
	Writer *writer
}

// CommitAsync queues b on the shard's writer, behind the claim's earlier
// commits; wait returns once the message holding it is stored.
func (c *Claimed) CommitAsync(lb persistence.LogBatch) (func() error, error) {
	b, err := checkBatch(lb)
	if err != nil || b == nil {
		return func() error { return err }, err
	}
	if b.stream == "" {
		return c.Log.CommitAsync(b)
	}
	w := c.Writer
	if b.stream != w.e.id {
		return nil, fmt.Errorf("cluster: append to %s through the claim of %s", b.stream, w.e.id)
	}
	parts, err := splitBatch(b)
	if err != nil {
		return nil, err
	}
	sw := w.ShardWriter
	sw.Mu.Lock()
	if err := w.fencedLocked(); err != nil {
		sw.Mu.Unlock()
		return func() error { return err }, nil
	}
	if b.Last > 0 {
		sw.lastRec[w.e.id] = max(sw.lastRec[w.e.id], b.Last)
	}
	sw.enqueueLocked(parts...)
	sw.Mu.Unlock()
	return func() error {
		for _, it := range parts {
			<-it.done
			if it.err != nil {
				return it.err
			}
		}
		return nil
	}, nil
}

// splitBatch cuts b into items that fit a message, before an append only;
// the index entries go with the last part.
func splitBatch(b *Batch) ([]*item, error) {
	limit := node.MaxMessageBytes - shardMsgRoom - len(b.stream) - 16
	var out []*item
	start := 0
	for start < len(b.Ops) {
		end := len(b.Ops)
		if end-start > limit {
			cut := -1
			for _, c := range b.cuts {
				if c > start && c-start <= limit {
					cut = c
				}
			}
			if cut < 0 {
				return nil, fmt.Errorf("cluster: append to %s: a record with its index entries exceeds %d bytes", b.stream, node.MaxMessageBytes)
			}
			end = cut
		}
		it := &item{event: b.stream, ops: b.Ops[start:end], done: make(chan struct{})}
		_ = DecodeOps(it.ops, func(op byte, seq uint64, _, _ []byte) error {
			if op == 'a' {
				if it.first == 0 {
					it.first = seq
				}
				it.last = seq
			}
			return nil
		})
		out = append(out, it)
		start = end
	}
	out[len(out)-1].index = b.Index
	return out, nil
}

// pubConn is the connection the log publishes on: one of its own to the
// node's server, so a commit and its ack do not queue behind the forwarded
// requests and answers on the node's connection (each connection is read
// and written by one goroutine on either side: sharing it made the acks
// of the hot event slower; bench/results/20261129-cluster-history.md).
// It does not reconnect, so it ends with the server; once closed, or when
// it cannot be made, the log publishes on the node's connection.
func (l *Log) pubConn() (*nats.Conn, jetstream.JetStream) {
	l.pubOnce.Do(func() {
		nc, err := nats.Connect("", nats.InProcessServer(l.n.Server()), nats.Name("ticketd-log-"+l.n.Config().NodeName),
			nats.NoReconnect())
		if err != nil {
			l.n.Config().Logger.Warn("cluster: the log publishes on the node's connection", "err", err)
			return
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			return
		}
		l.pubNC, l.pubJS = nc, js
	})
	if l.pubNC == nil || l.pubNC.IsClosed() {
		return l.n.Conn(), l.n.JetStream()
	}
	return l.pubNC, l.pubJS
}

func (l *Log) Closing() bool {
	select {
	case <-l.n.Stop:
		return true
	default:
		return false
	}
}

// applyIndex writes b's index entries to the local store.
func (l *Log) applyIndex(b *Batch) error {
	if len(b.Index) == 0 || l.local == nil {
		return nil
	}
	pb := l.local.NewBatch()
	defer pb.Close()
	for _, op := range b.Index {
		if op.del {
			pb.Delete(op.Key)
		} else {
			pb.Put(op.Key, op.Value)
		}
	}
	return l.local.Commit(pb)
}

// Claim makes the caller, which has replayed the event through record
// last, its only writer: a claim operation in a message of the shard's
// writer on this node, which is fenced on the shard's subject. The claim
// is refused (ErrFenced, and the caller loads again) when the event has
// records after last: records written through this writer (an older
// incarnation's), or met in the shard's messages up to the writer's
// start, which the view reads first. Every earlier writer's next commit
// is refused from then on: another node's by the fence on the subject,
// an older incarnation's here by the writer. The returned Log appends
// under this claim.
func (l *Log) Claim(stream string, last uint64) (persistence.Log, error) {
	e := l.Event(stream)
	ctx, cancel := context.WithTimeout(context.Background(), l.n.Config().RequestTimeout)
	sw, err := e.Shard.writer(ctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("cluster: claim %s: %w", stream, err)
	}
	if err := e.Shard.catchUp(sw.base); err != nil {
		return nil, fmt.Errorf("cluster: claim %s: %w", stream, err)
	}
	e.Shard.vmu.Lock()
	seen := uint64(0)
	if v := e.Shard.events[stream]; v != nil {
		seen = v.last
	}
	e.Shard.vmu.Unlock()
	w := &writer{e: e, ShardWriter: sw}
	ops := []byte{'c'}
	ops = AppendField(ops, []byte(l.n.Config().NodeName))
	ops = binary.AppendUvarint(ops, last)
	it := &item{event: stream, ops: ops, claim: true, last: last, done: make(chan struct{})}
	sw.Mu.Lock()
	if sw.dead != nil {
		err := sw.dead
		sw.Mu.Unlock()
		return nil, fmt.Errorf("cluster: claim %s: %w", stream, err)
	}
	if end := max(seen, sw.lastRec[stream]); end > last {
		sw.Mu.Unlock()
		return nil, fmt.Errorf("cluster: claim %s: %w: the log has records to %d, the replay ended at %d",
			stream, persistence.ErrFenced, end, last)
	}
	sw.current[stream] = w
	sw.lastRec[stream] = max(sw.lastRec[stream], last)
	sw.enqueueLocked(it)
	sw.Mu.Unlock()
	<-it.done
	if it.err != nil {
		return nil, fmt.Errorf("cluster: claim %s: %w", stream, it.err)
	}
	sw.Mu.Lock()
	w.Epoch = it.seq
	sw.Mu.Unlock()
	e.mu.Lock()
	if e.current == nil || e.current.Epoch < w.Epoch {
		e.current = w
	}
	e.mu.Unlock()
	l.n.Config().Logger.Info("event claimed", "event", stream, "node", l.n.Config().NodeName, "epoch", it.seq)
	if l.ImportClaimed != nil {
		if err := l.ImportClaimed(stream, it.seq); err != nil {
			return nil, fmt.Errorf("cluster: claim %s: %w", stream, err)
		}
	}
	if l.OnClaim != nil {
		l.OnClaim(stream)
	}
	return &Claimed{Log: l, Writer: w}, nil
}

// Epoch is the event's latest claim made on this node (the stream
// sequence of its message), 0 when there is none or it is known fenced.
func (l *Log) Epoch(eventID string) uint64 {
	e := l.Event(eventID)
	e.mu.Lock()
	w := e.current
	e.mu.Unlock()
	if w == nil {
		return 0
	}
	w.ShardWriter.Mu.Lock()
	defer w.ShardWriter.Mu.Unlock()
	if w.fencedLocked() != nil {
		return 0
	}
	return w.Epoch
}

// LastSeq is the seq of the event's last record (or of the record its
// last claim followed).
func (l *Log) LastSeq(stream string) (uint64, error) {
	e := l.Event(stream)
	if err := e.Shard.Current(); err != nil {
		return 0, fmt.Errorf("cluster: last seq of %s: %w", stream, err)
	}
	e.Shard.vmu.Lock()
	defer e.Shard.vmu.Unlock()
	if v := e.Shard.events[stream]; v != nil {
		return v.last, nil
	}
	return 0, nil
}

// FirstSeq is the seq of the event's first record kept: the first record
// of the event in the shard's first message kept that has one (a trim
// purges whole messages). With marks dropped (maxMarks) it answers 1.
func (l *Log) FirstSeq(stream string) (uint64, error) {
	e := l.Event(stream)
	if err := e.Shard.Current(); err != nil {
		return 0, fmt.Errorf("cluster: first seq of %s: %w", stream, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.n.Config().RequestTimeout)
	defer cancel()
	m, err := node.LeaderGet(ctx, l.n.Conn(), e.Shard.Stream, node.MsgGetRequest{Seq: 1, NextFor: e.Shard.subject})
	if errors.Is(err, node.ErrNoMetaLeader) {
		// The node's replica instead (see leaderLast): one behind on a
		// purge holds the same records from an older message on, and the
		// replay reads them from it.
		var ms []*jetstream.RawStreamMsg
		if ms, err = node.DirectGet(ctx, l.n.Conn(), e.Shard.Stream, e.Shard.subject, 1, 1, 0); err == nil {
			if len(ms) == 0 {
				return 0, nil
			}
			m = ms[0]
		}
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: first seq of %s: %w", stream, err)
	}
	e.Shard.vmu.Lock()
	defer e.Shard.vmu.Unlock()
	v := e.Shard.events[stream]
	if v == nil {
		return 0, nil
	}
	if v.dropped > 0 {
		return 1, nil
	}
	for _, mk := range v.marks {
		if mk.sseq >= m.Sequence {
			return mk.first, nil
		}
	}
	return 0, nil
}

// Trim purges what the event's log no longer needs through record
// through (its older snapshot kept): see shardLog.trim.
func (l *Log) Trim(ctx context.Context, eventID string, through uint64) error {
	return l.Event(eventID).Shard.trim(ctx, eventID, through)
}

// TruncateAfter is refused past the last record: commits are whole and in
// order on JetStream, so replay never meets a gap to cut.
func (l *Log) TruncateAfter(stream string, after uint64) error {
	last, err := l.LastSeq(stream)
	if err != nil {
		return err
	}
	if after >= last {
		return nil
	}
	return fmt.Errorf("cluster: truncate %s after %d: the log has records to %d, and JetStream's are whole", stream, after, last)
}

// Replay calls fn for the event's records after after, in order, read
// from its shard's log by a pass shared with the replays of the shard's
// other events waiting at the time, from the first message the view says
// holds one of them. It reads with the stream's message-get API,
// answered by the stream's leader alone: an ordered consumer would need
// the meta leader too, which a node's loss can leave unelected for
// seconds after the stream itself has a leader again.
func (l *Log) Replay(stream string, after uint64, fn func(seq uint64, record []byte) error) error {
	e := l.Event(stream)
	err := e.Shard.read(&reader{event: stream, after: after, rec: fn})
	if err != nil {
		return err
	}
	return nil
}

// ReadOwed calls fn for the event's index operations ('p', 'd') in the
// shard's messages before stream sequence before, in order.
func (l *Log) ReadOwed(eventID string, before uint64, fn func(op byte, key, value []byte)) error {
	_, err := l.ReadIndexAfter(eventID, 0, before, fn)
	return err
}

// ReadIndexAfter is ReadOwed of the messages after stream sequence after
// only (0: all), and answers the last message it read through (the
// subject's last at the pass, or before-1): a later read after it misses
// no message (the feed's prefetch ahead of a claim: settle.Feeds). Those
// purged meanwhile are not read.
func (l *Log) ReadIndexAfter(eventID string, after, before uint64, fn func(op byte, key, value []byte)) (uint64, error) {
	return l.ReadIndexAfterEach(eventID, after, before, fn, nil)
}

// ReadIndexAfterEach is ReadIndexAfter that calls msgEnd after each
// message of the range once its operations were handed to fn, in order
// (a reader that keeps its point as it goes: settle.Feeds.Prefetch); an
// error of msgEnd ends the read and is answered.
func (l *Log) ReadIndexAfterEach(eventID string, after, before uint64, fn func(op byte, key, value []byte), msgEnd func(msgSeq uint64) error) (uint64, error) {
	e := l.Event(eventID)
	r := &reader{event: eventID, afterMsg: after, before: before, index: fn, msgEnd: msgEnd}
	if err := e.Shard.read(r); err != nil {
		return 0, err
	}
	through := r.through
	if before > 0 && through >= before {
		through = before - 1
	}
	return max(through, after), nil
}

// opReader reads encoded operations: an op byte, uvarints and
// uvarint-prefixed fields. A short or malformed one reads as not ok, never
// a panic.
type opReader struct{ b []byte }

func (r *opReader) more() bool { return len(r.b) > 0 }

func (r *opReader) op() byte {
	op := r.b[0]
	r.b = r.b[1:]
	return op
}

func (r *opReader) uvarint() (uint64, bool) {
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		return 0, false
	}
	r.b = r.b[k:]
	return v, true
}

func (r *opReader) field() ([]byte, bool) {
	n, k := binary.Uvarint(r.b)
	if k <= 0 || uint64(len(r.b)-k) < n {
		return nil, false
	}
	v := r.b[k : k+int(n)]
	r.b = r.b[k+int(n):]
	return v, true
}

// DecodeOps walks encoded operations. A malformed message is an error,
// never a panic.
func DecodeOps(b []byte, fn func(op byte, seq uint64, a, c []byte) error) error {
	r := opReader{b}
	for r.more() {
		var err error
		switch op := r.op(); op {
		case 'a':
			seq, ok := r.uvarint()
			if !ok {
				return errors.New("cluster: bad append")
			}
			rec, ok := r.field()
			if !ok {
				return errors.New("cluster: bad append record")
			}
			err = fn(op, seq, rec, nil)
		case 'p':
			k, ok1 := r.field()
			v, ok2 := r.field()
			if !ok1 || !ok2 {
				return errors.New("cluster: bad put")
			}
			err = fn(op, 0, k, v)
		case 'd':
			k, ok := r.field()
			if !ok {
				return errors.New("cluster: bad delete")
			}
			err = fn(op, 0, k, nil)
		default:
			return fmt.Errorf("cluster: unknown operation %q", op)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var _ persistence.Log = (*Log)(nil)

// NoSnapshots is the snapshot store of cluster mode until snapshots are
// replicated: it keeps none, so an activation replays the event's whole
// log, and the log is never trimmed.
type NoSnapshots struct{}

// LoadNewestWith finds no snapshot.
func (NoSnapshots) LoadNewestWith(string, int) (uint64, []byte, bool, error) {
	return 0, nil, false, nil
}

// SaveAndTrim keeps nothing and trims nothing.
func (NoSnapshots) SaveAndTrim(string, uint64, []byte) (uint64, error) { return 0, nil }
