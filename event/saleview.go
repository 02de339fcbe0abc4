package event

import (
	"hash/maphash"
	"math"
	"sync/atomic"
	"time"
	"unsafe"
)

// The sale view (issue 34, item 3): what an event's shell publishes after
// each durable commit so that the two commonest requests of a drop are
// answered without entering the event's actor: a storefront order refused
// because the one ticket type it asks for is sold out, and a queue poll of
// a waiting entry. The view answers only when its answer is certain, the
// one the machine would give at the state it was built from (the same
// error value, the same QueueStatus); for anything else it answers "ask
// the machine".
//
// A SaleView is immutable but for two derived, add-only structures it
// shares with the state it was built from and with later views:
//
//   - blocked, a Bloom filter of the normalized emails that have an open
//     order or an active registration, and of the clients at their hold
//     limit: a buyer in it may get ORDER_ALREADY_OPEN, an "already
//     registered" order or HOLD_LIMIT instead of SOLD_OUT, so the view
//     does not answer for it. Apply adds to it (indexOpenOrder,
//     linkEmail) and never removes, so it is a superset of the blocked
//     buyers of every state since it was built;
//   - the queue's entry table (queue id -> rank, records immutable but
//     for the time of the last poll a view answered, which any reader
//     stamps) and a Bloom filter of expired entries, added to by
//     QueueJoined and QueueExpiredBatch. An entry whose rank is at or past
//     the view's Next was not reached by admission at that state, so it
//     waits, unless expired.
//
// They are written only by the goroutine that applies changes (the actor),
// with atomic stores; any goroutine may read a view. A write seen early
// by a reader of an older view only makes it ask the machine more often.
// When a structure fills, the machine builds a new one for the next view
// and stops writing the old; views already out keep theirs, whole for the
// states they stand for. Nothing of this is encoded, and a state that
// never built a view (replay, snapshots, tests) carries none of it.

// SaleView is an event's published answers without its actor (see above).
// The zero value answers nothing.
type SaleView struct {
	published bool
	soldOut   []soldOutType
	// gated: a waiting room gates orders from gateAt (a token is checked
	// before the stock).
	gated   bool
	gateAt  time.Time
	blocked *keyFilter
	room    *roomFacts
}

// soldOutType is a public ticket type on sale with no place left, whose
// orders need no answers to a form. Its sale window is checked at the
// request's time, as the machine does.
type soldOutType struct {
	id                string
	opensAt, closesAt *time.Time
}

// roomFacts are what a waiting entry's answer depends on.
type roomFacts struct {
	onSaleAt       time.Time
	shuffled       bool
	soldOut        bool
	next           int
	admitPerMinute int
	entries        *entryTable
	expired        *keyFilter
}

// SaleView returns the view of the machine's current state, or prev when
// it would answer the same (so the shell publishes only what changed). It
// builds the shared structures (see above) on first need: the blocked
// filter once a ticket type is sold out, the entry table once the event
// has a waiting room.
func (m *Machine) SaleView(prev *SaleView) *SaleView {
	var v SaleView
	e := m.s.Event
	v.published = e != nil && e.Status == EventPublished
	if !v.published {
		if prev != nil && !prev.published {
			return prev
		}
		return &SaleView{}
	}
	for _, id := range m.s.TypeOrder {
		t := m.s.Types[id]
		if !t.IsPublic || t.Status != SellOpen || t.Capacity == nil || t.room() > 0 {
			continue
		}
		if f := m.s.Content.Forms[id]; f != nil && f.PublishedAt != nil {
			continue // the answers are checked before the stock
		}
		v.soldOut = append(v.soldOut, soldOutType{id: id, opensAt: t.OpensAt, closesAt: t.ClosesAt})
	}
	if len(v.soldOut) > 0 {
		v.blocked = m.blockedFilter()
	}
	if r := m.s.Room; r != nil {
		v.gated, v.gateAt = r.Enabled, r.OnSaleAt
		if r.pubTable == nil {
			r.pubTable = newEntryTable(r.Entries)
		}
		if r.pubExpired == nil || r.pubExpired.full() {
			n := 0
			for _, q := range r.Entries {
				if q.State == entryExpired {
					n++
				}
			}
			r.pubExpired = newKeyFilter(n)
			for _, q := range r.Entries {
				if q.State == entryExpired {
					r.pubExpired.add(q.ID, 0)
				}
			}
		}
		f := roomFacts{onSaleAt: r.OnSaleAt, shuffled: r.Shuffled, soldOut: r.SoldOut, next: r.Next,
			admitPerMinute: r.AdmitPerMinute, entries: r.pubTable, expired: r.pubExpired}
		if prev != nil && prev.room != nil && prev.room.same(&f) {
			v.room = prev.room
		} else {
			v.room = new(roomFacts)
			*v.room = f
		}
	}
	if prev != nil && prev.same(&v) {
		return prev
	}
	// A copy: v stays on the stack when nothing changed (every write of a
	// drop builds a view).
	nv := v
	return &nv
}

// same reports whether w answers as v does.
func (v *SaleView) same(w *SaleView) bool {
	if v.published != w.published || v.gated != w.gated || !v.gateAt.Equal(w.gateAt) || v.blocked != w.blocked ||
		len(v.soldOut) != len(w.soldOut) || (v.room == nil) != (w.room == nil) {
		return false
	}
	for i, t := range v.soldOut {
		u := w.soldOut[i]
		if t.id != u.id || !sameTime(t.opensAt, u.opensAt) || !sameTime(t.closesAt, u.closesAt) {
			return false
		}
	}
	return v.room == nil || v.room.same(w.room)
}

func (a *roomFacts) same(b *roomFacts) bool {
	return a.onSaleAt.Equal(b.onSaleAt) && a.shuffled == b.shuffled && a.soldOut == b.soldOut && a.next == b.next &&
		a.admitPerMinute == b.admitPerMinute && a.entries == b.entries && a.expired == b.expired
}

// blockedFilter returns the state's blocked filter (see above), built
// from the indexes when there is none yet or the one there is full.
func (m *Machine) blockedFilter() *keyFilter {
	x := &m.s.idx
	if x.blocked != nil && !x.blocked.full() {
		return x.blocked
	}
	x.clientMax = limitOf(m.cfg.OpenOrdersPerClient, defaultOpenOrdersPerClient)
	n := len(x.limits.byEmail)
	for _, sh := range x.regByEmail {
		n += len(sh)
	}
	f := newKeyFilter(n)
	for k := range x.limits.byEmail {
		f.add(k, 0)
	}
	for _, sh := range x.regByEmail {
		for k, e := range sh {
			if e.active != "" {
				f.add(k, 0)
			}
		}
	}
	if x.clientMax > 0 {
		for c, ids := range x.limits.byClient {
			if len(ids) >= x.clientMax {
				f.add(c, clientSalt)
			}
		}
	}
	x.blocked = f
	return f
}

// noteBlocked adds to the blocked filter, when there is one, the email of
// an order that now holds and its client when at its limit.
func (s *State) noteBlocked(email, client string) {
	x := &s.idx
	if x.blocked == nil {
		return
	}
	x.blocked.add(email, 0)
	if client != "" && x.clientMax > 0 && len(x.limits.byClient[client]) >= x.clientMax {
		x.blocked.add(client, clientSalt)
	}
}

// errSoldOut is the refusal of an order for a place that is not left.
// Built by hand: the common answer in a drop skips Sprintf.
func errSoldOut() error {
	return &Error{Code: FailedPrecondition, Reason: ReasonSoldOut, Message: "sold out"}
}

// errViewSoldOut is the view's sold-out refusal: one value for every
// refusal of a drop (nothing changes an *Error once made), so answering
// one allocates nothing. It equals errSoldOut's.
var errViewSoldOut = errSoldOut()

// SoldOut returns the machine's answer to storefront order c at now when
// the view is certain it is SOLD_OUT: one ticket type, public, on sale and
// sold out, no code, session, form, queue gate or limit that the machine
// checks before the stock, and a buyer who has no open order or
// registration. Otherwise it returns nil: ask the machine.
func (v *SaleView) SoldOut(now time.Time, c PlaceOrder) error {
	if v == nil || !v.published || len(v.soldOut) == 0 || !c.Storefront || len(c.Items) != 1 ||
		c.CheckoutSessionID != "" || c.RedemptionCode != "" || c.PromotionCode != "" {
		return nil
	}
	it := c.Items[0]
	if it.ItemType != ItemRegistrationType || it.Quantity != 1 || (v.gated && !now.Before(v.gateAt)) {
		return nil
	}
	var t *soldOutType
	for i := range v.soldOut {
		if v.soldOut[i].id == it.ItemID {
			t = &v.soldOut[i]
			break
		}
	}
	if t == nil || (t.opensAt != nil && now.Before(*t.opensAt)) || (t.closesAt != nil && !now.Before(*t.closesAt)) {
		return nil
	}
	email, err := checkEmail("email", c.Email, true)
	if err != nil {
		return nil
	}
	if _, err := checkName("name", c.Name); err != nil || checkResponses("responses", c.Responses) != nil {
		return nil
	}
	if v.blocked.has(normEmail(email), 0) || (c.Client != "" && v.blocked.has(c.Client, clientSalt)) {
		return nil
	}
	return errViewSoldOut
}

// QueueStatus returns the machine's answer to a poll of queue entry id at
// now when the entry waits at the view's state (waiting, or sold_out when
// the room is); false when the view cannot tell (ask the machine). A poll
// it answers is noted on the entry's record, where the shell's sweep of
// unpolled entries reads it (Machine.QueueWaiters): a word written at most
// once a second per entry, rather than a note in a locked map per poll.
func (v *SaleView) QueueStatus(now time.Time, id string) (QueueStatus, bool) {
	if v == nil || !v.published || v.room == nil {
		return QueueStatus{}, false
	}
	r := v.room
	e := r.entries.get(id)
	if e == nil || r.expired.has(id, 0) {
		return QueueStatus{}, false
	}
	e.notePoll(now)
	rank := int(e.rank)
	if !r.shuffled {
		rank = -1
	} else if rank < r.next {
		return QueueStatus{}, false // reached by admission: admitted, or passed over
	}
	return waitingStatus(e.id, rank, r.onSaleAt, r.soldOut, r.next, r.admitPerMinute, now), true
}

// ---- the shared structures

// keyFilter is an add-only Bloom filter of strings: has never misses a
// key added, and says yes to a key not added about once in 400 while it
// holds at most cap keys. One goroutine adds; any reads.
type keyFilter struct {
	words []atomic.Uint64
	mask  uint64 // bits - 1
	n     int    // keys added (the writer's)
	cap   int
}

// keyFilterHashes is the bits set per key; keyFilterBits the bits per key
// at capacity (about 0.24% false positives).
const (
	keyFilterHashes = 4
	keyFilterBits   = 16
	keyFilterMin    = 1 << 12 // bits
	// clientSalt keeps a client id apart from an email in one filter.
	clientSalt = 0x9e3779b97f4a7c15
)

var filterSeed = maphash.MakeSeed()

// newKeyFilter makes a filter with room for twice keys.
func newKeyFilter(keys int) *keyFilter {
	bits := uint64(keyFilterMin)
	for bits < uint64(keys)*2*keyFilterBits {
		bits <<= 1
	}
	return &keyFilter{words: make([]atomic.Uint64, bits/64), mask: bits - 1, cap: int(bits / keyFilterBits)}
}

func (f *keyFilter) full() bool { return f.n >= f.cap }

func (f *keyFilter) add(k string, salt uint64) {
	h := maphash.String(filterSeed, k) ^ salt
	step := h>>32 | 1
	for i := range uint64(keyFilterHashes) {
		b := (h + i*step) & f.mask
		f.words[b>>6].Or(1 << (b & 63))
	}
	f.n++
}

// has reports whether k may have been added; a nil filter holds nothing.
func (f *keyFilter) has(k string, salt uint64) bool {
	if f == nil {
		return false
	}
	h := maphash.String(filterSeed, k) ^ salt
	step := h>>32 | 1
	for i := range uint64(keyFilterHashes) {
		b := (h + i*step) & f.mask
		if f.words[b>>6].Load()&(1<<(b&63)) == 0 {
			return false
		}
	}
	return true
}

// entryTable maps a queue id to its entry's rank: open addressing over
// immutable records, at most half full. One goroutine inserts; any reads.
//
// A drop polls 100,000 entries and more, so a lookup is made of cache
// misses: a record keeps its id's bytes in itself (one cache line), so a
// probe reads one line past the slot, not two (BenchmarkEntryTableGet,
// 100,000 entries polled in any order: about 220 -> 130 ns; a slot that
// kept its key's hash too was no faster, at twice the table's memory).
type entryTable struct {
	slots []atomic.Pointer[entryRef]
	mask  uint64
	n     int
}

type entryRef struct {
	id   string // key's bytes when they fit (a queue id does)
	rank int32  // -1 before the shuffle
	// polled is the unix second of the last poll a view answered (0:
	// none), stamped by any reader (notePoll), read by the applier's
	// sweep (QueueWaiters).
	polled atomic.Int64
	key    [entryKeyLen]byte
}

// entryKeyLen is a queue id's length ("q_" and 26 characters).
const entryKeyLen = 28

func newEntryRef(id string, rank int32) *entryRef {
	r := &entryRef{rank: rank}
	if len(id) > 0 && len(id) <= len(r.key) {
		n := copy(r.key[:], id)
		r.id = unsafe.String(&r.key[0], n)
	} else {
		r.id = id
	}
	return r
}

// notePoll stamps a poll at now, rounded up to the second (an entry
// never lapses before the timeout after a poll), at most once a second:
// a drop's polls of one entry do not bounce its cache line between cores.
func (r *entryRef) notePoll(now time.Time) {
	if s := (now.UnixNano() + int64(time.Second) - 1) / int64(time.Second); r.polled.Load() < s {
		r.polled.Store(s)
	}
}

// newEntryTable makes a table of the entries as they are now. An entry
// keeps its record while its rank stands (so polls stamped on it stay);
// a new record (the shuffle's ranks) takes over the old one's stamp.
func newEntryTable(entries []*QueueEntry) *entryTable {
	size := uint64(1 << 10)
	for size < uint64(len(entries))*4 {
		size <<= 1
	}
	t := &entryTable{slots: make([]atomic.Pointer[entryRef], size), mask: size - 1}
	for _, q := range entries {
		ref := q.pub
		if ref == nil || ref.rank != int32(q.Rank) {
			nr := newEntryRef(q.ID, int32(q.Rank))
			if ref != nil {
				nr.polled.Store(ref.polled.Load())
			}
			ref, q.pub = nr, nr
		}
		t.put(ref)
	}
	return t
}

func (t *entryTable) put(r *entryRef) {
	for i := maphash.String(filterSeed, r.id) & t.mask; ; i = (i + 1) & t.mask {
		if t.slots[i].Load() == nil {
			t.slots[i].Store(r)
			t.n++
			return
		}
	}
}

func (t *entryTable) get(id string) *entryRef {
	if t == nil {
		return nil
	}
	for i := maphash.String(filterSeed, id) & t.mask; ; i = (i + 1) & t.mask {
		r := t.slots[i].Load()
		if r == nil || r.id == id {
			return r
		}
	}
}

// notePublishedJoin puts a new entry in the room's entry table, when there
// is one; a full table is replaced by a bigger one (views out keep theirs).
func (r *RoomRec) notePublishedJoin(e *QueueEntry) {
	t := r.pubTable
	if t == nil {
		return
	}
	if (t.n+1)*2 > len(t.slots) {
		r.pubTable = newEntryTable(r.Entries) // e is in Entries already
		return
	}
	e.pub = newEntryRef(e.ID, int32(e.Rank))
	t.put(e.pub)
}

// waitingStatus is a waiting entry's answer at now (rank -1 before the
// shuffle): the machine's and the view's, so both answer alike.
func waitingStatus(id string, rank int, onSaleAt time.Time, soldOut bool, next, admitPerMinute int, now time.Time) QueueStatus {
	st := QueueStatus{QueueID: id, OnSaleAt: At(onSaleAt)}
	if soldOut {
		st.State, st.RetryAfterSeconds = QueueSoldOut, 30
		return st
	}
	st.State = QueueWaiting
	if rank < 0 {
		// Before the shuffle: come back at onSaleAt, or every 30 s.
		st.RetryAfterSeconds = min(30, max(1, int(math.Ceil(onSaleAt.Sub(now).Seconds()))))
		return st
	}
	// Both numbers in one allocation: a drop's every poll answers them.
	n := new([2]int)
	pos := max(1, rank-next+1)
	wait := int(math.Ceil(float64(pos) * 60 / float64(max(1, admitPerMinute))))
	n[0], n[1] = pos, wait
	st.Position, st.EstimatedWaitSeconds = &n[0], &n[1]
	// Near the front, poll often; far back, rarely.
	st.RetryAfterSeconds = min(30, max(2, wait/4))
	return st
}
