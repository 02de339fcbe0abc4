package routing

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/ask"

	"github.com/nats-io/nats.go"
)

// Forwarded requests travel in batches: per owner, the requests queued
// while the owner's sender is busy or waiting to run go as one NATS
// message (askSubj + owner), and per forwarding node the answers ready
// meanwhile go back as one (ansSubj + that node). A request and its
// answer cost a forwarding node and both servers per message, not per
// request: in a drop, the answers to one shard message all come back at
// once, and so do their clients' next requests. Nothing waits for a
// batch to fill: a request sender yields once (runtime.Gosched) so that
// the callers woken with the one that started it queue theirs, then
// sends what is queued. An answer sender does not: an actor queues all
// the answers of a commit at once, and a yield put the sender behind
// every goroutine ready to run (the drop ran faster without it, in
// alternated runs: bench/results/20261129-cluster-history.md).
//
// Each request keeps its own id, deadline and answer: the owner sends
// each to its event's actor as the batch is read, with the caller's
// deadline (busy at once when maxServing are served), and the actor's
// answer goes straight into the answer queue, to be encoded by its sender
// (actors.System.ServeAsync): no goroutine per request waits for it, and
// a drop's batches carry more answers (bench/results/20261129-cluster-history.md). It answers moved,
// fenced, busy or the result per request. The batch's reply subject
// names its owner and the ids it carries (ansSubj + node.owner.first.last), so the server's "no
// responders" status for a batch nobody listens to answers just those
// requests, which Forward sends again. A caller waiting on an owner that
// is gone (ownerCtx) stops waiting as before; its request's answer, if
// one comes, is dropped.
const ansSubj = "ticketd.ans."

// maxAskBatch and maxAskBytes bound a batch of requests or answers (a
// NATS message is at most 1 MB by default).
const (
	maxAskBatch = 256
	maxAskBytes = 512 << 10
)

// asking is a forwarded request on its way.
type asking struct {
	id       uint64
	body     []byte
	deadline time.Time
	answer   chan askAnswer // buffered: the answer never waits for its caller
	fc       *fwdConn       // the connection it was sent over, if any (under the peer's mu)
}

type askAnswer struct {
	body []byte
	err  error
}

// peer is this node's forwarding to one owner.
type peer struct {
	r     *Router
	owner string

	mu       sync.Mutex
	next     uint64 // the id of the last request queued
	queue    []*asking
	sending  bool
	waiting  map[uint64]*asking
	sweeping bool // a sweep runs (see sweep)

	cmu        sync.Mutex // the forwarding connection (fwdconn.go)
	fc         *fwdConn
	fcAddr     string
	failedAddr string // the address last refused, and when
	failedAt   time.Time

	batches atomic.Int64 // sent
}

// fwdStats counts the forwarded requests and answers and their batches,
// and sums the time from a request's send to its answer on the forwarding
// node (round) and from its batch's arrival to its answer on the owner
// (serve), for the benches.
type fwdStats struct {
	requests, batches, answers, answerBatches atomic.Int64
	connBatches                               atomic.Int64 // of batches, those sent over a forwarding connection
	roundNanos, roundCount, serveNanos        atomic.Int64
}

// peer returns the forwarding to owner.
func (r *Router) peer(owner string) *peer {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	p := r.peers[owner]
	if p == nil {
		p = &peer{r: r, owner: owner, waiting: map[uint64]*asking{}}
		r.peers[owner] = p
	}
	return p
}

// listen subscribes to this node's answers, once.
func (r *Router) listen() error {
	r.ansOnce.Do(func() {
		r.ansSub, r.ansErr = r.n.Conn().Subscribe(ansSubj+r.n.Config().NodeName+".>", r.answered)
	})
	if r.ansErr != nil {
		return fmt.Errorf("cluster: answers: %w", r.ansErr)
	}
	return nil
}

// ask queues a request for owner and waits for its answer (until
// deadline), ctx's end or the owner's loss (gone).
func (p *peer) ask(ctx, gone context.Context, deadline time.Time, body []byte) ([]byte, error) {
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	a := &asking{body: body, deadline: deadline, answer: make(chan askAnswer, 1)}
	p.mu.Lock()
	p.next++
	a.id = p.next
	p.waiting[a.id] = a
	p.queue = append(p.queue, a)
	start := !p.sending
	p.sending = true
	sweep := !p.sweeping
	p.sweeping = true
	p.mu.Unlock()
	if start {
		go p.send()
	}
	if sweep {
		go p.sweep()
	}
	select {
	case ans := <-a.answer:
		return ans.body, ans.err
	case <-ctx.Done():
		p.forget(a.id)
		return nil, ctx.Err()
	case <-gone.Done():
		p.forget(a.id)
		return nil, fmt.Errorf("%w: %s", errOwnerGone, p.owner)
	}
}

// sweepEvery is how often a peer with requests waiting answers those past
// their deadline (context.DeadlineExceeded): one sweep instead of a timer
// per request, whose setting and stopping cost a forwarding node about 5
// µs of CPU a request (TestForwardRate's profile, 2 cores). A request is
// answered so at most sweepEvery after its deadline; a caller's own ctx
// ends its wait at once.
const sweepEvery = 100 * time.Millisecond

// sweep runs while requests wait.
func (p *peer) sweep() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	var late []*asking
	for range t.C {
		now := time.Now()
		p.mu.Lock()
		for id, a := range p.waiting {
			if !a.deadline.IsZero() && now.After(a.deadline) {
				delete(p.waiting, id)
				late = append(late, a)
			}
		}
		done := len(p.waiting) == 0
		if done {
			p.sweeping = false
		}
		p.mu.Unlock()
		for _, a := range late {
			a.answer <- askAnswer{err: context.DeadlineExceeded}
		}
		late = late[:0]
		if done {
			return
		}
	}
}

func (p *peer) forget(id uint64) {
	p.mu.Lock()
	delete(p.waiting, id)
	p.mu.Unlock()
}

// deliver answers request id, unless its caller stopped waiting.
func (p *peer) deliver(id uint64, ans askAnswer) {
	p.mu.Lock()
	a := p.waiting[id]
	delete(p.waiting, id)
	p.mu.Unlock()
	if a != nil {
		a.answer <- ans
	}
}

// batchLen is how many of queue's first items the next batch takes (at
// most maxAskBatch, and maxAskBytes unless the first alone is bigger),
// and their size.
func batchLen[T any](queue []T, size func(T) int) (n, bytes int) {
	for n < len(queue) && n < maxAskBatch {
		sz := size(queue[n])
		if n > 0 && bytes+sz > maxAskBytes {
			break
		}
		bytes += sz
		n++
	}
	return n, bytes
}

// send sends the queue in batches until it is empty.
func (p *peer) send() {
	for {
		runtime.Gosched() // see the top of this file
		p.mu.Lock()
		n, size := batchLen(p.queue, func(a *asking) int { return len(a.body) + 24 })
		if n == 0 {
			p.sending = false
			p.mu.Unlock()
			return
		}
		batch := make([]*asking, n)
		copy(batch, p.queue)
		p.queue = append(p.queue[:0], p.queue[n:]...)
		p.mu.Unlock()

		first, last := batch[0].id, batch[n-1].id // consecutive: ids are given in queue order
		reply := ansSubj + p.r.n.Config().NodeName + "." + p.owner + "." + strconv.FormatUint(first, 10) + "." + strconv.FormatUint(last, 10)
		now := time.Now()
		b := appendBatchHead(make([]byte, 0, size+8), n)
		for _, a := range batch {
			var ms uint64 // 0: none
			if !a.deadline.IsZero() {
				ms = uint64(max(a.deadline.Sub(now).Milliseconds(), 1))
			}
			b = appendRequest(b, a.id, ms, a.body)
		}
		p.batches.Add(1)
		p.r.fwd.requests.Add(int64(n))
		p.r.fwd.batches.Add(1)
		m := &nats.Msg{Subject: askSubj + p.owner, Reply: reply, Data: b}
		var err error
		if fc := p.conn(); fc != nil {
			p.r.fwd.connBatches.Add(1)
			p.mu.Lock()
			for _, a := range batch {
				a.fc = fc
			}
			p.mu.Unlock()
			if err = fc.write(m); err != nil {
				err = fmt.Errorf("%w: %s: forwarding connection: %v", errOwnerGone, p.owner, err)
			}
		} else {
			err = p.r.n.Conn().PublishMsg(m)
		}
		if err != nil {
			for _, a := range batch {
				p.deliver(a.id, askAnswer{err: err})
			}
		}
	}
}

// answered takes a message on this node's answer subject: a batch of
// answers, or the server's "no responders" for a batch of requests.
func (r *Router) answered(m *nats.Msg) {
	toks := strings.Split(strings.TrimPrefix(m.Subject, ansSubj+r.n.Config().NodeName+"."), ".")
	r.pmu.Lock()
	p := r.peers[toks[0]]
	r.pmu.Unlock()
	if p == nil {
		return
	}
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		if len(toks) != 3 {
			return
		}
		first, err1 := strconv.ParseUint(toks[1], 10, 64)
		last, err2 := strconv.ParseUint(toks[2], 10, 64)
		if err1 != nil || err2 != nil || last < first || last-first >= maxAskBatch {
			return
		}
		for id := first; id <= last; id++ {
			p.deliver(id, askAnswer{err: nats.ErrNoResponders})
		}
		return
	}
	err := readBatch(m.Data, false, func(id, _ uint64, body []byte) { p.deliver(id, askAnswer{body: body}) })
	if err != nil {
		r.n.Config().Logger.Warn("cluster: bad forwarded answers", "from", toks[0], "err", err)
	}
}

// serveBatch serves a batch of forwarded requests, each with its own
// deadline (busy at once beyond maxServing); the answers go back in
// batches (answers) to the reply subject's node.
func (r *Router) serveBatch(m *nats.Msg) {
	to, ok := answerSubject(m.Reply)
	if !ok {
		r.n.Config().Logger.Warn("cluster: forwarded requests without a reply subject", "reply", m.Reply)
		return
	}
	r.serveBatchTo(m, r.answers(to))
}

// answerSubject is where a batch's answers go: its reply subject, ansSubj
// + node.owner.first.last, less the ids.
func answerSubject(reply string) (string, bool) {
	if !strings.HasPrefix(reply, ansSubj) {
		return "", false
	}
	for range 2 {
		if i := strings.LastIndexByte(reply, '.'); i > 0 {
			reply = reply[:i]
		}
	}
	return reply, true
}

// serveBatchTo serves m's requests, answering into q: each goes to its
// event's actor from here (actors.System.ServeAsync), and the actor's
// answer goes into q, with no goroutine per request waiting for it.
func (r *Router) serveBatchTo(m *nats.Msg, q *answerQueue) {
	arrived := time.Now()
	r.lastAsk.Store(arrived.UnixNano())
	err := readBatch(m.Data, true, func(id, ms uint64, body []byte) {
		r.unanswered.Add(1) // until its answer is written (answerQueue.send)
		select {
		case r.sem <- struct{}{}:
		default:
			q.add(id, busyAnswer)
			return
		}
		timeout := forwardTimeout
		if ms > 0 {
			timeout = min(timeout, time.Duration(ms)*time.Millisecond)
		}
		r.answerAsync(body, timeout, func(resp *wireResp) {
			<-r.sem
			q.addResp(id, resp)
			r.fwd.serveNanos.Add(int64(time.Since(arrived)))
		})
	})
	if err != nil {
		r.n.Config().Logger.Warn("cluster: bad forwarded requests", "reply", m.Reply, "err", err)
	}
}

// busyAnswer is the answer to a request beyond maxServing.
var busyAnswer = func() []byte {
	b, _ := encodeResp(&wireResp{Err: toWire(ask.ErrBusy)})
	return b
}()

// answerQueue batches the answers to one forwarding node.
type answerQueue struct {
	r       *Router
	subject string
	write   func(m *nats.Msg) error // set: answers go over a forwarding connection

	mu      sync.Mutex
	queue   []answer
	sending bool
}

type answer struct {
	id   uint64
	body []byte    // encoded
	resp *wireResp // or to encode (by the sender, off the actor that answered)
}

// maxAnswerQueues bounds the answer queues kept (one per forwarding
// node and owner name it knows this node by).
const maxAnswerQueues = 1024

// answers returns the answer queue to subject.
func (r *Router) answers(subject string) *answerQueue {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	q := r.ansQueues[subject]
	if q == nil {
		q = &answerQueue{r: r, subject: subject}
		if len(r.ansQueues) < maxAnswerQueues {
			r.ansQueues[subject] = q
		}
	}
	return q
}

func (q *answerQueue) add(id uint64, body []byte) { q.push(answer{id: id, body: body}) }

func (q *answerQueue) addResp(id uint64, resp *wireResp) { q.push(answer{id: id, resp: resp}) }

func (q *answerQueue) push(a answer) {
	q.mu.Lock()
	q.queue = append(q.queue, a)
	start := !q.sending
	q.sending = true
	q.mu.Unlock()
	if start {
		go q.send()
	}
}

func (q *answerQueue) send() {
	var taken []answer
	for {
		q.mu.Lock()
		if len(taken) == 0 {
			if len(q.queue) == 0 {
				q.sending = false
				q.mu.Unlock()
				return
			}
			taken, q.queue = q.queue, taken[:0]
		}
		q.mu.Unlock()
		for i := range taken {
			if taken[i].resp != nil {
				taken[i].body, taken[i].resp = encodeAnswer(taken[i].resp), nil
			}
		}
		n, size := batchLen(taken, func(a answer) int { return len(a.body) + 16 })
		b := appendBatchHead(make([]byte, 0, size+8), n)
		for _, a := range taken[:n] {
			b = appendAnswer(b, a.id, a.body)
		}
		taken = append(taken[:0], taken[n:]...)
		q.r.fwd.answers.Add(int64(n))
		q.r.fwd.answerBatches.Add(1)
		// Lost with the connection, the answers are an unknown outcome to
		// their callers (their deadline, or the owner's loss).
		if q.write != nil {
			_ = q.write(&nats.Msg{Subject: q.subject, Data: b})
		} else {
			_ = q.r.n.Conn().Publish(q.subject, b)
		}
		q.r.unanswered.Add(-int64(n))
	}
}

func appendBatchHead(b []byte, n int) []byte {
	return binary.AppendUvarint(append(b, wireMark, wireBatch), uint64(n))
}

// appendRequest appends a request of a batch: ms is its deadline in ms
// from now, 0 none.
func appendRequest(b []byte, id, ms uint64, body []byte) []byte {
	return appendBytes(binary.AppendUvarint(binary.AppendUvarint(b, id), ms), body)
}

func appendAnswer(b []byte, id uint64, body []byte) []byte {
	return appendBytes(binary.AppendUvarint(b, id), body)
}

// isBatch says whether a forwarded message is a batch (see readBatch).
func isBatch(b []byte) bool { return len(b) >= 2 && b[0] == wireMark && b[1] == wireBatch }

// readBatch reads a batch of requests (withDeadline: each with its
// deadline in ms, 0 none) or of answers, calling fn for each.
func readBatch(b []byte, withDeadline bool, fn func(id, ms uint64, body []byte)) error {
	if !isBatch(b) {
		return errors.New("cluster: not a batch")
	}
	r := &wireReader{b: b[2:]}
	n, k := binary.Uvarint(r.b)
	if k <= 0 || n > maxAskBatch {
		return errShortWire
	}
	r.b = r.b[k:]
	for range n {
		id, k := binary.Uvarint(r.b)
		if k <= 0 {
			return errShortWire
		}
		r.b = r.b[k:]
		var ms uint64
		if withDeadline {
			if ms, k = binary.Uvarint(r.b); k <= 0 {
				return errShortWire
			}
			r.b = r.b[k:]
		}
		body, err := r.bytes()
		if err != nil {
			return err
		}
		fn(id, ms, body)
	}
	return nil
}
