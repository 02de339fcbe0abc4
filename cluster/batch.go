package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The commits of a stream's events that wait at the same time go as one
// JetStream atomic batch (Nats-Batch-Id, -Sequence, -Commit): one Raft
// proposal and one ack for all of them instead of one each, which is what
// bounds a stream's appends when many events sell at once (one commit per
// event is in flight, so a drop of many small events is many small
// messages). Every message of a batch keeps its own subject, Nats-Msg-Id
// and Nats-Expected-Last-Subject-Sequence: the server stores the batch
// whole or not at all, and a batch takes consecutive stream sequences,
// so each message's sequence follows from the ack's last one.
//
// A batch that is refused or not acknowledged is sent again one message
// at a time (sendOne): a fenced writer among them is then told so alone,
// the others are stored, and a message the batch had stored is settled
// by its Nats-Msg-Id. A batch is never needed for correctness: without
// atomic publish allowed on the stream every batch falls back so.
const (
	// maxBatchMsgs and maxBatchBytes bound one batch (the server allows
	// 1,000 messages).
	maxBatchMsgs  = 256
	maxBatchBytes = maxMessageBytes
	// maxBatchesInFlight bounds the batches (or lone messages) of one
	// stream a node has in flight; what waits meanwhile forms the next.
	maxBatchesInFlight = 2
)

// Headers of JetStream's atomic batch publish.
const (
	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
)

// streamPub is the queue of one stream's messages waiting to be sent.
type streamPub struct {
	mu     sync.Mutex
	queue  []*pendingPub
	flying int // flushers running, at most maxBatchesInFlight
}

func (l *Log) streamPub(stream string) *streamPub {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pubs == nil {
		l.pubs = map[string]*streamPub{}
	}
	sp := l.pubs[stream]
	if sp == nil {
		sp = &streamPub{}
		l.pubs[stream] = sp
	}
	return sp
}

// enqueue sends p with the stream's other waiting messages and returns
// once p's outcome is known.
func (l *Log) enqueue(stream string, p *pendingPub) {
	p.done = make(chan struct{})
	sp := l.streamPub(stream)
	sp.mu.Lock()
	sp.queue = append(sp.queue, p)
	start := sp.flying < maxBatchesInFlight
	if start {
		sp.flying++
	}
	sp.mu.Unlock()
	if start {
		go l.flush(sp)
	}
	<-p.done
}

// flush sends the stream's waiting messages, a batch at a time, until
// none waits.
func (l *Log) flush(sp *streamPub) {
	for {
		sp.mu.Lock()
		if len(sp.queue) == 0 {
			sp.flying--
			sp.mu.Unlock()
			return
		}
		n, size := 0, 0
		for n < len(sp.queue) && n < maxBatchMsgs {
			sz := len(sp.queue[n].m.Data) + 512 // headers
			if n > 0 && size+sz > maxBatchBytes {
				break
			}
			size += sz
			n++
		}
		batch := make([]*pendingPub, n)
		copy(batch, sp.queue)
		sp.queue = append(sp.queue[:0], sp.queue[n:]...)
		sp.mu.Unlock()
		l.publishBatch(batch)
	}
}

// publishBatch sends batch, as one atomic batch when it has more than
// one message, and closes every message's done.
func (l *Log) publishBatch(batch []*pendingPub) {
	defer func() {
		for _, p := range batch {
			close(p.done)
		}
	}()
	if len(batch) > 1 {
		seqs, err := l.atomic(batch)
		if err == nil {
			l.stats.batches.Add(1)
			l.stats.batched.Add(int64(len(batch)))
			for i, p := range batch {
				l.accepted(p, seqs[i])
			}
			return
		}
		l.stats.fallbacks.Add(1)
		l.n.cfg.Logger.Debug("cluster: batch sent again message by message", "messages", len(batch), "err", err)
	}
	// Alone, each at once: they are on distinct subjects (a writer has one
	// message in flight), so none waits for another.
	var wg sync.WaitGroup
	for _, p := range batch[1:] {
		wg.Go(func() { l.sendOne(p) })
	}
	l.sendOne(batch[0])
	wg.Wait()
}

// batchAck is the server's answer to a batch's commit.
type batchAck struct {
	Seq   uint64              `json:"seq"`
	Batch string              `json:"batch"`
	Count int                 `json:"count"`
	Error *jetstream.APIError `json:"error"`
}

// atomic publishes batch as one atomic batch and answers each message's
// stream sequence.
func (l *Log) atomic(batch []*pendingPub) ([]uint64, error) {
	id := nats.NewInbox()
	nc, _ := l.pubConn()
	var resp *nats.Msg
	for i, p := range batch {
		h := make(nats.Header, len(p.m.Header)+3)
		for k, v := range p.m.Header {
			h[k] = v
		}
		h.Set(hdrBatchID, id)
		h.Set(hdrBatchSeq, strconv.Itoa(i+1))
		m := &nats.Msg{Subject: p.m.Subject, Data: p.m.Data, Header: h}
		if i < len(batch)-1 {
			if err := nc.PublishMsg(m); err != nil {
				return nil, err
			}
			continue
		}
		h.Set(hdrBatchCommit, "1")
		ctx, cancel := context.WithTimeout(context.Background(), l.n.cfg.RequestTimeout)
		var err error
		resp, err = nc.RequestMsgWithContext(ctx, m)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	var ack batchAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return nil, fmt.Errorf("cluster: batch ack: %w", err)
	}
	if ack.Error != nil {
		return nil, ack.Error
	}
	if ack.Batch != id || ack.Count != len(batch) || ack.Seq < uint64(len(batch)) {
		return nil, errors.New("cluster: batch ack does not match the batch")
	}
	seqs := make([]uint64, len(batch))
	for i := range batch {
		seqs[i] = ack.Seq - uint64(len(batch)-1-i)
	}
	return seqs, nil
}
