package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"ticketd/actors"
	"ticketd/persistence"
)

// The directory's shared log: one subject of its own stream, written by
// every node under optimistic concurrency (see actors.SharedLog), and a
// plain NATS subject on which a writer tells the others it appended.
const (
	dirStream   = "TICKETD_DIR"
	dirSubject  = "dir.log"
	dirChanged  = "ticketd.dir.changed"
	dirPollEach = time.Second
)

// Directory is the actors.SharedLog of the directory in cluster mode. Its
// messages have the event log's format (records and the index entries
// they owe, see the package doc); the index entries (a console
// invitation's mail) go to the writer's local store once the message is
// stored, as an event's do.
type Directory struct {
	n     *Node
	local *persistence.Store
	st    *replicatedStream

	mu   sync.Mutex
	last uint64 // seq of the last record read or appended
	sseq uint64 // stream sequence of the message that holds it

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewDirectory returns the shared directory log of node n; local receives
// the index entries of its appends.
func NewDirectory(n *Node, local *persistence.Store) *Directory {
	return &Directory{n: n, local: local, stop: make(chan struct{}),
		st: newReplicatedStream(n, jetstream.StreamConfig{Name: dirStream, Subjects: []string{dirSubject}})}
}

// Read calls fn for every record after the last one read or appended.
// It reads with the stream's message-get API, answered by its leader.
func (d *Directory) Read(ctx context.Context, fn func(seq uint64, record []byte) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.st.stream(ctx)
	if err != nil {
		return err
	}
	for {
		msg, err := s.GetMsg(ctx, d.sseq+1, jetstream.WithGetMsgSubject(dirSubject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cluster: read directory after message %d: %w", d.sseq, err)
		}
		if len(msg.Data) == 0 || msg.Data[0] != formatV1 {
			return fmt.Errorf("cluster: directory message %d: unknown format", msg.Sequence)
		}
		err = decodeOps(msg.Data[1:], func(op byte, seq uint64, rec, _ []byte) error {
			if op != 'a' || seq <= d.last {
				return nil
			}
			if err := fn(seq, rec); err != nil {
				return err
			}
			d.last = seq
			return nil
		})
		if err != nil {
			return err
		}
		d.sseq = msg.Sequence
	}
}

// Append appends records as seqs first... in one message fenced on the
// last message read: another node's append since refuses it (an error
// wrapping persistence.ErrFenced).
func (d *Directory) Append(ctx context.Context, first uint64, records [][]byte, index []actors.IndexEntry) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if first != d.last+1 {
		return fmt.Errorf("cluster: directory append at %d after %d: %w", first, d.last, errConflict)
	}
	b := &Batch{}
	for i, rec := range records {
		b.Append("directory", first+uint64(i), rec)
	}
	for _, e := range index {
		b.Put(e.Key, e.Value)
	}
	last := first + uint64(len(records)) - 1
	data := append([]byte{formatV1}, b.ops...)
	m := fencedMsg(dirSubject, "dir."+d.n.cfg.NodeName+"."+nuid.Next(), d.sseq, data)
	m.Header.Set(hdrFirst, strconv.FormatUint(first, 10))
	m.Header.Set(hdrLast, strconv.FormatUint(last, 10))
	ack, err := d.st.publish(ctx, m)
	if err != nil {
		return fmt.Errorf("cluster: directory append: %w", err)
	}
	d.sseq, d.last = ack.Sequence, last
	if len(b.index) > 0 && d.local != nil {
		pb := d.local.NewBatch()
		defer pb.Close()
		for _, op := range b.index {
			pb.Put(op.key, op.value)
		}
		if err := d.local.Commit(pb); err != nil {
			// Stored on a majority already: the append stands; its mail
			// is what this node's store failed to keep.
			d.n.cfg.Logger.Error("cluster: directory index entries not kept locally", "err", err)
		}
	}
	_ = d.n.nc.Publish(dirChanged, []byte(d.n.cfg.NodeName))
	return nil
}

// Follow calls changed whenever another node tells it appended to the
// directory, and every dirPollEach (a notice is lost when a node is cut off
// for a moment), until Close. changed must not block.
func (d *Directory) Follow(changed func()) error {
	sub, err := d.n.nc.Subscribe(dirChanged, func(m *nats.Msg) {
		if string(m.Data) != d.n.cfg.NodeName {
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

var _ actors.SharedLog = (*Directory)(nil)
