package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"ticketd/ask"
	"ticketd/persistence"
)

// Prefix is the key prefix of every entry this package stores; see the
// package documentation for the schema.
const Prefix = persistence.PrefixOutbox

// MaxList bounds one List page.
const MaxList = 1000

// Errors of Requeue and Get.
var (
	ErrNotFound  = errors.New("outbox: entry not found")
	ErrNotParked = errors.New("outbox: entry is not parked")
)

// State says where an entry is in its delivery.
type State string

// States of an entry.
const (
	// Pending: written by its producer, not tried yet.
	Pending State = "pending"
	// Retrying: failed temporarily; tried again at NextAt.
	Retrying State = "retrying"
	// Parked: failed permanently; tried again only after Requeue.
	Parked State = "parked"
)

// Entry is one queued delivery.
type Entry struct {
	// ID is the entry's key after its queue's inbox prefix (for entries
	// added with Add, the id given).
	ID string
	// Value is the producer's bytes, verbatim.
	Value     []byte
	State     State
	Attempts  int
	NextAt    time.Time // Retrying: when it is tried again
	LastError string
	LastAt    time.Time // when the last attempt failed

	dueKey []byte // Retrying: its key in the due index
}

// envelope is the stored state of an entry that has been tried.
type envelope struct {
	V         int       `json:"v"`
	Attempts  int       `json:"attempts"`
	NextAt    time.Time `json:"nextAt,omitzero"`
	Parked    bool      `json:"parked,omitempty"`
	LastError string    `json:"lastError,omitempty"`
	LastAt    time.Time `json:"lastAt,omitzero"`
	Value     []byte    `json:"value"`
}

const envelopeV1 = 1

// Queue is one durable queue: fresh entries under the inbox prefix its
// producers write, and the entries that were tried under Prefix + name.
// See the package documentation.
type Queue struct {
	store *persistence.Store
	name  string
	inbox string

	// cursor is where Fresh goes on reading the inbox, prev where the
	// last Fresh started; only the sender loop uses them.
	cursor, prev persistence.Cursor
	// mu serialises Requeue, the one change made outside the sender.
	mu sync.Mutex
}

// NewQueue returns the queue name (lower-case letters and digits) whose
// producers write fresh entries under inbox ("" for a queue filled only
// by Add).
func NewQueue(store *persistence.Store, name, inbox string) (*Queue, error) {
	if store == nil {
		return nil, errors.New("outbox: no store")
	}
	if name == "" || len(name) > 32 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		return nil, fmt.Errorf("outbox: bad queue name %q", name)
	}
	if strings.HasPrefix(inbox, Prefix) {
		return nil, fmt.Errorf("outbox: inbox %q inside %q", inbox, Prefix)
	}
	return &Queue{store: store, name: name, inbox: inbox}, nil
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.name }

// Inbox is the prefix the queue's producers write.
func (q *Queue) Inbox() string { return q.inbox }

func (q *Queue) statePrefix() string { return Prefix + q.name + "/s/" }
func (q *Queue) duePrefix() string   { return Prefix + q.name + "/d/" }

func (q *Queue) stateKey(id string) []byte { return []byte(q.statePrefix() + id) }

func (q *Queue) dueKey(at time.Time, id string) []byte {
	return fmt.Appendf(nil, "%s%016x/%s", q.duePrefix(), uint64(max(at.UnixNano(), 0)), id)
}

var errFull = errors.New("outbox: full")

// Fresh calls fn for up to max pending entries of the inbox, going on
// where the previous call stopped and wrapping around (persistence.Cursor),
// so a backlog goes out in rounds without rereading what was handled.
// full reports that max entries were read. Only the sender calls it.
func (q *Queue) Fresh(max int, fn func(Entry)) (full bool, err error) {
	if q.inbox == "" {
		return false, nil
	}
	q.prev = q.cursor
	return q.cursor.Next(q.store, []byte(q.inbox), max, func(key, value []byte) error {
		fn(Entry{ID: string(key[len(q.inbox):]), Value: append([]byte(nil), value...), State: Pending})
		return nil
	})
}

// Unread puts the inbox cursor back where the last Fresh started, so the
// entries that round read and did not settle come first again (a round
// cut short by a lost connection). Settled entries left the inbox.
func (q *Queue) Unread() { q.cursor = q.prev }

// Due returns up to max retrying entries whose NextAt is at or before
// now, earliest first. full reports that max entries were returned.
func (q *Queue) Due(now time.Time, max int) (entries []Entry, full bool, err error) {
	type due struct {
		id  string
		key []byte
	}
	var ds []due
	prefix := q.duePrefix()
	bound := string(q.dueKey(now, "")) // every key due by now sorts before it ends
	err = q.store.Scan([]byte(prefix), func(key, _ []byte) error {
		if len(ds) == max {
			return errFull
		}
		if string(key[:min(len(key), len(bound))]) > bound {
			return errFull
		}
		rest := string(key[len(prefix):])
		_, id, ok := strings.Cut(rest, "/")
		if !ok {
			return nil
		}
		ds = append(ds, due{id: id, key: append([]byte(nil), key...)})
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, false, fmt.Errorf("outbox: %s: scan due: %w", q.name, err)
	}
	full = len(ds) == max
	var orphans [][]byte
	for _, d := range ds {
		v, ok, err := q.store.Get(q.stateKey(d.id))
		if err != nil {
			return nil, false, fmt.Errorf("outbox: %s: get %s: %w", q.name, d.id, err)
		}
		var e Entry
		if ok {
			e, err = q.decode(d.id, v)
		}
		if !ok || err != nil || e.State != Retrying || string(e.dueKey) != string(d.key) {
			// A due key without its entry cannot come from this package (one
			// batch writes both), and an entry it cannot read would come
			// back every round: drop the key, keep the entry for List.
			orphans = append(orphans, d.key)
			continue
		}
		entries = append(entries, e)
	}
	if len(orphans) > 0 {
		b := q.store.NewBatch()
		defer b.Close()
		for _, k := range orphans {
			b.Delete(k)
		}
		if err := q.store.Commit(b); err != nil {
			return nil, false, fmt.Errorf("outbox: %s: drop stale due keys: %w", q.name, err)
		}
	}
	return entries, full, nil
}

// NextDue reports when the earliest retrying entry comes due.
func (q *Queue) NextDue() (time.Time, bool, error) {
	var at time.Time
	found := false
	prefix := q.duePrefix()
	err := q.store.Scan([]byte(prefix), func(key, _ []byte) error {
		rest := string(key[len(prefix):])
		hex, _, _ := strings.Cut(rest, "/")
		var ns uint64
		if _, err := fmt.Sscanf(hex, "%016x", &ns); err != nil {
			return nil // not a due key of ours: skip it
		}
		at, found = time.Unix(0, int64(ns)), true
		return errFull
	})
	if err != nil && !errors.Is(err, errFull) {
		return time.Time{}, false, fmt.Errorf("outbox: %s: next due: %w", q.name, err)
	}
	return at, found, nil
}

func (q *Queue) getState(id string) (Entry, bool, error) {
	v, ok, err := q.store.Get(q.stateKey(id))
	if err != nil || !ok {
		return Entry{}, false, err
	}
	e, err := q.decode(id, v)
	return e, err == nil, err
}

func (q *Queue) decode(id string, v []byte) (Entry, error) {
	var env envelope
	if err := json.Unmarshal(v, &env); err != nil {
		return Entry{}, fmt.Errorf("outbox: %s: decode entry %s: %w", q.name, id, err)
	}
	if env.V != envelopeV1 {
		return Entry{}, fmt.Errorf("outbox: %s: entry %s: unknown format version %d", q.name, id, env.V)
	}
	e := Entry{ID: id, Value: env.Value, Attempts: env.Attempts, NextAt: env.NextAt, LastError: env.LastError,
		LastAt: env.LastAt, State: Retrying}
	if env.Parked {
		e.State = Parked
	} else {
		e.dueKey = q.dueKey(env.NextAt, id)
	}
	return e, nil
}

// remove deletes e's keys where it is now.
func (q *Queue) remove(b *persistence.Batch, e Entry) {
	switch e.State {
	case Pending:
		b.Delete([]byte(q.inbox + e.ID))
	default:
		b.Delete(q.stateKey(e.ID))
		if e.dueKey != nil {
			b.Delete(e.dueKey)
		}
	}
}

// put writes e's state (and its due key when retrying).
func (q *Queue) put(b *persistence.Batch, e Entry) error {
	env := envelope{V: envelopeV1, Attempts: e.Attempts, NextAt: e.NextAt.UTC(), Parked: e.State == Parked,
		LastError: e.LastError, LastAt: e.LastAt.UTC(), Value: e.Value}
	if e.State == Parked {
		env.NextAt = time.Time{}
	}
	if e.LastAt.IsZero() {
		env.LastAt = time.Time{}
	}
	v, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("outbox: %s: encode entry %s: %w", q.name, e.ID, err)
	}
	b.Put(q.stateKey(e.ID), v)
	if e.State == Retrying {
		b.Put(q.dueKey(env.NextAt, e.ID), nil)
	}
	return nil
}

// Done removes a delivered (or dropped) entry, in b.
func (q *Queue) Done(b *persistence.Batch, e Entry) { q.remove(b, e) }

// Retry counts a failed attempt of e and schedules the next one at at, in
// b. It returns the entry as stored.
func (q *Queue) Retry(b *persistence.Batch, e Entry, at, now time.Time, reason string) (Entry, error) {
	q.remove(b, e)
	e.Attempts++
	e.State, e.NextAt, e.LastError, e.LastAt = Retrying, at, bound(reason), now
	e.dueKey = q.dueKey(at, e.ID)
	return e, q.put(b, e)
}

// Defer moves e's next attempt to at without counting an attempt (its
// destination is busy or backing off), in b.
func (q *Queue) Defer(b *persistence.Batch, e Entry, at time.Time) (Entry, error) {
	q.remove(b, e)
	e.State, e.NextAt = Retrying, at
	e.dueKey = q.dueKey(at, e.ID)
	return e, q.put(b, e)
}

// Park counts a failed attempt of e and parks it, in b: it is not tried
// again until Requeue.
func (q *Queue) Park(b *persistence.Batch, e Entry, now time.Time, reason string) (Entry, error) {
	q.remove(b, e)
	e.Attempts++
	e.State, e.NextAt, e.LastError, e.LastAt, e.dueKey = Parked, time.Time{}, bound(reason), now, nil
	return e, q.put(b, e)
}

// Add queues entry e (its ID, Value, NextAt and, for an entry carried
// over from an older format, Attempts and LastError), due at e.NextAt, in
// b. An entry with the same id is replaced.
func (q *Queue) Add(b *persistence.Batch, e Entry) error {
	e.State = Retrying
	return q.put(b, e)
}

// bound keeps a stored error short: a relay's answer can be long.
func bound(s string) string {
	const maxLen = 500
	if len(s) > maxLen {
		return s[:maxLen]
	}
	return s
}

// Get returns entry id, wherever it is.
func (q *Queue) Get(id string) (Entry, error) {
	e, ok, err := q.getState(id)
	if err != nil {
		return Entry{}, err
	}
	if ok {
		return e, nil
	}
	if q.inbox != "" {
		v, ok, err := q.store.Get([]byte(q.inbox + id))
		if err != nil {
			return Entry{}, fmt.Errorf("outbox: %s: get %s: %w", q.name, id, err)
		}
		if ok {
			return Entry{ID: id, Value: v, State: Pending}, nil
		}
	}
	return Entry{}, ErrNotFound
}

// Requeue makes parked entry id due at now and returns it; the sender
// must then be woken. ErrNotFound or ErrNotParked otherwise.
func (q *Queue) Requeue(id string, now time.Time) (Entry, error) {
	return q.RequeueRecorded(id, now, nil)
}

// RequeueRecorded is Requeue for a request with an Idempotency-Key: rec
// (nil: none) is its record, made from the requeued entry and committed in
// the requeue's own batch, so a crash can never keep the requeue without
// the key (a retry would requeue the entry a second time) nor the key
// without the requeue (decisions §20). For a key claimed before (rec.Look)
// it looks for the record first: found and live, the requeue was made
// before and it answers *ask.Replayed with the record, changing nothing.
func (q *Queue) RequeueRecorded(id string, now time.Time, rec *ask.Recorder) (Entry, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if rec != nil && rec.Look && rec.Key != nil {
		v, ok, err := q.store.Get(rec.Key)
		if err != nil {
			return Entry{}, fmt.Errorf("outbox: %s: requeue %s: read its record: %w", q.name, id, err)
		}
		if ok && (rec.Live == nil || rec.Live(v)) {
			return Entry{}, &ask.Replayed{Value: v}
		}
	}
	e, err := q.Get(id)
	if err != nil {
		return Entry{}, err
	}
	if e.State != Parked {
		return e, ErrNotParked
	}
	b := q.store.NewBatch()
	defer b.Close()
	q.remove(b, e)
	e.State, e.NextAt = Retrying, now
	if err := q.put(b, e); err != nil {
		return Entry{}, err
	}
	if rec != nil && rec.Key != nil && rec.Value != nil {
		if v := rec.Value(e); v != nil {
			b.Put(rec.Key, v)
		}
	}
	if err := q.store.Commit(b); err != nil {
		return Entry{}, fmt.Errorf("outbox: %s: requeue %s: %w", q.name, id, err)
	}
	e.dueKey = q.dueKey(now, id)
	return e, nil
}

// List returns up to limit entries (1 to MaxList) in id order after the id
// after ("" for the start): pending, retrying and parked alike.
func (q *Queue) List(after string, limit int) ([]Entry, error) {
	limit = min(max(limit, 1), MaxList)
	scan := func(prefix string, fn func(id string, v []byte) error) error {
		var from []byte
		if after != "" {
			from = []byte(prefix + after)
		}
		n := 0
		err := q.store.ScanRange([]byte(prefix), from, nil, func(key, value []byte) error {
			if n == limit {
				return errFull
			}
			n++
			return fn(string(key[len(prefix):]), value)
		})
		if err != nil && !errors.Is(err, errFull) {
			return err
		}
		return nil
	}
	var fresh, tried []Entry
	if q.inbox != "" {
		if err := scan(q.inbox, func(id string, v []byte) error {
			fresh = append(fresh, Entry{ID: id, Value: append([]byte(nil), v...), State: Pending})
			return nil
		}); err != nil {
			return nil, fmt.Errorf("outbox: %s: list: %w", q.name, err)
		}
	}
	if err := scan(q.statePrefix(), func(id string, v []byte) error {
		e, err := q.decode(id, v)
		if err != nil {
			// Shown, not hidden: it is never tried, like a parked entry.
			e = Entry{ID: id, State: Parked, LastError: err.Error()}
		}
		tried = append(tried, e)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("outbox: %s: list: %w", q.name, err)
	}
	// Merge by id. An entry caught moving between the two scans may show
	// in both: its stored state wins.
	out := make([]Entry, 0, min(limit, len(fresh)+len(tried)))
	i, j := 0, 0
	for len(out) < limit && (i < len(fresh) || j < len(tried)) {
		switch {
		case j == len(tried) || (i < len(fresh) && fresh[i].ID < tried[j].ID):
			out = append(out, fresh[i])
			i++
		case i < len(fresh) && fresh[i].ID == tried[j].ID:
			i++
		default:
			out = append(out, tried[j])
			j++
		}
	}
	return out, nil
}
