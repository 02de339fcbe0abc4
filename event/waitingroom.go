package event

import (
	"cmp"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// The waiting room of a drop (decisions §19). It lives in the event's
// machine, next to the stock, so admission can know the stock: a waiting
// room at the edge (Queue-it, Cloudflare) admits by rate and sends buyers
// to tickets that are gone.
//
// Buyers join a queue (JoinQueue, logged before it is answered; the
// shell sends the joins that arrive together as one JoinQueues, one
// record for all). At
// onSaleAt the machine shuffles everyone who joined before it
// (QueueShuffled, with the seed in the change, so replay makes the same
// order); later joins queue behind them in join order. On each tick of the
// shell's timer (Expire, every queueTick while the room is live) the
// machine admits the next waiting entries in queue order: at most
// admitPerMinute per minute and never more than the places still for sale
// minus the admitted tokens not used yet (QueueAdmitted, with the tokens).
// A token places one storefront order (QueueTokenUsed, in the order's
// batch); an unused one lapses after admissionMinutes (QueueTokensLapsed),
// which frees its share of the stock for the next in line. When nothing is
// left for sale and no hold could lapse, the room is sold out
// (QueueSoldOut: every waiting entry reads sold_out); when places come
// back (a cancellation, a refund) it reopens (QueueReopened). Entries not
// polled for pollTimeout expire (QueueExpired, asked by the shell, which
// sees the polls: ExpireWaiters).

// Bounds and defaults of the waiting room.
const (
	defaultAdmitPerMinute   = 600
	defaultAdmissionMinutes = 10
	maxAdmitPerMinute       = 600_000
	maxAdmissionMinutes     = 120
	// maxQueueEntries bounds one event's queue (joins beyond: 412
	// QUEUE_FULL); each entry costs about 200 bytes.
	maxQueueEntries = 2_000_000
	// queueTick is how often the shell's timer runs the room while it is
	// live: admission batches, sold out within 2 s (decisions §19).
	queueTick = time.Second
	// QueuePollTimeout is how long a waiting entry lives without a poll.
	QueuePollTimeout = 10 * time.Minute
	// maxExpireWaiters bounds one ExpireWaiters command.
	maxExpireWaiters = 10_000
)

// Queue entry states (QueueStatus.State).
const (
	QueueWaiting  = "waiting"
	QueueAdmitted = "admitted"
	QueueSoldOut  = "sold_out"
	QueueExpired  = "expired"
)

// entry states kept in the record (the view derives sold_out from the
// room and shows a used token as admitted).
const (
	entryWaiting uint8 = iota
	entryAdmitted
	entryUsed
	entryLapsed  // admitted, token unused past admittedUntil
	entryExpired // not polled for QueuePollTimeout while waiting
)

// WaitingRoomConfig is the waitingRoom field of PATCH /v1/events/{id}.
// Absent fields keep their current values (a new room needs onSaleAt);
// enabled false turns the room off.
type WaitingRoomConfig struct {
	Enabled          *bool `json:"enabled,omitempty" doc:"Turn the room on or off (default on for a new room)."`
	OpensAt          *Time `json:"opensAt,omitempty" doc:"When joins open; default: at once."`
	OnSaleAt         *Time `json:"onSaleAt,omitempty" doc:"When the sale starts: everyone who joined before is shuffled, then admitted in queue order. Required for a new room."`
	AdmitPerMinute   *int  `json:"admitPerMinute,omitempty" v:"min=1,max=600000" doc:"Admissions per minute at most (default 600)."`
	AdmissionMinutes *int  `json:"admissionMinutes,omitempty" v:"min=1,max=120" doc:"How long an admission's queue token lasts (default 10)."`
	Paused           *bool `json:"paused,omitempty" doc:"Pause admission (joins and polls go on)."`
}

// WaitingRoom is the event's waiting room as the Developer API and the
// console show it: its settings and live counts.
type WaitingRoom struct {
	Enabled          bool  `json:"enabled" doc:"The room is on: joins, admission and queue tokens apply."`
	OpensAt          *Time `json:"opensAt" doc:"When joins open; null: at once."`
	OnSaleAt         Time  `json:"onSaleAt" doc:"When the pre-queue is shuffled and admission starts; from then storefront orders need a Queue-Token."`
	AdmitPerMinute   int   `json:"admitPerMinute" doc:"Admissions per minute at most."`
	AdmissionMinutes int   `json:"admissionMinutes" doc:"How long an admitted entry's queue token lasts."`
	Paused           bool  `json:"paused" doc:"Admission is paused (joins and polls go on)."`
	// SoldOut: nothing left for sale and no hold could lapse; every
	// waiting entry reads sold_out until places come back.
	SoldOut bool `json:"soldOut" doc:"Nothing is left for sale and no hold can lapse: every waiting entry reads sold_out until places come back."`
	// Shuffled: onSaleAt passed and the pre-queue was shuffled.
	Shuffled bool `json:"shuffled" doc:"onSaleAt passed: the pre-queue was shuffled and admission runs."`
	Waiting  int  `json:"waiting" doc:"Entries waiting for admission."`
	Admitted int  `json:"admitted" doc:"Entries admitted so far (tokens used or not)."`
	Used     int  `json:"used" doc:"Tokens that placed an order."`
	Expired  int  `json:"expired" doc:"Entries expired (not polled) and tokens lapsed unused."`
	// AdmittedLastMinute counts the admissions of the minute before the
	// room's last tick.
	AdmittedLastMinute int `json:"admittedLastMinute" doc:"Admissions in the last minute."`
}

// RoomRec is the stored waiting room of an event.
type RoomRec struct {
	Enabled          bool
	OpensAt          *time.Time
	OnSaleAt         time.Time
	AdmitPerMinute   int
	AdmissionMinutes int
	Paused           bool
	Shuffled         bool
	SoldOut          bool
	// RateSince and AdmittedSince meter the rate: at most
	// 1 + AdmitPerMinute * (now - RateSince) / minute admissions since
	// RateSince.
	RateSince     time.Time
	AdmittedSince int
	// Next is the index in the queue order of the first entry not passed
	// by admission yet.
	Next    int
	Entries []*QueueEntry // in join order (Seq)

	// derived (rebuilt on load)
	order   []int32 // entry seqs in queue order (after the shuffle)
	byID    map[string]int32
	byToken map[string]int32
	// pubTable and pubExpired are the sale view's entry table and filter
	// of expired entries (saleview.go), built by the first view.
	pubTable   *entryTable
	pubExpired *keyFilter
	waiting    int // entries waiting
	unused     int // admitted, token not used nor lapsed
	used       int
	lapsed     int // admitted, token lapsed unused
	expired    int // waiting, not polled
}

// QueueEntry is one buyer in the queue.
type QueueEntry struct {
	ID       string
	Seq      int
	Rank     int // position in queue order, from 0; -1 until the shuffle
	JoinedAt time.Time
	Client   string
	State    uint8
	Token    string
	Until    time.Time // the token's end
	OrderID  string

	// pub is the entry's record in the sale view's entry table (derived,
	// never encoded), where views note its polls.
	pub *entryRef
}

// JoinQueue is POST /storefront/v1/events/{eventId}/queue.
type JoinQueue struct {
	// Client is the caller's id (see PlaceOrder.Client).
	Client string `json:"-"`
}

// JoinQueues is a batch of joins the shell gathered from requests that
// arrived together (ops.JoinQueue): one message to the event's actor and
// one log record (QueueJoinedBatch) for all of them, rather than one
// each, as a door's batch of scans is one. Each join is decided as
// JoinQueue decides one, in the batch's order, at the decision's time:
// the same checks, the same entry, the same answer.
type JoinQueues struct {
	// Clients are the joins' callers (JoinQueue.Client), in order.
	Clients []string `json:"-"`
}

// QueueJoins answers JoinQueues: each join's entry, in the batch's
// order. When the queue filled partway, only the first len(Statuses)
// joins are in; the rest are refused as JoinQueue is (ErrQueueFull).
type QueueJoins struct {
	Statuses []QueueStatus `json:"statuses"`
}

// GetQueueStatus is GET /storefront/v1/events/{eventId}/queue/{queueId}.
type GetQueueStatus struct {
	ID string `json:"-"`
}

// ExpireWaiters expires waiting entries the shell saw no poll of for
// QueuePollTimeout (the shell sees the polls; the machine logs the
// outcome). Entries no longer waiting are skipped.
type ExpireWaiters struct {
	IDs []string `json:"ids"`
}

// QueueStatus answers JoinQueue and GetQueueStatus.
type QueueStatus struct {
	QueueID              string `json:"queueId" doc:"The entry's id: poll it; whoever holds it can read the entry's queue token once admitted."`
	State                string `json:"state" v:"enum=waiting|admitted|sold_out|expired" doc:"waiting; admitted (queueToken set); sold_out (nothing left, admission resumes if places come back); expired (not polled for 10 minutes, or the token lapsed unused)."`
	Position             *int   `json:"position" doc:"1 is next; null before onSaleAt (the pre-queue is shuffled then) and once admitted."`
	EstimatedWaitSeconds *int   `json:"estimatedWaitSeconds" doc:"At the admission rate; null before onSaleAt and once admitted."`
	RetryAfterSeconds    int    `json:"retryAfterSeconds" doc:"When to poll again (also the Retry-After header)."`
	QueueToken           string `json:"queueToken,omitempty" doc:"Once admitted: send it as the Queue-Token header to place one order or create one checkout session."`
	AdmittedUntil        *Time  `json:"admittedUntil,omitempty" doc:"Once admitted: the token's end."`
	OnSaleAt             Time   `json:"onSaleAt" doc:"When the sale opens (the pre-queue is shuffled then)."`
}

func (JoinQueue) result(*QueueStatus)      {}
func (JoinQueues) result(*QueueJoins)      {}
func (GetQueueStatus) result(*QueueStatus) {}
func (ExpireWaiters) result(*any)          {}

// ---- changes

// WaitingRoomSet configures the room. Remove (no room) is kept for the log
// format; no decision makes it yet.
type WaitingRoomSet struct {
	At               time.Time  `json:"at"`
	Remove           bool       `json:"remove,omitempty"`
	Enabled          bool       `json:"enabled"`
	OpensAt          *time.Time `json:"opensAt,omitempty"`
	OnSaleAt         time.Time  `json:"onSaleAt"`
	AdmitPerMinute   int        `json:"rate"`
	AdmissionMinutes int        `json:"minutes"`
	Paused           bool       `json:"paused,omitempty"`
}

// QueueJoined adds an entry.
type QueueJoined struct {
	At     time.Time `json:"at"`
	ID     string    `json:"id"`
	Client string    `json:"client,omitempty"`
}

// QueueJoinedBatch adds entries in order: the joins of one JoinQueues,
// in one record.
type QueueJoinedBatch struct {
	At      time.Time `json:"at"`
	IDs     []string  `json:"ids"`
	Clients []string  `json:"clients"`
}

// QueueShuffled assigns the pre-queue its random order at onSaleAt.
type QueueShuffled struct {
	At   time.Time `json:"at"`
	Seed uint64    `json:"seed"`
}

// QueueAdmittedBatch admits entries in queue order with their tokens.
type QueueAdmittedBatch struct {
	At     time.Time `json:"at"`
	IDs    []string  `json:"ids"`
	Tokens []string  `json:"tokens"`
	Until  time.Time `json:"until"`
	// Next is the queue-order index after the last entry passed.
	Next int `json:"next"`
	// Rebase restarts the rate meter at At (a backlog of allowance
	// built while the stock held admission back is not spent at once).
	Rebase bool `json:"rebase,omitempty"`
}

// QueueTokensLapsed ends admitted tokens unused past their end.
type QueueTokensLapsed struct {
	At  time.Time `json:"at"`
	IDs []string  `json:"ids"`
}

// QueueSoldOutSet marks the room sold out (SoldOut true) or reopens it.
type QueueSoldOutSet struct {
	At      time.Time `json:"at"`
	SoldOut bool      `json:"soldOut"`
}

// QueueTokenUsed records the order a token placed.
type QueueTokenUsed struct {
	At      time.Time `json:"at"`
	ID      string    `json:"id"`
	OrderID string    `json:"order"`
}

// QueueExpiredBatch expires waiting entries not polled.
type QueueExpiredBatch struct {
	At  time.Time `json:"at"`
	IDs []string  `json:"ids"`
}

func (WaitingRoomSet) ChangeKind() string     { return "queue.configured" }
func (QueueJoined) ChangeKind() string        { return "queue.joined" }
func (QueueJoinedBatch) ChangeKind() string   { return "queue.joined_batch" }
func (QueueShuffled) ChangeKind() string      { return "queue.shuffled" }
func (QueueAdmittedBatch) ChangeKind() string { return "queue.admitted" }
func (QueueTokensLapsed) ChangeKind() string  { return "queue.tokens_lapsed" }
func (QueueSoldOutSet) ChangeKind() string    { return "queue.sold_out" }
func (QueueTokenUsed) ChangeKind() string     { return "queue.token_used" }
func (QueueExpiredBatch) ChangeKind() string  { return "queue.expired" }

func decodeWaitingRoomSet(d *dec) WaitingRoomSet {
	return WaitingRoomSet{At: d.time(), Remove: d.bool(), Enabled: d.bool(), OpensAt: d.timep(), OnSaleAt: d.time(),
		AdmitPerMinute: int(d.int()), AdmissionMinutes: int(d.int()), Paused: d.bool()}
}

func (c WaitingRoomSet) appendBody(e enc) enc {
	return e.time(c.At).bool(c.Remove).bool(c.Enabled).timep(c.OpensAt).time(c.OnSaleAt).int(int64(c.AdmitPerMinute)).
		int(int64(c.AdmissionMinutes)).bool(c.Paused)
}

func decodeQueueJoined(d *dec) QueueJoined {
	return QueueJoined{At: d.time(), ID: d.str(), Client: d.str()}
}

func (c QueueJoined) appendBody(e enc) enc { return e.time(c.At).str(c.ID).str(c.Client) }

func decodeQueueJoinedBatch(d *dec) QueueJoinedBatch {
	return QueueJoinedBatch{At: d.time(), IDs: d.strs(), Clients: d.strs()}
}

func (c QueueJoinedBatch) appendBody(e enc) enc { return e.time(c.At).strs(c.IDs).strs(c.Clients) }

func decodeQueueShuffled(d *dec) QueueShuffled {
	return QueueShuffled{At: d.time(), Seed: d.uvarint()}
}

func (c QueueShuffled) appendBody(e enc) enc { return e.time(c.At).uvarintBytes(c.Seed) }

func decodeQueueAdmittedBatch(d *dec) QueueAdmittedBatch {
	return QueueAdmittedBatch{At: d.time(), IDs: d.strs(), Tokens: d.strs(), Until: d.time(), Next: int(d.int()), Rebase: d.bool()}
}

func (c QueueAdmittedBatch) appendBody(e enc) enc {
	return e.time(c.At).strs(c.IDs).strs(c.Tokens).time(c.Until).int(int64(c.Next)).bool(c.Rebase)
}

func decodeQueueTokensLapsed(d *dec) QueueTokensLapsed {
	return QueueTokensLapsed{At: d.time(), IDs: d.strs()}
}

func (c QueueTokensLapsed) appendBody(e enc) enc { return e.time(c.At).strs(c.IDs) }

func decodeQueueSoldOutSet(d *dec) QueueSoldOutSet {
	return QueueSoldOutSet{At: d.time(), SoldOut: d.bool()}
}

func (c QueueSoldOutSet) appendBody(e enc) enc { return e.time(c.At).bool(c.SoldOut) }

func decodeQueueTokenUsed(d *dec) QueueTokenUsed {
	return QueueTokenUsed{At: d.time(), ID: d.str(), OrderID: d.str()}
}

func (c QueueTokenUsed) appendBody(e enc) enc { return e.time(c.At).str(c.ID).str(c.OrderID) }

func decodeQueueExpiredBatch(d *dec) QueueExpiredBatch {
	return QueueExpiredBatch{At: d.time(), IDs: d.strs()}
}

func (c QueueExpiredBatch) appendBody(e enc) enc { return e.time(c.At).strs(c.IDs) }

// ---- applies

func (s *State) mustRoom() *RoomRec {
	if s.Room == nil {
		mustNotHappen("queue change without a waiting room")
	}
	return s.Room
}

func (r *RoomRec) entry(id string) *QueueEntry {
	i, ok := r.byID[id]
	if !ok {
		mustNotHappen("queue entry %s not found", id)
	}
	return r.Entries[i]
}

func (c WaitingRoomSet) apply(s *State) {
	if c.Remove {
		s.Room = nil
		return
	}
	r := s.Room
	if r == nil {
		r = &RoomRec{byID: map[string]int32{}, byToken: map[string]int32{}}
		s.Room = r
	}
	rateChanged := r.AdmitPerMinute != c.AdmitPerMinute || r.Paused != c.Paused || r.Enabled != c.Enabled
	r.Enabled, r.OpensAt, r.OnSaleAt = c.Enabled, c.OpensAt, c.OnSaleAt
	r.AdmitPerMinute, r.AdmissionMinutes, r.Paused = c.AdmitPerMinute, c.AdmissionMinutes, c.Paused
	if rateChanged && r.Shuffled {
		r.RateSince, r.AdmittedSince = c.At, 0
	}
}

func (c QueueJoined) apply(s *State) {
	r := s.mustRoom()
	e := &QueueEntry{ID: c.ID, Seq: len(r.Entries), Rank: -1, JoinedAt: c.At, Client: c.Client}
	r.Entries = append(r.Entries, e)
	r.byID[e.ID] = int32(e.Seq)
	r.waiting++
	if r.Shuffled {
		e.Rank = len(r.order)
		r.order = append(r.order, int32(e.Seq))
	}
	r.notePublishedJoin(e)
}

func (c QueueJoinedBatch) apply(s *State) {
	if len(c.Clients) != len(c.IDs) {
		mustNotHappen("queue.joined_batch of %d ids and %d clients", len(c.IDs), len(c.Clients))
	}
	for i, id := range c.IDs {
		QueueJoined{At: c.At, ID: id, Client: c.Clients[i]}.apply(s)
	}
}

func (c QueueShuffled) apply(s *State) {
	r := s.mustRoom()
	perm := make([]int32, len(r.Entries))
	for i := range perm {
		perm[i] = int32(i)
	}
	shuffle(perm, c.Seed)
	r.order = perm
	for rank, seq := range perm {
		r.Entries[seq].Rank = rank
	}
	r.Shuffled, r.RateSince, r.AdmittedSince, r.Next = true, c.At, 0, 0
	r.pubTable = nil // every rank changed: the next view builds a table
}

// shuffle is Fisher-Yates over a PCG stream seeded by seed: written out
// (not rand.Shuffle) so the order is fixed by this code, whatever the Go
// release that replays the log.
func shuffle(p []int32, seed uint64) {
	g := rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	for i := len(p) - 1; i > 0; i-- {
		j := int(g.Uint64() % uint64(i+1))
		p[i], p[j] = p[j], p[i]
	}
}

func (c QueueAdmittedBatch) apply(s *State) {
	r := s.mustRoom()
	for i, id := range c.IDs {
		e := r.entry(id)
		e.State, e.Token, e.Until = entryAdmitted, c.Tokens[i], c.Until
		r.byToken[e.Token] = int32(e.Seq)
	}
	r.waiting -= len(c.IDs)
	r.unused += len(c.IDs)
	r.AdmittedSince += len(c.IDs)
	r.Next = c.Next
	if c.Rebase {
		r.RateSince, r.AdmittedSince = c.At, 0
	}
}

func (c QueueTokensLapsed) apply(s *State) {
	r := s.mustRoom()
	for _, id := range c.IDs {
		r.entry(id).State = entryLapsed
	}
	r.unused -= len(c.IDs)
	r.lapsed += len(c.IDs)
}

func (c QueueSoldOutSet) apply(s *State) { s.mustRoom().SoldOut = c.SoldOut }

func (c QueueTokenUsed) apply(s *State) {
	r := s.mustRoom()
	e := r.entry(c.ID)
	e.State, e.OrderID = entryUsed, c.OrderID
	r.unused--
	r.used++
}

func (c QueueExpiredBatch) apply(s *State) {
	r := s.mustRoom()
	for _, id := range c.IDs {
		r.entry(id).State = entryExpired
		if r.pubExpired != nil {
			r.pubExpired.add(id, 0)
		}
	}
	r.waiting -= len(c.IDs)
	r.expired += len(c.IDs)
}

// reindexRoom rebuilds the room's derived fields from its entries.
func (s *State) reindexRoom() {
	r := s.Room
	if r == nil {
		return
	}
	r.byID, r.byToken = make(map[string]int32, len(r.Entries)), map[string]int32{}
	r.order = r.order[:0]
	r.waiting, r.unused, r.used, r.lapsed, r.expired = 0, 0, 0, 0, 0
	for _, e := range r.Entries {
		r.byID[e.ID] = int32(e.Seq)
		if e.Token != "" {
			r.byToken[e.Token] = int32(e.Seq)
		}
		if e.Rank >= 0 {
			r.order = append(r.order, int32(e.Seq))
		}
		switch e.State {
		case entryWaiting:
			r.waiting++
		case entryAdmitted:
			r.unused++
		case entryUsed:
			r.used++
		case entryLapsed:
			r.lapsed++
		default:
			r.expired++
		}
	}
	slices.SortFunc(r.order, func(a, b int32) int { return cmp.Compare(r.Entries[a].Rank, r.Entries[b].Rank) })
}

// ---- decisions

// roomGates reports whether storefront orders need a queue token now.
func (m *Machine) roomGates(now time.Time) bool {
	r := m.s.Room
	return r != nil && r.Enabled && !now.Before(r.OnSaleAt)
}

func (m *Machine) configureRoom(now time.Time, v WaitingRoomConfig) (Change, error) {
	ch := WaitingRoomSet{At: now, Enabled: true, AdmitPerMinute: defaultAdmitPerMinute, AdmissionMinutes: defaultAdmissionMinutes}
	if r := m.s.Room; r != nil {
		ch.Enabled, ch.OpensAt, ch.OnSaleAt = r.Enabled, r.OpensAt, r.OnSaleAt
		ch.AdmitPerMinute, ch.AdmissionMinutes, ch.Paused = r.AdmitPerMinute, r.AdmissionMinutes, r.Paused
	} else if v.OnSaleAt == nil {
		return nil, FieldError("waitingRoom.onSaleAt", "required for a new waiting room")
	}
	if v.Enabled != nil {
		ch.Enabled = *v.Enabled
	}
	if v.OpensAt != nil {
		t := v.OpensAt.Time.UTC()
		ch.OpensAt = &t
	}
	if v.OnSaleAt != nil {
		t := v.OnSaleAt.Time.UTC()
		if r := m.s.Room; r != nil && r.Shuffled && !t.Equal(r.OnSaleAt) {
			return nil, FieldError("waitingRoom.onSaleAt", "the queue was shuffled at onSaleAt already: it cannot move")
		}
		ch.OnSaleAt = t
	}
	if v.AdmitPerMinute != nil {
		if *v.AdmitPerMinute < 1 || *v.AdmitPerMinute > maxAdmitPerMinute {
			return nil, FieldError("waitingRoom.admitPerMinute", "must be between 1 and 600000")
		}
		ch.AdmitPerMinute = *v.AdmitPerMinute
	}
	if v.AdmissionMinutes != nil {
		if *v.AdmissionMinutes < 1 || *v.AdmissionMinutes > maxAdmissionMinutes {
			return nil, FieldError("waitingRoom.admissionMinutes", "must be between 1 and 120")
		}
		ch.AdmissionMinutes = *v.AdmissionMinutes
	}
	if v.Paused != nil {
		ch.Paused = *v.Paused
	}
	if ch.OpensAt != nil && ch.OpensAt.After(ch.OnSaleAt) {
		return nil, FieldError("waitingRoom.opensAt", "must not be after onSaleAt")
	}
	return ch, nil
}

// roomView is the room as the event answers it; nil without a room.
func (m *Machine) roomView() *WaitingRoom {
	r := m.s.Room
	if r == nil {
		return nil
	}
	return &WaitingRoom{
		Enabled: r.Enabled, OpensAt: tp(r.OpensAt), OnSaleAt: At(r.OnSaleAt), AdmitPerMinute: r.AdmitPerMinute,
		AdmissionMinutes: r.AdmissionMinutes, Paused: r.Paused, SoldOut: r.SoldOut, Shuffled: r.Shuffled,
		Waiting: r.waiting, Admitted: r.unused + r.used + r.lapsed, Used: r.used, Expired: r.expired + r.lapsed,
		AdmittedLastMinute: m.admittedSince(m.lastTick.Add(-time.Minute)),
	}
}

// admittedSince counts the entries admitted after t (an admission's time
// is its token's end less the admission minutes), from the newest back.
func (m *Machine) admittedSince(t time.Time) int {
	r := m.s.Room
	if !r.Shuffled {
		return 0
	}
	n := 0
	for i := min(r.Next, len(r.order)) - 1; i >= 0; i-- {
		e := r.Entries[r.order[i]]
		if e.State == entryWaiting || e.State == entryExpired {
			continue
		}
		if !e.Until.Add(-time.Duration(r.AdmissionMinutes) * time.Minute).After(t) {
			break
		}
		n++
	}
	return n
}

func (c JoinQueue) decide(m *Machine, now time.Time) (any, []Change, error) {
	if err := m.joinable(now); err != nil {
		return nil, nil, err
	}
	if len(m.s.Room.Entries) >= maxQueueEntries {
		return nil, nil, ErrQueueFull()
	}
	ch := QueueJoined{At: now, ID: m.newQueueID(), Client: c.Client}
	return m.joinedStatus(ch.ID, 0, now), []Change{ch}, nil
}

func (c JoinQueues) decide(m *Machine, now time.Time) (any, []Change, error) {
	if len(c.Clients) == 0 {
		return QueueJoins{}, nil, nil
	}
	if err := m.joinable(now); err != nil {
		return nil, nil, err
	}
	n := min(len(c.Clients), maxQueueEntries-len(m.s.Room.Entries))
	if n <= 0 {
		return nil, nil, ErrQueueFull()
	}
	ch := QueueJoinedBatch{At: now, IDs: make([]string, n), Clients: c.Clients[:n:n]}
	res := QueueJoins{Statuses: make([]QueueStatus, n)}
	for i := range n {
		ch.IDs[i] = m.newQueueID()
		res.Statuses[i] = m.joinedStatus(ch.IDs[i], i, now)
	}
	return res, []Change{ch}, nil
}

// joinable checks a join may be made now (JoinQueue's checks before the
// queue's bound).
func (m *Machine) joinable(now time.Time) error {
	r := m.s.Room
	if m.s.Event.Status != EventPublished {
		return Reasonf(FailedPrecondition, notPublishedReason(m.s.Event.Status), "event is %s, not published", m.s.Event.Status)
	}
	if r == nil || !r.Enabled {
		return Reasonf(FailedPrecondition, ReasonNoWaitingRoom, "the event has no waiting room: order directly")
	}
	if r.OpensAt != nil && now.Before(*r.OpensAt) {
		return Reasonf(FailedPrecondition, ReasonQueueNotOpen, "the queue opens at %s", r.OpensAt.Format(time.RFC3339))
	}
	if r.SoldOut {
		return Reasonf(FailedPrecondition, ReasonSoldOut, "sold out: nothing is left for sale and no hold can lapse")
	}
	return nil
}

// ErrQueueFull refuses a join past the queue's bound.
func ErrQueueFull() error {
	return Reasonf(FailedPrecondition, ReasonQueueFull, "the queue is full")
}

func (m *Machine) newQueueID() string { return "q_" + m.ids.Code(26) }

// joinedStatus is the answer of a join that makes entry id, the i-th
// (from 0) of those the decision adds.
func (m *Machine) joinedStatus(id string, i int, now time.Time) QueueStatus {
	r := m.s.Room
	e := QueueEntry{ID: id, Seq: len(r.Entries) + i, Rank: -1, JoinedAt: now}
	if r.Shuffled {
		e.Rank = len(r.order) + i
	}
	return m.queueStatus(&e, now)
}

func (c GetQueueStatus) decide(m *Machine, now time.Time) (any, []Change, error) {
	r := m.s.Room
	if r == nil {
		return nil, nil, Errorf(NotFound, "queue entry not found")
	}
	i, ok := r.byID[c.ID]
	if !ok {
		return nil, nil, Errorf(NotFound, "queue entry not found")
	}
	return m.queueStatus(r.Entries[i], now), nil, nil
}

// queueStatus is an entry as its buyer polls it.
func (m *Machine) queueStatus(e *QueueEntry, now time.Time) QueueStatus {
	r := m.s.Room
	st := QueueStatus{QueueID: e.ID, OnSaleAt: At(r.OnSaleAt)}
	switch e.State {
	case entryAdmitted, entryUsed:
		st.State, st.QueueToken, st.AdmittedUntil = QueueAdmitted, e.Token, tp(&e.Until)
		return st
	case entryLapsed, entryExpired:
		st.State, st.RetryAfterSeconds = QueueExpired, 0
		return st
	}
	return waitingStatus(e.ID, e.Rank, r.OnSaleAt, r.SoldOut, r.Next, r.AdmitPerMinute, now)
}

func (c ExpireWaiters) decide(m *Machine, now time.Time) (any, []Change, error) {
	r := m.s.Room
	if r == nil || len(c.IDs) == 0 {
		return nil, nil, nil
	}
	if len(c.IDs) > maxExpireWaiters {
		return nil, nil, FieldError("ids", "too many")
	}
	var ids []string
	seen := map[string]bool{}
	for _, id := range c.IDs {
		if i, ok := r.byID[id]; ok && r.Entries[i].State == entryWaiting && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil, nil
	}
	return nil, []Change{QueueExpiredBatch{At: now, IDs: ids}}, nil
}

// checkQueueToken checks a storefront order's or checkout session's queue
// token: the entry it names, admitted, unused and not past its end.
func (m *Machine) checkQueueToken(now time.Time, token string) (*QueueEntry, error) {
	if token == "" {
		return nil, Reasonf(FailedPrecondition, ReasonQueueTokenRequired,
			"the event sells through its waiting room: join the queue and send the Queue-Token header once admitted")
	}
	r := m.s.Room
	i, ok := r.byToken[token]
	if !ok {
		return nil, Reasonf(FailedPrecondition, ReasonQueueTokenInvalid, "queue token unknown, used or expired")
	}
	e := r.Entries[i]
	if e.State != entryAdmitted || !now.Before(e.Until) {
		return nil, Reasonf(FailedPrecondition, ReasonQueueTokenInvalid, "queue token unknown, used or expired")
	}
	return e, nil
}

// roomForSale is the number of places still for sale in the room's
// sense (neither sold nor held) over the event's open public ticket
// types; math.MaxInt when one has no capacity. held is the places held.
func (m *Machine) roomForSale(now time.Time) (forSale, held int) {
	for _, id := range m.s.TypeOrder {
		t := m.s.Types[id]
		if !t.IsPublic || typeSaleState(t, now) == SaleClosed {
			continue
		}
		held += t.Held
		if t.Capacity == nil {
			forSale = math.MaxInt
			continue
		}
		if forSale != math.MaxInt {
			forSale += t.room()
		}
	}
	return forSale, held
}

// roomTick is the room's part of Expire: the shuffle at onSaleAt, lapsed
// tokens, sold out and back, and the next admissions.
func (m *Machine) roomTick(now time.Time) []Change {
	r := m.s.Room
	if r == nil || !r.Enabled || now.Before(r.OnSaleAt) || m.s.Event.Status != EventPublished {
		return nil
	}
	var out []Change
	if !r.Shuffled {
		h := fnv.New64a()
		h.Write([]byte(m.ids.Code(16)))
		out = append(out, QueueShuffled{At: now, Seed: h.Sum64()})
	}
	var lapsed []string
	if r.unused > 0 {
		for _, e := range r.Entries {
			if e.State == entryAdmitted && !now.Before(e.Until) {
				lapsed = append(lapsed, e.ID)
			}
		}
		if len(lapsed) > 0 {
			out = append(out, QueueTokensLapsed{At: now, IDs: lapsed})
		}
	}
	forSale, held := m.roomForSale(now)
	switch {
	case !r.SoldOut && forSale == 0 && held == 0:
		return append(out, QueueSoldOutSet{At: now, SoldOut: true})
	case r.SoldOut && forSale > 0:
		out = append(out, QueueSoldOutSet{At: now, SoldOut: false})
	case r.SoldOut:
		return out
	}
	if r.Paused {
		return out
	}
	// What the shuffle and lapses above change, computed as they will be
	// once applied.
	since, admitted, next, unused := r.RateSince, r.AdmittedSince, r.Next, r.unused-len(lapsed)
	order := r.order
	if !r.Shuffled {
		since, admitted, next = now, 0, 0
		order = nil // the shuffled order is not known before its apply
	}
	allowance := 1 + int(int64(now.Sub(since))*int64(r.AdmitPerMinute)/int64(time.Minute)) - admitted
	stock := forSale - unused
	if forSale == math.MaxInt {
		stock = math.MaxInt
	}
	n := min(allowance, stock)
	if n <= 0 || order == nil {
		return out
	}
	// A second's worth of admissions at most per tick: an allowance built
	// while the stock held admission back is not spent at once.
	burst := max(1, r.AdmitPerMinute/60)
	rebase := n > burst
	n = min(n, burst)
	b := QueueAdmittedBatch{At: now, Until: now.Add(time.Duration(r.AdmissionMinutes) * time.Minute), Rebase: rebase}
	for next < len(order) && len(b.IDs) < n {
		e := r.Entries[order[next]]
		next++
		if e.State != entryWaiting {
			continue
		}
		b.IDs = append(b.IDs, e.ID)
		b.Tokens = append(b.Tokens, "qt_"+m.ids.Code(26))
	}
	if len(b.IDs) == 0 {
		return out
	}
	b.Next = next
	return append(out, b)
}

// roomDeadline is when the room's tick is next due: onSaleAt before the
// shuffle, then every queueTick while anyone waits, a token is out or the
// room is sold out (places may come back).
func (m *Machine) roomDeadline() (time.Time, bool) {
	r := m.s.Room
	if r == nil || !r.Enabled || m.s.Event == nil || m.s.Event.Status != EventPublished {
		return time.Time{}, false
	}
	if !r.Shuffled {
		return r.OnSaleAt, true
	}
	if r.waiting == 0 && r.unused == 0 && !r.SoldOut {
		return time.Time{}, false
	}
	return m.lastTick.Add(queueTick), true
}

// useQueueToken returns the change that spends a storefront order's queue
// token, nil when the room does not gate orders now. token is the
// request's, else its checkout session's.
func (m *Machine) useQueueToken(now time.Time, token, sessionID string) (*QueueEntry, error) {
	if !m.roomGates(now) {
		return nil, nil
	}
	if token == "" && sessionID != "" {
		if s, ok := m.s.Checkouts[sessionID]; ok {
			token = s.QueueToken
		}
	}
	return m.checkQueueToken(now, token)
}

// roomAfter is the room view once ch applies (the answer of the PATCH that
// configures it).
func (m *Machine) roomAfter(ch WaitingRoomSet) *WaitingRoom {
	if ch.Remove {
		return nil
	}
	v := m.roomView()
	if v == nil {
		v = &WaitingRoom{}
	}
	v.Enabled, v.OpensAt, v.OnSaleAt, v.Paused = ch.Enabled, tp(ch.OpensAt), At(ch.OnSaleAt), ch.Paused
	v.AdmitPerMinute, v.AdmissionMinutes = ch.AdmitPerMinute, ch.AdmissionMinutes
	return v
}

// ---- snapshot section (appended after the organizer content's)

const roomVersion = 1

func (s *State) appendRoom(e enc) enc {
	r := s.Room
	if r == nil {
		return append(e, 0)
	}
	e = append(e, roomVersion)
	e = e.bool(r.Enabled).timep(r.OpensAt).time(r.OnSaleAt).int(int64(r.AdmitPerMinute)).int(int64(r.AdmissionMinutes)).
		bool(r.Paused).bool(r.Shuffled).bool(r.SoldOut).time(r.RateSince).int(int64(r.AdmittedSince)).int(int64(r.Next))
	e = e.uvarintBytes(uint64(len(r.Entries)))
	for _, q := range r.Entries {
		e = e.str(q.ID).int(int64(q.Rank)).time(q.JoinedAt).str(q.Client).int(int64(q.State)).str(q.Token).time(q.Until).str(q.OrderID)
	}
	return e
}

func (s *State) decodeRoom(d *dec) {
	if len(d.s) == 0 || d.err != nil {
		return
	}
	v := d.s[0]
	d.s = d.s[1:]
	if v == 0 {
		return
	}
	if v != roomVersion {
		d.fail()
		return
	}
	r := &RoomRec{Enabled: d.bool(), OpensAt: d.timep(), OnSaleAt: d.time(), AdmitPerMinute: int(d.int()), AdmissionMinutes: int(d.int()),
		Paused: d.bool(), Shuffled: d.bool(), SoldOut: d.bool(), RateSince: d.time(), AdmittedSince: int(d.int()), Next: int(d.int())}
	n := d.count()
	r.Entries = make([]*QueueEntry, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		q := &QueueEntry{ID: d.str(), Seq: i, Rank: int(d.int()), JoinedAt: d.time(), Client: d.str(), State: uint8(d.int()),
			Token: d.str(), Until: d.time(), OrderID: d.str()}
		r.Entries = append(r.Entries, q)
	}
	if d.err != nil {
		return
	}
	s.Room = r
}

// QueueWaiters calls fn with each waiting entry's id, join time and the
// last poll a sale view answered (zero: none noted; rounded up to the
// second), in
// join order, until fn answers false (the shell's sweep of entries not
// polled: see ExpireWaiters). A poll the view of a state from before the
// shuffle answered after the shuffle's view was built may be missing: the
// entry's next poll, due within 30 s, is noted.
func (m *Machine) QueueWaiters(fn func(id string, joined, polled time.Time) bool) {
	r := m.s.Room
	if r == nil || r.waiting == 0 {
		return
	}
	for _, e := range r.Entries {
		if e.State != entryWaiting {
			continue
		}
		var polled time.Time
		if e.pub != nil {
			if s := e.pub.polled.Load(); s > 0 {
				polled = time.Unix(s, 0).UTC()
			}
		}
		if !fn(e.ID, e.JoinedAt, polled) {
			return
		}
	}
}

// StorefrontWaitingRoom is the waiting room as the storefront shows it:
// when it opens and sells, whether it is sold out; never a count.
type StorefrontWaitingRoom struct {
	OpensAt  *Time `json:"opensAt" doc:"When joins open; null: at once."`
	OnSaleAt Time  `json:"onSaleAt" doc:"When the sale opens: the pre-queue is shuffled and admission starts."`
	// Required: orders and checkout sessions need a queue token now.
	Required bool `json:"required" doc:"From onSaleAt: storefront orders and checkout sessions need the Queue-Token of an admitted entry."`
	SoldOut  bool `json:"soldOut" doc:"Nothing is left for sale and no hold can lapse; joins answer 412 SOLD_OUT."`
	Paused   bool `json:"paused" doc:"Admission is paused by the organizer (joins go on)."`
}

// roomCatalog puts the storefront's view of the room in the catalog, and
// takes the organizer's (with its counts) out of the event.
func (m *Machine) roomCatalog(cat *Catalog, now time.Time) {
	cat.Event.WaitingRoom = nil
	if r := m.s.Room; r != nil && r.Enabled {
		cat.WaitingRoom = &StorefrontWaitingRoom{OpensAt: tp(r.OpensAt), OnSaleAt: At(r.OnSaleAt), Required: m.roomGates(now),
			SoldOut: r.SoldOut, Paused: r.Paused}
	}
}
