package settle

import (
	"context"
	"fmt"
	"time"

	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"

	"github.com/nats-io/nats.go/jetstream"
)

// The trimmer: an event that changes less than SnapshotEvery is never
// snapshotted at its actor's pace, and without a snapshot kept it needs
// every record of its, so its first message would hold its shard's trim
// back for good (and every later message of the shard, other events'
// records too). On every node, for each shard it leads, the trimmer looks
// at the shard's view every Config.SettleEvery for events that hold the
// trim more than Config.SettleLag messages behind the shard's last message
// read and settles them: what they owe is carried by the settled stream,
// their state at their last record is kept twice and the log is trimmed
// through it (see the package doc, Snapshots).
const (
	// settleMax bounds the events settled per shard and look.
	settleMax = 16
	// settleLedLooks is how many looks in a row a node must have led a
	// shard before it settles the shard's events: a node that just gained
	// it imports what its events owe (owed.go) as it activates them, and
	// an entry not imported yet is not in its store for the carry (see
	// Snapshots.carry) to see.
	settleLedLooks = 6
)

// RequestSnapshotsWith gives the store the actors' snapshotter (see
// actors.SnapshotRequester) and starts the trimmer, which runs until the
// node closes.
func (s *Snapshots) RequestSnapshotsWith(want func(eventID string, seq uint64) bool) {
	s.smu.Lock()
	s.want = want
	s.smu.Unlock()
	s.loop.Do(func() { go s.settleLoop() })
}

func (s *Snapshots) lag() uint64 {
	if v := s.Log.SettleLag.Load(); v > 0 {
		return v // a test's
	}
	return uint64(s.Log.Node().Config().SettleLag)
}

func (s *Snapshots) settleLoop() {
	l := s.Log
	led := map[int]int{} // shard -> looks in a row this node led it
	for last := time.Now(); ; last = time.Now() {
		for {
			every := l.Node().Config().SettleEvery
			if d := l.SettleEvery.Load(); d > 0 { // a test's
				every = time.Duration(d)
			}
			wait := every - time.Since(last)
			if wait <= 0 {
				break
			}
			select {
			case <-l.Node().Stop:
				return
			case <-time.After(min(wait, time.Second)):
			}
		}
		for shard := range l.Node().Config().Shards {
			if l.Closing() {
				return
			}
			// The shard's leader owns its events and writes its log: its
			// view is current, and it is the one node that settles them.
			if !l.Node().Server().JetStreamIsStreamLeader(node.GlobalAccount, node.StreamName(shard)) {
				delete(led, shard)
				continue
			}
			if led[shard]++; led[shard] >= settleLedLooks {
				s.SettleShard(shard)
			}
		}
	}
}

// SettleShard settles the events that hold shard's trim back, each at
// most once per settleLag messages of the shard.
func (s *Snapshots) SettleShard(shard int) {
	sl := s.Log.ShardLog(shard)
	if err := sl.Current(); err != nil {
		s.Log.Node().Config().Logger.Debug("cluster: trimmer: read shard", "stream", sl.Stream, "err", err)
		return
	}
	lag := s.lag()
	seen, hs := sl.Holders(lag, uint64(s.Log.Node().Config().SettleSmall), settleMax)
	for _, h := range hs {
		s.smu.Lock()
		at, ok := s.asked[h.Event]
		if ok && at+lag > seen {
			s.smu.Unlock()
			continue
		}
		s.asked[h.Event] = seen
		s.smu.Unlock()
		if err := s.settle(h); err != nil {
			s.Log.Node().Config().Logger.Warn("cluster: trimmer: settle an event", "event", h.Event, "holds_from", h.Need, "shard_seen", seen, "err", err)
			continue
		}
		s.Log.Node().Config().Logger.Debug("cluster: trimmer: event settled", "event", h.Event, "last", h.Last, "held_from", h.Need, "shard_seen", seen)
	}
	s.smu.Lock()
	for ev, at := range s.asked {
		if at+2*lag <= seen && s.Log.Node().Shard(ev) == shard {
			delete(s.asked, ev)
		}
	}
	s.smu.Unlock()
}

// settle makes h's event need no record through its last one: with its
// newest snapshot at that record (or later), a second copy of it at once;
// else a snapshot at it asked of the snapshotter, whose save keeps it
// twice (SaveAndTrim). Either way the log is then trimmed through it.
func (s *Snapshots) settle(h eventlog.Holder) error {
	ctx, cancel := context.WithTimeout(context.Background(), snapTimeout)
	defer cancel()
	obs, kv, err := s.Stores(ctx)
	if err != nil {
		return err
	}
	list, rev, err := s.Seqs(ctx, h.Event, true)
	if err != nil {
		return fmt.Errorf("cluster: snapshots of %s: %w", h.Event, err)
	}
	if n := len(list); n > 0 && list[n-1] >= h.Last {
		newest := list[n-1]
		s.smu.Lock()
		delete(s.settling, h.Event)
		s.smu.Unlock()
		if n >= SnapsKept && list[0] == newest {
			// Settled already (by an owner before this node): the view
			// learns it.
			if err := s.carry(ctx, h.Event); err != nil {
				return err
			}
			if err := s.Log.Trim(ctx, h.Event, newest); err != nil {
				return err
			}
			s.compactSettled(ctx, h.Event, newest)
			return nil
		}
		state, err := s.getObject(ctx, objName(h.Event, list, n-1), nil)
		if err != nil {
			return err
		}
		_, err = s.keepSettled(ctx, obs, kv, h.Event, newest, state, list, rev)
		return err
	}
	s.smu.Lock()
	want := s.want
	if want != nil {
		s.settling[h.Event] = h.Last
	}
	s.smu.Unlock()
	if want == nil || !want(h.Event, h.Last) {
		s.smu.Lock()
		delete(s.settling, h.Event)
		s.smu.Unlock()
		return fmt.Errorf("cluster: snapshot of %s at %d: the snapshotter's queue is full or closing", h.Event, h.Last)
	}
	return nil
}

// keepSettled keeps the snapshot state of the event at seq as its only
// one, twice (the copy under copySuffix: the fallback the older snapshot
// kept is for any other event), drops the snapshots of list (the index
// entry at revision rev) and trims the log through seq.
func (s *Snapshots) keepSettled(ctx context.Context, obs jetstream.ObjectStore, kv jetstream.KeyValue, eventID string, seq uint64, state []byte, list []uint64, rev uint64) (uint64, error) {
	if n := len(list); n > 0 && list[n-1] > seq {
		return 0, nil // a newer snapshot: the next look settles on it
	}
	// What the event owes (a webhook retried for days) goes to the
	// settled stream before its puts are trimmed from the log.
	if err := s.carry(ctx, eventID); err != nil {
		return 0, err
	}
	had := map[string]bool{}
	for i := range list {
		had[objName(eventID, list, i)] = true
	}
	next := []uint64{seq, seq}
	for i := range next {
		// An object of that name is the state at seq already.
		if name := objName(eventID, next, i); !had[name] {
			if _, err := obs.PutBytes(ctx, name, state); err != nil {
				return 0, fmt.Errorf("cluster: save snapshot %s: %w", name, err)
			}
		}
	}
	if err := s.putIndex(ctx, kv, eventID, next, rev); err != nil {
		return 0, err
	}
	s.deleteDropped(ctx, obs, eventID, list, next)
	if err := s.Log.Trim(ctx, eventID, seq); err != nil {
		s.Log.Node().Config().Logger.Warn("cluster: trim", "event", eventID, "through", seq, "err", err)
		return 0, nil
	}
	s.compactSettled(ctx, eventID, seq)
	return seq, nil
}

// compactSettled purges the settled subject of an event trimmed through
// seq that owes nothing (owed.compact); a failure only leaves the subject
// for the next settle.
func (s *Snapshots) compactSettled(ctx context.Context, eventID string, seq uint64) {
	if s.carrier == nil {
		return
	}
	if err := s.carrier.compact(ctx, eventID, seq); err != nil {
		s.Log.Node().Config().Logger.Debug("cluster: trimmer: settled subject not compacted", "event", eventID, "err", err)
	}
}
