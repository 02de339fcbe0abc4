package http

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

// DurableIdempotency is the IdempotencyStore of the running service: a
// completed answer is kept in the Pebble store, so a client that retries
// after a restart still gets the first answer instead of a second order.
// Claims of requests in flight are kept in memory only: a restart ends every
// request in flight, and its client sees a failed request it may retry.
//
// Key: "idem/" + scope (API key id) + "/" + hex SHA-256 of the
// Idempotency-Key. Value: version byte 1, 32-byte request fingerprint,
// 8-byte big-endian expiry (unix seconds), 2-byte status, 2-byte length and
// the content type, then the body.
//
// The answer is stored after the request's own changes are durable, so a
// crash between the two can still let a retry run the request again; the
// spec's other guards (one registration per email, one check-in per door)
// keep such a retry harmless for the operations that matter most.
type DurableIdempotency struct {
	store *persistence.Store
	ttl   time.Duration
	log   func(msg string, args ...any)

	mu       sync.Mutex
	inflight map[string][32]byte // claimed key -> request fingerprint
}

const idemPrefix = "idem/"

// NewDurableIdempotency keeps answers in store for ttl.
func NewDurableIdempotency(store *persistence.Store, ttl time.Duration, log func(string, ...any)) *DurableIdempotency {
	if log == nil {
		log = func(string, ...any) {}
	}
	return &DurableIdempotency{store: store, ttl: ttl, log: log, inflight: map[string][32]byte{}}
}

func durableKey(scope, key string) string {
	h := sha256.Sum256([]byte(key))
	return idemPrefix + scope + "/" + hex.EncodeToString(h[:])
}

// Begin implements IdempotencyStore.
func (d *DurableIdempotency) Begin(scope, key string, fp [32]byte, now time.Time) (IdemState, *StoredResponse) {
	k := durableKey(scope, key)
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.inflight[k]; ok {
		return IdemInFlight, nil
	}
	v, ok, err := d.store.Get([]byte(k))
	if err != nil {
		d.log("idempotency: read failed", "err", err)
	} else if ok {
		if gotFP, exp, resp, err := decodeIdem(v); err == nil && now.Before(exp) {
			if gotFP != fp {
				return IdemMismatch, nil
			}
			return IdemReplay, resp
		}
	}
	d.inflight[k] = fp
	return IdemNew, nil
}

// Finish implements IdempotencyStore: it stores a completed answer under
// the fingerprint its claim was made with.
func (d *DurableIdempotency) Finish(scope, key string, resp *StoredResponse, now time.Time) {
	k := durableKey(scope, key)
	d.mu.Lock()
	fp, claimed := d.inflight[k]
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.inflight, k)
		d.mu.Unlock()
	}()
	if resp == nil || !claimed {
		return
	}
	b := d.store.NewBatch()
	defer b.Close()
	b.Put([]byte(k), encodeIdem(fp, now.Add(d.ttl), resp))
	if err := d.store.Commit(b); err != nil {
		d.log("idempotency: store failed", "err", err)
	}
}

// Sweep deletes expired answers; the service calls it now and then.
func (d *DurableIdempotency) Sweep(now time.Time) (int, error) {
	var dead [][]byte
	err := d.store.Scan([]byte(idemPrefix), func(k, v []byte) error {
		if _, exp, _, err := decodeIdem(v); err != nil || !now.Before(exp) {
			dead = append(dead, bytes.Clone(k))
		}
		return nil
	})
	if err != nil || len(dead) == 0 {
		return 0, err
	}
	b := d.store.NewBatch()
	defer b.Close()
	for _, k := range dead {
		b.Delete(k)
	}
	return len(dead), d.store.Commit(b)
}

func encodeIdem(fp [32]byte, exp time.Time, r *StoredResponse) []byte {
	out := make([]byte, 0, 1+32+8+2+2+len(r.ContentType)+len(r.Body))
	out = append(out, 1)
	out = append(out, fp[:]...)
	out = binary.BigEndian.AppendUint64(out, uint64(exp.Unix()))
	out = binary.BigEndian.AppendUint16(out, uint16(r.Status))
	out = binary.BigEndian.AppendUint16(out, uint16(len(r.ContentType)))
	out = append(out, r.ContentType...)
	return append(out, r.Body...)
}

var errBadIdem = errors.New("http: bad idempotency record")

func decodeIdem(v []byte) (fp [32]byte, exp time.Time, r *StoredResponse, err error) {
	if len(v) < 1+32+8+2+2 || v[0] != 1 {
		return fp, exp, nil, errBadIdem
	}
	copy(fp[:], v[1:33])
	exp = time.Unix(int64(binary.BigEndian.Uint64(v[33:41])), 0)
	status := int(binary.BigEndian.Uint16(v[41:43]))
	n := int(binary.BigEndian.Uint16(v[43:45]))
	if len(v) < 45+n {
		return fp, exp, nil, errBadIdem
	}
	return fp, exp, &StoredResponse{Status: status, ContentType: string(v[45 : 45+n]), Body: bytes.Clone(v[45+n:])}, nil
}
