package actors

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"ticketd/persistence"
)

// committer is the group-commit half of a durable actor. It is used only
// from inside the actor's Receive, except for the sync goroutine, which
// talks back through post.
type committer struct {
	store  *persistence.Store
	stream string
	seq    uint64 // last record appended, durable or not
	open   *batch // filling
	flying *batch // being synced
	post   func(msg any)
	wg     *sync.WaitGroup // counts syncs in flight, for shutdown
}

type batch struct {
	b         *persistence.Batch
	dirty     bool
	replies   []pendingReply
	onDurable []func()
}

type pendingReply struct {
	to  *actor.PID
	msg any
}

// synced reports the outcome of a batch's commit to its actor.
type synced struct {
	b   *batch
	err error
}

func (c *committer) openBatch() *batch {
	if c.open == nil {
		c.open = &batch{b: c.store.NewBatch()}
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

// afterDurable runs fn (inside the actor) once everything appended so far
// is durable.
func (c *committer) afterDurable(fn func()) {
	switch {
	case c.open != nil && c.open.dirty:
		c.open.onDurable = append(c.open.onDurable, fn)
	case c.flying != nil:
		c.flying.onDurable = append(c.flying.onDurable, fn)
	default:
		fn()
	}
}

// reply answers to once everything appended so far is durable.
func (c *committer) reply(ctx actor.Context, to *actor.PID, msg any) {
	if to == nil {
		return
	}
	switch {
	case c.open != nil && c.open.dirty:
		c.open.replies = append(c.open.replies, pendingReply{to, msg})
	case c.flying != nil:
		c.flying.replies = append(c.flying.replies, pendingReply{to, msg})
	default:
		ctx.Send(to, msg)
	}
}

// idle reports whether nothing is waiting to become durable.
func (c *committer) idle() bool {
	return c.flying == nil && (c.open == nil || !c.open.dirty)
}

// kick starts syncing the open batch unless a sync is in flight.
func (c *committer) kick() {
	if c.flying != nil || c.open == nil || !c.open.dirty {
		return
	}
	f := c.open
	c.open = nil
	c.flying = f
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		err := c.store.Commit(f.b)
		c.post(&synced{b: f, err: err})
	}()
}

// done handles the end of a sync: it releases the batch's replies and
// starts the next sync. A failed sync leaves the in-memory state ahead of
// the log, so the caller must fail every waiting reply and stop the actor.
func (c *committer) done(ctx actor.Context, m *synced) error {
	if m.b != c.flying {
		panic("actors: synced batch is not the one in flight")
	}
	c.flying = nil
	m.b.b.Close()
	if m.err != nil {
		return m.err
	}
	for _, r := range m.b.replies {
		ctx.Send(r.to, r.msg)
	}
	for _, fn := range m.b.onDurable {
		fn()
	}
	c.kick()
	return nil
}

// fail answers every waiting reply with msg (after a failed sync).
func (c *committer) fail(ctx actor.Context, failed *batch, msg func() any) {
	for _, b := range []*batch{failed, c.open} {
		if b == nil {
			continue
		}
		for _, r := range b.replies {
			ctx.Send(r.to, msg())
		}
	}
	if c.open != nil {
		c.open.b.Close()
		c.open = nil
	}
}
