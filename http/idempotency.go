package http

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"sync"
	"time"

	"ticketd/idempotency"
)

// fingerprint identifies a request for idempotency: method, path and body.
// A JSON body counts by its meaning, not its bytes: the same document with
// other key order, spacing, string escapes or number spelling (18.5 and
// 18.50) is the same request, since retry layers re-serialise bodies. A body
// that is not JSON counts by its bytes.
func fingerprint(method, path, body []byte) [32]byte {
	h := sha256.New()
	h.Write(method)
	h.Write([]byte{0})
	h.Write(path)
	h.Write([]byte{0})
	if c, ok := canonicalJSON(body); ok {
		h.Write([]byte{1})
		h.Write(c)
	} else {
		h.Write([]byte{0})
		h.Write(body)
	}
	var fp [32]byte
	h.Sum(fp[:0])
	return fp
}

// MemoryIdempotency is an in-memory IdempotencyStore bounded by entry count
// and stored bytes; the oldest entries go first. Safe for concurrent use.
type MemoryIdempotency struct {
	mu         sync.Mutex
	ttl        time.Duration
	maxEntries int
	maxBytes   int
	bytes      int
	byKey      map[idemKey]*list.Element
	order      *list.List // of *idemEntry, oldest first
}

type idemKey struct{ scope, key string }

type idemEntry struct {
	k       idemKey
	fp      [32]byte
	done    bool
	resp    *idempotency.StoredResponse
	expires time.Time
}

// NewMemoryIdempotency returns a store keeping answers for ttl, at most
// maxEntries of them and maxBytes of bodies.
func NewMemoryIdempotency(ttl time.Duration, maxEntries, maxBytes int) *MemoryIdempotency {
	return &MemoryIdempotency{
		ttl: ttl, maxEntries: maxEntries, maxBytes: maxBytes,
		byKey: map[idemKey]*list.Element{}, order: list.New(),
	}
}

// Begin implements IdempotencyStore.
func (m *MemoryIdempotency) Begin(scope, key string, fp [32]byte, now time.Time) (idempotency.State, *idempotency.StoredResponse) {
	k := idemKey{scope, key}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evict(now)
	if el, ok := m.byKey[k]; ok {
		e := el.Value.(*idemEntry)
		switch {
		case e.fp != fp:
			return idempotency.Mismatch, nil
		case !e.done:
			return idempotency.InFlight, nil
		default:
			return idempotency.Replay, e.resp
		}
	}
	e := &idemEntry{k: k, fp: fp, expires: now.Add(m.ttl)}
	m.byKey[k] = m.order.PushBack(e)
	return idempotency.New, nil
}

// Finish implements IdempotencyStore.
func (m *MemoryIdempotency) Finish(scope, key string, resp *idempotency.StoredResponse, now time.Time) {
	k := idemKey{scope, key}
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byKey[k]
	if !ok {
		return // evicted while in flight
	}
	e := el.Value.(*idemEntry)
	if resp == nil {
		m.remove(el)
		return
	}
	e.done, e.resp = true, resp
	m.bytes += len(resp.Body)
	m.evict(now)
}

// evict drops expired entries and, while over a bound, the oldest ones.
func (m *MemoryIdempotency) evict(now time.Time) {
	for el := m.order.Front(); el != nil; el = m.order.Front() {
		e := el.Value.(*idemEntry)
		if now.Before(e.expires) && m.order.Len() <= m.maxEntries && m.bytes <= m.maxBytes {
			return
		}
		m.remove(el)
	}
}

func (m *MemoryIdempotency) remove(el *list.Element) {
	e := m.order.Remove(el).(*idemEntry)
	delete(m.byKey, e.k)
	if e.resp != nil {
		m.bytes -= len(e.resp.Body)
	}
}

// canonicalJSON writes body as canonical JSON: object keys sorted, no
// spacing, strings re-escaped one way, numbers as exact reduced fractions.
// ok is false when body is not one JSON value.
func canonicalJSON(body []byte) (out []byte, ok bool) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	if len(bytes.TrimSpace(body[d.InputOffset():])) > 0 {
		return nil, false // trailing data
	}
	return appendCanonical(nil, v), true
}

func appendCanonical(b []byte, v any) []byte {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, k)
			b = append(b, ':')
			b = appendCanonical(b, v[k])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, e)
		}
		return append(b, ']')
	case string:
		return strconv.AppendQuote(b, v)
	case json.Number:
		// An exponent could ask big.Rat for a huge number: such literals,
		// which no field of the API needs, count as written.
		if bytes.ContainsAny([]byte(v), "eE") || len(v) > 64 {
			return append(b, v...)
		}
		if r, ok := new(big.Rat).SetString(string(v)); ok {
			return append(b, r.RatString()...)
		}
		return append(b, v...)
	case bool:
		return strconv.AppendBool(b, v)
	default: // nil
		return append(b, "null"...)
	}
}
