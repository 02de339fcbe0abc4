package mailbox

import (
	"context"
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// replyBox is a reusable answer slot for a request (Ask): a process registered once
// with the actor system, whose messages land in a one-element channel.
//
// protoactor's futures register and remove a new process (a string id in
// a concurrent map) and arm a timer goroutine for every request; in a
// flash sale that was about 4% of the CPU. A box serves one request at a
// time and goes back to the pool once its answer arrived; a box whose
// caller gave up (timeout, cancellation) is removed instead, so a late
// answer never reaches the next caller.
type replyBox struct {
	pid *actor.PID
	ch  chan any
	// t is the box's timeout timer, reset for each request (a stopped
	// timer's channel holds no stale value since Go 1.23).
	t *time.Timer
}

// SendUserMessage implements actor.Process.
func (b *replyBox) SendUserMessage(_ *actor.PID, m any) {
	select {
	case b.ch <- actor.UnwrapEnvelopeMessage(m):
	default: // an answer is already waiting: cannot happen for one request
	}
}

// SendSystemMessage implements actor.Process.
func (b *replyBox) SendSystemMessage(*actor.PID, any) {}

// Stop implements actor.Process.
func (b *replyBox) Stop(*actor.PID) {}

// ReplyPool keeps idle reply boxes (see replyBox) for requests; beyond its capacity they are unregistered.
type ReplyPool struct {
	as   *actor.ActorSystem
	idle chan *replyBox
}

// NewReplyPool returns a pool of as keeping at most size idle boxes.
func NewReplyPool(as *actor.ActorSystem, size int) *ReplyPool {
	return &ReplyPool{as: as, idle: make(chan *replyBox, size)}
}

func (p *ReplyPool) get() (*replyBox, error) {
	select {
	case b := <-p.idle:
		return b, nil
	default:
	}
	b := &replyBox{ch: make(chan any, 1)}
	pid, ok := p.as.ProcessRegistry.Add(b, "reply-"+p.as.ProcessRegistry.NextID())
	if !ok {
		return nil, errors.New("actors: reply id taken")
	}
	b.pid = pid
	return b, nil
}

func (p *ReplyPool) put(b *replyBox) {
	select {
	case p.idle <- b:
	default:
		p.as.ProcessRegistry.Remove(b.pid)
	}
}

// drop unregisters a box whose answer may still come.
func (p *ReplyPool) drop(b *replyBox) { p.as.ProcessRegistry.Remove(b.pid) }

// ErrTimeout is how Request reports an answer that did not come in time.
var ErrTimeout = errors.New("actors: no answer in time")

// ErrFailed is how Request reports that fail closed first.
var ErrFailed = errors.New("actors: store failed")

// Request sends msg to pid and waits up to timeout (or ctx's end, or fail
// closing: a failed store will make nothing durable, so nobody waits for
// it) for the answer. A message to a stopped actor answers
// actor.ErrDeadLetter.
func (p *ReplyPool) Request(ctx context.Context, pid *actor.PID, msg any, timeout time.Duration, fail <-chan struct{}) (any, error) {
	b, err := p.get()
	if err != nil {
		return nil, err
	}
	p.as.Root.RequestWithCustomSender(pid, msg, b.pid)
	if b.t == nil {
		b.t = time.NewTimer(timeout)
	} else {
		b.t.Reset(timeout)
	}
	select {
	case m := <-b.ch:
		b.t.Stop()
		p.put(b)
		if _, dead := m.(*actor.DeadLetterResponse); dead {
			return nil, actor.ErrDeadLetter
		}
		return m, nil
	case <-b.t.C:
		p.drop(b)
		return nil, ErrTimeout
	case <-ctx.Done():
		b.t.Stop()
		p.drop(b)
		return nil, ctx.Err()
	case <-fail:
		b.t.Stop()
		p.drop(b)
		return nil, ErrFailed
	}
}
