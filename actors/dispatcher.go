package actors

import (
	"sync"
	"sync/atomic"
)

// dispatcher runs actor mailboxes on long-lived worker goroutines.
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
type dispatcher struct {
	throughput int
	max        int32
	workers    atomic.Int32
	work       chan func()
	stop       chan struct{}
	stopOnce   sync.Once
}

func newDispatcher(throughput, max int) *dispatcher {
	return &dispatcher{throughput: throughput, max: int32(max), work: make(chan func()), stop: make(chan struct{})}
}

// Schedule implements actor.Dispatcher.
func (d *dispatcher) Schedule(fn func()) {
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
func (d *dispatcher) Throughput() int { return d.throughput }

func (d *dispatcher) loop(fn func()) {
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

// close ends the idle workers; runs in progress finish first.
func (d *dispatcher) close() { d.stopOnce.Do(func() { close(d.stop) }) }
