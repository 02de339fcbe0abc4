package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"ticketd/actors"
	"ticketd/outbox"
	"ticketd/persistence"
)

// What an event owes the world (its mail, webhooks, refunds to finish and
// payment pages to close) is carried by its log: a commit's index entries
// travel with its records (the 'p' and 'd' operations). The senders (mail,
// webhooks, the refund resumer, the checkout closer) work from the local
// store of the node they run on, so in cluster mode only the event's owner
// keeps its entries there:
//
//   - the owner applies the entries of its own commits (Log), and on taking
//     an event over imports those its log still owes: the entries put and
//     not deleted by the messages before its claim, and those its settled
//     subject carries that the log does not delete, less those settled;
//   - an entry the owner's senders took out of the local store (delivered,
//     fanned out, closed), or that a commit of the event deleted (a refund
//     settled), is settled: the owner publishes its key on the event's
//     subject of the settled stream (one message per event and pass,
//     within owedPass), so a later owner does not import it again;
//   - before the trimmer trims the log behind an event it settles
//     (Snapshots), the owner makes the event's settled subject carry the
//     entries its store says the event owes, values and all (carry), so
//     an entry retried for days (an endpoint down) neither holds the log
//     back nor is lost with the messages that put it; a busy event's own
//     snapshots carry them too, up to carryBusyMax entries (beyond, its
//     trim goes on without: a next owner imports only the entries whose
//     puts its log still holds);
//   - a node that loses an event's shard settles what it can, then drops
//     the event's entries from its local store (the fresh ones and the
//     queue states of the tried ones), so its senders stop.
//
// Delivery is therefore at least once, as on a single node: an entry sent
// by an owner lost before its next pass is sent again by the next owner.
// An entry that was tried and is retrying or parked is imported fresh by a
// new owner (its attempts start over). A webhook's entry stays parked in
// its fan-out queue until every endpoint's delivery of it is settled
// (package webhooks), so deliveries pending on a lost owner are made by
// the next; a node that loses an event drops those deliveries too
// (Router.Own's release).
const (
	settledStream = "TICKETD_SETTLED"
	settledSubj   = "settled."
	owedPass      = time.Second
)

// owedKinds are the index entries an event owes: key inbox + eventID +
// "/" + id; queue names the outbox queue that keeps an entry once tried
// (outbox.Prefix + queue + "/s/" + eventID + "/" + id), "" when none.
var owedKinds = []struct{ inbox, queue string }{
	{actors.OutboxPrefix, "mail"},
	{actors.HookPrefix, "hookfanout"},
	{actors.RefundPrefix, ""},
	{actors.CheckoutClosePrefix, ""},
}

// owedEvent is the event id of an owed entry's key, "" when key is none.
func owedEvent(key string) string {
	for _, k := range owedKinds {
		if rest, ok := strings.CutPrefix(key, k.inbox); ok {
			return eventOf(rest)
		}
	}
	return ""
}

// eventOf is the event id an entry's id (its key after the inbox prefix)
// starts with, "" when it is none: the directory's mail, whose id starts
// with "directory", is the directory's, never an event's.
func eventOf(id string) string {
	ev, _, ok := strings.Cut(id, "/")
	if !ok || !strings.HasPrefix(ev, "evt_") {
		return ""
	}
	return ev
}

// owed keeps, per event this node owns, the keys of the entries it owes.
type owed struct {
	n     *Node
	log   *Log
	store *persistence.Store
	wake  func()

	releasing sync.Mutex // one release at a time
	mu        sync.Mutex // events, settled, and the local entries' writes
	events    map[string]map[string]struct{}
	// settled is, per event, what this node knows of its settled subject
	// (settled.go); made on first use.
	settled map[string]*settledMarks
	// partBytes bounds a settled message's body (0: half a log message).
	partBytes int
	// derived drop what senders made of the entries of the events keep
	// refuses (Router.Own).
	derived []func(keep func(eventID string) bool) error
}

// noteIndex is Log.onIndex: the owner's own commits.
func (o *owed) noteIndex(eventID string, ops []indexOp) {
	if !o.n.srv.JetStreamIsStreamLeader(globalAccount, streamName(o.n.shard(eventID))) {
		return // a flight finishing after the shard moved
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, op := range ops {
		k := string(op.key)
		if owedEvent(k) != eventID {
			continue
		}
		keys := o.events[eventID]
		if keys == nil {
			keys = map[string]struct{}{}
			o.events[eventID] = keys
		}
		// A delete keeps its key too: gone from the store, it is settled
		// by the next pass like a delivered one, so an entry the settled
		// subject carries (carry) ends even once the log's delete is
		// trimmed.
		keys[k] = struct{}{}
	}
}

// present is the set of eventID's owed keys still in the local store
// (fresh, or kept by their queue once tried).
func (o *owed) present(eventID string) (map[string]struct{}, error) {
	return presentIn(o.store, eventID)
}

// presentIn is the set of eventID's owed keys in store.
func presentIn(store *persistence.Store, eventID string) (map[string]struct{}, error) {
	out := map[string]struct{}{}
	for _, k := range owedKinds {
		err := store.Scan([]byte(k.inbox+eventID+"/"), func(key, _ []byte) error {
			out[string(key)] = struct{}{}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if k.queue == "" {
			continue
		}
		state := outbox.Prefix + k.queue + "/s/"
		err = store.Scan([]byte(state+eventID+"/"), func(key, _ []byte) error {
			out[k.inbox+strings.TrimPrefix(string(key), state)] = struct{}{}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// settle publishes the keys of eventID's entries no longer in the local
// store and forgets them. It holds o.mu only while it reads: the owner's
// commits (noteIndex) never wait for a publish.
func (o *owed) settle(ctx context.Context, eventID string) error {
	o.mu.Lock()
	keys := o.events[eventID]
	if len(keys) == 0 {
		o.mu.Unlock()
		return nil
	}
	here, err := o.present(eventID)
	var done []string
	for k := range keys {
		if _, ok := here[k]; !ok && err == nil {
			done = append(done, k)
		}
	}
	o.mu.Unlock()
	if err != nil || len(done) == 0 {
		return err
	}
	if err := o.publishSettled(ctx, eventID, done); err != nil {
		return fmt.Errorf("cluster: settle %s: %w", eventID, err)
	}
	o.mu.Lock()
	for _, k := range done {
		delete(keys, k)
	}
	if len(keys) == 0 {
		// Nothing owed now: the marks are read again when needed, so
		// memory holds those of the events with entries in flight only.
		delete(o.settled, eventID)
	}
	o.mu.Unlock()
	return nil
}

// ids lists the events this node owes entries of.
func (o *owed) ids() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, 0, len(o.events))
	for id := range o.events {
		out = append(out, id)
	}
	return out
}

// run settles, every owedPass, what the owned events' senders took out.
func (o *owed) run(stop <-chan struct{}) {
	t := time.NewTicker(owedPass)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, id := range o.ids() {
			ctx, cancel := context.WithTimeout(context.Background(), o.n.cfg.RequestTimeout)
			if err := o.settle(ctx, id); err != nil {
				o.n.cfg.Logger.Warn("cluster: settle owed entries", "event", id, "err", err)
			}
			cancel()
		}
	}
}

// flushTimeout bounds the last settling pass of a node closing.
const flushTimeout = 3 * time.Second

// flush settles what the senders took out since the last pass (a node
// closing: its senders have stopped).
func (o *owed) flush() {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	for _, id := range o.ids() {
		if err := o.settle(ctx, id); err != nil {
			o.n.cfg.Logger.Warn("cluster: settle owed entries", "event", id, "err", err)
			return
		}
	}
}

// release stops this node's senders for the events of the shards keep
// refuses: it settles what it can, then deletes their entries from the
// local store.
func (o *owed) release(keep func(shard int) bool) error {
	o.releasing.Lock()
	defer o.releasing.Unlock()
	for _, id := range o.ids() {
		if keep(o.n.shard(id)) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), o.n.cfg.RequestTimeout)
		if err := o.settle(ctx, id); err != nil {
			o.n.cfg.Logger.Warn("cluster: settle owed entries", "event", id, "err", err)
		}
		cancel()
		o.mu.Lock()
		if !keep(o.n.shard(id)) { // not gained back meanwhile
			delete(o.events, id)
			delete(o.settled, id)
		}
		o.mu.Unlock()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.store.NewBatch()
	defer b.Close()
	drop := func(prefix string, eventOf func(rest string) string) error {
		return o.store.Scan([]byte(prefix), func(key, _ []byte) error {
			if id := eventOf(strings.TrimPrefix(string(key), prefix)); id != "" && !keep(o.n.shard(id)) {
				b.Delete(bytes.Clone(key))
			}
			return nil
		})
	}
	for _, k := range owedKinds {
		if err := drop(k.inbox, eventOf); err != nil {
			return err
		}
		if k.queue == "" {
			continue
		}
		if err := drop(outbox.Prefix+k.queue+"/s/", eventOf); err != nil {
			return err
		}
		// Due keys: <16 hex due>/<eventId>/<id>.
		if err := drop(outbox.Prefix+k.queue+"/d/", func(rest string) string {
			_, after, _ := strings.Cut(rest, "/")
			return eventOf(after)
		}); err != nil {
			return err
		}
	}
	if !b.Empty() {
		if err := o.store.Commit(b); err != nil {
			return err
		}
	}
	keepEvent := func(id string) bool { return keep(o.n.shard(id)) }
	for _, release := range o.derived {
		if err := release(keepEvent); err != nil {
			return err
		}
	}
	return nil
}

// take imports what eventID owes from before this node's claim (its
// epoch) into the local store, and owns the event's entries from then on:
// the entries its log puts and does not delete, and those its settled
// subject carries (their puts trimmed from the log: see carry) that the
// log does not delete, less what was settled.
func (o *owed) take(ctx context.Context, eventID string) (int, error) {
	epoch := o.log.Epoch(eventID)
	if epoch == 0 {
		return 0, fmt.Errorf("cluster: owed entries of %s: no claim here", eventID)
	}
	want := map[string][]byte{}
	puts := map[string]struct{}{} // every key the log puts, owed or not
	gone := map[string]struct{}{} // the keys the log deletes last
	err := o.log.readOwed(eventID, epoch, func(op byte, k, v []byte) {
		if owedEvent(string(k)) != eventID {
			return
		}
		if op == 'p' {
			want[string(k)] = bytes.Clone(v)
			puts[string(k)] = struct{}{}
			delete(gone, string(k))
		} else {
			delete(want, string(k))
			gone[string(k)] = struct{}{}
		}
	})
	if err != nil {
		return 0, err
	}
	// Read even when the log owes nothing: its puts may have been
	// trimmed behind entries the subject carries.
	marks, err := o.readMarks(ctx, eventID)
	if err != nil {
		return 0, err
	}
	// The carried entries come from the log's trimmed messages, so the
	// log's operations kept follow them (those of the messages carried
	// and kept read twice, alike).
	for k, v := range marks.owing() {
		if _, deleted := gone[k]; !deleted {
			if _, put := want[k]; !put {
				want[k] = v
			}
		}
	}
	for k := range marks.keys {
		delete(want, k)
	}
	for k := range marks.carried {
		if _, done := marks.keys[k]; done {
			delete(marks.carried, k) // settled: the next rollup drops it
		}
	}
	for k := range marks.keys {
		// A mark of a put the log no longer holds (nor the subject
		// carries, above) is needed no more.
		if _, ok := puts[k]; !ok {
			delete(marks.keys, k)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(want) > 0 {
		// Kept while the event owes something (see settle).
		if cur := o.settled[eventID]; cur != nil {
			for k, b := range cur.keys { // settled since the claim
				marks.keys[k] = b
			}
		}
		if o.settled == nil {
			o.settled = map[string]*settledMarks{}
		}
		o.settled[eventID] = marks
	}
	here, err := o.present(eventID)
	if err != nil {
		return 0, err
	}
	b := o.store.NewBatch()
	defer b.Close()
	keys := o.events[eventID]
	if keys == nil {
		keys = map[string]struct{}{}
		o.events[eventID] = keys
	}
	n := 0
	for k, v := range want {
		keys[k] = struct{}{}
		if _, ok := here[k]; !ok {
			b.Put([]byte(k), v)
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	if err := o.store.Commit(b); err != nil {
		return 0, err
	}
	if o.wake != nil {
		o.wake()
	}
	return n, nil
}

// errCarryTooBig refuses a carry whose rollup exceeds one atomic batch,
// or whose entries exceed the caller's limit.
var errCarryTooBig = errors.New("cluster: the entries an event owes exceed one settled rollup")

// errNotOwner refuses a carry on a node that does not lead the event's
// shard: its store does not say what the event owes (a settle asked
// before the node lost the shard, finishing after).
var errNotOwner = errors.New("cluster: not the event's owner")

// carry makes eventID's settled subject carry what the event owes by this
// node's store (its owner's: see owedValues), before its log is trimmed
// through records whose messages put those entries: a next owner imports
// them from the subject (take). The subject then carries what it carried
// and the store's entries, less those marked; nothing is published when
// it carries them already. An event that owes nothing needs no carry
// (what the subject carries stays, and a mark ends each entry).
// With limit above 0, an event owing more entries than that is refused
// (errCarryTooBig) before anything is read or published.
func (o *owed) carry(ctx context.Context, eventID string, limit int) error {
	// Checked first: a node that lost the event dropped its entries, and
	// its empty store must not read as an event owing nothing.
	if !o.n.srv.JetStreamIsStreamLeader(globalAccount, streamName(o.n.shard(eventID))) {
		return fmt.Errorf("cluster: carry what %s owes: %w", eventID, errNotOwner)
	}
	local, err := owedValues(o.store, eventID, limit)
	if err != nil || len(local) == 0 {
		return err
	}
	for range settledTries {
		var m *settledMarks
		if m, err = o.marks(ctx, eventID); err != nil {
			return err
		}
		o.mu.Lock()
		more := false
		for k, v := range local {
			if _, done := m.keys[k]; done {
				continue
			}
			if _, ok := m.carried[k]; !ok {
				if m.carried == nil {
					m.carried = map[string][]byte{}
				}
				m.carried[k] = v
				more = true
			}
		}
		o.mu.Unlock()
		if more {
			err = o.rollup(ctx, eventID, m, nil)
		}
		o.mu.Lock()
		if err != nil || o.events[eventID] == nil {
			// Read again next time: on a failed publish the marks hold
			// entries the subject does not carry; and an event this
			// instance does not follow needs none kept.
			if o.settled[eventID] == m {
				delete(o.settled, eventID)
			}
		}
		o.mu.Unlock()
		if !errors.Is(err, errConflict) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("cluster: carry what %s owes: %w", eventID, err)
	}
	return nil
}

// owedValues is eventID's owed entries in store, key -> the producer's
// value: a fresh entry's value, or the one its queue keeps once tried.
// With limit above 0 it stops at limit+1 entries with errCarryTooBig: a
// drop's thousands of mails kept in the outbox are not all read to be
// refused.
func owedValues(store *persistence.Store, eventID string, limit int) (map[string][]byte, error) {
	out := map[string][]byte{}
	full := func(more int) error {
		if limit > 0 && len(out)+more > limit {
			return fmt.Errorf("cluster: %s owes more than %d entries: %w", eventID, limit, errCarryTooBig)
		}
		return nil
	}
	for _, k := range owedKinds {
		err := store.Scan([]byte(k.inbox+eventID+"/"), func(key, v []byte) error {
			out[string(key)] = bytes.Clone(v)
			return full(0)
		})
		if err != nil {
			return nil, err
		}
		if k.queue == "" {
			continue
		}
		q, err := outbox.NewQueue(store, k.queue, k.inbox)
		if err != nil {
			return nil, err
		}
		state := outbox.Prefix + k.queue + "/s/"
		var ids []string
		err = store.Scan([]byte(state+eventID+"/"), func(key, _ []byte) error {
			ids = append(ids, strings.TrimPrefix(string(key), state))
			return full(len(ids))
		})
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			e, err := q.Get(id)
			if errors.Is(err, outbox.ErrNotFound) {
				continue // sent meanwhile
			}
			if err != nil {
				return nil, err
			}
			out[k.inbox+id] = e.Value
		}
	}
	return out, nil
}

// readSubject calls fn for the messages of subject in stream, in order,
// those below sequence before only (0: all). It reads with the message-get
// API, answered by the stream's leader alone (see Log.Replay).
func (o *owed) readSubject(ctx context.Context, stream, subject string, before uint64, fn func(*jetstream.RawStreamMsg) error) error {
	end, err := leaderLast(ctx, o.n.nc, stream, subject)
	if err != nil {
		return fmt.Errorf("cluster: read %s: %w", subject, err)
	}
	if before > 0 && before-1 < end {
		end = before - 1
	}
	return readThrough(ctx, o.n.nc, stream, subject, 1, end, o.n.cfg.RequestTimeout, false, fn)
}
