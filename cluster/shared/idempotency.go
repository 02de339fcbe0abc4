package shared

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"ticketd/cluster/node"
	"ticketd/idempotency"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Idempotency keys in cluster mode: the stream TICKETD_IDEM, one subject
// per key, idem.<scope>.<hex SHA-256 of the key>, that keeps its last
// message only (a claim, then the answer) for the keys' TTL (the
// stream's MaxAge, so no sweep is needed).
const (
	idemStream = "TICKETD_IDEM"
	// idemClaimTTL is how long a claim stands without its answer: longer
	// than any request (an ask waits 10 s, a forwarded one 10 s more),
	// after which the claim of a node that died mid-request is taken over.
	idemClaimTTL = 2 * time.Minute
	// idemTimeout bounds the replicated reads and writes of one Begin or
	// Finish (an election takes 4 to 9 s).
	idemTimeout = 10 * time.Second
	// idemAttempts bounds Begin's claims that meet another node's.
	idemAttempts = 4
)

// Idempotency is the http.IdempotencyStore of cluster mode: claims and
// answers live on a majority of the nodes, so a retry reaching any node
// sees the first request, whether it is still running (409) or answered
// (the first answer).
//
// Begin claims a key with a message fenced on the subject being empty
// (or on the expired, released or stale entry it replaces): of two nodes
// claiming at once, one is refused and reads the other's claim. Finish
// replaces the claim with the answer, fenced on the claim, before the
// answer goes out; a failed request releases its key, or holds it a while
// when the write it asked for may still land (Hold).
//
// Exactly once (decisions §20): the answer here is only the fast path of
// a retry. The key's record is committed by the write itself, in the same
// shard message as the write's records (the event's owner puts it, from
// the http.KeyedWrite the forwarded request carries, as an index entry of
// the commit: see actors.Recorder), so it is replicated atomically with
// the write. The owner keeps it in its local store (the commit's index
// entries), a new owner imports it from the event's log with what the
// event owes (owed.take), and an event actor looks for it before
// deciding a keyed request. A record whose answer is not the result
// itself travels too when it can be named: a view registered by name
// (KeyedWrite.View: a refund's start answers its order) or an answer
// fixed before the write (KeyedWrite.Fixed: a refund's refusal), which
// the owner remakes. So when the request's node dies between the
// write and this answer (its claim goes stale), or the owner dies before
// answering (the request answers 503 and holds its key), or a 503 came
// from a timeout, the retry that claims the key again reaches the owner,
// which answers the record (Idempotent-Replayed) instead of writing
// again. A keyed event creation takes an id made from the key (see
// http.Ctx.KeyedID), so its retry reaches the same event.
//
// A retry that reaches a new owner before its import of the event's
// records (its first request activates the event, or the gain's
// activation has not reached it yet) is held until the owner has read
// them from the log (cluster/routing, keys.go): decided earlier, it made
// a second order, or answered a keyed creation 409 ALREADY_EXISTS, which
// then stood as the key's answer. What is left: a record whose log
// messages were trimmed before a second change of owner is gone from the
// log (this stream's answer remains, unless the request's node died
// before storing it). Webhook endpoint writes put their record with the
// endpoint in the shared index (Index.PutAtomic). Directory writes (units,
// keys, door devices) append their record with the change in one atomic
// batch of the directory's stream (Directory.AppendKeyed), and a retry of
// a key claimed before reads it from that stream's leader first.
//
// Value: version byte 1, kind ('c' claim, 'a' answer, 'r' released),
// 32-byte request fingerprint, 8-byte big-endian unix nanoseconds (the
// claim's time; for an answer its expiry), then for a claim and a release
// the 8-byte time of the key's first claim (its origin: a claim that
// replaces a stale or released one of the same request keeps it) and for
// a claim the name of the node that made it, for an answer 2-byte status,
// 2-byte content-type length, the content type and the body.
type Idempotency struct {
	n       *node.Node
	st      *node.ReplicatedStream
	ttl     time.Duration
	timeout time.Duration // of one Begin or Finish: idemTimeout (tests shorten it)

	mu     sync.Mutex
	claims map[string]idemClaim // subject -> this node's claim
}

// idemClaim is a claim this node made: its stream sequence (0: made
// unfenced) and request fingerprint.
type idemClaim struct {
	seq     uint64
	fp      [32]byte
	origin  time.Time
	retried bool // it replaced another claim of the key (Retried)
}

// NewIdempotency keeps answers on node n's cluster for ttl.
func NewIdempotency(n *node.Node, ttl time.Duration) *Idempotency {
	return &Idempotency{n: n, ttl: ttl, timeout: idemTimeout, claims: map[string]idemClaim{},
		st: node.NewReplicatedStream(n, jetstream.StreamConfig{Name: idemStream, Subjects: []string{"idem.>"},
			MaxMsgsPerSubject: 1, MaxAge: ttl})}
}

func idemSubject(scope, key string) string {
	h := sha256.Sum256([]byte(key))
	if scope == "" || !node.PlainKey([]byte(scope)) {
		s := sha256.Sum256([]byte(scope))
		scope = "~" + hex.EncodeToString(s[:8])
	}
	return "idem." + scope + "." + hex.EncodeToString(h[:])
}

// Begin implements http.IdempotencyStore.
func (x *Idempotency) Begin(scope, key string, fp [32]byte, now time.Time) (idempotency.State, *idempotency.StoredResponse) {
	subj := idemSubject(scope, key)
	ctx, cancel := context.WithTimeout(context.Background(), x.timeout)
	defer cancel()
	expected := uint64(0)
	origin := now // of the key's first claim (see Origin)
	for range idemAttempts {
		ack, err := x.st.Publish(ctx, node.FencedMsg(subj, subj+"."+nuid.Next(), expected, x.claimData(fp, now, origin)))
		if err == nil {
			// A claim that replaced another (released, stale, expired)
			// may follow a write that was made: its owner looks.
			x.claim(subj, idemClaim{seq: ack.Sequence, fp: fp, origin: origin, retried: expected != 0})
			return idempotency.New, nil
		}
		if !errors.Is(err, node.ErrConflict) {
			return x.unreachable(err)
		}
		last, err := x.st.Last(ctx, subj)
		if err != nil {
			return x.unreachable(err)
		}
		if last == nil {
			expected = 0 // expired meanwhile
			continue
		}
		kind, gotFP, at, resp, err := decodeIdem(last.Data)
		switch {
		case err != nil, kind == 'r',
			kind == 'a' && !now.Before(at),
			kind == 'c' && now.Sub(at) >= idemClaimTTL,
			kind == 'c' && x.claimerGone(last.Data):
			// Unreadable, released, expired, or the claim of a request
			// that can no longer be running (its node is gone): claim it
			// in its place. Its write, if made, is met at the event's
			// owner (see the type's doc).
			expected = last.Sequence
			origin = now
			if o, ok := claimOrigin(last.Data); ok && kind != 'a' && gotFP == fp {
				origin = o // the same request again: its first claim's
			}
			continue
		case gotFP != fp:
			return idempotency.Mismatch, nil
		case kind == 'c':
			return idempotency.InFlight, nil
		default:
			return idempotency.Replay, resp
		}
	}
	return idempotency.InFlight, nil
}

// unreachable answers a key whose stream could not be read or written
// within the timeout (no majority, or an election that outlasts it): the
// request does not run (503), since the key may have been answered
// already, and a retry with the same key gets that answer once the
// stream is back. Reads and writes retry what is transient until then
// (an election), so a lost node alone does not end here.
func (x *Idempotency) unreachable(err error) (idempotency.State, *idempotency.StoredResponse) {
	x.n.Config().Logger.Warn("cluster: idempotency keys unreachable; the request is refused", "err", err)
	return idempotency.Unavailable, nil
}

func (x *Idempotency) claim(subj string, c idemClaim) {
	x.mu.Lock()
	x.claims[subj] = c
	x.mu.Unlock()
}

// Retried implements http.RecordingStore.
func (x *Idempotency) Retried(scope, key string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.claims[idemSubject(scope, key)].retried
}

// Origin implements http.OriginStore: the time of the first claim of a
// key this node holds, carried over by the claims that replace a stale or
// released claim of the same request; zero when not held here.
func (x *Idempotency) Origin(scope, key string) time.Time {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.claims[idemSubject(scope, key)].origin
}

// Finish implements http.IdempotencyStore.
func (x *Idempotency) Finish(scope, key string, resp *idempotency.StoredResponse, now time.Time) {
	subj := idemSubject(scope, key)
	x.mu.Lock()
	c, ok := x.claims[subj]
	delete(x.claims, subj)
	x.mu.Unlock()
	if !ok {
		return
	}
	data := appendOrigin(encodeIdem('r', c.fp, now, nil), c.origin)
	if resp != nil {
		data = encodeIdem('a', c.fp, now.Add(x.ttl), resp)
	}
	m := node.FencedMsg(subj, subj+"."+nuid.Next(), c.seq, data)
	if c.seq == 0 {
		m.Header.Del(jetstream.ExpectedLastSubjSeqHeader)
	}
	ctx, cancel := context.WithTimeout(context.Background(), x.timeout)
	defer cancel()
	if _, err := x.st.Publish(ctx, m); err != nil {
		x.n.Config().Logger.Error("cluster: idempotency answer not stored", "err", err)
	}
}

// TTL implements http.RecordingStore.
func (x *Idempotency) TTL() time.Duration { return x.ttl }

// Hold implements http.RecordingStore: the claim is stored again, fenced
// on itself, dated so that it goes stale at until (a claim stands
// idemClaimTTL from its time), instead of being released; a retry then
// answers 409 until then, and after it runs again, to meet the write's
// record at the event's owner if the write was made (actors.Recorder).
func (x *Idempotency) Hold(scope, key string, until time.Time) {
	subj := idemSubject(scope, key)
	x.mu.Lock()
	c, ok := x.claims[subj]
	delete(x.claims, subj)
	x.mu.Unlock()
	if !ok {
		return
	}
	m := node.FencedMsg(subj, subj+"."+nuid.Next(), c.seq, x.claimData(c.fp, until.Add(-idemClaimTTL), c.origin))
	if c.seq == 0 {
		m.Header.Del(jetstream.ExpectedLastSubjSeqHeader)
	}
	ctx, cancel := context.WithTimeout(context.Background(), x.timeout)
	defer cancel()
	if _, err := x.st.Publish(ctx, m); err != nil {
		x.n.Config().Logger.Warn("cluster: idempotency hold not stored; the claim stands as made", "err", err)
	}
}

// claimData is a claim of this node's, dated at, of a key first claimed
// at origin.
func (x *Idempotency) claimData(fp [32]byte, at, origin time.Time) []byte {
	return append(appendOrigin(encodeIdem('c', fp, at, nil), origin), x.n.Config().NodeName...)
}

func appendOrigin(b []byte, origin time.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(origin.UnixNano()))
}

// claimOrigin reads the origin of a claim or release.
func claimOrigin(data []byte) (time.Time, bool) {
	if len(data) < idemClaimLen+8 || (data[1] != 'c' && data[1] != 'r') {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(data[idemClaimLen:]))), true
}

// claimerGone reports whether the node that made claim data (its name
// follows the claim's fields and origin) has been silent for peerStale:
// the request it ran died with it.
func (x *Idempotency) claimerGone(data []byte) bool {
	if len(data) <= idemClaimLen+8 {
		return false
	}
	name := string(data[idemClaimLen+8:])
	return name != x.n.Config().NodeName && x.n.SilentFor(name, node.PeerStale)
}

// idemClaimLen is the length of a claim's fields before its origin.
const idemClaimLen = 1 + 1 + 32 + 8

func encodeIdem(kind byte, fp [32]byte, t time.Time, r *idempotency.StoredResponse) []byte {
	n := 1 + 1 + 32 + 8
	if r != nil {
		n += 4 + len(r.ContentType) + len(r.Body)
	}
	out := make([]byte, 0, n)
	out = append(out, 1, kind)
	out = append(out, fp[:]...)
	out = binary.BigEndian.AppendUint64(out, uint64(t.UnixNano()))
	if r != nil {
		out = binary.BigEndian.AppendUint16(out, uint16(r.Status))
		out = binary.BigEndian.AppendUint16(out, uint16(len(r.ContentType)))
		out = append(out, r.ContentType...)
		out = append(out, r.Body...)
	}
	return out
}

var errBadIdem = errors.New("cluster: bad idempotency record")

func decodeIdem(v []byte) (kind byte, fp [32]byte, t time.Time, r *idempotency.StoredResponse, err error) {
	if len(v) < 2+32+8 || v[0] != 1 {
		return 0, fp, t, nil, errBadIdem
	}
	kind = v[1]
	copy(fp[:], v[2:34])
	t = time.Unix(0, int64(binary.BigEndian.Uint64(v[34:42])))
	if kind != 'a' {
		return kind, fp, t, nil, nil
	}
	if len(v) < 46 {
		return 0, fp, t, nil, errBadIdem
	}
	status := int(binary.BigEndian.Uint16(v[42:44]))
	n := int(binary.BigEndian.Uint16(v[44:46]))
	if len(v) < 46+n {
		return 0, fp, t, nil, errBadIdem
	}
	return kind, fp, t, &idempotency.StoredResponse{Status: status, ContentType: string(v[46 : 46+n]), Body: bytes.Clone(v[46+n:])}, nil
}

var (
	_ idempotency.RecordingStore = (*Idempotency)(nil)
	_ idempotency.OriginStore    = (*Idempotency)(nil)
)
