package actors

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"ticketd/persistence"
)

// committer is the group-commit half of a durable actor. It is used only
// from inside the actor's Receive, except for the sync waiters, which talk
// back through post.
//
// The open batch collects the records decided since the last hand-off. It
// is handed to the log (CommitAsync: written in order, durability not
// awaited) at once while fewer than the log's MaxInFlight batches are in
// flight, else when the oldest becomes durable. Replies wait for the batch that made
// their state durable; since batches reach the WAL in order, they are
// released in order.
type committer struct {
	log    persistence.Log
	stream string
	seq    uint64   // last record appended, durable or not
	open   *batch   // filling
	flying []*batch // handed to Pebble, oldest first
	post   func(msg any)
	wg     *sync.WaitGroup // counts sync waiters, for shutdown
}

type batch struct {
	b         persistence.LogBatch
	dirty     bool
	synced    bool
	replies   []pendingReply
	onDurable []func()
}

type pendingReply struct {
	to  *actor.PID
	msg any
}

// synced reports the outcome of a batch's sync to its actor.
type synced struct {
	b   *batch
	err error
}

func (c *committer) openBatch() *batch {
	if c.open == nil {
		c.open = &batch{b: c.log.NewBatch()}
	}
	return c.open
}

// append adds one log record to the open batch and returns its seq.
func (c *committer) append(rec []byte) uint64 {
	b := c.openBatch()
	c.seq++
	b.b.Append(c.stream, c.seq, rec)
	b.dirty = true
	return c.seq
}

// put adds an index entry to the open batch, durable with its records.
func (c *committer) put(key, value []byte) {
	b := c.openBatch()
	b.b.Put(key, value)
	b.dirty = true
}

// del adds an index entry's deletion to the open batch.
func (c *committer) del(key []byte) {
	b := c.openBatch()
	b.b.Delete(key)
	b.dirty = true
}

// last is the batch whose durability covers everything appended so far,
// or nil when everything is durable.
func (c *committer) last() *batch {
	if c.open != nil && c.open.dirty {
		return c.open
	}
	if n := len(c.flying); n > 0 {
		return c.flying[n-1]
	}
	return nil
}

// afterDurable runs fn (inside the actor) once everything appended so far
// is durable.
func (c *committer) afterDurable(fn func()) {
	if b := c.last(); b != nil {
		b.onDurable = append(b.onDurable, fn)
		return
	}
	fn()
}

// reply answers to once everything appended so far is durable.
func (c *committer) reply(ctx actor.Context, to *actor.PID, msg any) {
	if to == nil {
		return
	}
	if b := c.last(); b != nil {
		b.replies = append(b.replies, pendingReply{to, msg})
		return
	}
	ctx.Send(to, msg)
}

// idle reports whether nothing is waiting to become durable.
func (c *committer) idle() bool { return c.last() == nil }

// kick hands the open batch to the log unless MaxInFlight batches are
// in flight. A failed hand-off is reported like a failed sync.
func (c *committer) kick() {
	if c.open == nil || !c.open.dirty || len(c.flying) >= c.log.MaxInFlight() {
		return
	}
	f := c.open
	c.open = nil
	c.flying = append(c.flying, f)
	wait, err := c.log.CommitAsync(f.b)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err == nil {
			err = wait()
		}
		c.post(&synced{b: f, err: err})
	}()
}

// done handles the end of a sync: it releases the replies of every batch
// that is now durable, oldest first, and hands on the open batch. A failed
// sync leaves the in-memory state ahead of the log, so the caller must fail
// every waiting reply and stop the actor.
func (c *committer) done(ctx actor.Context, m *synced) error {
	if m.err != nil {
		return m.err
	}
	m.b.synced = true
	for len(c.flying) > 0 && c.flying[0].synced {
		b := c.flying[0]
		c.flying[0] = nil
		c.flying = c.flying[1:]
		b.b.Close()
		// What waits for durability (a published directory view, an
		// owed-work wake-up) happens before the answers go out, so a caller
		// that reads right after its answer sees it.
		for _, fn := range b.onDurable {
			fn()
		}
		for _, r := range b.replies {
			ctx.Send(r.to, r.msg)
		}
	}
	c.kick()
	return nil
}

// fail answers every waiting reply with msg (after a failed sync). The
// batches still in flight are closed by their waiters' messages never being
// handled: the actor stops.
func (c *committer) fail(ctx actor.Context, msg func() any) {
	pending := append([]*batch(nil), c.flying...)
	if c.open != nil {
		pending = append(pending, c.open)
	}
	for _, b := range pending {
		for _, r := range b.replies {
			ctx.Send(r.to, msg())
		}
		b.replies = nil
	}
	if c.open != nil {
		c.open.b.Close()
		c.open = nil
	}
}
