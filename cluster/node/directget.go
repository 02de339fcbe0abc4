package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Reads of a subject's messages in bulk. A replay used to ask the stream
// leader for one message per request (the message-get API), a request's
// cost per message (measured: bench/results/20261129-cluster-history.md). JetStream's
// batched direct get ($JS.API.DIRECT.GET.<stream> with "batch") streams
// many messages to one inbox for one request, ended by a status-204
// message (EOB). Any replica subscribed to direct gets may answer it:
// the server picks one of the stream's replicas at random for a client's
// request (its preference for a local queue subscriber holds only for a
// message that came over a route). A replica that does not answer at
// all, a node paused (SIGSTOP) whose routes are still open, is asked
// again after directFirstWait: another pick (the route to a node that
// stays silent is closed after routePingsOut route pings, node.go, and
// its replicas are no longer picked). One that has not applied the last
// messages yet
// answers fewer, or none (404): a read through end, the subject's last
// message according to its leader, asks again from the next sequence and,
// when a batch brings nothing new below end, asks the leader for that
// message, so the read is exactly what a read one message at a time from
// the leader gives. A replica's state is a prefix of the stream's (Raft
// applies in order, sequences only grow), so a message it answers as the
// next one of the subject has no other message of the subject before it
// but those purged.
const (
	// DirectBatch bounds the messages of one batched direct get.
	DirectBatch = 1024
	// DirectBatchBytes bounds its bytes: the server stops once it has sent
	// this much, so a batch is at most this plus one message.
	DirectBatchBytes = 8 << 20
	// directFirstWait bounds the wait for a direct get's first answer
	// before it is asked again: a replica sends its first message within
	// milliseconds; one that sends nothing is paused or gone. Asking again
	// only costs the work of a late answer, which nobody reads; each ask
	// again waits twice as long as the one before, so a replica slow
	// rather than silent (a saturated machine) still gets to answer.
	directFirstWait = 500 * time.Millisecond
	// leaderFirstWait bounds the wait for a stream leader's answer to a
	// message get before it is asked again (LeaderGet), doubling up to
	// leaderMaxWait: a leader answers within milliseconds; a stream with
	// none answers nothing until one is elected (seconds).
	leaderFirstWait = time.Second
	leaderMaxWait   = 4 * time.Second
	// leaderRetryPause spaces the asks nobody was subscribed to hear.
	leaderRetryPause = 100 * time.Millisecond
)

// MsgGetRequest is the JSON of the message-get APIs (JSApiMsgGetRequest).
type MsgGetRequest struct {
	Seq      uint64 `json:"seq,omitempty"`
	LastFor  string `json:"last_by_subj,omitempty"`
	NextFor  string `json:"next_by_subj,omitempty"`
	Batch    int    `json:"batch,omitempty"`
	MaxBytes int    `json:"max_bytes,omitempty"`
}

// msgGetResponse is the leader's answer (JSApiMsgGetResponse).
type msgGetResponse struct {
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error,omitempty"`
	Message *struct {
		Subject string    `json:"subject"`
		Seq     uint64    `json:"seq"`
		Header  []byte    `json:"hdrs,omitempty"`
		Data    []byte    `json:"data,omitempty"`
		Time    time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// LeaderGet asks stream's leader for one message (the message-get API,
// never a replica): nats.go's Stream.GetMsg switches to a direct get,
// which a replica may answer, on a stream with AllowDirect. A message
// that does not exist (or was purged) is jetstream.ErrMsgNotFound.
//
// A stream without a leader (its leader lost, the election not over)
// answers nothing at all: each ask waits leaderFirstWait, doubling to
// leaderMaxWait, and is asked again until ctx ends, so a caller with a
// long deadline (a gained shard's activation: a minute) meets the new
// leader within a wait of its election instead of waiting out its whole
// deadline on the first ask (seen: TestStuckWebhookReleasesTrim, an
// owed-entries import that gave up after 60 s).
func LeaderGet(ctx context.Context, nc *nats.Conn, stream string, req MsgGetRequest) (*jetstream.RawStreamMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var reply *nats.Msg
	for wait := leaderFirstWait; ; wait = min(2*wait, leaderMaxWait) {
		try, cancel := context.WithTimeoutCause(ctx, wait, errSilent)
		reply, err = nc.RequestWithContext(try, "$JS.API.STREAM.MSG.GET."+stream, body)
		cancel()
		if err == nil || ctx.Err() != nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrNoResponders)) {
			break
		}
		if errors.Is(err, nats.ErrNoResponders) {
			// Nobody subscribed (a node starting): asked again soon.
			select {
			case <-ctx.Done():
			case <-time.After(leaderRetryPause):
			}
		}
	}
	if err != nil {
		return nil, err
	}
	var resp msgGetResponse
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("cluster: message get of %s: %w", stream, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrCode == int(jetstream.JSErrCodeMessageNotFound) {
			return nil, jetstream.ErrMsgNotFound
		}
		if resp.Error.ErrCode == jsClusterNotAvail {
			return nil, fmt.Errorf("cluster: message get of %s: %w", stream, ErrNoMetaLeader)
		}
		return nil, fmt.Errorf("cluster: message get of %s: %s (%d)", stream, resp.Error.Description, resp.Error.ErrCode)
	}
	if resp.Message == nil {
		return nil, fmt.Errorf("cluster: message get of %s: empty answer", stream)
	}
	m := &jetstream.RawStreamMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Seq,
		Data: resp.Message.Data, Time: resp.Message.Time}
	if len(resp.Message.Header) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("cluster: message get of %s: %w", stream, err)
		}
	}
	return m, nil
}

// jsClusterNotAvail is JetStream's "temporarily unavailable" (10008): the
// message-get API's answer while the cluster has no meta leader, even
// from a stream leader that is there.
const jsClusterNotAvail = 10008

// ErrNoMetaLeader is a leader's message get refused for want of a meta
// leader (a paused or lost node led the meta group).
var ErrNoMetaLeader = errors.New("no JetStream meta leader")

// LeaderLast is the stream sequence of subject's last message according
// to stream's leader (0: none). While the cluster has no meta leader, the
// leader's API refuses, and a replica answers instead (directLast): it
// may lag the leader, which only ever costs a retry, since every use of
// this sequence is fenced (a replay's end before a claim, a writer's base:
// a claim or append expecting a stale last sequence is refused, and the
// tail is read again), and a view that stops short reads more later.
func LeaderLast(ctx context.Context, nc *nats.Conn, stream, subject string) (uint64, error) {
	m, err := LeaderGet(ctx, nc, stream, MsgGetRequest{LastFor: subject})
	if errors.Is(err, ErrNoMetaLeader) {
		m, err = DirectLast(ctx, nc, stream, subject)
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

// errNoDirect is a direct get nobody answered: the stream has no
// AllowDirect (yet), or no replica is current enough to serve it.
var errNoDirect = errors.New("cluster: no direct get responder")

// DirectGet asks any replica of stream for up to batch messages of
// subject from sequence from on (at most maxBytes, plus one message), in
// order. None (a nil slice, no error) means the replica that answered has
// no message of subject at or after from.
// A replica silent for directFirstWait is asked again (see the top of
// this file) until ctx ends.
func DirectGet(ctx context.Context, nc *nats.Conn, stream, subject string, from uint64, batch, maxBytes int) ([]*jetstream.RawStreamMsg, error) {
	body, err := json.Marshal(MsgGetRequest{Seq: from, NextFor: subject, Batch: batch, MaxBytes: maxBytes})
	if err != nil {
		return nil, err
	}
	for wait := directFirstWait; ; wait *= 2 {
		msgs, err := directGetOnce(ctx, nc, stream, subject, from, batch, maxBytes, body, wait)
		if !errors.Is(err, errSilent) || ctx.Err() != nil {
			return msgs, err
		}
	}
}

// errSilent is a direct get whose replica sent nothing within
// directFirstWait.
var errSilent = errors.New("cluster: direct get unanswered")

func directGetOnce(ctx context.Context, nc *nats.Conn, stream, subject string, from uint64, batch, maxBytes int, body []byte, firstWait time.Duration) ([]*jetstream.RawStreamMsg, error) {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	// At most batch messages of up to maxMessageBytes each wait in it.
	if err := sub.SetPendingLimits(batch+1, maxBytes+2*MaxMessageBytes); err != nil {
		return nil, err
	}
	if err := nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, body); err != nil {
		return nil, err
	}
	first, cancel := context.WithTimeoutCause(ctx, firstWait, errSilent)
	defer cancel()
	wait := first
	var out []*jetstream.RawStreamMsg
	for {
		m, err := sub.NextMsgWithContext(wait)
		if err != nil {
			if errors.Is(context.Cause(wait), errSilent) && ctx.Err() == nil {
				return nil, errSilent
			}
			return nil, fmt.Errorf("cluster: direct get of %s from %d: %w", subject, from, err)
		}
		wait = ctx // answered: the rest of the batch follows
		if status := m.Header.Get("Status"); status != "" {
			switch status {
			case "204": // end of the batch
				return out, nil
			case "404":
				return out, nil
			case "503":
				return nil, errNoDirect
			default:
				return nil, fmt.Errorf("cluster: direct get of %s from %d: %s %s", subject, from, status, m.Header.Get("Description"))
			}
		}
		seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cluster: direct get of %s from %d: bad sequence header: %w", subject, from, err)
		}
		out = append(out, &jetstream.RawStreamMsg{Subject: m.Header.Get(jetstream.SubjectHeader), Sequence: seq,
			Header: m.Header, Data: m.Data})
		if len(out) > batch {
			return nil, fmt.Errorf("cluster: direct get of %s from %d: more than %d messages", subject, from, batch)
		}
	}
}

// ReadThrough calls fn for the messages of subject in stream from
// sequence from through end (the subject's last message according to the
// leader), in order, each once: batched direct gets, and the leader for a
// message no replica that answered had yet. A message the leader does
// not have either was purged with every one before it (the shard log is
// purged from its start): the read ends there, like a read one message at
// a time. Each request has its own try; ctx bounds the whole read.
// With direct false it asks the leader for every message.
func ReadThrough(ctx context.Context, nc *nats.Conn, stream, subject string, from, end uint64, try time.Duration,
	direct bool, fn func(*jetstream.RawStreamMsg) error) error {
	for next := from; next <= end; {
		if direct {
			tctx, cancel := context.WithTimeout(ctx, try)
			msgs, err := DirectGet(tctx, nc, stream, subject, next, DirectBatch, DirectBatchBytes)
			cancel()
			if errors.Is(err, errNoDirect) {
				// Not (yet) a direct-get stream: one message at a time.
				direct = false
			}
			took := false
			for _, m := range msgs {
				if m.Sequence < next {
					continue
				}
				if m.Sequence > end {
					return nil
				}
				next = m.Sequence + 1
				took = true
				if err := fn(m); err != nil {
					return err
				}
			}
			if took {
				continue
			}
		}
		// The replica that answered had nothing new below end (it lags),
		// or failed: the leader's message.
		tctx, cancel := context.WithTimeout(ctx, try)
		m, err := LeaderGet(tctx, nc, stream, MsgGetRequest{Seq: next, NextFor: subject})
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil // purged through end meanwhile
		}
		if err != nil {
			return fmt.Errorf("cluster: read %s from message %d: %w", subject, next, err)
		}
		if m.Sequence > end {
			return nil
		}
		next = m.Sequence + 1
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// DirectLast asks any replica of stream for
// subject's last message: a direct get by subject, which needs no
// stream leader, so it is answered while the stream elects one (a node
// lost or paused). A replica may lag: see its callers. A replica silent
// for directFirstWait is asked again until ctx ends.
func DirectLast(ctx context.Context, nc *nats.Conn, stream, subject string) (*jetstream.RawStreamMsg, error) {
	var m *nats.Msg
	var err error
	for wait := directFirstWait; ; wait *= 2 {
		try, cancel := context.WithTimeoutCause(ctx, wait, errSilent)
		m, err = nc.RequestWithContext(try, "$JS.API.DIRECT.GET."+stream+"."+subject, nil)
		silent := errors.Is(context.Cause(try), errSilent)
		cancel()
		if err == nil || !silent || ctx.Err() != nil {
			break
		}
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, errNoDirect
	}
	if err != nil {
		return nil, err
	}
	switch status := m.Header.Get("Status"); status {
	case "":
	case "404":
		return nil, jetstream.ErrMsgNotFound
	default:
		return nil, fmt.Errorf("cluster: direct get of %s: %s %s", subject, status, m.Header.Get("Description"))
	}
	seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("cluster: direct get of %s: bad sequence header: %w", subject, err)
	}
	return &jetstream.RawStreamMsg{Subject: subject, Sequence: seq, Header: m.Header, Data: m.Data}, nil
}
