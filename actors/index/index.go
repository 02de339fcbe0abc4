package index

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"ticketd/persistence"
)

// Prefix keys the unit of each event: "ev/" + event id -> unit id.
const Prefix = persistence.PrefixEventIndex

// PublishedPrefix keys the durable status of each event: "evpub/" + event
// id -> Published or NotPublished.
const PublishedPrefix = persistence.PrefixEventPublished

// The values of PublishedPrefix entries.
const (
	Published    = '1'
	NotPublished = '0'
)

// Key is the index key of event eventID's unit.
func Key(eventID string) []byte { return []byte(Prefix + eventID) }

// PublishedKey is the index key of event eventID's status.
func PublishedKey(eventID string) []byte { return []byte(PublishedPrefix + eventID) }

// Index maps events to their business units, and knows which are
// published (see the package doc). Safe for concurrent use.
type Index struct {
	mu     sync.RWMutex
	unit   map[string]string   // event id -> unit id
	byUnit map[string][]string // unit id -> event ids, sorted (time-ordered ULIDs)

	status     map[string]byte     // event id -> Published or NotPublished; absent: unknown
	candidates map[string][]string // unit id -> byUnit less the known unpublished; absent when stale
}

// New returns an empty index.
func New() *Index {
	return &Index{unit: map[string]string{}, byUnit: map[string][]string{},
		status: map[string]byte{}, candidates: map[string][]string{}}
}

// Load rebuilds x from the entries of store.
func (x *Index) Load(store *persistence.Store) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	err := store.Scan([]byte(Prefix), func(k, v []byte) error {
		id := strings.TrimPrefix(string(k), Prefix)
		if _, ok := x.unit[id]; !ok {
			x.unit[id] = string(v)
			x.byUnit[string(v)] = append(x.byUnit[string(v)], id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("actors: load event index: %w", err)
	}
	err = store.Scan([]byte(PublishedPrefix), func(k, v []byte) error {
		if ValidStatus(v) {
			x.status[string(k[len(PublishedPrefix):])] = v[0]
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("actors: load published index: %w", err)
	}
	for u, ids := range x.byUnit {
		sort.Strings(ids) // ids are time-ordered ULIDs
		x.byUnit[u] = ids
	}
	clear(x.candidates)
	return nil
}

// ValidStatus reports whether v is the value of a PublishedPrefix entry.
func ValidStatus(v []byte) bool { return len(v) == 1 && (v[0] == Published || v[0] == NotPublished) }

// Add records that eventID belongs to unitID (the first record stands).
func (x *Index) Add(eventID, unitID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.unit[eventID]; ok {
		return
	}
	x.unit[eventID] = unitID
	ids := x.byUnit[unitID]
	// Ids are time-ordered, so this appends but for ids of one millisecond.
	i, _ := slices.BinarySearch(ids, eventID)
	x.byUnit[unitID] = slices.Insert(ids, i, eventID)
	delete(x.candidates, unitID)
}

// NoteStatus records an event's status (Published or NotPublished) as its
// actor sees it, and reports whether that changed what the index held, in
// which case the actor writes its entry.
func (x *Index) NoteStatus(eventID string, st byte) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.status[eventID]; ok && old == st {
		return false
	}
	x.status[eventID] = st
	if u, ok := x.unit[eventID]; ok {
		delete(x.candidates, u)
	}
	return true
}

// Candidates returns, oldest first, the unit's events that may be
// published and were created before the event after (all of them for "").
// ok is false when after is not an event of the unit. The slice is shared:
// do not modify it.
func (x *Index) Candidates(unitID, after string) (ids []string, ok bool) {
	x.mu.RLock()
	if after != "" && x.unit[after] != unitID {
		x.mu.RUnlock()
		return nil, false
	}
	cand, fresh := x.candidates[unitID]
	x.mu.RUnlock()
	if !fresh {
		x.mu.Lock()
		if cand, fresh = x.candidates[unitID]; !fresh {
			all := x.byUnit[unitID]
			cand = make([]string, 0, len(all))
			for _, id := range all {
				if x.status[id] != NotPublished {
					cand = append(cand, id)
				}
			}
			x.candidates[unitID] = cand
		}
		x.mu.Unlock()
	}
	if after != "" {
		i, _ := slices.BinarySearch(cand, after)
		cand = cand[:i]
	}
	return cand, true
}

// Unit returns the business unit that owns eventID, as far as x knows.
func (x *Index) Unit(eventID string) (string, bool) {
	x.mu.RLock()
	u, ok := x.unit[eventID]
	x.mu.RUnlock()
	return u, ok
}

// Events returns the unit's event ids, oldest first.
func (x *Index) Events(unitID string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return append([]string(nil), x.byUnit[unitID]...)
}

// All returns the ids of every event x knows, in no order.
func (x *Index) All() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	ids := make([]string, 0, len(x.unit))
	for id := range x.unit {
		ids = append(ids, id)
	}
	return ids
}
