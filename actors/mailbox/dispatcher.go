package mailbox

import (
	"sync"
	"sync/atomic"
)

// Dispatcher runs actor mailboxes on long-lived worker goroutines.
//
// protoactor's default dispatcher starts a new goroutine every time an idle
// mailbox receives a message. A new goroutine starts with a small stack, and
// a turn of an event actor (Decide, Apply, encode) is deep: in a flash sale
// the runtime spent about a tenth of the CPU growing (copying) those fresh
// stacks. Workers that outlive one mailbox run keep their grown stacks.
//
// Schedule hands the mailbox run to an idle worker if there is one, else
// starts a worker while fewer than max exist, else falls back to a plain
// goroutine, so a mailbox never waits for another actor's turn to end.
type Dispatcher struct {
	throughput int
	max        int32
	workers    atomic.Int32
	work       chan func()
	stop       chan struct{}
	stopOnce   sync.Once
}

// NewDispatcher returns a dispatcher of throughput messages per run and at
// most max workers.
func NewDispatcher(throughput, max int) *Dispatcher {
	return &Dispatcher{throughput: throughput, max: int32(max), work: make(chan func()), stop: make(chan struct{})}
}

// Schedule implements actor.Dispatcher.
func (d *Dispatcher) Schedule(fn func()) {
	select {
	case d.work <- fn:
		return
	default:
	}
	if d.workers.Add(1) <= d.max {
		go d.loop(fn)
		return
	}
	d.workers.Add(-1)
	go fn()
}

// Throughput implements actor.Dispatcher: messages per mailbox run before
// the worker yields.
func (d *Dispatcher) Throughput() int { return d.throughput }

func (d *Dispatcher) loop(fn func()) {
	defer d.workers.Add(-1)
	for {
		fn()
		select {
		case fn = <-d.work:
		case <-d.stop:
			return
		}
	}
}

// Close ends the idle workers; runs in progress finish first.
func (d *Dispatcher) Close() { d.stopOnce.Do(func() { close(d.stop) }) }
