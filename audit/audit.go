package audit

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/s2"

	"ticketd/event"
	"ticketd/persistence"
)

// Defaults and bounds of the audit log.
const (
	DefaultRetention = 90 * 24 * time.Hour
	// auditFlushDelay bounds how long a recorded entry waits in memory
	// before its batch is committed; auditFlushMax entries commit at once.
	auditFlushDelay = 100 * time.Millisecond
	auditFlushMax   = 256
	// auditBufferMax bounds the entries waiting in memory when the store
	// fails: beyond it new entries are dropped (and logged).
	auditBufferMax = 10_000
	// BodyMax bounds the bytes kept of a before or after record.
	BodyMax = 16 << 10
	// auditPruneEvery is how often expired entries are deleted, and
	// auditPruneMax bounds the deletes of one prune.
	auditPruneEvery = time.Hour
	auditPruneMax   = 10_000
	auditPrefix     = persistence.PrefixAudit
)

// AuditEntry is one change in a business unit's audit log.
type AuditEntry struct {
	ID          string            `json:"id"`
	UnitID      string            `json:"unitId"`
	Actor       string            `json:"actor" doc:"The API key id, \"admin\" for the admin API and the operator in the console, or the console member's id."`
	ActorType   string            `json:"actorType" v:"enum=secret|admin|member"`
	OperationID string            `json:"operationId"`
	Method      string            `json:"method"`
	Route       string            `json:"route"`
	Path        string            `json:"path"`
	TargetIDs   map[string]string `json:"targetIds" doc:"The path parameters of the request (e.g. eventId)."`
	Status      int               `json:"status"`
	Before      json.RawMessage   `json:"before" doc:"For PATCH, PUT and DELETE: the record as the same path's GET answered just before the write; null when there is none."`
	After       json.RawMessage   `json:"after" doc:"The response body of the write (secrets redacted); null for 204."`
	RequestID   string            `json:"requestId"`
	CreatedAt   event.Time        `json:"createdAt"`
}

// Log is the organization audit log: every successful change made
// through the Developer API or the console, per business unit, durable in
// Pebble and bounded by a retention.
//
// Recording is cheap: an entry is appended to a buffer; a timer commits
// the buffer as one batch (one fsync) within auditFlushDelay, or at once
// when auditFlushMax entries wait. So an entry is durable within about
// 100 ms of the response, not before it: a crash in that window loses the
// last entries (documented trade-off: an fsync per write would double the
// latency of every change). Safe for concurrent use.
//
// Storage: a flush writes each business unit's entries as one chunk (at
// most auditFlushMax entries), newest first. Key: "audit/" + unit id + "/"
// + the suffix of the chunk's newest entry: 16 hex digits of (2^64-1 -
// unix nanoseconds) + "-" + 8 hex digits of a per-process counter, so a
// forward scan of a unit's prefix reads newest first. Value: the byte
// auditChunkVersion, then an S2 block of the entries, each a uvarint
// length and the JSON AuditEntry with "v":1. An entry's id is "aud_" +
// the chunk's suffix + "-" + 4 hex digits of its place in the chunk, so
// ids order as the scan reads. One key per entry (the layout before
// chunks, value the JSON itself) is still read. A check-in burst audits
// every scan with its answer (~0.8 KB): one key and about a fifth of the
// bytes per 256 entries instead of 256 keys kept the audit log from being
// most of what the WAL, the memtable flushes and the compactions carried.
type Log struct {
	store     *persistence.Store
	retention time.Duration
	log       *slog.Logger
	now       func() time.Time

	mu        sync.Mutex
	buf       []auditRecord
	timer     *time.Timer
	seq       uint32
	lastPrune time.Time
	closed    bool
	flushMu   sync.Mutex // one flush at a time, so batches commit in order
	share     func(keys, values [][]byte, ttl time.Duration) error
}

// auditRecord is a buffered entry and its place in the process's order.
type auditRecord struct {
	e   AuditEntry
	seq uint32
}

// auditChunkVersion is the first byte of a chunk value (a legacy value,
// one entry's JSON, starts with '{').
const auditChunkVersion = 2

// New returns the audit log of store with the given retention
// (default DefaultRetention when <= 0).
func New(store *persistence.Store, retention time.Duration, logger *slog.Logger) *Log {
	if retention <= 0 {
		retention = DefaultRetention
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Log{store: store, retention: retention, log: logger, now: time.Now}
}

// Record buffers e for the next batch, which gives it its ID and encodes
// it. Before and After are copied: a handler's After is its response
// body, whose buffer is reused once the response is written.
func (l *Log) Record(e AuditEntry) {
	e.Before, e.After = bytes.Clone(e.Before), bytes.Clone(e.After)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.roomLocked(&e) {
		return
	}
	l.seq++
	l.buf = append(l.buf, auditRecord{e: e, seq: l.seq})
	switch {
	case len(l.buf) >= auditFlushMax:
		if l.timer != nil {
			l.timer.Stop()
			l.timer = nil
		}
		go l.flushLogged()
	case l.timer == nil:
		l.timer = time.AfterFunc(auditFlushDelay, l.flushLogged)
	}
}

// roomLocked reports whether an entry may join the buffer (logging the
// drop of a full one); l.mu is held.
func (l *Log) roomLocked(e *AuditEntry) bool {
	if l.closed {
		return false
	}
	if len(l.buf) >= auditBufferMax {
		l.log.Error("audit: audit buffer full; entry dropped", "operation", e.OperationID, "unit", e.UnitID)
		return false
	}
	return true
}

func (l *Log) flushLogged() {
	if err := l.Flush(); err != nil {
		l.log.Error("audit: audit flush failed; entries kept for the next try", "err", err)
	}
}

// Flush commits the buffered entries now, and prunes expired ones at most
// once per auditPruneEvery.
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	buf := l.buf
	l.buf = nil
	l.timer = nil
	prune := l.now().Sub(l.lastPrune) >= auditPruneEvery
	if prune {
		l.lastPrune = l.now()
	}
	l.mu.Unlock()
	if len(buf) > 0 {
		err := l.commit(l.chunks(buf))
		if errors.Is(err, persistence.ErrClosed) {
			// The store is gone (shutdown): nothing can be kept any more.
			l.mu.Lock()
			l.closed = true
			l.buf = nil
			l.mu.Unlock()
			return fmt.Errorf("audit: audit commit: %d entries lost: %w", len(buf), err)
		}
		if err != nil {
			l.mu.Lock()
			l.buf = append(buf, l.buf...)
			if l.timer == nil && !l.closed {
				l.timer = time.AfterFunc(time.Second, l.flushLogged)
			}
			l.mu.Unlock()
			return fmt.Errorf("audit: audit commit: %w", err)
		}
	}
	if prune {
		return l.prune()
	}
	return nil
}

type auditChunk struct{ key, val []byte }

// commit writes chunks to the store, or through the shared path when one
// is set (cluster mode).
func (l *Log) commit(chunks []auditChunk) error {
	if l.share != nil {
		keys, vals := make([][]byte, len(chunks)), make([][]byte, len(chunks))
		for i, c := range chunks {
			keys[i], vals[i] = c.key, c.val
		}
		return l.share(keys, vals, l.retention)
	}
	b := l.store.NewBatch()
	defer b.Close()
	for _, c := range chunks {
		b.Put(c.key, c.val)
	}
	return l.store.Commit(b)
}

// Share makes the log write its entries with put, which must store them
// on every node and in this node's store (cluster mode: the shared
// index), kept for ttl; the reads and the retention's prune stay on the
// store. Call it before the first Record.
func (l *Log) Share(put func(keys, values [][]byte, ttl time.Duration) error) { l.share = put }

// chunks encodes buf as one chunk per unit (see Log), each of at
// most auditFlushMax entries, newest first.
func (l *Log) chunks(buf []auditRecord) []auditChunk {
	type keyed struct {
		r      *auditRecord
		suffix string
	}
	all := make([]keyed, len(buf))
	var sb [32]byte
	for i := range buf {
		all[i] = keyed{&buf[i], string(appendAuditSuffix(sb[:0], buf[i].e.CreatedAt.Time, buf[i].seq))}
	}
	slices.SortFunc(all, func(a, b keyed) int {
		if c := strings.Compare(a.r.e.UnitID, b.r.e.UnitID); c != 0 {
			return c
		}
		return strings.Compare(a.suffix, b.suffix)
	})
	var out []auditChunk
	var raw, scratch []byte
	for start := 0; start < len(all); {
		end := start + 1
		for end < len(all) && end-start < auditFlushMax && all[end].r.e.UnitID == all[start].r.e.UnitID {
			end++
		}
		chunkSuffix := all[start].suffix
		raw = raw[:0]
		for i, k := range all[start:end] {
			e := k.r.e
			e.ID = "aud_" + chunkSuffix + "-" + string(appendHexPad(sb[:0], uint64(i), 4))
			v, ok := appendAuditRecord(scratch[:0], &e)
			if !ok {
				var err error
				if v, err = json.Marshal(struct {
					V int `json:"v"`
					AuditEntry
				}{1, e}); err != nil {
					l.log.Error("audit: encode audit entry", "err", err)
					continue
				}
			} else {
				scratch = v
			}
			raw = binary.AppendUvarint(raw, uint64(len(v)))
			raw = append(raw, v...)
		}
		val := append([]byte{auditChunkVersion}, s2.Encode(nil, raw)...)
		out = append(out, auditChunk{key: []byte(auditPrefix + all[start].r.e.UnitID + "/" + chunkSuffix), val: val})
		start = end
	}
	return out
}

// auditEntries calls each with the JSON of every entry of a stored value
// (a chunk, or one entry's JSON), newest first.
func auditEntries(key, value []byte, each func(i int, entry []byte) error) error {
	if len(value) > 0 && value[0] == '{' {
		return each(0, value)
	}
	if len(value) == 0 || value[0] != auditChunkVersion {
		return fmt.Errorf("audit: audit chunk %s: unknown format", key)
	}
	raw, err := s2.Decode(nil, value[1:])
	if err != nil {
		return fmt.Errorf("audit: audit chunk %s: %w", key, err)
	}
	for i := 0; len(raw) > 0; i++ {
		n, w := binary.Uvarint(raw)
		if w <= 0 || uint64(len(raw)-w) < n {
			return fmt.Errorf("audit: audit chunk %s: entry %d is cut short", key, i)
		}
		if err := each(i, raw[w:w+int(n)]); err != nil {
			return err
		}
		raw = raw[w+int(n):]
	}
	return nil
}

// prune deletes entries older than the retention, at most auditPruneMax.
func (l *Log) prune() error {
	cut := l.now().Add(-l.retention).UnixNano()
	var old [][]byte
	errFull := errors.New("full")
	err := l.store.Scan([]byte(auditPrefix), func(key, _ []byte) error {
		if len(old) == auditPruneMax {
			return errFull
		}
		if t, ok := auditKeyTime(key); ok && t < cut {
			old = append(old, append([]byte(nil), key...))
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return fmt.Errorf("audit: audit prune: %w", err)
	}
	if len(old) == 0 {
		return nil
	}
	b := l.store.NewBatch()
	defer b.Close()
	for _, k := range old {
		b.Delete(k)
	}
	if err := l.store.Commit(b); err != nil {
		return fmt.Errorf("audit: audit prune: %w", err)
	}
	return nil
}

// auditSuffixLen is the length of a key's suffix (see appendAuditSuffix).
const auditSuffixLen = 16 + 1 + 8

// auditKeyTime returns the unix nanoseconds of an audit key.
func auditKeyTime(key []byte) (int64, bool) {
	i := bytes.LastIndexByte(key, '/')
	if i < 0 || len(key) < i+1+16 {
		return 0, false
	}
	var b [8]byte
	if _, err := hex.Decode(b[:], key[i+1:i+17]); err != nil {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		n = n<<8 | uint64(c)
	}
	return int64(^n), true
}

// Close commits what is buffered; later Records are dropped.
func (l *Log) Close() error {
	l.mu.Lock()
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	l.mu.Unlock()
	return l.Flush()
}

// Filter selects audit entries; zero fields match all.
type Filter struct {
	Actor       string
	OperationID string
	Method      string
	TargetID    string
	Since       time.Time
	Until       time.Time
}

func (f Filter) match(e *AuditEntry) bool {
	if f.Actor != "" && e.Actor != f.Actor || f.OperationID != "" && e.OperationID != f.OperationID ||
		f.Method != "" && e.Method != f.Method {
		return false
	}
	if !f.Since.IsZero() && e.CreatedAt.Before(f.Since) || !f.Until.IsZero() && !e.CreatedAt.Before(f.Until) {
		return false
	}
	if f.TargetID != "" {
		for _, v := range e.TargetIDs {
			if v == f.TargetID {
				return true
			}
		}
		return false
	}
	return true
}

// ErrBadAfter is List's answer to an after that is not an entry id: a
// page cursor naming no position is refused rather than paged from
// wherever it sorts.
var ErrBadAfter = errors.New("audit: not an audit entry id")

// ValidID reports whether id has the shape of an entry id: "aud_" + a
// key suffix + "-" + 4 hex digits, or "aud_" + a key suffix alone (the
// one-entry layout). Whether the entry still exists is not asked: a page
// may follow an entry the retention has pruned since.
func ValidID(id string) bool {
	s, ok := strings.CutPrefix(id, "aud_")
	if !ok || (len(s) != auditSuffixLen && len(s) != auditSuffixLen+5) {
		return false
	}
	if len(s) > auditSuffixLen && (s[auditSuffixLen] != '-' || !lowerHex(s[auditSuffixLen+1:])) {
		return false
	}
	return lowerHex(s[:16]) && s[16] == '-' && lowerHex(s[17:auditSuffixLen])
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// List returns a unit's entries newest first that match f, after the
// entry id after ("" from the newest; ErrBadAfter unless ValidID), at
// most limit, within the retention. Buffered entries are flushed first so
// a reader sees its own writes.
func (l *Log) List(unitID string, f Filter, after string, limit int) ([]AuditEntry, bool, error) {
	if after != "" && !ValidID(after) {
		return nil, false, ErrBadAfter
	}
	if err := l.Flush(); err != nil {
		return nil, false, err
	}
	prefix := auditPrefix + unitID + "/"
	// after names a chunk's key and a place in it ("<suffix>-<4 hex>"), or
	// a key of the one-entry layout ("<suffix>").
	afterKey, afterIdx := "", -1
	if after != "" {
		id := strings.TrimPrefix(after, "aud_")
		afterKey = prefix + id
		if i := strings.LastIndexByte(id, '-'); len(id) == auditSuffixLen+5 && i == auditSuffixLen {
			if n, err := strconv.ParseUint(id[i+1:], 16, 16); err == nil {
				afterKey, afterIdx = prefix+id[:i], int(n)
			}
		}
	}
	cut := l.now().Add(-l.retention)
	out := []AuditEntry{}
	more := false
	errFull := errors.New("full")
	var seek []byte
	if afterKey != "" {
		seek = []byte(afterKey[:len(afterKey)-1]) // sorts right before afterKey
	}
	err := l.store.ScanRange([]byte(prefix), seek, nil, func(key, value []byte) error {
		skip := -1 // entries of this value up to skip are before after
		switch k := string(key); {
		case afterKey != "" && k < afterKey:
			return nil
		case k == afterKey:
			if afterIdx < 0 {
				return nil
			}
			skip = afterIdx
		}
		// A key's time is its newest entry's: past it, all are expired.
		if t, ok := auditKeyTime(key); ok && t < cut.UnixNano() {
			return errFull
		}
		return auditEntries(key, value, func(i int, raw []byte) error {
			if i <= skip {
				return nil
			}
			var e AuditEntry
			if err := json.Unmarshal(raw, &e); err != nil {
				return fmt.Errorf("audit: decode audit entry %s/%d: %w", key, i, err)
			}
			if e.CreatedAt.Before(cut) || !f.match(&e) {
				return nil
			}
			if len(out) == limit {
				more = true
				return errFull
			}
			out = append(out, e)
			return nil
		})
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, false, err
	}
	return out, more, nil
}

// RedactSecrets replaces top-level string values that are secrets (whole
// secret keys, webhook secrets, a door device's one-time setup code and the
// setup link that carries it) so the audit log never stores them.
func RedactSecrets(b []byte) []byte {
	if !bytes.Contains(b, []byte(`"sk_`)) && !bytes.Contains(b, []byte(`"whsec_`)) && !bytes.Contains(b, []byte(`"dk_`)) &&
		!bytes.Contains(b, []byte(`"setupCode"`)) {
		return b
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return []byte(`{"redacted":true}`)
	}
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) == nil && (secretPrefixed(s) || k == "setupCode" || k == "setupUrl") {
			m[k] = json.RawMessage(strconv.Quote("[redacted]"))
		}
	}
	out, err := json.Marshal(m)
	if err != nil || bytes.Contains(out, []byte(`"sk_`)) || bytes.Contains(out, []byte(`"whsec_`)) || bytes.Contains(out, []byte(`"dk_`)) {
		return []byte(`{"redacted":true}`)
	}
	return out
}

// secretPrefixed: s is a whole secret key, webhook secret or device key.
func secretPrefixed(s string) bool {
	return strings.HasPrefix(s, "sk_") || strings.HasPrefix(s, "whsec_") || strings.HasPrefix(s, "dk_")
}
