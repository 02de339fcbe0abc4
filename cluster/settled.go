package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The settled stream keeps, per event, the keys of the owed entries that
// were delivered (owed.go), so a new owner does not import them again. It
// stays bounded two ways:
//
//   - in messages: a pass publishes the keys it settled as one message
//     (a delta); once the event's subject holds settledMsgsMax of them, the
//     next pass publishes instead the event's whole settled set with
//     Nats-Rollup: sub, which leaves that message alone on the subject
//     (several parts of one atomic batch when it exceeds a message). A
//     reader unions every message of the subject, so a rollup and the
//     deltas after it read as the whole set;
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
// retried for days), its owner rolls the subject up with those entries,
// key and value, so a next owner imports them from here. A carried entry
// is owed until a mark of its key (delivered, or deleted by the log)
// follows; a rollup leaves out the carried entries marked.
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
// it again and retries.
const (
	settledMsgsMax = 16
	// carryTag starts a line that carries an owed entry: keys start with
	// a letter (owedKinds).
	carryTag = "="
	// settledTries bounds the conflicts one publish of a pass meets.
	settledTries = 3
)

// settledStreamConfig is the settled stream: one subject per event,
// rollups allowed (and atomic batches, for a rollup of several parts).
func settledStreamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: settledStream, Subjects: []string{settledSubj + ">"},
		Storage: jetstream.FileStorage, Replicas: replicas, MaxMsgSize: maxMessageBytes,
		AllowRollup: true, AllowAtomicPublish: true}
}

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
// as a rollup of the whole set once the subject holds settledMsgsMax
// messages.
func (o *owed) publishSettled(ctx context.Context, eventID string, done []string) error {
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
		roll := m.msgs >= settledMsgsMax
		o.mu.Unlock()
		if roll {
			err = o.rollup(ctx, eventID, m, done)
		} else {
			err = o.delta(ctx, eventID, m, done)
		}
		if !errors.Is(err, errConflict) {
			return err
		}
		// Another node wrote the subject: read it again, then retry.
		o.mu.Lock()
		if o.settled[eventID] == m {
			delete(o.settled, eventID)
		}
		o.mu.Unlock()
		if _, rerr := o.marks(ctx, eventID); rerr != nil {
			return rerr
		}
		o.mu.Lock()
		if n := o.settled[eventID]; n != nil {
			for k, b := range m.keys { // what this node settled stays
				if _, ok := n.keys[k]; !ok {
					n.keys[k] = b
				}
			}
		}
		o.mu.Unlock()
	}
	return err
}

// readMarks reads eventID's settled subject from the stream.
func (o *owed) readMarks(ctx context.Context, eventID string) (*settledMarks, error) {
	m := &settledMarks{keys: map[string]uint64{}}
	err := o.readSubject(ctx, settledStream, settledSubj+eventID, 0, func(msg *jetstream.RawStreamMsg) error {
		if err := m.read(msg.Data); err != nil {
			return err
		}
		m.last = msg.Sequence
		m.msgs++
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// marks is what this node knows of eventID's settled subject, read from
// the stream the first time.
func (o *owed) marks(ctx context.Context, eventID string) (*settledMarks, error) {
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

// keyParts joins keys, one a line, into bodies of at most partBytes.
func (o *owed) keyParts(keys []string) [][]byte {
	limit := o.partBytes
	if limit <= 0 {
		limit = maxMessageBytes / 2
	}
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

// delta publishes done as the subject's next messages.
func (o *owed) delta(ctx context.Context, eventID string, m *settledMarks, done []string) error {
	for _, body := range o.keyParts(done) {
		o.mu.Lock()
		last := m.last
		o.mu.Unlock()
		msg := &nats.Msg{Subject: settledSubj + eventID, Data: body, Header: nats.Header{}}
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last, 10))
		seqs, err := o.publishParts(ctx, []*nats.Msg{msg})
		if err != nil {
			return err
		}
		o.mu.Lock()
		m.last = seqs[0]
		m.msgs++
		o.mu.Unlock()
	}
	return nil
}

// rollup replaces the subject's messages by the event's whole settled
// set, less the keys whose put the event's log no longer holds, and the
// entries it carries, less those marked. A set too big for one batch is
// published as a delta of done instead, or refused (errCarryTooBig) for
// a carry (done nil), which must replace the subject.
func (o *owed) rollup(ctx context.Context, eventID string, m *settledMarks, done []string) error {
	o.mu.Lock()
	var unmeasured []string
	for k, b := range m.keys {
		if b == 0 {
			unmeasured = append(unmeasured, k)
		}
	}
	o.mu.Unlock()
	// Read after the keys were listed: their puts were stored before.
	last, err := o.log.LastSeq(eventID)
	if err != nil {
		return err
	}
	first, err := o.log.FirstSeq(eventID)
	if err != nil {
		return err
	}
	o.mu.Lock()
	for _, k := range unmeasured {
		if m.keys[k] == 0 {
			m.keys[k] = last
		}
	}
	keys := make([]string, 0, len(m.keys)+len(m.carried))
	for k, v := range m.carried {
		if _, done := m.keys[k]; done {
			// Its mark ends it: both go together once the log no longer
			// holds its put either (below).
			delete(m.carried, k)
			continue
		}
		keys = append(keys, carryTag+k+"\t"+base64.StdEncoding.EncodeToString(v))
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
	if len(parts) > maxBatchMsgs {
		if done == nil {
			return errCarryTooBig
		}
		return o.delta(ctx, eventID, m, done)
	}
	msgs := make([]*nats.Msg, len(parts))
	for i, body := range parts {
		msgs[i] = &nats.Msg{Subject: settledSubj + eventID, Data: body, Header: nats.Header{}}
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
	o.mu.Unlock()
	return nil
}

// publishParts publishes msgs, as one atomic batch when there are
// several, and answers their stream sequences. A refused expected
// sequence is errConflict.
func (o *owed) publishParts(ctx context.Context, msgs []*nats.Msg) ([]uint64, error) {
	seqs, err := publishAtomic(ctx, o.n.nc, o.n.js, o.n.cfg.RequestTimeout, msgs)
	var api *jetstream.APIError
	if errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return nil, fmt.Errorf("%w: %v", errConflict, err)
	}
	return seqs, err
}

// JetStream's atomic batch publish (Nats-Batch-Id, -Sequence, -Commit):
// the server stores the batch whole or not at all, in consecutive stream
// sequences, and answers the commit with the last one.
const (
	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
	// maxBatchMsgs bounds one batch (the server allows 1,000 messages).
	maxBatchMsgs = 256
)

// batchAck is the server's answer to a batch's commit.
type batchAck struct {
	Seq   uint64              `json:"seq"`
	Batch string              `json:"batch"`
	Count int                 `json:"count"`
	Error *jetstream.APIError `json:"error"`
}

// publishAtomic publishes msgs (on one stream) as one message, or as one
// JetStream atomic batch when there are several: stored
// whole or not at all, at consecutive stream sequences, which it answers.
// It does not retry.
func publishAtomic(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, timeout time.Duration, msgs []*nats.Msg) ([]uint64, error) {
	if len(msgs) == 1 {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		ack, err := js.PublishMsg(pctx, msgs[0])
		if err != nil {
			return nil, err
		}
		return []uint64{ack.Sequence}, nil
	}
	if len(msgs) > maxBatchMsgs {
		return nil, fmt.Errorf("cluster: %d messages, more than one batch holds", len(msgs))
	}
	id := nats.NewInbox()
	var resp *nats.Msg
	for i, m := range msgs {
		h := make(nats.Header, len(m.Header)+3)
		for k, v := range m.Header {
			h[k] = v
		}
		h.Set(hdrBatchID, id)
		h.Set(hdrBatchSeq, strconv.Itoa(i+1))
		bm := &nats.Msg{Subject: m.Subject, Data: m.Data, Header: h}
		if i < len(msgs)-1 {
			if err := nc.PublishMsg(bm); err != nil {
				return nil, err
			}
			continue
		}
		h.Set(hdrBatchCommit, "1")
		pctx, cancel := context.WithTimeout(ctx, timeout)
		var err error
		resp, err = nc.RequestMsgWithContext(pctx, bm)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	var ack batchAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return nil, fmt.Errorf("cluster: batch ack: %w", err)
	}
	if ack.Error != nil {
		return nil, ack.Error
	}
	if ack.Batch != id || ack.Count != len(msgs) || ack.Seq < uint64(len(msgs)) {
		return nil, errors.New("cluster: batch ack does not match the batch")
	}
	seqs := make([]uint64, len(msgs))
	for i := range msgs {
		seqs[i] = ack.Seq - uint64(len(msgs)-1-i)
	}
	return seqs, nil
}
