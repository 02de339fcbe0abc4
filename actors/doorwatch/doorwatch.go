package doorwatch

import (
	"sync"
	"sync/atomic"
	"time"
)

// pulse wakes the waiters of one event's changes: Changed hands out the
// current channel, and a durable change of the event closes it and makes
// the next. The door's stream waits on it (http/api), so a check-in on
// one device reaches another device's stream at once on the node that
// owns the event; other nodes poll (a pulse is local).
type pulse struct {
	mu sync.Mutex
	ch chan struct{}
}

func (p *pulse) wait() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ch
}

func (p *pulse) fire() {
	p.mu.Lock()
	close(p.ch)
	p.ch = make(chan struct{})
	p.mu.Unlock()
}

// Watch is this node's memory of the door's watchers: the pulses that wake
// an event's streams, when each device was last seen and each event's
// latest pass stamp. None of it is in the log: it is rebuilt by use.
type Watch struct {
	// Forwarded: this node may not own the events it is asked of (cluster
	// mode), so a pass stamp it saw is never taken as the latest.
	Forwarded bool
	pulses    sync.Map // event id -> *pulse
	devSeen   sync.Map // device id -> *Seen
	passVers  sync.Map // event id -> *atomic.Int64
}

// Changed returns a channel closed at the event's next durable change
// made on this node. Only watched events pay for it.
func (s *Watch) Changed(eventID string) <-chan struct{} {
	v, ok := s.pulses.Load(eventID)
	if !ok {
		v, _ = s.pulses.LoadOrStore(eventID, &pulse{ch: make(chan struct{})})
	}
	return v.(*pulse).wait()
}

// Waker returns what wakes the event's watchers (to call once its change
// is durable), or nil when nobody watches it: an unwatched event's commit
// pays for nothing.
func (s *Watch) Waker(eventID string) func() {
	if v, ok := s.pulses.Load(eventID); ok {
		return v.(*pulse).fire
	}
	return nil
}

// Watched reports whether a read has noted the event's pass stamp.
func (s *Watch) Watched(eventID string) bool {
	_, ok := s.passVers.Load(eventID)
	return ok
}

// SeenGrain is how often at most a device's request moves its last-seen
// time through a Seen cell (Seen.Note): a device polling or scanning many
// times a second writes its cell once a second, so its requests share the
// cell's cache line instead of taking it in turn; the time read lags the
// last request by less than this.
const SeenGrain = time.Second

// Seen is one device's last-seen time, unix nanoseconds (0: never).
type Seen struct{ ns atomic.Int64 }

// Note records a request at at, unless a request less than SeenGrain
// before it was recorded already (or a later one was).
func (c *Seen) Note(at time.Time) {
	n := at.UnixNano()
	if n-c.ns.Load() >= int64(SeenGrain) {
		c.ns.Store(n)
	}
}

// DeviceSeenCell returns device id's last-seen cell, which a caller may
// keep and Note into on each of its requests: the lookup by id is done
// once, not per request.
func (s *Watch) DeviceSeenCell(deviceID string) *Seen {
	v, ok := s.devSeen.Load(deviceID)
	if !ok {
		v, _ = s.devSeen.LoadOrStore(deviceID, new(Seen))
	}
	return v.(*Seen)
}

// NoteDeviceSeen records a door device's request at at, exactly. It is
// this node's memory, not the log: a request per scan must cost no write.
func (s *Watch) NoteDeviceSeen(deviceID string, at time.Time) {
	s.DeviceSeenCell(deviceID).ns.Store(at.UnixNano())
}

// DeviceSeen answers when this node last saw the device.
func (s *Watch) DeviceSeen(deviceID string) (time.Time, bool) {
	v, ok := s.devSeen.Load(deviceID)
	if !ok {
		return time.Time{}, false
	}
	ns := v.(*Seen).ns.Load()
	if ns == 0 {
		return time.Time{}, false // a cell handed out, nothing noted yet
	}
	return time.Unix(0, ns).UTC(), true
}

// NotePassVer records an event's pass stamp (event.DoorState.PassVer) as a
// read answered it, when it is newer than the one known. PassVerCaughtUp
// uses it to answer a device that is caught up without asking the event's
// actor.
func (s *Watch) NotePassVer(eventID string, ver int64) {
	v, ok := s.passVers.Load(eventID)
	if !ok {
		v, _ = s.passVers.LoadOrStore(eventID, new(atomic.Int64))
	}
	p := v.(*atomic.Int64)
	for {
		cur := p.Load()
		if ver <= cur || p.CompareAndSwap(cur, ver) {
			return
		}
	}
}

// PassVerCell returns the cell holding the event's latest pass stamp as
// this node knows it, for a caller to compare with again and again
// without a lookup (PassVerCaughtUp is cell.Load() == ver); nil when a
// read has not noted the event's stamp yet, or on a cluster node
// (Forwarded), where no stamp is taken as the latest.
func (s *Watch) PassVerCell(eventID string) *atomic.Int64 {
	if s.Forwarded {
		return nil
	}
	v, ok := s.passVers.Load(eventID)
	if !ok {
		return nil
	}
	return v.(*atomic.Int64)
}

// PassVerCaughtUp reports whether ver is the event's latest pass stamp as
// this node knows it: true only on a single node, where every change of
// the event goes through this node's actor, which keeps the stamp current
// (a cluster node may not own the event, so it always asks).
func (s *Watch) PassVerCaughtUp(eventID string, ver int64) bool {
	if s.Forwarded {
		return false
	}
	v, ok := s.passVers.Load(eventID)
	return ok && v.(*atomic.Int64).Load() == ver
}
