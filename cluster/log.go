package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"ticketd/persistence"
)

// Headers of the event log's messages (see the package doc).
const (
	hdrLast  = "Ticketd-Last"
	hdrClaim = "Ticketd-Claim"
	hdrFirst = "Ticketd-First"
)

const formatV1 = 1

// publishDeadline bounds the retries of one publish: longer than an
// election (4 to 9 s), shorter than the stream's duplicate window, so a
// retry is always settled by its Nats-Msg-Id.
const publishDeadline = 30 * time.Second

// Log is the event log on JetStream (see the package doc). Index entries
// a commit carries are also written to the local store once the commit is
// durable, so the local outbox and indexes see them.
type Log struct {
	n     *Node
	local *persistence.Store

	mu     sync.Mutex
	events map[string]*eventLog
	pubs   map[string]*streamPub // by stream: see batch.go

	pubOnce sync.Once
	pubNC   *nats.Conn // see pubConn
	pubJS   jetstream.JetStream

	stats logStats
	// onIndex, when set (Router.Own), is told the index entries of every
	// commit once they are applied: the entries an owner owes.
	onIndex func(eventID string, ops []indexOp)
}

// logStats counts the log's appends since it was made (see Stats).
type logStats struct {
	msgs, records, ackNanos, retries, claims, batches, batched, fallbacks atomic.Int64
}

// LogStats is what a Log has appended: messages stored, records they
// carried, the time from a message's send to its ack (summed), publishes
// retried, claims, atomic batches stored with the messages they held, and
// batches sent again message by message (see batch.go).
type LogStats struct {
	Messages, Records int64
	AckWait           time.Duration
	Retries, Claims   int64
	Batches, Batched  int64
	Fallbacks         int64
}

// Stats returns the log's append counts so far.
func (l *Log) Stats() LogStats {
	return LogStats{Messages: l.stats.msgs.Load(), Records: l.stats.records.Load(),
		AckWait: time.Duration(l.stats.ackNanos.Load()), Retries: l.stats.retries.Load(), Claims: l.stats.claims.Load(),
		Batches: l.stats.batches.Load(), Batched: l.stats.batched.Load(), Fallbacks: l.stats.fallbacks.Load()}
}

// eventLog is what this node knows of one event's subject.
type eventLog struct {
	id      string
	stream  string
	subject string

	mu      sync.Mutex
	current *writer // the latest claim made here, for Epoch
	// marks pairs, for the messages seen (published or replayed), the
	// seq of the event's last record at that message with its stream
	// sequence, in order: what a trim through a record seq purges.
	marks []mark
}

// writer is one claim on an event: the incarnation of its actor that made
// it appends through it, so an older incarnation on this node (an evicted
// actor finishing its flight) never writes under the new claim.
type writer struct {
	e        *eventLog
	mu       sync.Mutex
	expected uint64 // stream seq of the last message on the subject, for the fence
	epoch    uint64 // stream seq of the claim
	msgs     uint64 // messages published in this epoch, for Nats-Msg-Id
	fenced   bool
	tail     *commit
}

type mark struct{ last, sseq uint64 }

// subjectOwner is the event id of the log.
func (e *eventLog) subjectOwner() string { return e.id }

// maxMarks bounds the marks kept per event: past it the older half goes,
// and a trim through a record older than the marks kept waits for a
// later snapshot.
const maxMarks = 1 << 14

func (e *eventLog) note(last, sseq uint64) {
	if n := len(e.marks); n > 0 && e.marks[n-1].sseq >= sseq {
		return
	}
	if len(e.marks) >= maxMarks {
		e.marks = append(e.marks[:0], e.marks[len(e.marks)/2:]...)
	}
	e.marks = append(e.marks, mark{last, sseq})
}

// commit is one batch in the chain of an event's commits.
type commit struct {
	done chan struct{}
	err  error
}

// NewLog returns the event log of node n; local receives the index
// entries of the commits.
func NewLog(n *Node, local *persistence.Store) *Log {
	return &Log{n: n, local: local, events: map[string]*eventLog{}}
}

func (l *Log) event(id string) *eventLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.events[id]
	if !ok {
		st, subj := l.n.place(id)
		e = &eventLog{id: id, stream: st, subject: subj}
		l.events[id] = e
	}
	return e
}

// Batch is a commit being built: the operations in order, encoded.
type Batch struct {
	stream string
	first  uint64
	last   uint64
	ops    []byte
	cuts   []int // offsets of appends: where a too-big message may split
	index  []indexOp
	closed bool
}

type indexOp struct {
	key, value []byte
	del        bool
}

// NewBatch returns an empty batch.
func (l *Log) NewBatch() persistence.LogBatch { return &Batch{} }

// Append adds record as number seq of stream (one stream per batch).
func (b *Batch) Append(stream string, seq uint64, record []byte) {
	b.stream = stream
	if b.first == 0 {
		b.first = seq
	}
	b.last = seq
	b.cuts = append(b.cuts, len(b.ops))
	b.ops = append(b.ops, 'a')
	b.ops = binary.AppendUvarint(b.ops, seq)
	b.ops = binary.AppendUvarint(b.ops, uint64(len(record)))
	b.ops = append(b.ops, record...)
}

// Put sets an index entry with the records.
func (b *Batch) Put(key, value []byte) {
	b.ops = append(b.ops, 'p')
	b.ops = binary.AppendUvarint(b.ops, uint64(len(key)))
	b.ops = append(b.ops, key...)
	b.ops = binary.AppendUvarint(b.ops, uint64(len(value)))
	b.ops = append(b.ops, value...)
	b.index = append(b.index, indexOp{key: append([]byte(nil), key...), value: append([]byte(nil), value...)})
}

// Delete removes an index entry with the records.
func (b *Batch) Delete(key []byte) {
	b.ops = append(b.ops, 'd')
	b.ops = binary.AppendUvarint(b.ops, uint64(len(key)))
	b.ops = append(b.ops, key...)
	b.index = append(b.index, indexOp{key: append([]byte(nil), key...), del: true})
}

// Close releases the batch.
func (b *Batch) Close() { b.closed = true; b.ops = nil }

// MaxInFlight is 1: the next commit's expected sequence is this one's.
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
	if len(b.ops) == 0 {
		return nil, nil
	}
	return b, nil
}

// claimed is the Log of one claim (see Claim): its commits are fenced on
// what this claim has written.
type claimed struct {
	*Log
	w *writer
}

// CommitAsync chains b behind the claim's commit in flight; wait
// publishes it once that one is durable.
func (c *claimed) CommitAsync(lb persistence.LogBatch) (func() error, error) {
	b, err := checkBatch(lb)
	if err != nil || b == nil {
		return func() error { return err }, err
	}
	if b.stream == "" {
		return c.Log.CommitAsync(b)
	}
	w := c.w
	if b.stream != w.e.subjectOwner() {
		return nil, fmt.Errorf("cluster: append to %s through the claim of %s", b.stream, w.e.subjectOwner())
	}
	w.mu.Lock()
	prev := w.tail
	cm := &commit{done: make(chan struct{})}
	w.tail = cm
	w.mu.Unlock()
	return func() error {
		defer close(cm.done)
		if prev != nil {
			<-prev.done
			if prev.err != nil {
				cm.err = prev.err
				return cm.err
			}
		}
		cm.err = c.publish(w, b)
		if cm.err == nil {
			cm.err = c.applyIndex(b)
		}
		if cm.err == nil && c.onIndex != nil && len(b.index) > 0 {
			c.onIndex(b.stream, b.index)
		}
		return cm.err
	}, nil
}

// publish writes b's operations as one message (more only above
// maxMessageBytes, split before an append).
func (l *Log) publish(w *writer, b *Batch) error {
	w.mu.Lock()
	fenced := w.fenced
	w.mu.Unlock()
	if fenced {
		return fmt.Errorf("cluster: append to %s: %w", b.stream, persistence.ErrFenced)
	}
	start := 0
	for start < len(b.ops) {
		end := len(b.ops)
		if end-start > maxMessageBytes-64 {
			// The last cut that keeps the message small enough, past start.
			cut := -1
			for _, c := range b.cuts {
				if c > start && c-start <= maxMessageBytes-64 {
					cut = c
				}
			}
			if cut < 0 {
				return fmt.Errorf("cluster: append to %s: a record with its index entries exceeds %d bytes", b.stream, maxMessageBytes)
			}
			end = cut
		}
		last := b.last
		if end < len(b.ops) {
			last = lastSeqIn(b.ops[start:end], b.first)
		}
		data := make([]byte, 0, 1+end-start)
		data = append(append(data, formatV1), b.ops[start:end]...)
		if _, err := l.send(w, data, firstSeqIn(b.ops[start:end], last), last, ""); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// firstSeqIn is the seq of the first append among ops (fallback when none).
func firstSeqIn(ops []byte, fallback uint64) uint64 {
	first := uint64(0)
	_ = decodeOps(ops, func(op byte, seq uint64, _, _ []byte) error {
		if op == 'a' && first == 0 {
			first = seq
		}
		return nil
	})
	if first == 0 {
		return fallback + 1
	}
	return first
}

// lastSeqIn is the seq of the last append among ops (fallback when none).
func lastSeqIn(ops []byte, fallback uint64) uint64 {
	last := fallback
	_ = decodeOps(ops, func(op byte, seq uint64, _, _ []byte) error {
		if op == 'a' {
			last = seq
		}
		return nil
	})
	return last
}

// send publishes one message on the event's subject fenced on
// w.expected, retrying what is transient, and moves w.expected to its
// sequence. A claim goes alone; a commit may go in an atomic batch with
// other events' commits of the stream (see batch.go).
func (l *Log) send(w *writer, data []byte, first, last uint64, claim string) (uint64, error) {
	e := w.e
	w.mu.Lock()
	expected := w.expected
	w.msgs++
	id := e.subject + "." + strconv.FormatUint(w.epoch, 10) + "." + strconv.FormatUint(w.msgs, 10)
	if claim != "" {
		// A claim's epoch is not known before it is stored: its id names
		// the sequence it follows and this claim alone (two incarnations on
		// one node claiming after the same message must not share an id:
		// the second would be answered as the first's duplicate).
		id = e.subject + ".claim." + strconv.FormatUint(expected, 10) + "." + claim + "." + nats.NewInbox()[len(nats.InboxPrefix):]
	}
	w.mu.Unlock()
	m := newMsg(e.subject, data, id, expected, first, last)
	p := &pendingPub{w: w, m: m, first: first, last: last, began: time.Now()}
	if claim != "" {
		m.Header.Set(hdrClaim, claim)
		p.claim = true
		l.sendOne(p)
		return p.seq, p.err
	}
	l.enqueue(e.stream, p)
	return p.seq, p.err
}

// pubConn is the connection the log publishes on: one of its own to the
// node's server, so a commit and its ack do not queue behind the forwarded
// requests and answers on the node's connection (each connection is read
// and written by one goroutine on either side: sharing it made the acks
// of the hot event 20-35% slower).
// It does not reconnect, so it ends with the server; once closed, or when
// it cannot be made, the log publishes on the node's connection.
func (l *Log) pubConn() (*nats.Conn, jetstream.JetStream) {
	l.pubOnce.Do(func() {
		nc, err := nats.Connect("", nats.InProcessServer(l.n.srv), nats.Name("ticketd-log-"+l.n.cfg.NodeName),
			nats.NoReconnect())
		if err != nil {
			l.n.cfg.Logger.Warn("cluster: the log publishes on the node's connection", "err", err)
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
		return l.n.nc, l.n.js
	}
	return l.pubNC, l.pubJS
}

// newMsg is a message of the event log fenced on expected.
func newMsg(subject string, data []byte, id string, expected, first, last uint64) *nats.Msg {
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	m.Header.Set(jetstream.MsgIDHeader, id)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expected, 10))
	m.Header.Set(hdrLast, strconv.FormatUint(last, 10))
	m.Header.Set(hdrFirst, strconv.FormatUint(first, 10))
	return m
}

// pendingPub is one message on its way to the stream, and its outcome.
type pendingPub struct {
	w           *writer
	m           *nats.Msg
	first, last uint64
	claim       bool
	began       time.Time
	done        chan struct{} // closed with seq and err set, when batched

	seq uint64
	err error
}

// sendOne publishes p's message alone, retrying what is transient.
func (l *Log) sendOne(p *pendingPub) {
	w, e := p.w, p.w.e
	deadline := p.began.Add(publishDeadline)
	wait := 50 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), min(l.n.cfg.RequestTimeout, time.Until(deadline)))
		_, js := l.pubConn()
		ack, err := js.PublishMsg(ctx, p.m)
		cancel()
		if err == nil {
			l.accepted(p, ack.Sequence)
			return
		}
		var api *jetstream.APIError
		if errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			// Another writer moved the subject: this one is fenced.
			w.mu.Lock()
			w.fenced = true
			w.mu.Unlock()
			p.err = fmt.Errorf("cluster: append to %s: %w: %v", e.subject, persistence.ErrFenced, err)
			return
		}
		if time.Now().After(deadline) || l.closing() {
			p.err = fmt.Errorf("cluster: append to %s: %w", e.subject, err)
			return
		}
		// 10164 (a publish on the subject still in process), a timeout
		// or no responders (an election): the same message again, which
		// the server settles by its id if the first one was stored.
		l.stats.retries.Add(1)
		l.n.cfg.Logger.Debug("cluster: publish retried", "subject", e.subject, "err", err)
		time.Sleep(wait)
		wait = min(wait*2, time.Second)
	}
}

// accepted records that p's message is stored as stream sequence seq.
func (l *Log) accepted(p *pendingPub, seq uint64) {
	l.stats.msgs.Add(1)
	if p.claim {
		l.stats.claims.Add(1)
	} else {
		l.stats.records.Add(int64(p.last - p.first + 1))
	}
	l.stats.ackNanos.Add(int64(time.Since(p.began)))
	p.seq = seq
	p.w.mu.Lock()
	p.w.expected = seq
	p.w.mu.Unlock()
	e := p.w.e
	e.mu.Lock()
	e.note(p.last, seq)
	e.mu.Unlock()
}

func (l *Log) closing() bool {
	select {
	case <-l.n.stop:
		return true
	default:
		return false
	}
}

// applyIndex writes b's index entries to the local store.
func (l *Log) applyIndex(b *Batch) error {
	if len(b.index) == 0 || l.local == nil {
		return nil
	}
	pb := l.local.NewBatch()
	defer pb.Close()
	for _, op := range b.index {
		if op.del {
			pb.Delete(op.key)
		} else {
			pb.Put(op.key, op.value)
		}
	}
	return l.local.Commit(pb)
}

// Claim makes the caller, which has replayed the event through record
// last, its only writer: a claim message fenced on the subject's last
// message, whose records must end at last (else records were appended
// since the replay: ErrFenced, and the caller loads again). Every earlier
// writer's next commit is refused from then on. The returned Log appends
// under this claim.
func (l *Log) Claim(stream string, last uint64) (persistence.Log, error) {
	e := l.event(stream)
	ctx, cancel := context.WithTimeout(context.Background(), l.n.cfg.RequestTimeout)
	lm, err := l.lastMsg(ctx, e)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("cluster: claim %s: %w", stream, err)
	}
	w := &writer{e: e}
	if lm != nil {
		seen, err := strconv.ParseUint(lm.Header.Get(hdrLast), 10, 64)
		if err != nil || seen != last {
			return nil, fmt.Errorf("cluster: claim %s: %w: the log ends at record %s, the replay at %d",
				stream, persistence.ErrFenced, lm.Header.Get(hdrLast), last)
		}
		w.expected = lm.Sequence
	}
	seq, err := l.send(w, nil, last+1, last, l.n.cfg.NodeName)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.epoch = seq
	w.mu.Unlock()
	e.mu.Lock()
	e.current = w
	e.mu.Unlock()
	l.n.cfg.Logger.Info("event claimed", "event", stream, "node", l.n.cfg.NodeName, "epoch", seq)
	return &claimed{Log: l, w: w}, nil
}

// Epoch is the event's latest claim made on this node (its stream
// sequence), 0 when there is none or it was fenced.
func (l *Log) Epoch(eventID string) uint64 {
	e := l.event(eventID)
	e.mu.Lock()
	w := e.current
	e.mu.Unlock()
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fenced {
		return 0
	}
	return w.epoch
}

// lastMsg is the last message of e's subject (nil when none).
func (l *Log) lastMsg(ctx context.Context, e *eventLog) (*jetstream.RawStreamMsg, error) {
	s, err := l.n.js.Stream(ctx, e.stream)
	if err != nil {
		return nil, err
	}
	m, err := s.GetLastMsgForSubject(ctx, e.subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	return m, err
}

// LastSeq is the seq of the event's last record.
func (l *Log) LastSeq(stream string) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.n.cfg.RequestTimeout)
	defer cancel()
	m, err := l.lastMsg(ctx, l.event(stream))
	if err != nil {
		return 0, fmt.Errorf("cluster: last seq of %s: %w", stream, err)
	}
	if m == nil {
		return 0, nil
	}
	return strconv.ParseUint(m.Header.Get(hdrLast), 10, 64)
}

// FirstSeq is the seq of the event's first record kept: the first record
// of the subject's first message (a trim purges whole messages).
func (l *Log) FirstSeq(stream string) (uint64, error) {
	last, err := l.LastSeq(stream)
	if err != nil || last == 0 {
		return 0, err
	}
	e := l.event(stream)
	ctx, cancel := context.WithTimeout(context.Background(), l.n.cfg.RequestTimeout)
	defer cancel()
	s, err := l.n.js.Stream(ctx, e.stream)
	if err != nil {
		return 0, fmt.Errorf("cluster: first seq of %s: %w", stream, err)
	}
	m, err := s.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(e.subject))
	if err != nil {
		return 0, fmt.Errorf("cluster: first seq of %s: %w", stream, err)
	}
	first, err := strconv.ParseUint(m.Header.Get(hdrFirst), 10, 64)
	if err != nil {
		return 1, nil // written before the header: nothing was trimmed then
	}
	return min(first, last), nil
}

// trim purges the event's messages whose records all have seq <= through.
func (l *Log) trim(ctx context.Context, eventID string, through uint64) error {
	e := l.event(eventID)
	e.mu.Lock()
	var upTo uint64
	for _, m := range e.marks {
		if m.last > through {
			break
		}
		upTo = m.sseq
	}
	e.mu.Unlock()
	if upTo == 0 {
		return nil
	}
	s, err := l.n.js.Stream(ctx, e.stream)
	if err != nil {
		return err
	}
	// Purges the subject's messages below upTo+1, that is through upTo.
	return s.Purge(ctx, jetstream.WithPurgeSubject(e.subject), jetstream.WithPurgeSequence(upTo+1))
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

// Replay reads the event's subject from the start and calls fn for the
// records after after, in order. It reads with the stream's message-get API,
// answered by the stream's leader alone: an ordered consumer would need the
// meta leader too, which a node's loss can leave unelected for seconds
// after the stream itself has a leader again.
func (l *Log) Replay(stream string, after uint64, fn func(seq uint64, record []byte) error) error {
	e := l.event(stream)
	ctx, cancel := context.WithTimeout(context.Background(), l.n.cfg.RequestTimeout)
	lm, err := l.lastMsg(ctx, e)
	cancel()
	if err != nil {
		return fmt.Errorf("cluster: replay %s: %w", stream, err)
	}
	if lm == nil {
		return nil
	}
	end := lm.Sequence
	ctx, cancel = context.WithTimeout(context.Background(), l.n.cfg.RequestTimeout)
	s, err := l.n.js.Stream(ctx, e.stream)
	cancel()
	if err != nil {
		return fmt.Errorf("cluster: replay %s: %w", stream, err)
	}
	for next := uint64(1); next <= end; {
		ctx, cancel := context.WithTimeout(context.Background(), l.n.cfg.RequestTimeout)
		msg, err := s.GetMsg(ctx, next, jetstream.WithGetMsgSubject(e.subject))
		cancel()
		if err != nil {
			return fmt.Errorf("cluster: replay %s from message %d: %w", stream, next, err)
		}
		if msg.Sequence > end {
			break
		}
		next = msg.Sequence + 1
		if data := msg.Data; msg.Header.Get(hdrClaim) == "" {
			if len(data) == 0 || data[0] != formatV1 {
				return fmt.Errorf("cluster: replay %s: message %d: unknown format", stream, msg.Sequence)
			}
			err = decodeOps(data[1:], func(op byte, seq uint64, rec, _ []byte) error {
				if op != 'a' || seq <= after {
					return nil
				}
				return fn(seq, rec)
			})
			if err != nil {
				return err // fn's own error, or errStop-like: the caller's
			}
		}
		if last, err := strconv.ParseUint(msg.Header.Get(hdrLast), 10, 64); err == nil {
			e.mu.Lock()
			e.note(last, msg.Sequence)
			e.mu.Unlock()
		}
	}
	return nil
}

// decodeOps walks encoded operations. A malformed message is an error,
// never a panic.
func decodeOps(b []byte, fn func(op byte, seq uint64, a, c []byte) error) error {
	field := func() ([]byte, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, false
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, true
	}
	for len(b) > 0 {
		op := b[0]
		b = b[1:]
		var err error
		switch op {
		case 'a':
			seq, k := binary.Uvarint(b)
			if k <= 0 {
				return errors.New("cluster: bad append")
			}
			b = b[k:]
			rec, ok := field()
			if !ok {
				return errors.New("cluster: bad append record")
			}
			err = fn(op, seq, rec, nil)
		case 'p':
			k, ok1 := field()
			v, ok2 := field()
			if !ok1 || !ok2 {
				return errors.New("cluster: bad put")
			}
			err = fn(op, 0, k, v)
		case 'd':
			k, ok := field()
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
