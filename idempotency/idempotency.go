package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"ticketd/persistence"
)

// State is the outcome of Store.Begin.
type State int

const (
	// New: the caller owns the key and must call Finish.
	New State = iota
	// Replay: a completed answer exists for the same request.
	Replay
	// Mismatch: the key was used for a different request (422).
	Mismatch
	// InFlight: the first request with this key is still running (409).
	InFlight
	// Unavailable: the store of the keys cannot be reached, so whether
	// the key was used is unknown (503: the request does not run; the
	// client retries with the same key).
	Unavailable
)

// StoredResponse is a completed answer kept for replay.
type StoredResponse struct {
	Status      int
	ContentType string
	Body        []byte
	// Durable: the answer was committed with the write it answers (see
	// RecordingStore); Finish need not store it again.
	Durable bool
}

// Store remembers answers by (scope, key) for a while. Scope is the API
// key id, so two keys never see each other's answers.
type Store interface {
	// Begin claims (scope, key) for a request with fingerprint fp, or
	// reports why it cannot; with Replay it returns the stored answer.
	Begin(scope, key string, fp [32]byte, now time.Time) (State, *StoredResponse)
	// Finish stores the answer of a claimed key; resp nil releases the
	// claim without storing (5xx: the client may retry with the same key).
	Finish(scope, key string, resp *StoredResponse, now time.Time)
}

// RecordingStore is a Store whose answers a write commits in its own
// batch (decisions §20, exactly once): the write's actor puts the key's
// record (RecordKey, the answer encoded by EncodeRecord) beside the
// write's changes, so the key and the write are durable together or not
// at all, and the actor looks for the record before deciding a request
// again (see ask.Recorder).
type RecordingStore interface {
	Store
	// TTL is how long a key's answer is kept.
	TTL() time.Duration
	// Hold keeps (scope, key) claimed until until: the request answered
	// 5xx while a write it asked for may still commit (an ask that timed
	// out, an owner lost); a retry meanwhile answers 409, after it the
	// request runs again and meets the write's record if there is one.
	Hold(scope, key string, until time.Time)
	// Retried reports whether the key this node holds was claimed before
	// by a request whose write may have been made (a hold that ended, a
	// stale or released claim): only then does the write's actor look for
	// its record before deciding (a key never claimed has none anywhere).
	Retried(scope, key string) bool
}

// OriginStore is a Store that knows when a key it holds was first
// claimed (cluster/shared.Idempotency: a claim that replaces the stale or
// released claim of the same request keeps its origin).
type OriginStore interface {
	Origin(scope, key string) time.Time
}

// Prefix starts the index keys of the records.
const Prefix = persistence.PrefixIdempotency

// DurableKey is the index key of the record of (scope, key): Prefix +
// scope + "/" + hex SHA-256 of the key.
func DurableKey(scope, key string) string {
	h := sha256.Sum256([]byte(key))
	return Prefix + scope + "/" + hex.EncodeToString(h[:])
}

// RecordKey is DurableKey as bytes.
func RecordKey(scope, key string) []byte { return []byte(DurableKey(scope, key)) }

// KeyedWrite is the record a write commits for its Idempotency-Key, in
// the form another node can remake it from (cluster mode forwards it with
// the request to the event's owner): the record's key, the request's
// fingerprint, the answer's expiry and status. Its answer is the write's
// result itself, encoded as the pipeline encodes a handler's result; or
// the view of it named View; or Fixed.
type KeyedWrite struct {
	Key     []byte
	FP      [32]byte
	Expires time.Time
	Status  int
	// Retried: the key was claimed before (RecordingStore.Retried), so
	// the actor looks for its record first.
	Retried bool
	// View, when set, names the view of the result that is the answer
	// (RegisterView: a refund's start answers the order of its
	// event.RefundStart).
	View string
	// Fixed, when set, is the answer whatever the result: one the
	// request knew before the write (a refusal's envelope that a refund's
	// failed outcome records).
	Fixed *StoredResponse
}

// views are the named views of a write's result (RegisterView).
var views sync.Map // name -> func(any) any

// RegisterView names view, a function from a write's result to the
// answer a KeyedWrite with that View records; a package registers its
// views at init, so every node of a cluster knows them.
func RegisterView(name string, view func(result any) any) {
	if _, dup := views.LoadOrStore(name, view); dup {
		panic("idempotency: view " + name + " registered twice")
	}
}

// ViewOf returns the view registered as name, nil when none is.
func ViewOf(name string) func(result any) any {
	v, ok := views.Load(name)
	if !ok {
		return nil
	}
	return v.(func(any) any)
}

// RecordOf is the record w makes of a write's result, with encode the
// pipeline's encoding of an answer; nil when it cannot be made (an
// unknown view, a result encode refuses): then nothing is recorded.
func (w *KeyedWrite) RecordOf(result any, encode func(any) ([]byte, bool)) []byte {
	if w.Fixed != nil {
		return EncodeRecord(w.FP, w.Expires, w.Fixed)
	}
	if w.View != "" {
		view := ViewOf(w.View)
		if view == nil {
			return nil
		}
		result = view(result)
	}
	body, ok := encode(result)
	if !ok {
		return nil
	}
	return w.Record(body)
}

// Answer is the answer whose body is body, the write's result encoded.
func (w *KeyedWrite) Answer(body []byte) *StoredResponse {
	return &StoredResponse{Status: w.Status, ContentType: "application/json", Body: body, Durable: true}
}

// Record is the record of the answer whose body is body.
func (w *KeyedWrite) Record(body []byte) []byte {
	return EncodeRecord(w.FP, w.Expires, w.Answer(body))
}

// Live reports whether a record still answers (not expired, by the
// clock of the node that reads it).
func Live(value []byte) bool {
	_, exp, _, err := DecodeRecord(value)
	return err == nil && time.Now().Before(exp)
}

// EncodeRecord is the record of answer r to the request fp, kept until
// exp (see the package doc).
func EncodeRecord(fp [32]byte, exp time.Time, r *StoredResponse) []byte {
	out := make([]byte, 0, 1+32+8+2+2+len(r.ContentType)+len(r.Body))
	out = append(out, 1)
	out = append(out, fp[:]...)
	out = binary.BigEndian.AppendUint64(out, uint64(exp.Unix()))
	out = binary.BigEndian.AppendUint16(out, uint16(r.Status))
	out = binary.BigEndian.AppendUint16(out, uint16(len(r.ContentType)))
	out = append(out, r.ContentType...)
	return append(out, r.Body...)
}

// ErrBadRecord is answered for bytes that are not a record.
var ErrBadRecord = errors.New("idempotency: bad record")

// DecodeRecord reads a record EncodeRecord made.
func DecodeRecord(v []byte) (fp [32]byte, exp time.Time, r *StoredResponse, err error) {
	if len(v) < 1+32+8+2+2 || v[0] != 1 {
		return fp, exp, nil, ErrBadRecord
	}
	copy(fp[:], v[1:33])
	exp = time.Unix(int64(binary.BigEndian.Uint64(v[33:41])), 0)
	status := int(binary.BigEndian.Uint16(v[41:43]))
	n := int(binary.BigEndian.Uint16(v[43:45]))
	if len(v) < 45+n {
		return fp, exp, nil, ErrBadRecord
	}
	return fp, exp, &StoredResponse{Status: status, ContentType: string(v[45 : 45+n]), Body: bytes.Clone(v[45+n:])}, nil
}
