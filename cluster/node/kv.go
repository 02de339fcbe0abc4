package node

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"ticketd/persistence"
)

// ReplicatedStream is a stream of this package's own (the directory, the
// shared index, idempotency keys), created once the cluster can: a node
// starts before its peers, so the first users retry until a majority is up.
// The node makes it before it says it is ready (Node.check), so no
// request of a new cluster waits for its creation.
type ReplicatedStream struct {
	n   *Node
	cfg jetstream.StreamConfig

	mu sync.Mutex
	ok atomic.Bool
	s  jetstream.Stream
}

func NewReplicatedStream(n *Node, cfg jetstream.StreamConfig) *ReplicatedStream {
	cfg.Storage = jetstream.FileStorage
	cfg.Replicas = n.cfg.Replicas
	// Reads go to the stream leader (the message-get API), never to a
	// replica that may not have stored an acknowledged message yet.
	cfg.AllowDirect = false
	if cfg.Duplicates == 0 {
		cfg.Duplicates = 2 * time.Minute
	}
	if cfg.MaxMsgSize == 0 {
		cfg.MaxMsgSize = MaxMessageBytes
	}
	r := &ReplicatedStream{n: n, cfg: cfg}
	n.register(r)
	return r
}

// streamTry bounds one try at creating (or checking) a stream. The nodes
// of a new cluster create its streams at once, and nats-server answers
// none of two concurrent creations of one stream (v2.15.2: every node's
// request waited out its 10 s, 30 s when given them; the stream was made,
// and a second try answers within milliseconds): a try is cut short and
// made again. A creation slower than this (a starved machine) is not
// lost either: the next try finds the stream.
const streamTry = time.Second

// Stream creates the stream (or checks it) on first use, in tries of
// streamTry until ctx ends.
func (r *ReplicatedStream) Stream(ctx context.Context) (jetstream.Stream, error) {
	if r.ok.Load() {
		return r.s, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ok.Load() {
		return r.s, nil
	}
	var s jetstream.Stream
	err := r.retryEach(ctx, streamTry, "stream "+r.cfg.Name, func(ctx context.Context) (bool, error) {
		var err error
		s, err = r.n.js.CreateOrUpdateStream(ctx, r.cfg)
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	r.s = s
	r.ok.Store(true)
	return s, nil
}

// Last is the last message of subject, nil when it has none, as the
// stream's leader answers: what fails otherwise (a timeout, no leader
// during an election) is asked again until ctx ends, as publish does.
func (r *ReplicatedStream) Last(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	s, err := r.Stream(ctx)
	if err != nil {
		return nil, err
	}
	var m *jetstream.RawStreamMsg
	err = r.retry(ctx, "read "+subject, func(ctx context.Context) (bool, error) {
		var err error
		m, err = s.GetLastMsgForSubject(ctx, subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			m = nil
			return true, nil
		}
		return err == nil, err
	})
	return m, err
}

// firstTry bounds the first try of a read or publish of a replicated
// stream; each try after a silent one waits twice as long, up to
// RequestTimeout. A leader answers within milliseconds; one that says
// nothing is gone: a request it took as it stepped down or shut down
// (a planned move: its proposals are dropped, its API answers nobody)
// or one sent while the stream elects. A try of RequestTimeout (3 s)
// then stopped the request that long before it asked the new leader.
// Asking again early is safe: a read changes nothing, and a publish
// carries a Nats-Msg-Id (a second copy is answered as a duplicate, or
// refused while the first is in flight, and asked again).
const firstTry = 500 * time.Millisecond

// retry calls try, within firstTry, then tries twice as long up to
// RequestTimeout, until it says it is done (with its error, nil or
// final), or else until ctx ends or the node closes (its last error,
// wrapped and named what), waiting 20 ms to 1 s between tries.
func (r *ReplicatedStream) retry(ctx context.Context, what string, try func(context.Context) (bool, error)) error {
	return r.retryGrowing(ctx, min(firstTry, r.n.cfg.RequestTimeout), r.n.cfg.RequestTimeout, what, try)
}

// retryEach is retry with tries of each.
func (r *ReplicatedStream) retryEach(ctx context.Context, each time.Duration, what string, try func(context.Context) (bool, error)) error {
	return r.retryGrowing(ctx, each, each, what, try)
}

// retryGrowing is retry with a first try of first, each next twice as
// long, up to most.
func (r *ReplicatedStream) retryGrowing(ctx context.Context, first, most time.Duration, what string, try func(context.Context) (bool, error)) error {
	wait := 20 * time.Millisecond
	for each := first; ; each = min(2*each, most) {
		tctx, cancel := context.WithTimeout(ctx, each)
		done, err := try(tctx)
		cancel()
		if done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s: %w (%v)", what, err, ctx.Err())
		case <-r.n.Stop:
			return fmt.Errorf("cluster: %s: %w (node closing)", what, err)
		case <-time.After(wait):
			wait = min(2*wait, time.Second)
		}
	}
}

// ErrConflict is a compare-and-set publish refused because the subject
// moved: JetStream error 10071 (wrong last sequence).
var ErrConflict = fmt.Errorf("cluster: subject moved: %w", persistence.ErrFenced)

// Publish publishes m, retrying what is transient until ctx ends: 10164
// (a publish on the subject still in process), a timeout or no responders
// (an election). m must carry a Nats-Msg-Id, so a retry of a publish whose
// ack was lost is answered as a duplicate with its sequence, never stored
// twice. A refused expected sequence (10071) is errConflict.
func (r *ReplicatedStream) Publish(ctx context.Context, m *nats.Msg) (*jetstream.PubAck, error) {
	if _, err := r.Stream(ctx); err != nil {
		return nil, err
	}
	var ack *jetstream.PubAck
	err := r.retry(ctx, "publish to "+m.Subject, func(ctx context.Context) (bool, error) {
		a, err := r.n.js.PublishMsg(ctx, m)
		if err == nil {
			ack = a
			return true, nil
		}
		var api *jetstream.APIError
		if errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return true, fmt.Errorf("%w: %v", ErrConflict, err)
		}
		return false, err
	})
	if err != nil {
		return nil, err
	}
	return ack, nil
}

// PublishBatch publishes msgs as one atomic batch (PublishAtomic: stored
// whole or not at all; the stream must allow atomic publish), retrying
// what is transient until ctx ends, as Publish does. Every message must
// carry a Nats-Msg-Id: a try after one whose answer was lost but which
// was stored is refused as holding duplicate ids (10201), which says the
// batch is stored, and answers nil.
func (r *ReplicatedStream) PublishBatch(ctx context.Context, msgs []*nats.Msg) error {
	_, err := r.PublishBatchSeqs(ctx, msgs)
	return err
}

// PublishBatchSeqs is PublishBatch that answers the stream sequences the
// messages were stored at; none (nil, and no error) when a try after one
// whose answer was lost met the batch stored already.
func (r *ReplicatedStream) PublishBatchSeqs(ctx context.Context, msgs []*nats.Msg) ([]uint64, error) {
	if _, err := r.Stream(ctx); err != nil {
		return nil, err
	}
	tried := false
	var seqs []uint64
	err := r.retry(ctx, "publish a batch to "+r.cfg.Name, func(ctx context.Context) (bool, error) {
		got, err := PublishAtomic(ctx, r.n.nc, r.n.js, r.n.cfg.RequestTimeout, msgs)
		var api *jetstream.APIError
		switch {
		case err == nil:
			seqs = got
			return true, nil
		case errors.As(err, &api) && api.ErrorCode == jsErrCodeBatchDuplicate && tried:
			return true, nil
		case errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence:
			return true, fmt.Errorf("%w: %v", ErrConflict, err)
		}
		tried = true
		return false, err
	})
	return seqs, err
}

// jsErrCodeBatchDuplicate is JetStream's refusal of an atomic batch that
// holds a message id stored already (JSAtomicPublishContainsDuplicateMessageErr).
const jsErrCodeBatchDuplicate jetstream.ErrorCode = 10201

// FencedMsg is a message on subject that is stored only if the subject's
// last message is expected (0: the subject has none).
func FencedMsg(subject, id string, expected uint64, data []byte) *nats.Msg {
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	m.Header.Set(jetstream.MsgIDHeader, id)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, fmt.Sprint(expected))
	return m
}

// KeyToken is an index key as one subject token: the key itself when it
// holds only letters, digits and -_/=, else "~" and its base64url.
func KeyToken(key []byte) string {
	if len(key) > 0 && PlainKey(key) {
		return string(key)
	}
	return "~" + base64.RawURLEncoding.EncodeToString(key)
}

func PlainKey(key []byte) bool {
	for _, c := range key {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '/', c == '=':
		default:
			return false
		}
	}
	return true
}

// TokenKey inverts keyToken.
func TokenKey(tok string) ([]byte, error) {
	if b64, ok := strings.CutPrefix(tok, "~"); ok {
		return base64.RawURLEncoding.DecodeString(b64)
	}
	if tok == "" {
		return nil, errors.New("cluster: empty key token")
	}
	return []byte(tok), nil
}

// PublishAtomic publishes msgs (on one stream) as one message, or as one
// JetStream atomic batch when there are several: stored
// whole or not at all, at consecutive stream sequences, which it answers.
// It does not retry.
func PublishAtomic(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, timeout time.Duration, msgs []*nats.Msg) ([]uint64, error) {
	if len(msgs) == 1 {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		ack, err := js.PublishMsg(pctx, msgs[0])
		if err != nil {
			return nil, err
		}
		return []uint64{ack.Sequence}, nil
	}
	if len(msgs) > MaxBatchMsgs {
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

// batchAck is the server's answer to a batch's commit.
type batchAck struct {
	Seq   uint64              `json:"seq"`
	Batch string              `json:"batch"`
	Count int                 `json:"count"`
	Error *jetstream.APIError `json:"error"`
}

// JetStream's atomic batch publish (Nats-Batch-Id, -Sequence, -Commit):
// the server stores the batch whole or not at all, in consecutive stream
// sequences, and answers the commit with the last one.
const (
	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
	// MaxBatchMsgs bounds one batch (the server allows 1,000 messages).
	MaxBatchMsgs = 256
)
