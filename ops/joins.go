package ops

import (
	"context"
	"fmt"
	"sync"

	"ticketd/ask"
	"ticketd/event"
)

// JoinQueue joins the event's waiting room for the storefront caller
// client (event.JoinQueue) and answers its entry once durable.
//
// A drop's buyers join by the thousand a second, and each join alone
// cost an actor message, a decision and a log record. So joins that
// arrive while an earlier batch of them is with the event's actor wait
// for it, and go together as the next batch (event.JoinQueues): one
// message, one decision, one record for all of them, as a door's batch of
// scans is one (issue 34). A batch is decided as its joins one by one in
// the order they arrived, each answered only once the batch is durable,
// so nothing of "durable before answered", queue order or the pre-queue
// shuffle changes; a join that arrives when none is with the actor goes
// at once, alone. One batch per event is with the actor at a time: the
// joins behind it gather meanwhile, and the log's group commit has the
// event's other writes to fill its syncs.
//
// A join that owns an Idempotency-Key (ctx carries its record) goes
// alone, as before: its record is committed with its own changes.
func (o *Ops) JoinQueue(ctx context.Context, eventID, client string) (event.QueueStatus, error) {
	if ask.RecorderOf(ctx) != nil {
		return askAs[event.QueueStatus](ctx, o, eventID, event.Storefront{Cmd: event.JoinQueue{Client: client}})
	}
	b := o.joinBatcher(eventID)
	w := joinWaiterPool.Get().(*joinWaiter)
	w.client = client
	b.mu.Lock()
	b.waiting = append(b.waiting, w)
	lead := !b.busy
	b.busy = true
	b.mu.Unlock()
	if !lead {
		// Answered by the batch it went with, or handed the lead: the
		// batch before went to the actor without it.
		lead = <-w.ch
	}
	if lead {
		o.leadJoins(ctx, eventID, b, w)
	}
	st, err := w.st, w.err
	*w = joinWaiter{ch: w.ch}
	joinWaiterPool.Put(w)
	return st, err
}

// joinBatcher gathers one event's joins (see JoinQueue).
type joinBatcher struct {
	mu      sync.Mutex
	waiting []*joinWaiter
	busy    bool // a batch is with the actor: joins wait for it
}

// joinWaiter is one join in a batcher. ch tells it, once: true, lead the
// next batch (it is in b.waiting); false, its answer is in st and err.
type joinWaiter struct {
	client string
	st     event.QueueStatus
	err    error
	ch     chan bool
}

var joinWaiterPool = sync.Pool{New: func() any { return &joinWaiter{ch: make(chan bool, 1)} }}

// maxJoinBatch bounds the joins of one batch (one log record of about
// 60 bytes a join): a batch past it leaves the rest for the next.
const maxJoinBatch = 4096

// joinBatchers are the events' batchers, made on an event's first join.
// An idle batcher stays: it is a few words per event with a waiting room.
func (o *Ops) joinBatcher(eventID string) *joinBatcher {
	if b, ok := o.joins.Load(eventID); ok {
		return b.(*joinBatcher)
	}
	b, _ := o.joins.LoadOrStore(eventID, &joinBatcher{})
	return b.(*joinBatcher)
}

// leadJoins sends the joins waiting in b (self, the leader's, among
// them) to the event's actor as one batch, hands the lead to the first
// join that arrived meanwhile (or leaves b idle), and answers the others.
// Whatever happens, the lead is handed on and every join answered: a
// batcher left busy would keep the event's joins waiting for good.
func (o *Ops) leadJoins(ctx context.Context, eventID string, b *joinBatcher, self *joinWaiter) {
	b.mu.Lock()
	batch := b.waiting
	b.waiting = nil
	if len(batch) > maxJoinBatch {
		b.waiting = append([]*joinWaiter(nil), batch[maxJoinBatch:]...)
		batch = batch[:maxJoinBatch]
	}
	b.mu.Unlock()

	answered := false
	defer func() {
		if !answered {
			for _, w := range batch {
				w.st, w.err = event.QueueStatus{}, MapErr(fmt.Errorf("%w: event %s: the batch of joins failed", ask.ErrUnavailable, eventID))
			}
		}
		b.mu.Lock()
		var next *joinWaiter
		if len(b.waiting) > 0 {
			next = b.waiting[0]
		} else {
			b.busy = false
		}
		b.mu.Unlock()
		if next != nil {
			next.ch <- true
		}
		for _, w := range batch {
			if w != self {
				w.ch <- false
			}
		}
	}()
	o.joinStats[0].Add(1)
	o.joinStats[1].Add(int64(len(batch)))
	clients := make([]string, len(batch))
	for i, w := range batch {
		clients[i] = w.client
	}
	// The batch carries the other callers' joins: the leader's caller
	// going away must not fail theirs (the actors' AskTimeout bounds it).
	res, err := askAs[event.QueueJoins](context.WithoutCancel(ctx), o, eventID, event.Storefront{Cmd: event.JoinQueues{Clients: clients}})
	for i, w := range batch {
		switch {
		case err != nil:
			w.err = err
		case i < len(res.Statuses):
			w.st = res.Statuses[i]
		default:
			w.err = event.ErrQueueFull()
		}
	}
	answered = true
}

// askAs is Do of a command wrapped for the storefront (event.Storefront,
// as the storefront's routes send theirs).
func askAs[R any](ctx context.Context, o *Ops, eventID string, cmd event.Storefront) (R, error) {
	res, err := o.Ask(ctx, eventID, cmd)
	return answerAs[R](eventID, res, err)
}
