package event

import (
	"sync/atomic"
	"time"
)

// The change feed (decisions §20): what an integrator follows to mirror an
// event's registrations, orders and check-ins. The core says which feed
// entries a change produces (AppendFeed, a pure mapping, like
// AppendEffects) and counts them in the state (State.FeedSeq), so an
// entry's seq is a function of the log: gap-free from 1, the same on every
// replay and on every node. The shell writes each entry, with the record
// as its GET answers it just after the change, into the batch of the
// change, and serves the feed from those entries (package actors).

// Feed entry types.
const (
	FeedRegistrationCreated = "registration.created"
	FeedRegistrationUpdated = "registration.updated"
	FeedOrderCreated        = "order.created"
	FeedOrderUpdated        = "order.updated"
	FeedCheckinCreated      = "checkin.created"
	// FeedCheckinConflict is a door conflict (door.go): a scan a device
	// admitted offline that the service refused or found already used.
	// Its object is the conflict as GET .../door-conflicts lists it.
	FeedCheckinConflict = "checkin.conflict"
)

// feedTypes are the feed entry types in the order of their codes.
var feedTypes = [...]string{FeedRegistrationCreated, FeedRegistrationUpdated, FeedOrderCreated, FeedOrderUpdated,
	FeedCheckinCreated, FeedCheckinConflict}

// FeedTypes lists every feed entry type, in the order the documents list
// them.
func FeedTypes() []string { return append([]string(nil), feedTypes[:]...) }

// FeedTypeCode is the byte a feed type is stored as (its position in
// FeedTypes, from 1); 0 for an unknown type.
func FeedTypeCode(t string) byte {
	for i, n := range feedTypes {
		if n == t {
			return byte(i + 1)
		}
	}
	return 0
}

// FeedTypeOf is the type stored as code, "" for an unknown code.
func FeedTypeOf(code byte) string {
	if code == 0 || int(code) > len(feedTypes) {
		return ""
	}
	return feedTypes[code-1]
}

// FeedEntry is one entry a change produces: its type, the record it is
// about (a registration, order or check-in id) and when it happened.
type FeedEntry struct {
	Type string
	ID   string
	At   time.Time
}

// AppendFeed appends the feed entries ch produces to dst, in feed order.
// A change that touches no registration, order or check-in as their GETs
// show them produces none. It reads only ch, so it is the same on replay.
func AppendFeed(dst []FeedEntry, ch Change) []FeedEntry {
	switch c := ch.(type) {
	case RegistrationCreated:
		return append(dst, FeedEntry{FeedRegistrationCreated, c.ID, c.At})
	case RegistrationStatusChanged:
		return append(dst, FeedEntry{FeedRegistrationUpdated, c.ID, c.At})
	case PassRotated:
		// passUrl changed.
		return append(dst, FeedEntry{FeedRegistrationUpdated, c.ID, c.At})
	case CheckedIn:
		return append(dst, FeedEntry{FeedCheckinCreated, c.ID, c.At})
	case ScansRecorded:
		return c.appendFeed(dst)
	case CheckinConflict:
		return append(dst, FeedEntry{FeedCheckinConflict, c.ID, c.At})
	case OrderPlaced:
		return append(dst, FeedEntry{FeedOrderCreated, c.ID, c.At})
	case OrderPaymentStarted:
		return append(dst, FeedEntry{FeedOrderUpdated, c.ID, c.At})
	case OrderPaid:
		dst = append(dst, FeedEntry{FeedOrderUpdated, c.ID, c.At})
		if c.RegistrationID != "" && !c.AlreadyRegistered {
			// Fulfilment creates the buyer's registration.
			dst = append(dst, FeedEntry{FeedRegistrationCreated, c.RegistrationID, c.At})
		}
		return dst
	case OrderReleased:
		return append(dst, FeedEntry{FeedOrderUpdated, c.ID, c.At})
	case OrderRetaken:
		return append(dst, FeedEntry{FeedOrderUpdated, c.ID, c.At})
	case RefundRequested:
		// The order's refunds[] shows the pending refund.
		return append(dst, FeedEntry{FeedOrderUpdated, c.OrderID, c.At})
	case RefundSettled:
		return append(dst, FeedEntry{FeedOrderUpdated, c.OrderID, c.At})
	}
	return dst
}

// feedCount is how many feed entries ch produces.
func feedCount(ch Change) uint64 {
	if c, ok := ch.(ScansRecorded); ok {
		return uint64(len(c.Checkins))
	}
	var buf [4]FeedEntry
	return uint64(len(AppendFeed(buf[:0], ch)))
}

// FeedSeq is the seq of the event's last feed entry, 0 before the first.
func (m *Machine) FeedSeq() uint64 { return m.s.FeedSeq }

// FeedObject is the record feed entry e is about, as its GET answers it
// now (the shell calls it just after applying the change that produced
// e); false when the record does not exist.
func (m *Machine) FeedObject(e FeedEntry) (any, bool) {
	switch e.Type {
	case FeedRegistrationCreated, FeedRegistrationUpdated:
		r, ok := m.s.regs()[e.ID]
		if !ok {
			return nil, false
		}
		return m.regView(r), true
	case FeedOrderCreated, FeedOrderUpdated:
		o, ok := m.s.Orders[e.ID]
		if !ok {
			return nil, false
		}
		return m.orderView(o), true
	case FeedCheckinConflict:
		for i := len(m.s.Door.Conflicts) - 1; i >= 0; i-- {
			if k := m.s.Door.Conflicts[i]; k.ID == e.ID {
				return m.ConflictView(k), true
			}
		}
		return nil, false
	case FeedCheckinCreated:
		c := m.s.checkinByID(e.ID)
		if c == nil {
			return nil, false
		}
		return m.checkinView(c), true
	}
	return nil, false
}

// Feed read bounds (decisions §20).
const (
	// FeedLimitDefault and FeedLimitMax bound a page of the feed.
	FeedLimitDefault = 100
	FeedLimitMax     = 1000
	// FeedWaitMax bounds a long poll.
	FeedWaitMax = 30 * time.Second
	// FeedRetention is how long entries are kept at least.
	FeedRetention = 30 * 24 * time.Hour
)

// ReadFeed reads the event's feed: up to Limit entries after position
// After (or, with From false, from the oldest entry kept), of Types
// (empty: every type), waiting up to Wait for the next entry when there is
// none yet. The core answers where the feed ends (FeedPage.Last, with no
// entries); the shell intercepts the command, since it waits for
// durability and reads the entries it wrote (package actors).
type ReadFeed struct {
	After uint64
	// From says After is a position; false starts at the oldest kept.
	From  bool
	Limit int
	Types []string
	Wait  time.Duration
}

func (ReadFeed) result(*FeedPage) {}

func (c ReadFeed) decide(m *Machine, now time.Time) (any, []Change, error) {
	return FeedPage{Last: m.s.FeedSeq}, nil, nil
}

// FeedPage answers ReadFeed: the entries, where the page ends (Next: the
// position to read after next, which passes entries the types filter
// left out), whether more entries follow, and the feed's durable end.
// Expired says After lies before the oldest entry kept.
type FeedPage struct {
	Entries []FeedItem
	Next    uint64
	HasMore bool
	Last    uint64
	Expired bool
	// memo, on a page read from the entries kept in memory, keeps its
	// wire forms for every follower it is answered to (see
	// FeedPageMemo; unexported: gob leaves it behind).
	memo *FeedPageMemo
}

// Memo is the memo of the page's wire forms (nil when it has none).
func (p FeedPage) Memo() *FeedPageMemo { return p.memo }

// WithMemo is the page with the memo m of its wire forms.
func (p FeedPage) WithMemo(m *FeedPageMemo) FeedPage {
	p.memo = m
	return p
}

// FeedPageMemo keeps the wire forms of one page answered to several
// followers (the followers a commit wakes read from the same position
// and get the same page): the first that needs one makes it, the others
// take it, so a follower's answer costs no work per change of the page
// (no lookup of each change's rendering, no list of them, no joining of
// runs). Keyed like FeedMemo; a page never changes once made, so neither
// may what is kept. Safe for concurrent use; the nil memo keeps nothing.
type FeedPageMemo struct {
	p atomic.Pointer[[]feedPageForm]
}

// feedPageForm is one wire form of a page, under its key.
type feedPageForm struct {
	key string
	v   any
}

// Load answers the form kept under key.
func (m *FeedPageMemo) Load(key string) (any, bool) {
	if m == nil {
		return nil, false
	}
	if fs := m.p.Load(); fs != nil {
		for _, f := range *fs {
			if f.key == key {
				return f.v, true
			}
		}
	}
	return nil, false
}

// Store keeps v under key, unless another reader kept one first, and
// answers the one kept (which must not be changed afterwards).
func (m *FeedPageMemo) Store(key string, v any) any {
	if m == nil {
		return v
	}
	for {
		old := m.p.Load()
		var fs []feedPageForm
		if old != nil {
			for _, f := range *old {
				if f.key == key {
					return f.v
				}
			}
			fs = append(make([]feedPageForm, 0, len(*old)+1), *old...)
		}
		fs = append(fs, feedPageForm{key, v})
		if m.p.CompareAndSwap(old, &fs) {
			return v
		}
	}
}

// FeedItem is one stored feed entry: its seq, type, when it happened and
// the record (JSON, in the current API version) as it was then; and, read
// from the newest entries kept in memory, the memo of its renderings
// (unexported: it stays on the node, gob passes it over).
type FeedItem struct {
	Seq    uint64
	Type   string
	At     time.Time
	Object []byte
	memo   *FeedMemo
}

// Memo is the memo of the renderings of this entry (nil when it has none:
// it was read from the store, or on another node). See FeedMemo.
func (it FeedItem) Memo() *FeedMemo { return it.memo }

// WithMemo is the item with the memo m of its renderings.
func (it FeedItem) WithMemo(m *FeedMemo) FeedItem {
	it.memo = m
	return it
}

// FeedMemo keeps the renderings of one feed entry (its wire form, one per
// shape a reader asks for, e.g. per API version whose objects differ),
// made by the first reader that needs one and shared by every later
// reader: twenty followers of a drop cost one rendering of each change
// and twenty copies of it, not twenty renderings. An entry never changes
// once written, so neither may its renderings: a memo belongs to one
// entry (one seq of one event) and is dropped with it, never reused for
// another. Safe for concurrent use; the nil memo keeps nothing.
type FeedMemo struct {
	p atomic.Pointer[[]feedRendering]
}

// feedRendering is one rendering of an entry, under its shape's key.
type feedRendering struct {
	key string
	b   []byte
}

// Load answers the rendering kept under key.
func (m *FeedMemo) Load(key string) ([]byte, bool) {
	if m == nil {
		return nil, false
	}
	if rs := m.p.Load(); rs != nil {
		for _, r := range *rs {
			if r.key == key {
				return r.b, true
			}
		}
	}
	return nil, false
}

// Store keeps b as the rendering under key, unless another reader kept
// one first, and answers the one kept (the bytes must not be changed
// afterwards: other readers copy them).
func (m *FeedMemo) Store(key string, b []byte) []byte {
	if m == nil {
		return b
	}
	for {
		old := m.p.Load()
		var rs []feedRendering
		if old != nil {
			for _, r := range *old {
				if r.key == key {
					return r.b
				}
			}
			rs = append(make([]feedRendering, 0, len(*old)+1), *old...)
		}
		rs = append(rs, feedRendering{key, b})
		if m.p.CompareAndSwap(old, &rs) {
			return b
		}
	}
}
