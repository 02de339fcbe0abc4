package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"ticketd/persistence"
)

// replicatedStream is a stream of this package's own (the directory, the
// shared index, idempotency keys), created once the cluster can: a node
// starts before its peers, so the first users retry until a majority is up.
type replicatedStream struct {
	n   *Node
	cfg jetstream.StreamConfig

	mu sync.Mutex
	ok atomic.Bool
	s  jetstream.Stream
}

func newReplicatedStream(n *Node, cfg jetstream.StreamConfig) *replicatedStream {
	cfg.Storage = jetstream.FileStorage
	cfg.Replicas = n.cfg.Replicas
	// Reads go to the stream leader (the message-get API), never to a
	// replica that may not have stored an acknowledged message yet.
	cfg.AllowDirect = false
	if cfg.Duplicates == 0 {
		cfg.Duplicates = 2 * time.Minute
	}
	if cfg.MaxMsgSize == 0 {
		cfg.MaxMsgSize = maxMessageBytes
	}
	return &replicatedStream{n: n, cfg: cfg}
}

// stream creates the stream (or checks it) on first use.
func (r *replicatedStream) stream(ctx context.Context) (jetstream.Stream, error) {
	if r.ok.Load() {
		return r.s, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ok.Load() {
		return r.s, nil
	}
	s, err := r.n.js.CreateOrUpdateStream(ctx, r.cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: stream %s: %w", r.cfg.Name, err)
	}
	r.s = s
	r.ok.Store(true)
	return s, nil
}

// last is the last message of subject, nil when it has none, as the
// stream's leader answers: what fails otherwise (a timeout, no leader
// during an election) is asked again until ctx ends, as publish does.
func (r *replicatedStream) last(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	s, err := r.stream(ctx)
	if err != nil {
		return nil, err
	}
	wait := 20 * time.Millisecond
	for {
		gctx, cancel := context.WithTimeout(ctx, r.n.cfg.RequestTimeout)
		m, err := s.GetLastMsgForSubject(gctx, subject)
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, nil
		}
		if err == nil {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: read %s: %w (%v)", subject, err, ctx.Err())
		case <-r.n.stop:
			return nil, fmt.Errorf("cluster: read %s: %w (node closing)", subject, err)
		case <-time.After(wait):
			wait = min(2*wait, time.Second)
		}
	}
}

// errConflict is a compare-and-set publish refused because the subject
// moved: JetStream error 10071 (wrong last sequence).
var errConflict = fmt.Errorf("cluster: subject moved: %w", persistence.ErrFenced)

// publish publishes m, retrying what is transient until ctx ends: 10164
// (a publish on the subject still in process), a timeout or no responders
// (an election). m must carry a Nats-Msg-Id, so a retry of a publish whose
// ack was lost is answered as a duplicate with its sequence, never stored
// twice. A refused expected sequence (10071) is errConflict.
func (r *replicatedStream) publish(ctx context.Context, m *nats.Msg) (*jetstream.PubAck, error) {
	if _, err := r.stream(ctx); err != nil {
		return nil, err
	}
	wait := 20 * time.Millisecond
	for {
		pctx, cancel := context.WithTimeout(ctx, r.n.cfg.RequestTimeout)
		ack, err := r.n.js.PublishMsg(pctx, m)
		cancel()
		if err == nil {
			return ack, nil
		}
		var api *jetstream.APIError
		if errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return nil, fmt.Errorf("%w: %v", errConflict, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: publish to %s: %w (%v)", m.Subject, err, ctx.Err())
		case <-r.n.stop:
			return nil, fmt.Errorf("cluster: publish to %s: %w (node closing)", m.Subject, err)
		case <-time.After(wait):
			wait = min(2*wait, time.Second)
		}
	}
}

// fencedMsg is a message on subject that is stored only if the subject's
// last message is expected (0: the subject has none).
func fencedMsg(subject, id string, expected uint64, data []byte) *nats.Msg {
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	m.Header.Set(jetstream.MsgIDHeader, id)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, fmt.Sprint(expected))
	return m
}

// keyToken is an index key as one subject token: the key itself when it
// holds only letters, digits and -_/=, else "~" and its base64url.
func keyToken(key []byte) string {
	if len(key) > 0 && plainKey(key) {
		return string(key)
	}
	return "~" + base64.RawURLEncoding.EncodeToString(key)
}

func plainKey(key []byte) bool {
	for _, c := range key {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '/', c == '=':
		default:
			return false
		}
	}
	return true
}

// tokenKey inverts keyToken.
func tokenKey(tok string) ([]byte, error) {
	if b64, ok := strings.CutPrefix(tok, "~"); ok {
		return base64.RawURLEncoding.DecodeString(b64)
	}
	if tok == "" {
		return nil, errors.New("cluster: empty key token")
	}
	return []byte(tok), nil
}
