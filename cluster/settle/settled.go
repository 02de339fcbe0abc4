package settle

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"ticketd/cluster/node"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The settled stream keeps, per event, the keys of the owed entries that
// were delivered (owed.go), so a new owner does not import them again. It
// stays bounded two ways:
//
//   - in messages: a pass publishes the keys it settled as one message
//     (a delta); once the event's subject holds more than settledMsgsMax
//     messages and more than twice the parts its whole set takes (rollDue),
//     the next publish is instead the event's whole set with Nats-Rollup:
//     sub, which leaves that message alone on the subject (several parts
//     of one atomic batch when it exceeds a message). A reader unions every
//     message of the subject, so a rollup and the deltas after it read as
//     the whole set. A rollup thus follows at least as many messages as it
//     republishes parts: its cost, amortized, is at most a part per message
//     published, however big the set;
//   - in keys: a rollup leaves out the keys whose put the event's log no
//     longer holds (its messages trimmed behind a snapshot): the log does
//     not owe those entries any more, so a new owner cannot import them.
//     A key's put is known to lie at or before the event's last record
//     when its key was settled (measured at the next rollup), so the key
//     goes once the log's first record kept is past that.
//
// It also carries, per event, the owed entries whose puts the event's log
// may no longer hold (carry, owed.go): before the log is trimmed through
// records whose messages put entries the event still owes (a webhook
// retried for days, a drop's ticket mails while the relay is down), its
// owner publishes those entries, key and value, so a next owner imports
// them from here. Only the entries the subject does not carry yet go (a
// delta, in parts of at most partBytes, as atomic batches): a snapshot
// carries what was owed since the last one, not the whole set again. A
// carried entry is owed until a mark of its key (delivered, or deleted by
// the log) follows; a rollup leaves out the carried entries marked.
//
// A message's data is lines: a key (a mark); in a rollup a key, a tab and
// that record seq, so whoever reads them prunes alike; or carryTag, a
// key, a tab and the entry's value in base64 (a carried entry).
//
// Every message on an event's subject is fenced on the subject's last
// message as the publisher knows it (Nats-Expected-Last-Subject-Sequence),
// so a rollup never drops a mark it has not read, whichever node makes it.
// Only two nodes write one event's subject at a time (its owner, whose
// settling passes and carries are two writers of their own, and a node
// settling as it loses the event); one that finds the subject moved reads
// the messages after those it knows (refresh: from a rollup on, that
// rollup and what follows) and retries.
const (
	settledMsgsMax = 16
	// settledPartBytes bounds a settled message's body: a rollup costs
	// at most a part per message published since the last (see rollDue),
	// and one rollup holds at most maxBatchMsgs parts: 128 MiB of lines,
	// about 100,000 ticket mails, the most an event's subject carries
	// (errCarryTooBig).
	settledPartBytes = 512 << 10
	// carryTag starts a line that carries an owed entry: keys start with
	// a letter (owedKinds).
	carryTag = "="
	// settledTries bounds the conflicts one publish of a pass meets.
	settledTries = 3
)

// settledMarks is what this node knows of an event's settled subject.
type settledMarks struct {
	// keys are the settled keys, each with a record seq its put lies at
	// or before (0: not measured yet).
	keys map[string]uint64
	// carried are the owed entries the subject carries (key -> value),
	// those marked since included (owing excludes them).
	carried map[string][]byte
	last    uint64 // stream sequence of the subject's last message (0: none)
	msgs    int    // messages on the subject
}

// owing is the carried entries not marked since: what the subject says
// the event still owes beside its log.
func (m *settledMarks) owing() map[string][]byte {
	out := make(map[string][]byte, len(m.carried))
	for k, v := range m.carried {
		if _, done := m.keys[k]; !done {
			out[k] = v
		}
	}
	return out
}

// read adds the lines of a settled message: marks (keeping the bounds a
// rollup wrote) and carried entries. A carried line it cannot read is an
// error: its entry would be lost.
func (m *settledMarks) read(data []byte) error {
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, carryTag); ok {
			k, enc, ok := strings.Cut(rest, "\t")
			v, err := base64.StdEncoding.DecodeString(enc)
			if !ok || k == "" || err != nil {
				return fmt.Errorf("cluster: settled: bad carried entry %.80q", line)
			}
			if m.carried == nil {
				m.carried = map[string][]byte{}
			}
			m.carried[k] = v
			continue
		}
		k, b := splitMark(line)
		if k == "" {
			continue
		}
		if cur, ok := m.keys[k]; !ok || cur == 0 {
			m.keys[k] = b
		}
	}
	return nil
}

// publishSettled adds done to eventID's settled subject: as a delta, or
// as a rollup of the whole set once the subject's messages call for one
// (rollDue).
func (o *Owed) publishSettled(ctx context.Context, eventID string, done []string) error {
	var err error
	for range settledTries {
		var m *settledMarks
		if m, err = o.marks(ctx, eventID); err != nil {
			return err
		}
		o.mu.Lock()
		for _, k := range done {
			if _, ok := m.keys[k]; !ok {
				m.keys[k] = 0
			}
		}
		roll := o.rollDue(m, nil, len(o.keyParts(done)))
		o.mu.Unlock()
		if roll {
			err = o.rollup(ctx, eventID, m, done, nil)
		} else {
			err = o.delta(ctx, eventID, m, done)
		}
		if !errors.Is(err, node.ErrConflict) {
			return err
		}
		// Another node wrote the subject: read what it wrote (the keys
		// done stay: added again above), then retry.
		if rerr := o.refresh(ctx, eventID, m); rerr != nil {
			o.forget(eventID, m)
			return rerr
		}
	}
	return err
}

// forget drops m, eventID's marks (nil: whichever are kept), so the next
// use reads the subject.
func (o *Owed) forget(eventID string, m *settledMarks) {
	o.mu.Lock()
	if m == nil || o.settled[eventID] == m {
		delete(o.settled, eventID)
	}
	o.mu.Unlock()
}

// readMarks reads eventID's settled subject from the stream.
func (o *Owed) readMarks(ctx context.Context, eventID string) (*settledMarks, error) {
	m := &settledMarks{keys: map[string]uint64{}}
	if err := o.refresh(ctx, eventID, m); err != nil {
		return nil, err
	}
	return m, nil
}

// refresh adds to m the messages of eventID's settled subject after
// m.last, through the subject's last message: a rollup among them
// replaces what m held (it replaced the messages before it). A read that
// stops short of the last message (a rollup purged the rest meanwhile)
// reads on from where it stopped, and so meets that rollup.
func (o *Owed) refresh(ctx context.Context, eventID string, m *settledMarks) error {
	subject := node.SettledSubj + eventID
	for range settledTries + 1 {
		end, err := node.LeaderLast(ctx, o.Node.Conn(), node.SettledStream, subject)
		if err != nil {
			return fmt.Errorf("cluster: read %s: %w", subject, err)
		}
		o.mu.Lock()
		if end < m.last {
			// Purged behind m (compact: the event owed nothing and its log
			// held no record of it): what m knows stays true, the subject
			// carries nothing, and the next publish is fenced on its being
			// empty.
			m.last, m.msgs, m.carried = 0, 0, nil
		}
		from := m.last + 1
		o.mu.Unlock()
		if end < from {
			return nil
		}
		err = node.ReadThrough(ctx, o.Node.Conn(), node.SettledStream, subject, from, end, o.Node.Config().RequestTimeout, false, func(msg *jetstream.RawStreamMsg) error {
			o.mu.Lock()
			defer o.mu.Unlock()
			if msg.Header.Get(jetstream.MsgRollup) != "" {
				m.keys, m.carried, m.msgs = map[string]uint64{}, nil, 0
			}
			if err := m.read(msg.Data); err != nil {
				return err
			}
			m.last = msg.Sequence
			m.msgs++
			return nil
		})
		if err != nil {
			return err
		}
		o.mu.Lock()
		short := m.last < end
		o.mu.Unlock()
		if !short {
			return nil
		}
	}
	return fmt.Errorf("cluster: read %s: rolled up again while read", subject)
}

// marks is what this node knows of eventID's settled subject, read from
// the stream the first time.
func (o *Owed) marks(ctx context.Context, eventID string) (*settledMarks, error) {
	o.mu.Lock()
	m := o.settled[eventID]
	o.mu.Unlock()
	if m != nil {
		return m, nil
	}
	m, err := o.readMarks(ctx, eventID)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur := o.settled[eventID]; cur != nil {
		return cur, nil
	}
	if o.settled == nil {
		o.settled = map[string]*settledMarks{}
	}
	o.settled[eventID] = m
	return m, nil
}

// splitMark is a settled line's key and bound (0: none).
func splitMark(line string) (string, uint64) {
	k, b, ok := strings.Cut(line, "\t")
	if !ok {
		return line, 0
	}
	bound, _ := strconv.ParseUint(b, 10, 64)
	return k, bound
}

// carryLine is the settled line that carries the entry k, v.
func carryLine(k string, v []byte) string {
	return carryTag + k + "\t" + base64.StdEncoding.EncodeToString(v)
}

// CarryLineLen is len(carryLine(k, v)), without making it.
func CarryLineLen(k string, v []byte) int {
	return len(carryTag) + len(k) + 1 + base64.StdEncoding.EncodedLen(len(v))
}

// limit is the bound of a settled message's body.
func (o *Owed) limit() int {
	if o.partBytes > 0 {
		return o.partBytes
	}
	return settledPartBytes
}

// rollupMax bounds the lines of one rollup: maxBatchMsgs full parts.
func (o *Owed) rollupMax() int { return node.MaxBatchMsgs * o.limit() }

// setBytes is about the bytes of the lines m's rollup would publish, and
// those of fresh (entries to carry besides). The caller holds o.mu.
func (m *settledMarks) setBytes(fresh map[string][]byte) int {
	// A mark's line: the key, a tab, a record seq of up to 20 digits.
	n := 0
	for k := range m.keys {
		n += len(k) + 22
	}
	for k, v := range m.carried {
		if _, done := m.keys[k]; !done {
			n += CarryLineLen(k, v) + 1
		}
	}
	for k, v := range fresh {
		n += CarryLineLen(k, v) + 1
	}
	return n
}

// rollDue reports whether the next publish on m's subject, adding more
// messages, should be a rollup (with fresh, entries to carry): once the
// subject would hold more than settledMsgsMax messages and more than
// twice the parts of its whole set. Twice: a rollup of P parts follows P
// messages or more, so what rollups republish is at most a part per
// message published (deltas of a few keys included), while a reader of
// the subject reads at most about twice the whole set. The caller holds
// o.mu.
func (o *Owed) rollDue(m *settledMarks, fresh map[string][]byte, more int) bool {
	msgs := m.msgs + more
	if msgs <= settledMsgsMax {
		return false
	}
	limit := o.limit()
	parts := (m.setBytes(fresh) + limit - 1) / limit
	return msgs > 2*parts
}

// keyParts joins lines, one a line, into bodies of at most partBytes.
func (o *Owed) keyParts(keys []string) [][]byte {
	limit := o.limit()
	parts := [][]byte{nil}
	for _, k := range keys {
		last := len(parts) - 1
		if len(parts[last]) > 0 && len(parts[last])+len(k)+1 > limit {
			parts = append(parts, nil)
			last++
		}
		parts[last] = append(append(parts[last], k...), '\n')
	}
	return parts
}

// deltaBatchBytes bounds the parts of a delta's atomic batch: a delta
// need not be atomic, and a batch is one Raft proposal, answered within
// one request's timeout.
const deltaBatchBytes = 8 << 20

// delta publishes lines as the subject's next messages: parts of at most
// partBytes, in atomic batches of up to deltaBatchBytes, each batch
// fenced on the subject's last message. A batch published stays: its
// lines are whole (a mark, a carried entry), so a failure after one loses
// nothing it published.
func (o *Owed) delta(ctx context.Context, eventID string, m *settledMarks, lines []string) error {
	parts := o.keyParts(lines)
	for len(parts) > 0 {
		n := min(len(parts), max(1, deltaBatchBytes/o.limit()), node.MaxBatchMsgs)
		o.mu.Lock()
		last := m.last
		o.mu.Unlock()
		msgs := make([]*nats.Msg, n)
		for i, body := range parts[:n] {
			msgs[i] = &nats.Msg{Subject: node.SettledSubj + eventID, Data: body, Header: nats.Header{}}
		}
		msgs[0].Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last, 10))
		seqs, err := o.publishParts(ctx, msgs)
		if err != nil {
			return err
		}
		o.mu.Lock()
		m.last = seqs[len(seqs)-1]
		m.msgs += len(seqs)
		o.mu.Unlock()
		parts = parts[n:]
	}
	return nil
}

// carryDelta publishes fresh, entries m's subject does not carry, as a
// delta, and adds them to m once they are.
func (o *Owed) carryDelta(ctx context.Context, eventID string, m *settledMarks, fresh map[string][]byte) error {
	lines := make([]string, 0, len(fresh))
	for k, v := range fresh {
		lines = append(lines, carryLine(k, v))
	}
	slices.Sort(lines)
	err := o.delta(ctx, eventID, m, lines)
	if err != nil {
		// Some batches may be stored: m does not say which.
		o.forget(eventID, m)
		return err
	}
	o.mu.Lock()
	m.addCarried(fresh)
	o.mu.Unlock()
	return nil
}

// addCarried notes fresh as carried by m's subject. The caller holds o.mu.
func (m *settledMarks) addCarried(fresh map[string][]byte) {
	if len(fresh) > 0 && m.carried == nil {
		m.carried = make(map[string][]byte, len(fresh))
	}
	for k, v := range fresh {
		m.carried[k] = v
	}
}

// rollup replaces the subject's messages by the event's whole settled
// set, less the keys whose put the event's log no longer holds, and the
// entries it carries, less those marked, and fresh (entries to carry
// besides). A set too big for one batch is published as a delta of done
// instead, or refused (errCarryTooBig) for a carry (done nil), which must
// replace the subject.
func (o *Owed) rollup(ctx context.Context, eventID string, m *settledMarks, done []string, fresh map[string][]byte) error {
	o.mu.Lock()
	var unmeasured []string
	for k, b := range m.keys {
		if b == 0 {
			unmeasured = append(unmeasured, k)
		}
	}
	o.mu.Unlock()
	// Read after the keys were listed: their puts were stored before.
	last, err := o.Log.LastSeq(eventID)
	if err != nil {
		return err
	}
	first, err := o.Log.FirstSeq(eventID)
	if err != nil {
		return err
	}
	o.mu.Lock()
	for _, k := range unmeasured {
		if m.keys[k] == 0 {
			m.keys[k] = last
		}
	}
	keys := make([]string, 0, len(m.keys)+len(m.carried)+len(fresh))
	for k, v := range m.carried {
		if _, done := m.keys[k]; done {
			// Its mark ends it: both go together once the log no longer
			// holds its put either (below).
			delete(m.carried, k)
			continue
		}
		keys = append(keys, carryLine(k, v))
	}
	for k, v := range fresh {
		keys = append(keys, carryLine(k, v))
	}
	for k, b := range m.keys {
		// A message without records carries the last one's seq: +1
		// keeps the key while its put may still be kept.
		if b+1 < first {
			delete(m.keys, k)
			continue
		}
		keys = append(keys, k+"\t"+strconv.FormatUint(b, 10))
	}
	fence := m.last
	o.mu.Unlock()
	slices.Sort(keys)
	parts := o.keyParts(keys)
	if len(parts) > node.MaxBatchMsgs {
		if done == nil {
			return ErrCarryTooBig
		}
		return o.delta(ctx, eventID, m, done)
	}
	msgs := make([]*nats.Msg, len(parts))
	for i, body := range parts {
		msgs[i] = &nats.Msg{Subject: node.SettledSubj + eventID, Data: body, Header: nats.Header{}}
	}
	msgs[0].Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	msgs[0].Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(fence, 10))
	seqs, err := o.publishParts(ctx, msgs)
	if err != nil {
		return err
	}
	o.mu.Lock()
	m.last = seqs[len(seqs)-1]
	m.msgs = len(seqs)
	m.addCarried(fresh)
	o.mu.Unlock()
	return nil
}

// compact purges eventID's settled subject once the trimmer has settled
// the event through its last record (through): its log then holds no put
// of any entry the subject marks, so no owner can import one again, and
// an event that owes nothing in its owner's store needs nothing carried.
// Without it the subject of every event that ever delivered anything
// stayed, up to settledMsgsMax messages each (a rollup comes only with a
// publish): TICKETD_SETTLED grew with the events ever sold. Only the
// messages up to the subject's last one read are purged: a mark published
// meanwhile stays (and a writer fenced on a purged message reads the
// subject as empty, see refresh). It does nothing while the event owes
// anything, or when it has a record after through.
func (o *Owed) compact(ctx context.Context, eventID string, through uint64) error {
	if !o.leads(eventID) {
		return fmt.Errorf("cluster: compact the settled subject of %s: %w", eventID, errNotOwner)
	}
	if owes, err := owesAny(o.Store, eventID); err != nil || owes {
		return err
	}
	if last, err := o.Log.LastSeq(eventID); err != nil || last > through {
		return err
	}
	subject := node.SettledSubj + eventID
	end, err := node.LeaderLast(ctx, o.Node.Conn(), node.SettledStream, subject)
	if err != nil || end == 0 {
		return err
	}
	s, err := o.Node.JetStream().Stream(ctx, node.SettledStream)
	if err != nil {
		return fmt.Errorf("cluster: compact %s: %w", subject, err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(end+1)); err != nil {
		return fmt.Errorf("cluster: compact %s: %w", subject, err)
	}
	o.forget(eventID, nil)
	return nil
}

// publishParts publishes msgs, as one atomic batch when there are
// several, and answers their stream sequences. A refused expected
// sequence is errConflict.
func (o *Owed) publishParts(ctx context.Context, msgs []*nats.Msg) ([]uint64, error) {
	n := 0
	for _, m := range msgs {
		n += len(m.Data)
	}
	// A big rollup is one Raft proposal, replicated and synced whole: a
	// second more per 4 MiB (measured: bench/results/20261129-cluster-history.md).
	timeout := o.Node.Config().RequestTimeout + time.Duration(n>>22)*time.Second
	seqs, err := node.PublishAtomic(ctx, o.Node.Conn(), o.Node.JetStream(), timeout, msgs)
	if err == nil {
		o.sentMsgs.Add(int64(len(msgs)))
		o.sentBytes.Add(int64(n))
	}
	var api *jetstream.APIError
	if errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return nil, fmt.Errorf("%w: %v", node.ErrConflict, err)
	}
	return seqs, err
}
