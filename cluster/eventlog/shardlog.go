package eventlog

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"ticketd/cluster/node"

	"github.com/klauspost/compress/s2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"ticketd/persistence"
)

// The shard log: every event of a shard stream writes on the one subject
// ev.<n>.log, and a node's commits of the shard's events go together, one
// JetStream message at a time (see the package doc). This file holds the
// node's writer of a shard (its queue and its fence) and the node's view
// of the shard (where each event's records are, read once and shared by
// the replays of the shard's events).
const (
	// FormatV2 is the version byte of a shard message.
	FormatV2 = 2
	// FormatS2 is the version byte of a compressed shard message: the
	// rest of a formatV2 message, S2-compressed (klauspost/compress/s2).
	// A drop's records are much alike: 279 bytes a record in formatV2,
	// 60 compressed, and every byte is copied and written 6 times (3
	// replicas, each into its Raft log and its stream). Writers compress
	// once every node reads it (Node.compress).
	FormatS2 = 3
	// compressFrom is the smallest message compressed.
	compressFrom = 1024
	// shardMsgRoom is what a message keeps free of maxMessageBytes for its
	// headers.
	shardMsgRoom = 1024
	// maxPendingOwn bounds the own messages a view keeps while it has not
	// read the messages before them; past it they are read back instead.
	maxPendingOwn = 4096
)

// shardLog is this node's side of one shard's log.
type shardLog struct {
	l       *Log
	shard   int
	Stream  string
	subject string

	wmu sync.Mutex
	w   *shardWriter // the writer; replaced once it is dead

	vmu     sync.Mutex
	viewed  bool   // a read has set seen
	seen    uint64 // every message through this stream sequence is in the view
	events  map[string]*evView
	pending map[uint64]*ownMsg // own messages after a gap, by the sequence before them
	next    *readPass          // the replays waiting for the next read
	reading bool               // a read pass runs
}

// evView is what the shard's messages through seen say of one event.
type evView struct {
	last    uint64 // the last record seq (or a claim's) met
	marks   []mark // per message with records of the event, in order
	dropped uint64 // the last record of the newest mark dropped, 0 when none
	keep    uint64 // records through keep are covered by a snapshot kept (see trim)
	since   uint64 // the first message kept with an operation of the event
}

// mark is a message of the shard with records of one event: its first and
// last record seqs and its stream sequence.
type mark struct{ first, last, sseq uint64 }

// maxMarks bounds the marks kept per event: past it the older half goes;
// a trim then keeps what lies before the marks kept, and a replay reads
// from the shard's first message.
const maxMarks = 1 << 14

// maxSparse bounds the messages before the view's seen that a replay
// reads one by one instead of all the messages from the first of them.
const maxSparse = 64

func (v *evView) note(first, last, sseq uint64) {
	if n := len(v.marks); n > 0 && v.marks[n-1].sseq >= sseq {
		return
	}
	if len(v.marks) >= maxMarks {
		half := len(v.marks) / 2
		v.dropped = max(v.dropped, v.marks[half-1].last)
		v.marks = append(v.marks[:0], v.marks[half:]...)
	}
	v.marks = append(v.marks, mark{first, last, sseq})
	v.last = max(v.last, last)
}

// shard returns the shard log of shard, made on first use.
func (l *Log) ShardLog(shard int) *shardLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.shards[shard]
	if s == nil {
		s = &shardLog{l: l, shard: shard, Stream: node.StreamName(shard), subject: node.ShardSubject(shard),
			events: map[string]*evView{}, pending: map[uint64]*ownMsg{}}
		l.shards[shard] = s
	}
	return s
}

// ----- Byte format -----

// A shard message's data is formatV2 then sections: 'e' and an event id,
// then that event's operations ('a', 'p', 'd' as in the package doc, and
// 'c' a claim: the claiming node and the event's last record seq).

func AppendField(b, f []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(f)))
	return append(b, f...)
}

// ShardOp is one operation met in a shard message.
type ShardOp struct {
	event string
	op    byte   // 'a', 'p', 'd' or 'c'
	seq   uint64 // 'a': the record seq; 'c': the event's last record seq
	A, B  []byte // 'a': record; 'p': key, value; 'd': key; 'c': node
}

// DecodeShard walks a shard message's data. A malformed message is an
// error, never a panic.
func DecodeShard(data []byte, fn func(op ShardOp) error) error {
	if len(data) > 0 && data[0] == FormatS2 {
		body, err := s2.Decode(nil, data[1:])
		if err != nil {
			return fmt.Errorf("cluster: compressed shard message: %w", err)
		}
		return walkShard(body, fn)
	}
	if len(data) == 0 || data[0] != FormatV2 {
		return node.ErrOldFormat
	}
	return walkShard(data[1:], fn)
}

// walkShard walks the sections of a shard message after its version byte.
func walkShard(body []byte, fn func(op ShardOp) error) error {
	r := opReader{body}
	event := ""
	for r.more() {
		op := r.op()
		o := ShardOp{event: event, op: op}
		ok := true
		switch op {
		case 'e':
			id, ok1 := r.field()
			if !ok1 || len(id) == 0 {
				return errors.New("cluster: bad event section")
			}
			event = string(id)
			continue
		case 'a':
			o.seq, ok = r.uvarint()
			if ok {
				o.A, ok = r.field()
			}
		case 'p':
			var ok2 bool
			o.A, ok = r.field()
			o.B, ok2 = r.field()
			ok = ok && ok2
		case 'd':
			o.A, ok = r.field()
		case 'c':
			o.B, ok = r.field()
			if ok {
				o.seq, ok = r.uvarint()
			}
		default:
			return fmt.Errorf("cluster: unknown operation %q", op)
		}
		if !ok {
			return fmt.Errorf("cluster: bad operation %q", op)
		}
		if event == "" {
			return errors.New("cluster: operation outside an event section")
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// CompressShard turns a formatV2 message into a formatS2 one.
func CompressShard(data []byte) []byte {
	out := make([]byte, 1, 1+s2.MaxEncodedLen(len(data)-1))
	out[0] = FormatS2
	return append(out, s2.Encode(out[1:cap(out)], data[1:])...)
}

// ----- The writer -----

// shardWriter is this node's writer of a shard: it appends fenced on the
// shard subject's last message it knows, one message in flight, and what
// waits meanwhile forms the next message. A refusal by the fence (10071)
// or a publish that could not be settled kills it: every claim made
// through it is fenced from then on, and the next claim makes a new one.
type shardWriter struct {
	s    *shardLog
	gen  string // unique per writer: its messages' Nats-Msg-Id prefix
	base uint64 // the subject's last message when the writer was made

	Mu       sync.Mutex
	expected uint64 // the subject's last message: this writer's last, or base
	msgs     uint64
	dead     error
	queue    []*item
	flying   bool
	slots    chan struct{}      // the messages in flight (maxFlights)
	grew     chan struct{}      // signalled by an enqueue while the flusher lingers
	want     int                // the items the next message waits for (see lingerLocked)
	until    time.Time          // how long it may wait for them
	applied  chan struct{}      // closed once the last message's entries are applied
	current  map[string]*writer // per event, the claim that may append
	lastRec  map[string]uint64  // per event, the last record seq queued here
}

// item is one event's operations on their way: a commit (or the part of
// one that fits a message) or a claim.
type item struct {
	event string
	ops   []byte
	claim bool
	first uint64 // records carried, first..last (0 when none)
	last  uint64
	index []IndexOp
	after func() // once durable, before done: the index entries applied
	done  chan struct{}
	seq   uint64 // the message that stored it
	err   error
}

// writer returns the shard's live writer, making one when there is none.
func (s *shardLog) writer(ctx context.Context) (*shardWriter, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if w := s.w; w != nil {
		w.Mu.Lock()
		dead := w.dead
		w.Mu.Unlock()
		if dead == nil {
			return w, nil
		}
	}
	last, err := s.lastSeq(ctx)
	if err != nil {
		return nil, err
	}
	s.w = &shardWriter{s: s, gen: nats.NewInbox()[len(nats.InboxPrefix):], base: last, expected: last,
		current: map[string]*writer{}, lastRec: map[string]uint64{}, slots: make(chan struct{}, maxFlights),
		grew: make(chan struct{}, 1)}
	return s.w, nil
}

// lastSeq is the stream sequence of the subject's last message (0: none),
// as the stream's leader knows it: the stream allows direct gets (for the
// replays' batched reads), which a lagging replica may answer.
func (s *shardLog) lastSeq(ctx context.Context) (uint64, error) {
	return node.LeaderLast(ctx, s.l.n.Conn(), s.Stream, s.subject)
}

// enqueue queues its (w.mu held) and starts the flusher if none runs.
func (w *shardWriter) enqueueLocked(its ...*item) {
	w.queue = append(w.queue, its...)
	if w.flying && len(w.queue) >= w.want {
		select {
		case w.grew <- struct{}{}:
		default:
		}
	}
	if !w.flying {
		w.flying = true
		go w.flush()
	}
}

// maxFlights is how many messages a shard writer has in flight: one. The
// fence cannot follow a message in flight: the subject's refuses a second
// message while one is in process (10164), and a message fenced on the
// stream's sequence after its predecessor would be stored after another
// writer's message that took the predecessor's place; adding
// Nats-Expected-Last-Msg-Id closes that hole, but nats-server 2.15.2
// checks it when applying the Raft entry, and a refusal there stops the
// stream (its write error is set): a fenced writer would take the shard
// down. Nats-Expected-Last-Sequence cannot replace it either, though the
// leader checks it against the proposals in flight: a leader change
// drops message k in flight, another writer's claim fenced on k-1 takes
// k's sequence, and k+1, fenced on k's, is stored after it; the readers
// apply every record they meet. What waits while a message flies forms
// the next one (see lingerLocked).
const maxFlights = 1

// maxLinger bounds how long a writer holds its next message for the
// commits its last message answered (see lingerLocked).
const maxLinger = 5 * time.Millisecond

// lingerLocked (w.mu held) holds the next message until the commits the
// last one answered are back with their successors (want), for as long
// as that message's ack wait at most, and maxLinger: an event has one
// commit in flight, so in a drop of many events the ones a message
// answered come back a little later (longer through a forwarding node;
// bench/results/20261129-cluster-history.md), and a message sent at
// once would leave them to wait a whole flight for the one after. Held,
// most events go in every message: fewer, fuller messages (JetStream's
// cost is per message) and no commit waits more than a linger plus one
// flight. A writer whose last message was stored longer ago (until has
// passed) sends at once; so does one whose events do not come back (a
// client gone, or waiting for several commits at once) after the
// linger.
func (w *shardWriter) lingerLocked() {
	if len(w.queue) >= w.want || w.dead != nil {
		return
	}
	wait := time.Until(w.until)
	if wait <= 0 {
		return
	}
	began := time.Now()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-w.grew:
	default:
	}
	for len(w.queue) < w.want && w.dead == nil {
		w.Mu.Unlock()
		timedOut := false
		select {
		case <-w.grew:
		case <-t.C:
			timedOut = true
		}
		w.Mu.Lock()
		if timedOut {
			break
		}
	}
	w.s.l.stats.lingerNanos.Add(int64(time.Since(began)))
}

// flight is one message of a writer on its way, fenced with
// Nats-Expected-Last-Subject-Sequence on the subject's last message the
// writer knows.
type flight struct {
	items    []*item
	data     []byte
	id       string
	expected uint64 // the subject's last message it expects
	done     chan struct{}
	seq      uint64
	err      error
}

// flush sends the queue, up to maxFlights messages at a time, until it
// is empty; what waits meanwhile forms the next message.
func (w *shardWriter) flush() {
	for {
		w.slots <- struct{}{}
		w.Mu.Lock()
		if len(w.queue) > 0 {
			w.lingerLocked()
		}
		if len(w.queue) == 0 || w.dead != nil {
			q := w.queue
			w.queue = nil
			w.flying = false
			err := w.dead
			w.Mu.Unlock()
			<-w.slots
			for _, it := range q {
				it.err = err
				close(it.done)
			}
			return
		}
		// The items that fit one message; two claims of one event never
		// share a message, so each has an epoch of its own.
		size, n := 1, 0
		claims := map[string]bool{}
		for n < len(w.queue) {
			it := w.queue[n]
			sz := len(it.ops) + len(it.event) + 8
			if n > 0 && size+sz > node.MaxMessageBytes-shardMsgRoom {
				break
			}
			if it.claim {
				if claims[it.event] {
					break
				}
				claims[it.event] = true
			}
			size += sz
			n++
		}
		f := &flight{items: make([]*item, n), done: make(chan struct{})}
		copy(f.items, w.queue)
		w.queue = append(w.queue[:0], w.queue[n:]...)
		f.expected = w.expected
		w.msgs++
		f.id = w.s.subject + "." + w.gen + "." + strconv.FormatUint(w.msgs, 10)
		w.Mu.Unlock()

		f.data = make([]byte, 0, size)
		f.data = append(f.data, FormatV2)
		ev := ""
		for _, it := range f.items {
			if it.event != ev {
				f.data = append(f.data, 'e')
				f.data = AppendField(f.data, []byte(it.event))
				ev = it.event
			}
			f.data = append(f.data, it.ops...)
		}
		if len(f.data) >= compressFrom && w.s.l.n.Compress() {
			f.data = CompressShard(f.data)
		}
		go func() {
			w.fly(f)
			<-w.slots
		}()
	}
}

// fly publishes f and settles it: the writer moves on, the index entries
// are applied and the commits answered.
func (w *shardWriter) fly(f *flight) {
	defer close(f.done)
	l := w.s.l
	began := time.Now()
	seq, err := l.publishShard(w.s, f)
	if errors.Is(err, errRefused) {
		err = fmt.Errorf("cluster: append to %s: %w: %w", w.s.subject, persistence.ErrFenced, err)
	}
	f.seq, f.err = seq, err
	w.Mu.Lock()
	if err != nil {
		if w.dead == nil {
			w.dead = err
		}
	} else {
		w.expected = seq
		// The commits this message answers come back soon (an event has
		// one in flight), each with its successor: the next message waits
		// for them and what is queued, a little (see lingerLocked).
		w.want = len(w.queue)
		for _, it := range f.items {
			if !it.claim {
				w.want++
			}
		}
		w.until = time.Now().Add(min(time.Since(began), maxLinger))
	}
	w.Mu.Unlock()
	if err != nil {
		for _, it := range f.items {
			it.err = err
			close(it.done)
		}
		return
	}
	w.s.applyOwn(f.expected, seq, f.items)
	l.stats.msgs.Add(1)
	l.stats.bytes.Add(int64(len(f.data)))
	l.stats.commits.Add(int64(len(f.items)))
	// The index entries go to the local store while the next message
	// flies; the commits are answered once theirs are applied, in message
	// order.
	w.Mu.Lock()
	before, mine := w.applied, make(chan struct{})
	w.applied = mine
	w.Mu.Unlock()
	go func() {
		defer close(mine)
		if before != nil {
			<-before
		}
		l.applyItems(f.items)
		for _, it := range f.items {
			it.seq = seq
			if it.claim {
				l.stats.claims.Add(1)
			} else if it.first > 0 {
				l.stats.records.Add(int64(it.last - it.first + 1))
			}
			close(it.done)
		}
	}()
}

// errRefused marks a message the fence refused (10071).
var errRefused = errors.New("refused by the fence")

// publishShard publishes f, retrying what is transient with the same
// Nats-Msg-Id, and answers its sequence; a refusal by the fence is
// errRefused.
func (l *Log) publishShard(s *shardLog, f *flight) (uint64, error) {
	m := &nats.Msg{Subject: s.subject, Data: f.data, Header: nats.Header{}}
	m.Header.Set(jetstream.MsgIDHeader, f.id)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(f.expected, 10))
	began := time.Now()
	deadline := began.Add(publishDeadline)
	wait := 50 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), min(l.n.Config().RequestTimeout, time.Until(deadline)))
		_, js := l.pubConn()
		ack, err := js.PublishMsg(ctx, m)
		cancel()
		if err == nil {
			l.stats.ackNanos.Add(int64(time.Since(began)))
			return ack.Sequence, nil
		}
		var api *jetstream.APIError
		if errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			// Another writer's message came first.
			return 0, fmt.Errorf("%w: %v", errRefused, err)
		}
		if time.Now().After(deadline) || l.Closing() {
			// Stored or not, this writer cannot know: it stops.
			return 0, fmt.Errorf("cluster: append to %s: %w (the writer stops): %v", s.subject, persistence.ErrFenced, err)
		}
		// 10164 (a publish on the subject still in process), a timeout
		// or no responders (an election): the same message again, which
		// the server settles by its id if it was stored.
		l.stats.retries.Add(1)
		l.n.Config().Logger.Debug("cluster: publish retried", "subject", s.subject, "err", err)
		time.Sleep(wait)
		wait = min(wait*2, time.Second)
	}
}

// applyItems writes the index entries of a stored message's commits to
// the local store (one batch) and tells onIndex of them.
func (l *Log) applyItems(batch []*item) {
	var b *Batch
	for _, it := range batch {
		if len(it.index) > 0 {
			if b == nil {
				b = &Batch{}
			}
			b.Index = append(b.Index, it.index...)
		}
	}
	if b != nil {
		if err := l.applyIndex(b); err != nil {
			// The local store failed: the entries' senders miss them
			// until the next owner imports them from the log.
			l.n.Config().Logger.Error("cluster: apply index entries to the local store", "err", err)
		}
	}
	if l.OnIndex == nil {
		return
	}
	for _, it := range batch {
		if len(it.index) > 0 {
			l.OnIndex(it.event, it.index)
		}
	}
}

// ----- The view -----

// ownMsg is a message this node stored, kept until the view has read
// everything before it.
type ownMsg struct {
	seq   uint64
	items []*item
}

// applyOwn adds this node's message seq, which follows prev on the
// subject, to the view.
func (s *shardLog) applyOwn(prev, seq uint64, batch []*item) {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	if seq <= s.seen {
		return
	}
	if !s.viewed || prev > s.seen {
		if len(s.pending) >= maxPendingOwn {
			clear(s.pending) // read back by the next pass instead
		}
		s.pending[prev] = &ownMsg{seq: seq, items: batch}
		return
	}
	s.noteItemsLocked(seq, batch)
	s.seen = seq
	s.absorbLocked()
}

func (s *shardLog) noteItemsLocked(seq uint64, batch []*item) {
	for _, it := range batch {
		v := s.viewOf(it.event)
		if v.since == 0 {
			v.since = seq
		}
		if it.claim {
			v.last = max(v.last, it.last)
			continue
		}
		if it.first > 0 {
			v.note(it.first, it.last, seq)
		}
	}
}

// absorbLocked adds the pending own messages that now follow seen.
func (s *shardLog) absorbLocked() {
	for len(s.pending) > 0 {
		m, ok := s.pending[s.seen]
		if !ok {
			break
		}
		delete(s.pending, s.seen)
		s.noteItemsLocked(m.seq, m.items)
		s.seen = m.seq
	}
	for prev, m := range s.pending {
		if m.seq <= s.seen || prev < s.seen {
			delete(s.pending, prev)
		}
	}
}

// viewLocked is viewOf under vmu.
func (s *shardLog) viewLocked(event string) *evView {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	return s.viewOf(event)
}

func (s *shardLog) viewOf(event string) *evView {
	v := s.events[event]
	if v == nil {
		v = &evView{}
		s.events[event] = v
	}
	return v
}

// readPass is one read of the shard's messages shared by the readers
// waiting when it starts.
type readPass struct {
	readers []*reader
	done    chan struct{}
	err     error
}

// reader is one event's replay (or owed-entries read) in a pass.
type reader struct {
	event string
	after uint64 // records with seq > after
	from  uint64 // the first message it needs (0: the first kept)
	// only, when set, lists every message through from-1 that holds a
	// record it needs (at most maxSparse of them): the pass reads those
	// alone, not every message from the first of them (see pass).
	only   []uint64
	before uint64 // messages below this sequence only (0: all)
	// afterMsg: an index reader's messages after this sequence only (0:
	// all); through: the last message the pass read (set by pass).
	afterMsg, through uint64
	rec               func(seq uint64, record []byte) error
	index             func(op byte, key, value []byte)
	// msgEnd, when set, is called after each message of an index
	// reader's range (afterMsg, before) once its operations were handed
	// to index, in order; an error ends the reader's read.
	msgEnd func(msgSeq uint64) error
	err    error
}

// read runs r in the next pass over the shard and waits for it; a reader
// with no event only brings the view up to date.
func (s *shardLog) read(r *reader) error {
	s.vmu.Lock()
	if r.event != "" && s.viewed {
		// The view says where the event's records start; what came after
		// seen is read anyway.
		r.from = s.seen + 1
		if v := s.events[r.event]; v != nil && v.dropped > r.after {
			r.from = 0 // some records it needs lie before the marks kept
		} else if v != nil {
			for i, m := range v.marks {
				if m.last > r.after {
					if rest := v.marks[i:]; len(rest) <= maxSparse {
						// These alone, then every message after seen.
						for _, m := range rest {
							r.only = append(r.only, m.sseq)
						}
						break
					}
					r.from = min(r.from, m.sseq)
					break
				}
			}
		}
		if v := s.events[r.event]; r.index != nil {
			// Index entries have no marks: from the event's first message.
			r.only = nil
			r.from = s.seen + 1
			if v != nil && v.since > 0 {
				r.from = v.since
			}
			if r.afterMsg > 0 {
				r.from = max(r.from, r.afterMsg+1)
			}
		}
	}
	p := s.next
	if p == nil {
		p = &readPass{done: make(chan struct{})}
		s.next = p
	}
	p.readers = append(p.readers, r)
	if !s.reading {
		s.reading = true
		go s.runPasses()
	}
	s.vmu.Unlock()
	<-p.done
	if p.err != nil {
		return p.err
	}
	return r.err
}

// runPasses runs the passes asked for until none is.
func (s *shardLog) runPasses() {
	for {
		s.vmu.Lock()
		p := s.next
		s.next = nil
		if p == nil {
			s.reading = false
			s.vmu.Unlock()
			return
		}
		s.vmu.Unlock()
		s.l.stats.passes.Add(1)
		p.err = s.pass(p.readers)
		close(p.done)
	}
}

// pass reads the shard's messages from the first a reader needs (or the
// first the view lacks) through the subject's last, hands each reader its
// event's operations and adds what the view lacks.
func (s *shardLog) pass(readers []*reader) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.l.n.Config().RequestTimeout)
	end, err := s.lastSeq(ctx)
	cancel()
	if err != nil {
		return fmt.Errorf("cluster: read %s: %w", s.subject, err)
	}
	s.vmu.Lock()
	start := uint64(1)
	if s.viewed {
		start = s.seen + 1
	}
	s.vmu.Unlock()
	for _, r := range readers {
		if r.event != "" {
			start = min(start, max(r.from, 1))
		}
	}
	// A reader whose few messages before from the view lists (a small
	// event in a shard with a big one, whose log its records hold back
	// from the trim) has those read alone, in order before the rest:
	// reading every message from its first made each pass with it read
	// the whole shard (300k records in a chaos run's failover).
	var sparse []uint64
	for _, r := range readers {
		sparse = append(sparse, r.only...)
	}
	slices.Sort(sparse)
	for i, seq := range slices.Compact(sparse) {
		if seq >= start {
			break // the read from start brings it, in order
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.l.n.Config().RequestTimeout)
		msg, err := node.LeaderGet(ctx, s.l.n.Conn(), s.Stream, node.MsgGetRequest{Seq: seq, NextFor: s.subject})
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break // purged through end meanwhile
		}
		if err != nil {
			return fmt.Errorf("cluster: read %s message %d (%d of %d alone): %w", s.subject, seq, i+1, len(sparse), err)
		}
		if msg.Sequence != seq {
			continue // purged meanwhile: what it held is covered by a snapshot
		}
		s.l.stats.reads.Add(1)
		if err := s.take(msg, readers); err != nil {
			return err
		}
	}
	// Batched direct gets, the leader for what a lagging replica lacks
	// (directget.go); each request has a try of RequestTimeout.
	taken := start - 1
	err = node.ReadThrough(context.Background(), s.l.n.Conn(), s.Stream, s.subject, start, end, s.l.n.Config().RequestTimeout, !s.l.OneByOne,
		func(msg *jetstream.RawStreamMsg) error {
			s.l.stats.reads.Add(1)
			if err := s.take(msg, readers); err != nil {
				return err
			}
			taken = msg.Sequence
			if allEnded(readers) {
				return errPassEnded
			}
			return nil
		})
	if errors.Is(err, errPassEnded) {
		// Every reader of the pass ended its read (a prefetch stopped
		// for a claim): the view goes through what was taken.
		end, err = taken, nil
	}
	if err != nil {
		return err
	}
	for _, r := range readers {
		r.through = end
	}
	s.vmu.Lock()
	if !s.viewed || s.seen < end {
		s.seen = end
	}
	s.viewed = true
	s.absorbLocked()
	s.vmu.Unlock()
	return nil
}

// errPassEnded ends a pass whose readers all ended their reads.
var errPassEnded = errors.New("cluster: every reader of the pass ended")

// allEnded reports whether every reader of a pass has ended its read (a
// reader with no event, which brings the view up to date, never does).
func allEnded(readers []*reader) bool {
	for _, r := range readers {
		if r.event == "" || r.err == nil {
			return false
		}
	}
	return true
}

// take hands msg's operations to the readers and, when the view lacks it,
// to the view.
func (s *shardLog) take(msg *jetstream.RawStreamMsg, readers []*reader) error {
	s.vmu.Lock()
	addView := !s.viewed || msg.Sequence > s.seen
	s.vmu.Unlock()
	type span struct{ first, last uint64 }
	spans := map[string]*span{}
	claims := map[string]uint64{}
	err := DecodeShard(msg.Data, func(o ShardOp) error {
		if addView {
			if v := s.viewLocked(o.event); v.since == 0 {
				v.since = msg.Sequence
			}
			switch o.op {
			case 'a':
				sp := spans[o.event]
				if sp == nil {
					sp = &span{first: o.seq}
					spans[o.event] = sp
				}
				sp.last = o.seq
			case 'c':
				claims[o.event] = max(claims[o.event], o.seq)
			}
		}
		for _, r := range readers {
			if r.err != nil || r.event != o.event || (r.before > 0 && msg.Sequence >= r.before) || msg.Sequence <= r.afterMsg {
				continue
			}
			switch {
			case o.op == 'a' && r.rec != nil && o.seq > r.after:
				r.err = r.rec(o.seq, o.A)
			case (o.op == 'p' || o.op == 'd') && r.index != nil:
				r.index(o.op, o.A, o.B)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cluster: read %s: message %d: %w", s.subject, msg.Sequence, err)
	}
	for _, r := range readers {
		if r.msgEnd != nil && r.err == nil && r.event != "" && msg.Sequence > r.afterMsg && (r.before == 0 || msg.Sequence < r.before) {
			r.err = r.msgEnd(msg.Sequence)
		}
	}
	if addView {
		s.vmu.Lock()
		for ev, sp := range spans {
			s.viewOf(ev).note(sp.first, sp.last, msg.Sequence)
		}
		for ev, last := range claims {
			v := s.viewOf(ev)
			v.last = max(v.last, last)
		}
		s.vmu.Unlock()
	}
	return nil
}

// catchUp brings the view up to the subject's message through.
func (s *shardLog) catchUp(through uint64) error {
	s.vmu.Lock()
	ok := s.viewed && s.seen >= through
	s.vmu.Unlock()
	if ok {
		return nil
	}
	return s.read(&reader{})
}

// Current brings the view up to the subject's last message now.
func (s *shardLog) Current() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.l.n.Config().RequestTimeout)
	last, err := s.lastSeq(ctx)
	cancel()
	if err != nil {
		return err
	}
	return s.catchUp(last)
}

// ----- Trim -----

// trim purges the shard's messages that no event still needs: those
// before the first message holding a record of some event after its
// older snapshot kept (keep). An event the view knows no snapshot of
// needs all its records, and the messages after seen are never purged.
func (s *shardLog) trim(ctx context.Context, event string, keep uint64) error {
	s.vmu.Lock()
	v := s.viewOf(event)
	v.keep = max(v.keep, keep)
	if !s.viewed {
		s.vmu.Unlock()
		return nil
	}
	// Messages below upTo go; the last one the view has read stays (a
	// subject purged whole would fence a writer on nothing).
	upTo := s.seen
	holder := ""
	for ev, v := range s.events {
		need := uint64(0)
		if v.dropped > v.keep {
			need = 1 // records before the marks kept may be needed
		} else {
			for _, m := range v.marks {
				if m.last > v.keep {
					need = m.sseq
					break
				}
			}
			if need == 0 {
				continue // every record met is covered by a snapshot
			}
		}
		if need < upTo {
			upTo, holder = need, ev
		}
	}
	s.vmu.Unlock()
	if upTo <= 1 {
		return nil
	}
	st, err := s.l.n.JetStream().Stream(ctx, s.Stream)
	if err != nil {
		return err
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(s.subject), jetstream.WithPurgeSequence(upTo)); err != nil {
		return err
	}
	s.l.n.Config().Logger.Debug("cluster: shard log trimmed", "subject", s.subject, "below", upTo, "held_by", holder)
	s.vmu.Lock()
	for _, v := range s.events {
		i := 0
		for i < len(v.marks) && v.marks[i].sseq < upTo {
			i++
		}
		v.marks = append(v.marks[:0], v.marks[i:]...)
		if v.since < upTo {
			v.since = upTo // at or before its first message kept
		}
	}
	s.vmu.Unlock()
	return nil
}

// SetKeep notes the older snapshot kept of event (see trim).
func (s *shardLog) SetKeep(event string, keep uint64) {
	s.vmu.Lock()
	v := s.viewOf(event)
	v.keep = max(v.keep, keep)
	s.vmu.Unlock()
}

// Holder is an event that holds its shard's trim back (see holders).
type Holder struct {
	Event string
	Last  uint64 // its last record seq the view knows
	Need  uint64 // the first message it needs kept
}

// Holders lists, oldest need first and at most limit of them, the events
// that hold the shard's trim more than lag messages behind the view's
// seen and are worth a snapshot now (see Snapshots.settle): idle (no
// record of theirs in the last lag messages) or small (last record seq at
// most small, so a snapshot is cheap). A busy big event is left to its
// own snapshots' pace: it holds the log back by design (the records after
// its older snapshot kept). It answers seen too.
func (s *shardLog) Holders(lag, small uint64, limit int) (uint64, []Holder) {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	if !s.viewed {
		return 0, nil
	}
	var out []Holder
	for ev, v := range s.events {
		need := uint64(0)
		if v.dropped > v.keep {
			need = 1
		} else {
			for _, m := range v.marks {
				if m.last > v.keep {
					need = m.sseq
					break
				}
			}
		}
		if need == 0 || need+lag > s.seen || v.last <= v.keep {
			continue
		}
		idle := len(v.marks) == 0 || v.marks[len(v.marks)-1].sseq+lag <= s.seen
		if !idle && v.last > small {
			continue
		}
		out = append(out, Holder{Event: ev, Last: v.last, Need: need})
	}
	slices.SortFunc(out, func(a, b Holder) int { return cmp.Compare(a.Need, b.Need) })
	if len(out) > limit {
		out = out[:limit]
	}
	return s.seen, out
}

// ShardLogEvents lists the events that have operations in shard's log,
// in the order they first appear: one read of the messages kept.
func ShardLogEvents(ctx context.Context, n *node.Node, shard int) ([]string, error) {
	subject := node.ShardSubject(shard)
	last, err := node.LeaderLast(ctx, n.Conn(), node.StreamName(shard), subject)
	if err != nil || last == 0 {
		return nil, err
	}
	var ids []string
	seen := map[string]bool{}
	err = node.ReadThrough(ctx, n.Conn(), node.StreamName(shard), subject, 1, last, n.Config().RequestTimeout, true, func(m *jetstream.RawStreamMsg) error {
		return DecodeShard(m.Data, func(o ShardOp) error {
			if !seen[o.event] {
				seen[o.event] = true
				ids = append(ids, o.event)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// events lists the events the shard's log names, brought up to the
// subject's last message.
func (s *shardLog) EventIDs() ([]string, error) {
	if err := s.Current(); err != nil {
		return nil, err
	}
	s.vmu.Lock()
	defer s.vmu.Unlock()
	ids := make([]string, 0, len(s.events))
	for id := range s.events {
		ids = append(ids, id)
	}
	return ids, nil
}
