package settle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"

	"github.com/nats-io/nats.go/jetstream"

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
//   - before the log is trimmed through messages that put entries the
//     event still owes (the trimmer settling it, or its own snapshot: see
//     Snapshots), the owner makes the event's settled subject carry them,
//     values and all (carry): those not carried yet, so a snapshot pays
//     for what was owed since the last. An entry retried for days (an
//     endpoint down) thus neither holds the log back nor is lost with the
//     messages that put it, nor are a drop's thousands of ticket mails
//     kept while the relay is down. A carry that fails, or that would take
//     the subject past one rollup (errCarryTooBig: about 100,000 ticket
//     mails), holds the trim back instead: the log keeps the puts;
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
	owedPass = time.Second
)

// owedKinds are the index entries an event owes: key inbox + eventID +
// "/" + id; queue names the outbox queue that keeps an entry once tried
// (outbox.Prefix + queue + "/s/" + eventID + "/" + id), "" when none.
var owedKinds = []struct{ inbox, queue string }{
	{persistence.PrefixMailInbox, "mail"},
	{persistence.PrefixHookInbox, "hookfanout"},
	{persistence.PrefixRefund, ""},
	{persistence.PrefixCheckoutClose, ""},
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

// Owed keeps, per event this node owns, the keys of the entries it owes.
type Owed struct {
	Node  *node.Node
	Log   *eventlog.Log
	Store *persistence.Store
	Wake  func()

	releasing sync.Mutex // one release at a time
	mu        sync.Mutex // events, settled, and the local entries' writes
	Events    map[string]map[string]struct{}
	// settled is, per event, what this node knows of its settled subject
	// (settled.go); made on first use.
	settled map[string]*settledMarks
	// partBytes bounds a settled message's body (0: settledPartBytes).
	partBytes int
	// sentMsgs and sentBytes count the settled messages this instance
	// published and their bodies' bytes (the cost of carries and passes).
	sentMsgs, sentBytes atomic.Int64
	// Derived drop what senders made of the entries of the events keep
	// refuses (Router.Own).
	Derived []func(keep func(eventID string) bool) error
}

// NoteIndex is Log.onIndex: the owner's own commits.
func (o *Owed) NoteIndex(eventID string, ops []eventlog.IndexOp) {
	if !o.Node.Server().JetStreamIsStreamLeader(node.GlobalAccount, node.StreamName(o.Node.Shard(eventID))) {
		return // a flight finishing after the shard moved
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, op := range ops {
		k := string(op.Key)
		if owedEvent(k) != eventID {
			continue
		}
		keys := o.Events[eventID]
		if keys == nil {
			keys = map[string]struct{}{}
			o.Events[eventID] = keys
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
func (o *Owed) present(eventID string) (map[string]struct{}, error) {
	return presentIn(o.Store, eventID)
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
func (o *Owed) settle(ctx context.Context, eventID string) error {
	o.mu.Lock()
	keys := o.Events[eventID]
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
func (o *Owed) ids() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, 0, len(o.Events))
	for id := range o.Events {
		out = append(out, id)
	}
	return out
}

// Run settles, every owedPass, what the owned events' senders took out.
func (o *Owed) Run(stop <-chan struct{}) {
	t := time.NewTicker(owedPass)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, id := range o.ids() {
			ctx, cancel := context.WithTimeout(context.Background(), o.Node.Config().RequestTimeout)
			if err := o.settle(ctx, id); err != nil {
				o.Node.Config().Logger.Warn("cluster: settle owed entries", "event", id, "err", err)
			}
			cancel()
		}
	}
}

// flushTimeout bounds the last settling pass of a node closing.
const flushTimeout = 3 * time.Second

// Flush settles what the senders took out since the last pass (a node
// closing: its senders have stopped).
func (o *Owed) Flush() {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	for _, id := range o.ids() {
		if err := o.settle(ctx, id); err != nil {
			o.Node.Config().Logger.Warn("cluster: settle owed entries", "event", id, "err", err)
			return
		}
	}
}

// Release stops this node's senders for the events of the shards keep
// refuses: it settles what it can, then deletes their entries from the
// local store.
func (o *Owed) Release(keep func(shard int) bool) error {
	o.releasing.Lock()
	defer o.releasing.Unlock()
	for _, id := range o.ids() {
		if keep(o.Node.Shard(id)) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), o.Node.Config().RequestTimeout)
		if err := o.settle(ctx, id); err != nil {
			o.Node.Config().Logger.Warn("cluster: settle owed entries", "event", id, "err", err)
		}
		cancel()
		o.mu.Lock()
		if !keep(o.Node.Shard(id)) { // not gained back meanwhile
			delete(o.Events, id)
			delete(o.settled, id)
		}
		o.mu.Unlock()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.Store.NewBatch()
	defer b.Close()
	drop := func(prefix string, eventOf func(rest string) string) error {
		return o.Store.Scan([]byte(prefix), func(key, _ []byte) error {
			if id := eventOf(strings.TrimPrefix(string(key), prefix)); id != "" && !keep(o.Node.Shard(id)) {
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
		if err := o.Store.Commit(b); err != nil {
			return err
		}
	}
	keepEvent := func(id string) bool { return keep(o.Node.Shard(id)) }
	for _, release := range o.Derived {
		if err := release(keepEvent); err != nil {
			return err
		}
	}
	return nil
}

// Take imports what eventID owes from before this node's claim (its
// epoch) into the local store, and owns the event's entries from then on:
// the entries its log puts and does not delete, and those its settled
// subject carries (their puts trimmed from the log: see carry) that the
// log does not delete, less what was settled.
func (o *Owed) Take(ctx context.Context, eventID string) (int, error) {
	epoch := o.Log.Epoch(eventID)
	if epoch == 0 {
		return 0, fmt.Errorf("cluster: owed entries of %s: no claim here", eventID)
	}
	want := map[string][]byte{}
	puts := map[string]struct{}{}  // every key the log puts, owed or not
	gone := map[string]struct{}{}  // the keys the log deletes last
	records := map[string][]byte{} // the Idempotency-Key records of its writes
	err := o.Log.ReadOwed(eventID, epoch, func(op byte, k, v []byte) {
		if op == 'p' && bytes.HasPrefix(k, idemRecordPrefix) {
			records[string(k)] = bytes.Clone(v)
			return
		}
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
	if err := o.importKeys(records); err != nil {
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
	b := o.Store.NewBatch()
	defer b.Close()
	keys := o.Events[eventID]
	if keys == nil {
		keys = map[string]struct{}{}
		o.Events[eventID] = keys
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
	if err := o.Store.Commit(b); err != nil {
		return 0, err
	}
	if o.Wake != nil {
		o.Wake()
	}
	return n, nil
}

// idemRecordPrefix starts the index key of an Idempotency-Key's record
// (http.RecordKey) that a write commits with its records.
var idemRecordPrefix = []byte("idem/")

// importKeys writes the Idempotency-Key records an event's log holds to
// the local store of its new owner, where its actor looks for them before
// deciding a keyed request again (actors.Recorder): a retry whose answer
// the lost owner never gave replays the write's answer instead of writing
// twice. They are not owed (nothing sends them): a record is kept until
// the local sweep finds it expired (app), and one whose messages were
// trimmed before a second move is gone with them (the answer is in
// TICKETD_IDEM too, unless the request's node died before storing it).
func (o *Owed) importKeys(keys map[string][]byte) error {
	if len(keys) == 0 {
		return nil
	}
	b := o.Store.NewBatch()
	defer b.Close()
	for k, v := range keys {
		b.Put([]byte(k), v)
	}
	return o.Store.Commit(b)
}

// ErrCarryTooBig refuses a carry whose entries, with what the event's
// settled subject holds, exceed one rollup (owed.rollupMax): the subject
// could not be compacted again, so the caller keeps the log instead.
var ErrCarryTooBig = errors.New("cluster: the entries an event owes exceed one settled rollup")

// errNotOwner refuses a carry on a node that does not lead the event's
// shard: its store does not say what the event owes (a settle asked
// before the node lost the shard, finishing after).
var errNotOwner = errors.New("cluster: not the event's owner")

// carry makes eventID's settled subject carry what the event owes by this
// node's store (its owner's: see owedValues), before its log is trimmed
// through records whose messages put those entries: a next owner imports
// them from the subject (take). Only the entries the subject neither
// carries nor marks go: as a delta, or within a rollup when the subject's
// messages call for one (rollDue); nothing is published when there are
// none, so a snapshot pays for what was owed since the last one. An event
// that owes nothing needs no carry (what the subject carries stays, and a
// mark ends each entry). Entries that would take the subject past one
// rollup (rollupMax) are refused with errCarryTooBig, read no further
// than that: the caller must not trim then.
//
// The marks read stay known while the subject carries entries (and this
// node leads the event's shard), so the next carry reads only what was
// published since (refresh, on the fence's refusal).
func (o *Owed) carry(ctx context.Context, eventID string) error {
	// Checked first: a node that lost the event dropped its entries, and
	// its empty store must not read as an event owing nothing.
	if !o.leads(eventID) {
		o.forget(eventID, nil)
		return fmt.Errorf("cluster: carry what %s owes: %w", eventID, errNotOwner)
	}
	o.forgetLost()
	if owes, err := owesAny(o.Store, eventID); err != nil || !owes {
		// Nothing owed (most snapshots): the subject is not read, and
		// its marks need not be kept.
		o.mu.Lock()
		followed := o.Events[eventID] != nil
		o.mu.Unlock()
		if !followed {
			o.forget(eventID, nil)
		}
		return err
	}
	t0 := time.Now()
	sentMsgs, sentBytes := o.sentMsgs.Load(), o.sentBytes.Load()
	var err error
	var m *settledMarks
	var fresh map[string][]byte
	for range settledTries {
		if m, err = o.marks(ctx, eventID); err != nil {
			break
		}
		o.mu.Lock()
		// At least 1: a subject past one rollup takes no more.
		budget := max(1, o.rollupMax()-m.setBytes(nil))
		fresh, err = OwedValues(o.Store, eventID, func(k string) bool {
			_, done := m.keys[k]
			_, carried := m.carried[k]
			return done || carried
		}, budget)
		roll := false
		if err == nil && len(fresh) > 0 {
			n := 0
			for k, v := range fresh {
				n += CarryLineLen(k, v) + 1
			}
			roll = o.rollDue(m, fresh, (n+o.limit()-1)/o.limit())
		}
		o.mu.Unlock()
		if err != nil || len(fresh) == 0 {
			break
		}
		if roll {
			err = o.rollup(ctx, eventID, m, nil, fresh)
		} else {
			err = o.carryDelta(ctx, eventID, m, fresh)
		}
		if !errors.Is(err, node.ErrConflict) {
			break
		}
		// Another writer (the owner's settling pass) moved the subject.
		if rerr := o.refresh(ctx, eventID, m); rerr != nil {
			err = rerr
			break
		}
	}
	if err != nil {
		if m != nil {
			o.forget(eventID, m)
		}
		return fmt.Errorf("cluster: carry what %s owes: %w", eventID, err)
	}
	o.mu.Lock()
	if o.Events[eventID] == nil && len(m.carried) == 0 {
		// Nothing carried: no marks worth keeping for the next carry.
		if o.settled[eventID] == m {
			delete(o.settled, eventID)
		}
	}
	o.mu.Unlock()
	if len(fresh) > 0 {
		o.Node.Config().Logger.Debug("cluster: owed entries carried", "event", eventID, "entries", len(fresh),
			"msgs", o.sentMsgs.Load()-sentMsgs, "bytes", o.sentBytes.Load()-sentBytes, "ms", time.Since(t0).Milliseconds())
	}
	return nil
}

// leads reports whether this node leads eventID's shard (owns it).
func (o *Owed) leads(eventID string) bool {
	return o.Node.Server().JetStreamIsStreamLeader(node.GlobalAccount, node.StreamName(o.Node.Shard(eventID)))
}

// forgetLost drops the marks kept of the events this instance does not
// follow (a carrier's: see carry) whose shard this node no longer leads.
func (o *Owed) forgetLost() {
	o.mu.Lock()
	var ids []string
	for id := range o.settled {
		if o.Events[id] == nil {
			ids = append(ids, id)
		}
	}
	o.mu.Unlock()
	for _, id := range ids {
		if !o.leads(id) {
			o.forget(id, nil)
		}
	}
}

// errFound ends a scan at its first key.
var errFound = errors.New("cluster: found")

// owesAny reports whether store holds an entry eventID owes.
func owesAny(store *persistence.Store, eventID string) (bool, error) {
	found := func(_, _ []byte) error { return errFound }
	for _, k := range owedKinds {
		prefixes := []string{k.inbox + eventID + "/"}
		if k.queue != "" {
			prefixes = append(prefixes, outbox.Prefix+k.queue+"/s/"+eventID+"/")
		}
		for _, p := range prefixes {
			if err := store.Scan([]byte(p), found); errors.Is(err, errFound) {
				return true, nil
			} else if err != nil {
				return false, err
			}
		}
	}
	return false, nil
}

// OwedValues is eventID's owed entries in store, key -> the producer's
// value: a fresh entry's value, or the one its queue keeps once tried;
// less those skip names (a carry's: carried or marked already), whose
// values are not read. With budget above 0 it stops with errCarryTooBig
// once the entries' carry lines exceed budget bytes: a pathological set
// is not read whole to be refused.
func OwedValues(store *persistence.Store, eventID string, skip func(key string) bool, budget int) (map[string][]byte, error) {
	out := map[string][]byte{}
	size := 0
	add := func(k string, v []byte) error {
		out[k] = v
		size += CarryLineLen(k, v) + 1
		if budget > 0 && size > budget {
			return fmt.Errorf("cluster: %s owes more than %d bytes of entries to carry: %w", eventID, budget, ErrCarryTooBig)
		}
		return nil
	}
	for _, k := range owedKinds {
		err := store.Scan([]byte(k.inbox+eventID+"/"), func(key, v []byte) error {
			if skip != nil && skip(string(key)) {
				return nil
			}
			return add(string(key), bytes.Clone(v))
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
			id := strings.TrimPrefix(string(key), state)
			if skip == nil || !skip(k.inbox+id) {
				ids = append(ids, id)
			}
			return nil
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
			if err := add(k.inbox+id, e.Value); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// readSubject calls fn for the messages of subject in stream, in order,
// those below sequence before only (0: all). It reads with the message-get
// API, answered by the stream's leader alone (see Log.Replay).
func (o *Owed) readSubject(ctx context.Context, stream, subject string, before uint64, fn func(*jetstream.RawStreamMsg) error) error {
	end, err := node.LeaderLast(ctx, o.Node.Conn(), stream, subject)
	if err != nil {
		return fmt.Errorf("cluster: read %s: %w", subject, err)
	}
	if before > 0 && before-1 < end {
		end = before - 1
	}
	return node.ReadThrough(ctx, o.Node.Conn(), stream, subject, 1, end, o.Node.Config().RequestTimeout, false, fn)
}
