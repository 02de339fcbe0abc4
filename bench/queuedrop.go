package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/bench/load"
)

// The queue-drop scenario (decisions §19): QueueBuyers join an event's
// waiting room before onSaleAt against QueuePlaces places, then poll and
// buy when admitted.
//
// The room is set to open paused: at onSaleAt the service shuffles the
// pre-queue, and before admission starts every buyer polls once. With no
// one admitted yet, each position is the buyer's rank plus one, so the
// harness knows the whole queue order: it checks the order is a shuffle of
// the join order, and later that admission followed it exactly. That pass
// is also the status-poll throughput (a closed loop of polls of waiting
// entries, the common request of a drop). Then admission resumes: buyers
// near the front poll, and an admitted buyer places its order with its
// Queue-Token and confirms it (a free ticket: the confirm sells the place).
// Once the last place sold, every waiter must read sold_out within 2 s; a
// last pass polls every buyer not served (all must read sold_out).

// queueDropBound bounds the selling phase (admission to sold out).
const queueDropBound = 3 * time.Minute

// QueueDropReport is what the queue-drop scenario measured.
type QueueDropReport struct {
	Buyers int `json:"buyers"`
	Places int `json:"places"`
	// Durable joins per second (closed loop, each a new buyer) and status
	// polls per second of waiting entries (closed loop, each buyer once),
	// with their ratios to the ceiling measured before the scenario.
	JoinRPS        float64 `json:"joinRps"`
	JoinRatio      float64 `json:"joinRatio"`
	PollRPS        float64 `json:"pollRps"`
	PollRatio      float64 `json:"pollRatio"`
	SoldOutPollRPS float64 `json:"soldOutPollRps"`
	SoldOutRatio   float64 `json:"soldOutPollRatio"`
	// OnSaleToSoldOutS is onSaleAt to the first sold_out answer (the
	// census of positions, admission paused, included: CensusS of it);
	// ResumeToSoldOutS is from admission's start.
	OnSaleToSoldOutS float64 `json:"onSaleToSoldOutS"`
	CensusS          float64 `json:"censusS"`
	ResumeToSoldOutS float64 `json:"resumeToSoldOutS"`
	// LastSaleToSoldOutMs is the last place's sale (its confirm answered)
	// to the first sold_out answer; LastWaitingMs is the latest send time,
	// after the last sale, of a poll still answered waiting.
	LastSaleToSoldOutMs float64 `json:"lastSaleToSoldOutMs"`
	LastWaitingMs       float64 `json:"lastWaitingMs"`
	// AscendingShare is the share of buyers consecutive in join order whose
	// ranks ascend (a shuffle: about 0.5; join order: 1); Spearman is the
	// rank correlation of join order and queue order (a shuffle: about 0).
	AscendingShare float64 `json:"ascendingShare"`
	Spearman       float64 `json:"spearman"`
	Admitted       int     `json:"admitted"`
	Sold           int     `json:"sold"`
	Status5xx      int64   `json:"status5xx"`
}

// queueBuyer is one buyer of the queue drop.
type queueBuyer struct {
	id       string // queue entry
	rank     int    // queue order, from the census (-1 unknown)
	token    string
	until    string // admittedUntil
	order    string // order number once placed
	state    uint8
	inFlight bool
}

const (
	qbWaiting uint8 = iota
	qbAdmitted
	qbOrdered
	qbBought
	qbSoldOut
)

// emptyObject is the body of a join and a confirm.
var emptyObject = []byte(`{}`)

// queueTask is one request of the selling phase.
type queueTask struct {
	buyer int
	kind  uint8 // 0 poll, 1 order, 2 confirm
	sent  time.Time
}

// queueSale is the selling phase's shared state.
type queueSale struct {
	mu      sync.Mutex
	buyers  []queueBuyer
	byRank  []int // buyer by rank
	front   int   // lowest rank that may still wait
	cursor  int   // next rank to poll, in [front, front+window)
	window  int
	ready   []queueTask // orders and confirms to send
	tasks   map[int64]queueTask
	sold    int
	places  int
	lastBuy time.Time // the last confirm's answer
	// firstSoldOut is the first sold_out answer; lastWaiting the latest
	// send time of a poll answered waiting.
	firstSoldOut, lastWaiting time.Time
	bad                       string
	done                      bool
	deadline                  time.Time
}

func (q *queueSale) fail(format string, args ...any) {
	if q.bad == "" {
		q.bad = fmt.Sprintf(format, args...)
	}
}

// next picks the request to send: an order or confirm that waits, else a
// poll of the next buyer near the front of the queue.
func (q *queueSale) next(i int64) (queueTask, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.done || time.Now().After(q.deadline) {
		return queueTask{}, false
	}
	var t queueTask
	if n := len(q.ready); n > 0 {
		t = q.ready[n-1]
		q.ready = q.ready[:n-1]
	} else {
		for q.front < len(q.byRank) && q.buyers[q.byRank[q.front]].state != qbWaiting && !q.buyers[q.byRank[q.front]].inFlight {
			q.front++
		}
		if q.front >= len(q.byRank) {
			// Nobody waits: everyone was admitted (more places than buyers).
			if q.sold == q.places || q.sold == len(q.buyers) {
				q.done = true
			}
			return queueTask{}, false
		}
		found := false
		for range q.window {
			if q.cursor < q.front || q.cursor >= min(len(q.byRank), q.front+q.window) {
				q.cursor = q.front
			}
			b := q.byRank[q.cursor]
			q.cursor++
			if q.buyers[b].state == qbWaiting && !q.buyers[b].inFlight {
				t, found = queueTask{buyer: b}, true
				break
			}
		}
		if !found {
			t = queueTask{buyer: q.byRank[q.front]} // in flight: poll it once more
		}
	}
	q.buyers[t.buyer].inFlight = true
	t.sent = time.Now()
	q.tasks[i] = t
	return t, true
}

// answer takes request i's answer.
func (q *queueSale) answer(i int64, st int, body []byte) {
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	t, ok := q.tasks[i]
	if !ok {
		return
	}
	delete(q.tasks, i)
	b := &q.buyers[t.buyer]
	b.inFlight = false
	switch t.kind {
	case 0:
		if st != 200 {
			q.fail("poll of %s: status %d %s", b.id, st, load.Truncate(body, 200))
			return
		}
		w, err := load.ReadQueueAnswer(body)
		if err != nil {
			q.fail("poll of %s: %v: %s", b.id, err, load.Truncate(body, 200))
			return
		}
		switch string(w.State) {
		case "waiting":
			if t.sent.After(q.lastWaiting) {
				q.lastWaiting = t.sent
			}
		case "admitted":
			if b.state == qbWaiting {
				b.state, b.token, b.until = qbAdmitted, string(w.QueueToken), string(w.AdmittedUntil)
				q.ready = append(q.ready, queueTask{buyer: t.buyer, kind: 1})
			}
		case "sold_out":
			b.state = qbSoldOut
			if q.firstSoldOut.IsZero() {
				q.firstSoldOut = now
			}
			if q.sold == q.places {
				q.done = true
			}
		default:
			q.fail("poll of %s: state %s", b.id, w.State)
		}
	case 1:
		if st != 201 {
			q.fail("order with the token of %s: status %d %s", b.id, st, load.Truncate(body, 200))
			return
		}
		b.order = string(orderNumberOf(body))
		b.state = qbOrdered
		q.ready = append(q.ready, queueTask{buyer: t.buyer, kind: 2})
	case 2:
		if st != 200 {
			q.fail("confirm of %s: status %d %s", b.order, st, load.Truncate(body, 200))
			return
		}
		b.state = qbBought
		q.sold++
		q.lastBuy = now
		if q.sold == q.places && !q.firstSoldOut.IsZero() {
			q.done = true
		}
	}
}

// setupJSON is c.JSON for the scenario's set-up and reads, sent again
// (at most twice) after a transport error: a kept-alive connection the
// service closed after a 512-connection load (its connection cap reclaims
// the longest idle) fails the first request on it. Each is idempotent.
func setupJSON(c *load.Client, method, path, token string, body any, want int, out any) error {
	var err error
	for range 3 {
		st, b, derr := c.Do(method, path, token, body)
		if derr != nil {
			err = derr
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if st != want {
			return fmt.Errorf("bench: %s %s: status %d, want %d: %s", method, path, st, want, load.Truncate(b, 300))
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				return fmt.Errorf("bench: %s %s: decode: %w", method, path, err)
			}
		}
		return nil
	}
	return err
}

// joinRequest is a join of the waiting room at base (the queue's URL).
func joinRequest(req *fasthttp.Request, base, key string) {
	load.SetRequest(req, "POST", base, key)
	req.SetBodyRaw(emptyObject)
}

// joinAnswer reads a join's answer: the new entry's id (a view into
// body), when it is a 201 of a waiting entry.
func joinAnswer(st int, body []byte) ([]byte, bool) {
	w, err := load.ReadQueueAnswer(body)
	if st != 201 || err != nil || len(w.QueueID) == 0 || string(w.State) != "waiting" {
		return nil, false
	}
	return w.QueueID, true
}

// censusAnswer reads a census poll's answer: entry id's position, when
// it is a 200 of id waiting with a position.
func censusAnswer(st int, body []byte, id string) (int, bool) {
	w, err := load.ReadQueueAnswer(body)
	if st != 200 || err != nil || string(w.State) != "waiting" || !w.HasPosition || string(w.QueueID) != id {
		return 0, false
	}
	return w.Position, true
}

func orderNumberOf(body []byte) []byte {
	i := bytes.Index(body, load.OrderNumberKey)
	if i < 0 {
		return nil
	}
	rest := body[i+len(load.OrderNumberKey):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return nil
}

// queueDrop runs the scenario on the shared service.
func (h *Harness) queueDrop(s *load.Server, c *load.Client) error {
	n, places := h.cfg.QueueBuyers, h.cfg.QueuePlaces
	e, err := c.CreateEvent(s.SecretKey, "Queue drop", places)
	if err != nil {
		return err
	}
	rate := min(600_000, 60*places) // a second's worth is every place
	path := "/v1/events/" + e.EventID
	if err := setupJSON(c, "PATCH", path, s.SecretKey, map[string]any{"waitingRoom": map[string]any{
		"onSaleAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "admitPerMinute": rate, "paused": true,
	}}, 200, nil); err != nil {
		return err
	}
	rep := &QueueDropReport{Buyers: n, Places: places}
	h.rep.QueueDrop = rep
	var fives atomic.Int64
	count5xx := func(st int) {
		if st >= 500 || st == 0 {
			fives.Add(1)
		}
	}

	// Joins, each a new buyer, all before onSaleAt.
	buyers := make([]queueBuyer, n)
	sfBase := s.URL + "/storefront/v1/events/" + e.EventID + "/queue"
	var joinBad atomic.Value
	joins := h.record((&load.Load{Name: "queue-drop-join", Client: c, Conns: h.cfg.Conns, Duration: time.Hour, ServerPID: s.Pid(),
		Make: func(i int64, req *fasthttp.Request) bool {
			if i >= int64(n) {
				return false
			}
			joinRequest(req, sfBase, s.PublishableKey)
			return true
		},
		Check: func(i int64, st int, body []byte) {
			count5xx(st)
			id, ok := joinAnswer(st, body)
			if !ok {
				joinBad.CompareAndSwap(nil, fmt.Sprintf("join %d: status %d %s", i, st, load.Truncate(body, 200)))
				return
			}
			buyers[i].id = string(id)
		}}).Run())
	rep.JoinRPS, rep.JoinRatio = joins.RPS, joins.CeilingRatio
	if v := joinBad.Load(); v != nil {
		return fmt.Errorf("bench: %s", v)
	}

	// onSaleAt now: the service shuffles the pre-queue at its next tick.
	onSale := time.Now().Add(time.Second).UTC().Truncate(time.Second).Add(time.Second)
	if err := setupJSON(c, "PATCH", path, s.SecretKey, map[string]any{"waitingRoom": map[string]any{
		"onSaleAt": onSale.Format(time.RFC3339),
	}}, 200, nil); err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var ev struct {
			WaitingRoom struct {
				Shuffled bool `json:"shuffled"`
				Waiting  int  `json:"waiting"`
			} `json:"waitingRoom"`
		}
		if err := setupJSON(c, "GET", path, s.SecretKey, nil, 200, &ev); err != nil {
			return err
		}
		if ev.WaitingRoom.Shuffled {
			if ev.WaitingRoom.Waiting != n {
				return fmt.Errorf("bench: %d waiting after the shuffle, %d joined", ev.WaitingRoom.Waiting, n)
			}
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the pre-queue was not shuffled a minute after onSaleAt")
		}
	}

	// The census: every buyer polls once, admission paused.
	for i := range buyers {
		buyers[i].rank = -1
	}
	var pollBad atomic.Value
	t0 := time.Now()
	census := h.record((&load.Load{Name: "queue-drop-status", Client: c, Conns: h.cfg.Conns, Duration: time.Hour, ServerPID: s.Pid(),
		Make: func(i int64, req *fasthttp.Request) bool {
			if i >= int64(n) {
				return false
			}
			load.SetRequestPath(req, "GET", sfBase, buyers[i].id, s.PublishableKey)
			return true
		},
		Check: func(i int64, st int, body []byte) {
			count5xx(st)
			pos, ok := censusAnswer(st, body, buyers[i].id)
			if !ok {
				pollBad.CompareAndSwap(nil, fmt.Sprintf("census poll %d: status %d %s", i, st, load.Truncate(body, 200)))
				return
			}
			buyers[i].rank = pos - 1
		}}).Run())
	rep.CensusS = time.Since(t0).Seconds()
	rep.PollRPS, rep.PollRatio = census.RPS, census.CeilingRatio
	if v := pollBad.Load(); v != nil {
		return fmt.Errorf("bench: %s", v)
	}
	byRank := make([]int, n)
	for i := range byRank {
		byRank[i] = -1
	}
	for i, b := range buyers {
		if b.rank < 0 || b.rank >= n || byRank[b.rank] >= 0 {
			h.rep.check("queue-drop", "positions are a permutation", false, "buyer %d at rank %d", i, b.rank)
			return nil
		}
		byRank[b.rank] = i
	}
	asc := 0
	var d2 float64
	for i := range n {
		if i+1 < n && buyers[i+1].rank > buyers[i].rank {
			asc++
		}
		d := float64(buyers[i].rank - i)
		d2 += d * d
	}
	rep.AscendingShare = float64(asc) / float64(max(1, n-1))
	rep.Spearman = 1 - 6*d2/(float64(n)*(float64(n)*float64(n)-1))
	// For a uniform shuffle both statistics have a standard deviation
	// about 1/sqrt(n); 6 of them is far from chance, far from join order.
	tol := 6 / math.Sqrt(float64(n))
	h.rep.check("queue-drop", "the pre-queue order is a shuffle", math.Abs(rep.AscendingShare-0.5) < tol && math.Abs(rep.Spearman) < tol,
		"ascending share %.4f (join order: 1, shuffle: 0.5), Spearman %.4f (join order: 1, shuffle: 0), tolerance %.4f", rep.AscendingShare, rep.Spearman, tol)

	// Admission resumes: poll near the front, buy when admitted.
	if err := setupJSON(c, "PATCH", path, s.SecretKey, map[string]any{"waitingRoom": map[string]any{"paused": false}}, 200, nil); err != nil {
		return err
	}
	resumed := time.Now()
	q := &queueSale{buyers: buyers, byRank: byRank, window: places + h.cfg.Conns, tasks: map[int64]queueTask{}, places: places,
		deadline: resumed.Add(queueDropBound)}
	orderBase := s.URL + "/storefront/v1/events/" + e.EventID + "/orders"
	var ack load.Acks
	h.record((&load.Load{Name: "queue-drop-sale", Client: c, Conns: h.cfg.Conns, Duration: queueDropBound, ServerPID: s.Pid(),
		Make: func(i int64, req *fasthttp.Request) bool {
			t, ok := q.next(i)
			if !ok {
				return false
			}
			b := &q.buyers[t.buyer] // id, token and order are set before the task exists
			switch t.kind {
			case 0:
				load.SetRequestPath(req, "GET", sfBase, b.id, s.PublishableKey)
			case 1:
				load.SetRequest(req, "POST", orderBase, s.PublishableKey)
				load.OrderBody(req, "qd", int64(t.buyer), e.TicketTypeID)
				req.Header.Set("Queue-Token", b.token)
			case 2:
				load.SetRequest(req, "POST", orderBase+"/"+b.order+"/confirm", s.PublishableKey)
				req.SetBodyRaw(emptyObject)
			}
			return true
		},
		Check: func(i int64, st int, body []byte) {
			count5xx(st)
			if st == 201 {
				ack.Add(body)
			}
			q.answer(i, st, body)
		},
		Kind: func(i int64) string {
			q.mu.Lock()
			defer q.mu.Unlock()
			return [...]string{"poll", "order", "confirm"}[q.tasks[i].kind]
		}}).Run())
	q.mu.Lock()
	bad, sold, lastBuy, firstSO, lastWait := q.bad, q.sold, q.lastBuy, q.firstSoldOut, q.lastWaiting
	q.mu.Unlock()
	if bad != "" {
		h.rep.check("queue-drop", "every buyer's requests answered as §19 says", false, "%s", bad)
	}
	rep.Sold = sold
	if !firstSO.IsZero() {
		rep.OnSaleToSoldOutS = firstSO.Sub(onSale).Seconds()
		rep.ResumeToSoldOutS = firstSO.Sub(resumed).Seconds()
		rep.LastSaleToSoldOutMs = float64(firstSO.Sub(lastBuy).Microseconds()) / 1000
	}
	if lastWait.After(lastBuy) {
		rep.LastWaitingMs = float64(lastWait.Sub(lastBuy).Microseconds()) / 1000
	}

	// Every buyer not served reads sold_out now.
	var rest []int
	for i, b := range q.buyers {
		if b.state != qbBought {
			rest = append(rest, i)
		}
	}
	var notSoldOut atomic.Int64
	var firstNot atomic.Value
	sweep := h.record((&load.Load{Name: "queue-drop-sold-out-polls", Client: c, Conns: h.cfg.Conns, Duration: time.Hour, ServerPID: s.Pid(),
		Make: func(i int64, req *fasthttp.Request) bool {
			if i >= int64(len(rest)) {
				return false
			}
			load.SetRequestPath(req, "GET", sfBase, buyers[rest[i]].id, s.PublishableKey)
			return true
		},
		Check: func(i int64, st int, body []byte) {
			count5xx(st)
			w, err := load.ReadQueueAnswer(body)
			if st != 200 || err != nil || string(w.State) != "sold_out" || string(w.QueueID) != buyers[rest[i]].id {
				notSoldOut.Add(1)
				firstNot.CompareAndSwap(nil, fmt.Sprintf("status %d %s", st, load.Truncate(body, 200)))
			}
		}}).Run())
	rep.SoldOutPollRPS, rep.SoldOutRatio = sweep.RPS, sweep.CeilingRatio
	detail := ""
	if v := firstNot.Load(); v != nil {
		detail = v.(string)
	}
	h.rep.check("queue-drop", "every waiter reads sold_out once sold out", notSoldOut.Load() == 0 && len(rest) == n-places,
		"%d of %d buyers not served, %d answered otherwise %s", len(rest), n, notSoldOut.Load(), detail)
	h.rep.check("queue-drop", "sold_out within 2 s of the last sale", !firstSO.IsZero() && rep.LastSaleToSoldOutMs < 2000 && rep.LastWaitingMs < 2000,
		"first sold_out %.0f ms after the last sale; last poll answered waiting sent %.0f ms after it", rep.LastSaleToSoldOutMs, rep.LastWaitingMs)

	// Admission went in queue order: the admitted are the first places
	// ranks, and their admissions' times never go back along the ranks.
	admitted, ordered, prev := 0, true, ""
	for r, b := range byRank {
		x := q.buyers[b]
		if x.token == "" {
			continue
		}
		admitted++
		if r >= places || x.until < prev {
			ordered = false
		}
		prev = x.until
	}
	rep.Admitted = admitted
	h.rep.check("queue-drop", "admission strictly in queue order", ordered && admitted == places,
		"%d admitted of %d places; the first %d ranks, admissions in rank order: %v", admitted, places, places, ordered)
	rep.Status5xx = fives.Load()
	h.rep.check("queue-drop", "no 5xx", rep.Status5xx == 0, "%d 5xx or transport errors", rep.Status5xx)
	h.logf("   %d joins at %.0f/s (x%.2f), status polls %.0f/s (x%.2f), sold-out polls %.0f/s (x%.2f); onSaleAt to sold out %.1f s (census %.1f s, from resume %.1f s); last sale to sold_out %.0f ms",
		n, rep.JoinRPS, rep.JoinRatio, rep.PollRPS, rep.PollRatio, rep.SoldOutPollRPS, rep.SoldOutRatio, rep.OnSaleToSoldOutS, rep.CensusS, rep.ResumeToSoldOutS, rep.LastSaleToSoldOutMs)
	if err := h.verifyOrders("queue-drop", c, s, e, &ack); err != nil {
		return err
	}
	a, err := c.Availability(s.SecretKey, e)
	if err != nil {
		return err
	}
	h.rep.check("queue-drop", "every place sold, none held", a.Confirmed == places && a.Held == 0 && sold == places,
		"capacity %d, confirmed %d, held %d, confirms answered %d", a.Capacity, a.Confirmed, a.Held, sold)
	return nil
}
