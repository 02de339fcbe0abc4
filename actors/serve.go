package actors

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"ticketd/actors/mailbox"
	"ticketd/ask"
	"ticketd/event"
)

// ServeAsync is Serve without a goroutine waiting for the answer: done is
// called once with it, by whoever has it (the event's actor as it
// answers, the sweep of asks past their timeout, or the caller itself for
// an answer known at once), and must not block. A node that serves the
// requests other nodes forward to it serves a batch of them so, instead
// of a goroutine per request that the actor's answer must wake (in a
// 64-event drop on 2 cores, runnable goroutines waited about 4 ms an
// order for a core).
//
// It answers as askLocal would: the actor's answer; a retry on a fresh
// actor when the one asked had stopped (a dead letter, or errRetired);
// ErrUnavailable when no answer came within timeout or the store failed
// first (at once).
func (s *System) ServeAsync(eventID string, cmd event.Command, createUnit string, timeout time.Duration, done func(res any, err error)) {
	s.ServeAsyncRecorded(eventID, cmd, createUnit, nil, timeout, done)
}

// ServeAsyncRecorded is ServeAsync of a write that commits rec's record
// (a forwarded request's Idempotency-Key: see Recorder).
func (s *System) ServeAsyncRecorded(eventID string, cmd event.Command, createUnit string, rec *ask.Recorder, timeout time.Duration, done func(res any, err error)) {
	a := &asyncAsk{s: s, eventID: eventID, req: &request{cmd: cmd, create: createUnit, rec: rec}, done: done,
		deadline: time.Now().Add(timeout)}
	a.send(nil)
}

// asyncAsk is a request of ServeAsync on its way.
type asyncAsk struct {
	s        *System
	eventID  string
	req      *request
	done     func(any, error)
	deadline time.Time
	tries    int

	sl  *slot
	box *asyncBox // the answer slot it was sent with
}

// asyncBox is an answer slot of ServeAsync: a process registered once,
// reused by one ask after another like replyBox. ask is the one it waits
// for, nil while idle or once the ask was ended otherwise (timeout, a
// failed store): a late answer then finds nobody.
type asyncBox struct {
	pid *actor.PID
	mu  sync.Mutex
	ask *asyncAsk
}

// SendUserMessage implements actor.Process.
func (b *asyncBox) SendUserMessage(_ *actor.PID, m any) {
	b.mu.Lock()
	a := b.ask
	b.ask = nil
	b.mu.Unlock()
	if a == nil {
		return
	}
	a.answered(actor.UnwrapEnvelopeMessage(m))
}

// SendSystemMessage implements actor.Process.
func (b *asyncBox) SendSystemMessage(*actor.PID, any) {}

// Stop implements actor.Process.
func (b *asyncBox) Stop(*actor.PID) {}

// send sends the ask to its event's actor (on a fresh box, or on b again
// for a retry), or answers at once what stops it.
func (a *asyncAsk) send(b *asyncBox) {
	s := a.s
	if a.tries++; a.tries > maxActorTries {
		a.end(b, nil, errKeepsStopping(a.eventID))
		return
	}
	if err := s.store.Err(); err != nil {
		a.end(b, nil, fmt.Errorf("%w: event %s: %w", ask.ErrUnavailable, a.eventID, err))
		return
	}
	sl, err := s.acquire(a.eventID)
	if err != nil {
		a.end(b, nil, err)
		return
	}
	if b == nil {
		if b, err = s.asyncBoxes.get(s.as); err != nil {
			s.release(a.eventID, sl)
			a.end(nil, nil, fmt.Errorf("%w: event %s: %v", ask.ErrUnavailable, a.eventID, err))
			return
		}
	}
	a.dispatch(sl, b)
}

// dispatch sends the ask to sl's actor (acquired for it) with box b.
func (a *asyncAsk) dispatch(sl *slot, b *asyncBox) {
	s := a.s
	// A retry comes with the box it had: a.box is set once, before the
	// sweep can see the ask (expire reads it without the box's lock); a.sl
	// is read there only once b.ask is seen under b.mu, set below.
	if a.box == nil {
		a.box = b
	}
	a.sl = sl
	b.mu.Lock()
	b.ask = a
	b.mu.Unlock()
	s.asyncs.add(s, a)
	s.asks.Add(1)
	s.as.Root.RequestWithCustomSender(sl.pid, a.req, b.pid)
}

// answered takes the actor's answer (its box was still waiting for it).
func (a *asyncAsk) answered(m any) {
	s := a.s
	s.asyncs.remove(a)
	s.release(a.eventID, a.sl)
	res, err, again := answerOf(a.eventID, m)
	if again {
		a.send(a.box) // on a fresh actor
		return
	}
	if _, made := ask.IsReplayed(err); (err == nil || made) && a.req.create != "" {
		s.idx.Add(a.eventID, a.req.create)
	}
	a.end(a.box, res, err)
}

// expire ends an ask whose answer did not come in time or whose store
// failed: its box is dropped, as a late answer may still come to it.
func (a *asyncAsk) expire(err error) {
	b := a.box
	b.mu.Lock()
	mine := b.ask == a
	b.ask = nil
	b.mu.Unlock()
	if !mine {
		return // answered meanwhile
	}
	a.s.asyncs.remove(a)
	a.s.release(a.eventID, a.sl)
	a.s.as.ProcessRegistry.Remove(b.pid)
	a.done(nil, a.s.unavailable("event "+a.eventID, err))
}

// end gives the ask's answer, its box (if any) back to the pool.
func (a *asyncAsk) end(b *asyncBox, res any, err error) {
	if b != nil {
		a.s.asyncBoxes.put(a.s.as, b)
	}
	a.done(res, err)
}

// asyncBoxPool keeps idle boxes; beyond its capacity they are unregistered.
type asyncBoxPool struct {
	mu   sync.Mutex
	idle []*asyncBox
}

func (p *asyncBoxPool) get(as *actor.ActorSystem) (*asyncBox, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		b := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return b, nil
	}
	p.mu.Unlock()
	b := &asyncBox{}
	pid, ok := as.ProcessRegistry.Add(b, "serve-"+as.ProcessRegistry.NextID())
	if !ok {
		return nil, errors.New("actors: reply id taken")
	}
	b.pid = pid
	return b, nil
}

func (p *asyncBoxPool) put(as *actor.ActorSystem, b *asyncBox) {
	p.mu.Lock()
	if len(p.idle) < replyPoolSize {
		p.idle = append(p.idle, b)
		b = nil
	}
	p.mu.Unlock()
	if b != nil {
		as.ProcessRegistry.Remove(b.pid)
	}
}

// asyncAsks are the asks of ServeAsync waiting for their answers, swept
// every asyncSweep while there are any: one sweep instead of a timer per
// ask. An ask is ended so at most asyncSweep after its timeout (its
// forwarding node has answered its caller at the timeout already), and at
// once when the store fails.
type asyncAsks struct {
	mu       sync.Mutex
	waiting  map[*asyncAsk]struct{}
	sweeping bool
}

const asyncSweep = 100 * time.Millisecond

func (w *asyncAsks) add(s *System, a *asyncAsk) {
	w.mu.Lock()
	if w.waiting == nil {
		w.waiting = map[*asyncAsk]struct{}{}
	}
	w.waiting[a] = struct{}{}
	start := !w.sweeping
	w.sweeping = true
	w.mu.Unlock()
	if start {
		go w.sweep(s)
	}
}

func (w *asyncAsks) remove(a *asyncAsk) {
	w.mu.Lock()
	delete(w.waiting, a)
	w.mu.Unlock()
}

func (w *asyncAsks) sweep(s *System) {
	t := time.NewTicker(asyncSweep)
	defer t.Stop()
	failed := s.store.Failed()
	var ended []*asyncAsk
	for {
		var failure error
		select {
		case <-t.C:
		case <-failed:
			failed = nil // closed for good: the ticks see it from now on
		}
		if s.store.Err() != nil {
			failure = mailbox.ErrFailed
		}
		now := time.Now()
		w.mu.Lock()
		for a := range w.waiting {
			if failure != nil || now.After(a.deadline) {
				ended = append(ended, a)
			}
		}
		done := len(w.waiting) == len(ended)
		if done {
			w.sweeping = false
		}
		w.mu.Unlock()
		for _, a := range ended {
			if failure != nil {
				a.expire(failure)
			} else {
				a.expire(mailbox.ErrTimeout)
			}
		}
		ended = ended[:0]
		if done {
			return
		}
	}
}
