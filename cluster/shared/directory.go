package shared

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"
	"ticketd/idempotency"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"ticketd/persistence"
)

// The directory's shared log: one subject of its own stream, written by
// every node under optimistic concurrency (see actors.SharedLog), and a
// plain NATS subject on which a writer tells the others it appended.
const (
	dirStream  = "TICKETD_DIR"
	dirSubject = "dir.log"
	// dirKeyedPrefix starts the subjects of the Idempotency-Key records
	// of keyed directory writes (AppendKeyed): one subject a key, each
	// message kept until its record expires (a message TTL).
	dirKeyedPrefix = "dir.idem."
	dirChanged     = "ticketd.dir.changed"
	dirPollEach    = time.Second
)

// Checkpoints bound the log: once the log after the newest checkpoint
// holds dirCheckpointRecords records or dirCheckpointBytes bytes, the
// directory actor that appended stores its whole state on dirCkptSubject
// (Checkpoint), and the records before the previous checkpoint are
// purged. A checkpoint is one message, or the parts of one atomic batch
// when the state exceeds half a message, each with the headers
// Ticketd-Last (the seq of the last record it holds), Ticketd-Dir-Msg (the
// stream sequence of the dir.log message that holds that record) and
// Ticketd-Part (i/n); its data is the directory's snapshot encoding.
const (
	dirCkptSubject       = "dir.ckpt"
	dirCheckpointRecords = 1000
	dirCheckpointBytes   = 1 << 20
	hdrDirMsg            = "Ticketd-Dir-Msg"
	hdrPart              = "Ticketd-Part"
)

// Directory is the actors.SharedLog of the directory in cluster mode. Its
// messages are in format version 1 (the operations of one log: records and
// the index entries they owe, see the package doc); the index entries (a console
// invitation's mail) go to the writer's local store once the message is
// stored, as an event's do.
type Directory struct {
	n     *node.Node
	local *persistence.Store
	st    *node.ReplicatedStream

	mu   sync.Mutex
	last uint64 // seq of the last record read or appended
	sseq uint64 // stream sequence of the message that holds it
	// ckpt is the seq of the newest checkpoint known here; since and
	// sinceBytes count the records (and their messages' bytes) read or
	// appended after it.
	ckpt       uint64
	since      uint64
	sinceBytes int
	// every and everyBytes are when a checkpoint is due; partBytes bounds
	// one message of it.
	every      uint64
	everyBytes int
	partBytes  int

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewDirectory returns the shared directory log of node n; local receives
// the index entries of its appends.
func NewDirectory(n *node.Node, local *persistence.Store) *Directory {
	return &Directory{n: n, local: local, stop: make(chan struct{}),
		every: dirCheckpointRecords, everyBytes: dirCheckpointBytes, partBytes: node.MaxMessageBytes / 2,
		st: node.NewReplicatedStream(n, jetstream.StreamConfig{Name: dirStream, Subjects: []string{dirSubject, dirCkptSubject, dirKeyedPrefix + ">"},
			AllowAtomicPublish: true, AllowMsgTTL: true})}
}

// Read calls fn for every record after the last one read or appended.
// At the first read, and when the records after the last one read were
// purged behind a newer checkpoint, it calls restore with the newest
// checkpoint first (the older one kept when restore refuses it) and then
// fn for the records after it. It reads with the stream's message-get
// API, answered by its leader.
func (d *Directory) Read(ctx context.Context, restore func(seq uint64, state []byte) error, fn func(seq uint64, record []byte) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.st.Stream(ctx)
	if err != nil {
		return err
	}
	if d.sseq == 0 {
		if err := d.restore(ctx, s, restore); err != nil {
			return err
		}
	}
	restored := false
	for {
		msg, err := s.GetMsg(ctx, d.sseq+1, jetstream.WithGetMsgSubject(dirSubject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cluster: read directory after message %d: %w", d.sseq, err)
		}
		if len(msg.Data) == 0 || msg.Data[0] != eventlog.FormatV1 {
			return fmt.Errorf("cluster: directory message %d: unknown format", msg.Sequence)
		}
		if first := firstRecord(msg.Data[1:], d.last+1); first > d.last+1 {
			// Purged behind a checkpoint this node has not read.
			if restored {
				return fmt.Errorf("cluster: directory message %d starts at record %d, after %d", msg.Sequence, first, d.last)
			}
			restored = true
			if err := d.restore(ctx, s, restore); err != nil {
				return err
			}
			continue
		}
		n := uint64(0)
		err = eventlog.DecodeOps(msg.Data[1:], func(op byte, seq uint64, rec, _ []byte) error {
			if op != 'a' || seq <= d.last {
				return nil
			}
			if err := fn(seq, rec); err != nil {
				return err
			}
			d.last = seq
			n++
			return nil
		})
		if err != nil {
			return err
		}
		d.sseq = msg.Sequence
		d.since += n
		d.sinceBytes += len(msg.Data)
	}
}

// firstRecord is the seq of the first record in ops, fallback when none.
func firstRecord(ops []byte, fallback uint64) uint64 {
	first := fallback
	errFound := errors.New("found")
	_ = eventlog.DecodeOps(ops, func(op byte, seq uint64, _, _ []byte) error {
		if op != 'a' {
			return nil
		}
		first = seq
		return errFound
	})
	return first
}

// restore hands the newest checkpoint past the last record read to
// restore, or the older one kept when restore refuses it, and reads on
// after it. It does nothing when there is none.
func (d *Directory) restore(ctx context.Context, s jetstream.Stream, restore func(seq uint64, state []byte) error) error {
	newest, err := s.GetLastMsgForSubject(ctx, dirCkptSubject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: directory checkpoint: %w", err)
	}
	oldest, err := s.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(dirCkptSubject))
	if err != nil {
		return fmt.Errorf("cluster: directory checkpoint: %w", err)
	}
	if restore == nil {
		return errors.New("cluster: the directory log has a checkpoint, and its reader takes none")
	}
	var firstErr error
	for _, m := range []*jetstream.RawStreamMsg{newest, oldest} {
		c, err := readCheckpoint(ctx, s, m)
		if err == nil && c.seq <= d.last {
			return nil // nothing past what this node read
		}
		if err == nil {
			err = restore(c.seq, c.state)
		}
		if err == nil {
			d.last, d.sseq, d.ckpt, d.since, d.sinceBytes = c.seq, c.dirMsg, c.seq, 0, 0
			return nil
		}
		if firstErr == nil {
			firstErr = err
		}
		d.n.Config().Logger.Warn("cluster: directory checkpoint unreadable", "message", m.Sequence, "err", err)
	}
	return fmt.Errorf("cluster: directory checkpoint: %w", firstErr)
}

// checkpoint is one checkpoint read whole: the seq of its last record, the
// dir.log message holding that record, its state, and the stream
// sequence of its first part.
type checkpoint struct {
	seq, dirMsg, firstPart uint64
	state                  []byte
}

// ckptHeaders are a checkpoint part's seq, dir.log message, part and
// number of parts.
func ckptHeaders(m *jetstream.RawStreamMsg) (seq, dirMsg uint64, part, parts int, err error) {
	seq, err1 := strconv.ParseUint(m.Header.Get(eventlog.HdrLast), 10, 64)
	dirMsg, err2 := strconv.ParseUint(m.Header.Get(hdrDirMsg), 10, 64)
	_, err3 := fmt.Sscanf(m.Header.Get(hdrPart), "%d/%d", &part, &parts)
	if err = errors.Join(err1, err2, err3); err == nil && (part < 1 || part > parts || parts > node.MaxBatchMsgs) {
		err = fmt.Errorf("part %d of %d", part, parts)
	}
	if err != nil {
		err = fmt.Errorf("cluster: directory checkpoint message %d: %w", m.Sequence, err)
	}
	return seq, dirMsg, part, parts, err
}

// readCheckpoint reads the checkpoint m is a part of: its parts are at
// consecutive stream sequences (one atomic batch).
func readCheckpoint(ctx context.Context, s jetstream.Stream, m *jetstream.RawStreamMsg) (checkpoint, error) {
	seq, dirMsg, part, parts, err := ckptHeaders(m)
	if err != nil {
		return checkpoint{}, err
	}
	c := checkpoint{seq: seq, dirMsg: dirMsg, firstPart: m.Sequence - uint64(part-1)}
	for i := range parts {
		pm := m
		if i != part-1 {
			if pm, err = s.GetMsg(ctx, c.firstPart+uint64(i)); err != nil {
				return checkpoint{}, fmt.Errorf("cluster: directory checkpoint part %d: %w", i+1, err)
			}
		}
		pseq, pdir, pi, pn, err := ckptHeaders(pm)
		if err != nil || pm.Subject != dirCkptSubject || pseq != seq || pdir != dirMsg || pi != i+1 || pn != parts {
			return checkpoint{}, fmt.Errorf("cluster: directory checkpoint at %d: part %d missing (%v)", seq, i+1, err)
		}
		c.state = append(c.state, pm.Data...)
	}
	return c, nil
}

// CheckpointDue reports whether the log after the newest checkpoint is
// long enough for a new one.
func (d *Directory) CheckpointDue() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.since >= d.every || d.sinceBytes >= d.everyBytes
}

// Checkpoint stores state, the directory at seq (the last record read or
// appended here), as the newest checkpoint, fenced on the message holding
// that record being the stream's last: a record appended since, or
// another node's checkpoint after the same record, refuses it (an error
// wrapping persistence.ErrFenced). Then it purges the records before the
// previous checkpoint, and the checkpoints before that one: a reader that
// started from the previous one can still finish. It does nothing when a
// checkpoint at seq or a recent one exists already.
func (d *Directory) Checkpoint(ctx context.Context, seq uint64, state []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if seq != d.last || d.sseq == 0 {
		return fmt.Errorf("cluster: directory checkpoint at %d, the log read to %d: %w", seq, d.last, node.ErrConflict)
	}
	s, err := d.st.Stream(ctx)
	if err != nil {
		return err
	}
	var prev *checkpoint
	pm, err := s.GetLastMsgForSubject(ctx, dirCkptSubject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return fmt.Errorf("cluster: directory checkpoint: %w", err)
	default:
		ps, pdir, part, _, err := ckptHeaders(pm)
		if err != nil {
			return err
		}
		prev = &checkpoint{seq: ps, dirMsg: pdir, firstPart: pm.Sequence - uint64(part-1)}
		if ps > d.ckpt { // another node's, unseen here
			d.ckpt, d.since, d.sinceBytes = ps, seq-min(ps, seq), 0
		}
		if ps >= seq || d.since < d.every && d.sinceBytes < d.everyBytes {
			return nil
		}
	}
	var msgs []*nats.Msg
	for start := 0; start < len(state) || start == 0; start += d.partBytes {
		end := min(start+d.partBytes, len(state))
		msgs = append(msgs, &nats.Msg{Subject: dirCkptSubject, Data: state[start:end], Header: nats.Header{}})
		if end == len(state) {
			break
		}
	}
	for i, m := range msgs {
		m.Header.Set(eventlog.HdrLast, strconv.FormatUint(seq, 10))
		m.Header.Set(hdrDirMsg, strconv.FormatUint(d.sseq, 10))
		m.Header.Set(hdrPart, fmt.Sprintf("%d/%d", i+1, len(msgs)))
	}
	msgs[0].Header.Set(jetstream.ExpectedLastSeqHeader, strconv.FormatUint(d.sseq, 10))
	if _, err := node.PublishAtomic(ctx, d.n.Conn(), d.n.JetStream(), d.n.Config().RequestTimeout, msgs); err != nil {
		var api *jetstream.APIError
		if errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return fmt.Errorf("cluster: directory checkpoint at %d: %w", seq, node.ErrConflict)
		}
		return fmt.Errorf("cluster: directory checkpoint at %d: %w", seq, err)
	}
	d.ckpt, d.since, d.sinceBytes = seq, 0, 0
	if prev == nil {
		return nil
	}
	// A failed purge leaves more than needed until the next one.
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(dirSubject), jetstream.WithPurgeSequence(prev.dirMsg+1)); err != nil {
		return fmt.Errorf("cluster: directory purge through message %d: %w", prev.dirMsg, err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(dirCkptSubject), jetstream.WithPurgeSequence(prev.firstPart)); err != nil {
		return fmt.Errorf("cluster: directory checkpoints purge before %d: %w", prev.firstPart, err)
	}
	return nil
}

// Append appends records as seqs first... in one message fenced on the
// last message read: another node's append since refuses it (an error
// wrapping persistence.ErrFenced).
func (d *Directory) Append(ctx context.Context, first uint64, records [][]byte, index []persistence.IndexEntry) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if first != d.last+1 {
		return fmt.Errorf("cluster: directory append at %d after %d: %w", first, d.last, node.ErrConflict)
	}
	m, b := d.logMsg(first, records, index)
	ack, err := d.st.Publish(ctx, m)
	if err != nil {
		return fmt.Errorf("cluster: directory append: %w", err)
	}
	d.appended(ack.Sequence, b, len(m.Data))
	return nil
}

// logMsg is the log's message of records as seqs first..., with the
// index entries they owe, fenced on the last message read, and the batch
// it holds.
func (d *Directory) logMsg(first uint64, records [][]byte, index []persistence.IndexEntry) (*nats.Msg, *eventlog.Batch) {
	b := &eventlog.Batch{}
	for i, rec := range records {
		b.Append("directory", first+uint64(i), rec)
	}
	for _, e := range index {
		b.Put(e.Key, e.Value)
	}
	last := first + uint64(len(records)) - 1
	data := append([]byte{eventlog.FormatV1}, b.Ops...)
	m := node.FencedMsg(dirSubject, "dir."+d.n.Config().NodeName+"."+nuid.Next(), d.sseq, data)
	m.Header.Set(eventlog.HdrFirst, strconv.FormatUint(first, 10))
	m.Header.Set(eventlog.HdrLast, strconv.FormatUint(last, 10))
	return m, b
}

// appended notes the log's message, stored at stream sequence sseq: its
// records and its data's size count towards a checkpoint, the
// index entries b owes go to the local store, and the other nodes are
// told. Called with d.mu held.
func (d *Directory) appended(sseq uint64, b *eventlog.Batch, size int) {
	d.sseq, d.last = sseq, b.Last
	d.since += b.Last - b.First + 1
	d.sinceBytes += size
	if len(b.Index) > 0 && d.local != nil {
		pb := d.local.NewBatch()
		defer pb.Close()
		for _, op := range b.Index {
			pb.Put(op.Key, op.Value)
		}
		if err := d.local.Commit(pb); err != nil {
			// Stored on a majority already: the append stands; its mail
			// is what this node's store failed to keep.
			d.n.Config().Logger.Error("cluster: directory index entries not kept locally", "err", err)
		}
	}
	_ = d.n.Conn().Publish(dirChanged, []byte(d.n.Config().NodeName))
}

// AppendKeyed is Append for a keyed write: the record value of its
// Idempotency-Key (key) is stored with the records in one atomic batch
// of the stream (decisions §20), on its own subject, kept until the
// expiry it holds; the log's message is the batch's last, so a
// checkpoint's fence (the stream's last message) and the readers of the
// log see what Append leaves. A try after one whose answer was lost but
// which was stored answers an error (outcome unknown: a later Read
// applies it).
func (d *Directory) AppendKeyed(ctx context.Context, first uint64, records [][]byte, index []persistence.IndexEntry, key, value []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if first != d.last+1 {
		return fmt.Errorf("cluster: directory append at %d after %d: %w", first, d.last, node.ErrConflict)
	}
	ttl := time.Hour
	if _, exp, _, err := idempotency.DecodeRecord(value); err == nil {
		ttl = max(time.Until(exp).Round(time.Second), time.Second)
	}
	rm := &nats.Msg{Subject: dirKeyedPrefix + node.KeyToken(key), Data: value, Header: nats.Header{}}
	rm.Header.Set(jetstream.MsgIDHeader, "dirk."+d.n.Config().NodeName+"."+nuid.Next())
	rm.Header.Set(jetstream.MsgTTLHeader, ttl.String())
	m, b := d.logMsg(first, records, index)
	seqs, err := d.st.PublishBatchSeqs(ctx, []*nats.Msg{rm, m})
	if err != nil {
		return fmt.Errorf("cluster: directory append: %w", err)
	}
	if len(seqs) != 2 {
		return errors.New("cluster: directory append stored by an earlier try: read the log")
	}
	d.appended(seqs[1], b, len(m.Data))
	return nil
}

// Keyed reads the record AppendKeyed stored under key, from the stream's
// leader; none once expired.
func (d *Directory) Keyed(ctx context.Context, key []byte) ([]byte, bool, error) {
	m, err := d.st.Last(ctx, dirKeyedPrefix+node.KeyToken(key))
	if err != nil || m == nil {
		return nil, false, err
	}
	return m.Data, true, nil
}

// Follow calls changed whenever another node tells it appended to the
// directory, and every dirPollEach (a notice is lost when a node is cut off
// for a moment), until Close. changed must not block.
func (d *Directory) Follow(changed func()) error {
	sub, err := d.n.Conn().Subscribe(dirChanged, func(m *nats.Msg) {
		if string(m.Data) != d.n.Config().NodeName {
			changed()
		}
	})
	if err != nil {
		return fmt.Errorf("cluster: follow directory: %w", err)
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer func() { _ = sub.Unsubscribe() }()
		t := time.NewTicker(dirPollEach)
		defer t.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-t.C:
				changed()
			}
		}
	}()
	return nil
}

// Close stops following.
func (d *Directory) Close() {
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	d.wg.Wait()
}
