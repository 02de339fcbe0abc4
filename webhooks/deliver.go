package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"ticketd/outbox"
	"ticketd/persistence"
)

var errFull = errors.New("full")

// errAborted reports an attempt cut short by Close: not recorded.
var errAborted = errors.New("webhooks: attempt aborted by close")

// body is the JSON sent to endpoints.
type body struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"createdAt"`
	// EventID and Seq place the webhook in its event's change feed
	// (decisions §20): a receiver that sees a gap in seq reads the feed.
	EventID string          `json:"eventId,omitempty"`
	Seq     uint64          `json:"seq,omitempty"`
	Data    json.RawMessage `json:"data"`
}

// lane is the delivery state of one endpoint: the tasks handed to its
// worker (claimed, so rounds skip them), whether a worker runs, and until
// when the endpoint backs off after a failure.
type lane struct {
	queue   []outbox.Entry
	claimed map[string]bool
	running bool
	retryAt time.Time
	// latency is a moving average of the endpoint's answer times: how
	// fast its lane drains.
	latency time.Duration
}

// drain estimates when the lane will have delivered n more tasks.
func (l *lane) drain(now time.Time, n int) time.Time {
	per := l.latency
	if per <= 0 {
		per = 100 * time.Millisecond
	}
	return now.Add(per * time.Duration(n))
}

// lease is how long a task at position i of lane l stays out of the due
// index: twice the lane's expected time to reach it, plus one timeout. A
// crash brings it back then; a lease that runs out while the task still
// waits in its lane is renewed by the round that finds it.
func (s *Service) lease(l *lane, now time.Time, i int) time.Time {
	return l.drain(now, 2*(i+1)).Add(s.cfg.Timeout)
}

// maxLane bounds the tasks waiting in one endpoint's lane; more stay
// queued in the store.
func (s *Service) maxLane() int { return 4 * s.cfg.BatchMax }

func (s *Service) laneOf(endpoint string) *lane {
	l := s.lanes[endpoint]
	if l == nil {
		l = &lane{claimed: map[string]bool{}}
		s.lanes[endpoint] = l
	}
	return l
}

// round fans the event queue out into tasks and hands the due tasks to
// their endpoints' workers. It never waits for a POST: a slow endpoint
// holds up only its own lane.
func (s *Service) round(ctx context.Context) (outbox.Round, error) {
	more, err := s.fanout()
	if err != nil {
		return outbox.Round{}, err
	}
	now := s.cfg.Now()
	due, full, err := s.tasks.Due(now, s.cfg.BatchMax)
	if err != nil {
		return outbox.Round{}, err
	}
	bt := s.store.NewBatch()
	defer bt.Close()
	type handoff struct {
		endpoint string
		e        outbox.Entry
	}
	var handed []handoff
	waiting := false // due tasks left for a worker to come free
	progress := false
	over := map[string]int{} // tasks of a full lane met this round, by endpoint
	s.lmu.Lock()
	for _, e := range due {
		endpoint, _, _ := strings.Cut(e.ID, "/")
		l := s.laneOf(endpoint)
		slotless := !l.running && s.busy >= s.cfg.Concurrency
		switch {
		case l.claimed[e.ID] && full:
			// Its lease ran out before its lane got to it (the endpoint is
			// slower than the lease guessed): lease it again, so it does
			// not take a place in the next round's scan.
			i := slices.IndexFunc(l.queue, func(q outbox.Entry) bool { return q.ID == e.ID })
			if i < 0 {
				waiting = true // in flight right now
				continue
			}
			le, err := s.tasks.Defer(bt, l.queue[i], s.lease(l, now, i))
			if err != nil {
				s.lmu.Unlock()
				return outbox.Round{}, err
			}
			l.queue[i] = le
			progress = true
		case l.claimed[e.ID]:
			waiting = true
		case now.Before(l.retryAt):
			// The endpoint backs off: the task waits with it, uncharged.
			if _, err := s.tasks.Defer(bt, e, l.retryAt); err != nil {
				s.lmu.Unlock()
				return outbox.Round{}, err
			}
			progress = true
		case (len(l.queue) >= s.maxLane() || slotless) && !full:
			waiting = true // everything due was seen: nothing is stuck behind it
		case len(l.queue) >= s.maxLane() || slotless:
			// More is due behind this task: move it to when its lane (or a
			// worker slot) should be free, so one busy endpoint's backlog
			// never hides another endpoint's tasks from the round.
			over[endpoint]++
			at := l.drain(now, len(l.queue)+over[endpoint])
			if slotless {
				at = now.Add(s.cfg.PollInterval)
			}
			if _, err := s.tasks.Defer(bt, e, at); err != nil {
				s.lmu.Unlock()
				return outbox.Round{}, err
			}
			progress = true
		default:
			// Lease the task to the lane: out of the due index until the
			// worker settles it, back by itself if the process dies first.
			le, err := s.tasks.Defer(bt, e, s.lease(l, now, len(l.queue)))
			if err != nil {
				s.lmu.Unlock()
				return outbox.Round{}, err
			}
			l.claimed[e.ID] = true
			if !l.running {
				l.running = true
				s.busy++
				s.workers.Add(1)
				handed = append(handed, handoff{endpoint: endpoint})
			}
			l.queue = append(l.queue, le)
			progress = true
		}
	}
	s.lmu.Unlock()
	if !bt.Empty() {
		if err := s.store.Commit(bt); err != nil {
			return outbox.Round{}, fmt.Errorf("webhooks: lease tasks: %w", err)
		}
	}
	// Workers start only once their leases are durable.
	for _, h := range handed {
		go s.work(ctx, h.endpoint)
	}
	if more || (full && progress) {
		return outbox.Round{More: true}, nil
	}
	if waiting {
		return outbox.Round{}, nil // a worker's end wakes the loop
	}
	at, ok, err := s.tasks.NextDue()
	if err != nil || !ok {
		return outbox.Round{}, err
	}
	return outbox.Round{Next: at}, nil
}

// work delivers the tasks of endpoint's lane one at a time until the lane
// is empty, the endpoint fails (the rest wait out its backoff) or the
// service closes.
func (s *Service) work(ctx context.Context, endpoint string) {
	defer s.workers.Done()
	defer s.loop.Wake()
	for {
		s.lmu.Lock()
		l := s.lanes[endpoint]
		if len(l.queue) == 0 || ctx.Err() != nil {
			// Closing hands the leases back, so the next start sends
			// these at once rather than when their leases run out.
			rest := l.queue
			l.queue = nil
			for _, r := range rest {
				delete(l.claimed, r.ID)
			}
			l.running = false
			s.busy--
			if l.retryAt.IsZero() {
				delete(s.lanes, endpoint)
			}
			s.lmu.Unlock()
			if len(rest) > 0 {
				s.deferAll(rest, s.cfg.Now())
			}
			return
		}
		e := l.queue[0]
		l.queue = l.queue[1:]
		s.lmu.Unlock()

		began := time.Now()
		retryAt, err := s.deliver(ctx, e)
		took := time.Since(began)
		s.lmu.Lock()
		if errors.Is(err, errAborted) {
			l.queue = append([]outbox.Entry{e}, l.queue...) // handed back above
			s.lmu.Unlock()
			continue
		}
		if l.latency == 0 {
			l.latency = took
		}
		l.latency = (3*l.latency + took) / 4
		delete(l.claimed, e.ID)
		var rest []outbox.Entry
		if !retryAt.IsZero() {
			l.retryAt = retryAt
			rest, l.queue = l.queue, nil
			for _, r := range rest {
				delete(l.claimed, r.ID)
			}
		} else if err == nil {
			l.retryAt = time.Time{}
		}
		s.lmu.Unlock()
		if err != nil {
			s.cfg.Logger.Error("webhooks: delivery not recorded", "endpoint", endpoint, "err", err)
		}
		if len(rest) > 0 {
			s.deferAll(rest, retryAt)
		}
	}
}

// deferAll moves leased tasks to at, uncharged (their endpoint failed, or
// the service closes).
func (s *Service) deferAll(es []outbox.Entry, at time.Time) {
	bt := s.store.NewBatch()
	defer bt.Close()
	for _, e := range es {
		if _, err := s.tasks.Defer(bt, e, at); err != nil {
			s.cfg.Logger.Error("webhooks: defer task", "task", e.ID, "err", err)
			return
		}
	}
	if err := s.store.Commit(bt); err != nil {
		// The leases run out by themselves: the tasks come back then.
		s.cfg.Logger.Error("webhooks: defer tasks", "err", err)
	}
}

// fanout turns up to BatchMax queue entries into tasks. more reports a
// full batch.
func (s *Service) fanout() (more bool, err error) {
	var items []outbox.Entry
	more, err = s.events.Fresh(s.cfg.BatchMax, func(e outbox.Entry) { items = append(items, e) })
	if err != nil {
		return false, err
	}
	if len(items) == 0 {
		return false, nil
	}
	now := s.cfg.Now()
	bt := s.store.NewBatch()
	defer bt.Close()
	var owned []string // events fanned out here: owned (again), not released
	s.mu.Lock()
	for _, it := range items {
		var ev HookEvent
		if err := json.Unmarshal(it.Value, &ev); err != nil {
			s.events.Done(bt, it)
			s.cfg.Logger.Error("webhooks: undecodable queue entry dropped", "key", InboxPrefix+it.ID, "err", err)
			continue
		}
		tasks := 0
		unit := ev.UnitID
		if unit == "" && s.unit != nil {
			unit, _ = s.unit(ev.EventID)
		}
		b, err := json.Marshal(body{ID: ev.ID, Type: ev.Type, CreatedAt: ev.CreatedAt.UTC(), EventID: ev.EventID, Seq: ev.Seq, Data: ev.Data})
		if err != nil {
			continue
		}
		for _, e := range s.eps {
			if e.UnitID != unit || !e.Enabled || !slices.Contains(e.EventTypes, ev.Type) {
				continue
			}
			tb, _ := json.Marshal(task{V: 1, Endpoint: e.ID, EventID: ev.ID, Type: ev.Type, Hook: it.ID, Body: b})
			if err := s.tasks.Add(bt, outbox.Entry{ID: e.ID + "/" + it.ID, Value: tb, NextAt: now}); err != nil {
				s.mu.Unlock()
				s.events.Unread()
				return false, err
			}
			tasks++
		}
		// Every entry read leaves the inbox here, so the queue cursor may
		// move on. In cluster mode the entry is kept (parked) while its
		// deliveries are pending: the event's next owner fans it out again
		// if this node is lost first (see pending).
		if s.share == nil || tasks == 0 {
			s.events.Done(bt, it)
			continue
		}
		owned = append(owned, eventOfHook(it.ID))
		if _, err := s.events.Park(bt, it, now, fmt.Sprintf("fanned out: %d deliveries pending", tasks)); err != nil {
			s.mu.Unlock()
			s.events.Unread()
			return false, err
		}
		bt.Put([]byte(pendingPrefix+it.ID), []byte(strconv.Itoa(tasks)))
	}
	s.mu.Unlock()
	if len(owned) > 0 {
		s.pmu.Lock() // not under s.mu: finish takes s.mu under s.pmu
		for _, ev := range owned {
			delete(s.released, ev)
		}
		s.pmu.Unlock()
	}
	if err := s.store.Commit(bt); err != nil {
		s.events.Unread()
		return false, fmt.Errorf("webhooks: fan out: %w", err)
	}
	return more, nil
}

// deliver makes one attempt of task e and records its outcome. retryAt is
// set when the attempt failed: the endpoint backs off until then.
func (s *Service) deliver(ctx context.Context, e outbox.Entry) (retryAt time.Time, err error) {
	var t task
	if err := json.Unmarshal(e.Value, &t); err != nil {
		s.cfg.Logger.Error("webhooks: undecodable task dropped", "task", e.ID, "err", err)
		return time.Time{}, s.finish(e, nil, "", nil)
	}
	if hook := s.fannedOut(e); hook != "" && s.isReleased(hook) {
		// Its event moved to another node, which delivers it.
		return time.Time{}, s.finish(e, nil, "", nil)
	}
	s.mu.Lock()
	cur, found := s.eps[t.Endpoint]
	var ep Endpoint
	if found {
		ep = *cur
	}
	s.mu.Unlock()
	if !found {
		return time.Time{}, s.finish(e, nil, "", nil)
	}
	if !ep.Enabled {
		return time.Time{}, s.finish(e, nil, ep.ID, &logged{Delivery: Delivery{EventID: t.EventID, Type: t.Type, Attempt: e.Attempts,
			Error: "endpoint disabled; delivery dropped", At: s.cfg.Now().UTC()}, Body: t.Body})
	}
	attempt := e.Attempts + 1
	now := s.cfg.Now()
	secrets := []string{ep.Secret}
	if ep.PreviousSecret != "" && now.Before(ep.PreviousUntil) {
		secrets = append(secrets, ep.PreviousSecret)
	}
	d := logged{Delivery: Delivery{EventID: t.EventID, Type: t.Type, Attempt: attempt, At: now.UTC()}, Body: t.Body}
	start := time.Now()
	var status int
	perr := s.refusedBeforeDial(ep.URL)
	if perr == nil {
		status, perr = s.post(ctx, ep.URL, t, Signature(now.Unix(), t.Body, secrets...))
	}
	if ctx.Err() != nil {
		return time.Time{}, errAborted
	}
	var ref *refusal
	if errors.As(perr, &ref) {
		// Not sent: logged as refused and retried like a failure, since
		// the name may resolve to a public address again.
		d.Refused, perr = true, fmt.Errorf("refused, not sent: %s", ref.why)
		s.cfg.Logger.Warn("webhooks: delivery refused", "endpoint", ep.ID, "why", ref.why)
	}
	d.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	d.StatusCode = status
	switch {
	case perr != nil:
		d.Error = perr.Error()
	case status < 200 || status > 299:
		d.Error = fmt.Sprintf("endpoint answered %d", status)
	default:
		d.Succeeded = true
	}
	failures, err := s.countOutcome(ep.ID, d.Succeeded, now)
	if err != nil {
		return time.Time{}, err
	}
	if d.Succeeded {
		return time.Time{}, s.finish(e, nil, ep.ID, &d)
	}
	retryAt = now.Add(outbox.Backoff(failures, s.cfg.BackoffMin, s.cfg.BackoffMax))
	if attempt >= s.cfg.MaxAttempts {
		s.cfg.Logger.Warn("webhooks: delivery dropped after max attempts", "endpoint", ep.ID, "event", t.EventID)
		return retryAt, s.finish(e, nil, ep.ID, &d)
	}
	next := now.Add(outbox.Backoff(attempt, s.cfg.BackoffMin, s.cfg.BackoffMax))
	return retryAt, s.finish(e, &next, ep.ID, &d)
}

// countOutcome updates endpoint's consecutive failures (and disables it
// after DisableAfter) and returns the new count.
func (s *Service) countOutcome(id string, succeeded bool, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.eps[id]
	if !ok {
		return 1, nil
	}
	c := *cur
	switch {
	case succeeded && c.ConsecutiveFailures == 0:
		return 0, nil
	case succeeded:
		c.ConsecutiveFailures = 0
	default:
		c.ConsecutiveFailures++
		if c.ConsecutiveFailures >= s.cfg.DisableAfter && c.Enabled {
			c.Enabled = false
			c.DisabledReason = fmt.Sprintf("%d consecutive failed deliveries", c.ConsecutiveFailures)
			c.UpdatedAt = now.UTC()
			s.cfg.Logger.Warn("webhooks: endpoint disabled", "endpoint", c.ID, "failures", c.ConsecutiveFailures)
		}
	}
	if err := s.save(&c, nil); err != nil {
		return 0, err
	}
	s.eps[id] = &c
	return c.ConsecutiveFailures, nil
}

// finish settles task e, in one batch: with next it is retried then,
// without it is deleted; with d, d is appended to endpoint's delivery log
// and the log trimmed to LogMax.
func (s *Service) finish(e outbox.Entry, next *time.Time, endpoint string, d *logged) error {
	bt := s.store.NewBatch()
	defer bt.Close()
	hook := s.fannedOut(e)
	if hook != "" {
		// The pending count, the task's state and the commit below under
		// one lock: the hook's other deliveries settle on other endpoints'
		// workers, and Release may drop the task meanwhile.
		s.pmu.Lock()
		defer s.pmu.Unlock()
		if s.released[eventOfHook(hook)] {
			next, hook = nil, "" // released during the attempt: logged, not rescheduled
		}
	}
	if next != nil {
		if _, err := s.tasks.Retry(bt, e, *next, s.cfg.Now(), d.Error); err != nil {
			return err
		}
	} else {
		s.tasks.Done(bt, e)
		if hook != "" {
			if err := s.settlePending(bt, hook); err != nil {
				return err
			}
		}
	}
	trimmed := -1 // -1: no delivery logged
	var logKey, logValue []byte
	if d != nil {
		s.mu.Lock()
		s.logSeq++
		seq := s.logSeq
		over := s.logCount[endpoint] + 1 - s.cfg.LogMax
		s.mu.Unlock()
		b, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("webhooks: encode delivery: %w", err)
		}
		logKey, logValue = []byte(fmt.Sprintf("%s%s/%016x-%08x", logPrefix, endpoint, uint64(d.At.UnixNano()), seq)), b
		bt.Put(logKey, logValue)
		trimmed = 0
		if over > 0 {
			old, err := s.logKeys(endpoint, over)
			if err != nil {
				return err
			}
			for _, k := range old {
				bt.Delete(k)
			}
			trimmed = len(old)
		}
	}
	if err := s.store.Commit(bt); err != nil {
		return fmt.Errorf("webhooks: update task %s: %w", e.ID, err)
	}
	if logKey != nil && s.share != nil {
		// Copies of other nodes' entries land here meanwhile
		// (DeliveryChanged): count what is stored instead of adding up.
		s.mu.Lock()
		if err := s.trimLogLocked(endpoint, s.cfg.LogMax); err != nil {
			// The task is settled; the next entry trims again.
			s.cfg.Logger.Warn("webhooks: delivery log not trimmed", "endpoint", endpoint, "err", err)
		}
		s.mu.Unlock()
		s.shareDelivery(logKey, logValue)
		return nil
	}
	if trimmed >= 0 {
		s.mu.Lock()
		if _, ok := s.eps[endpoint]; ok {
			s.logCount[endpoint] += 1 - trimmed
		}
		s.mu.Unlock()
	}
	return nil
}

// shareDelivery puts a delivery log entry on every node (Share), so the
// endpoint's deliveries are listed, and can be sent again, through any
// node. The task is settled already: a failure here costs the entry's
// copies elsewhere, never a delivery.
func (s *Service) shareDelivery(key, value []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), shareTimeout)
	defer cancel()
	if err := s.share(ctx, key, value, SharedLogTTL); err != nil {
		s.cfg.Logger.Warn("webhooks: delivery log entry not shared", "key", string(key), "err", err)
	}
}

// post sends one attempt, bounded by Config.Timeout. The response body is
// drained (bounded) so the connection can be reused.
func (s *Service) post(ctx context.Context, u string, t task, sig string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(t.Body))
	if err != nil {
		return 0, fmt.Errorf("webhooks: request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "ticketd-webhooks/1")
	req.Header.Set("Webhook-Id", t.EventID)
	req.Header.Set(SignatureHeader, sig)
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("webhooks: post: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// migrateTasks carries deliveries stored under legacyTaskPrefix
// ("whq/<16 hex due unix ns>/<endpoint>/<hook>", JSON task with attempts)
// into the task queue, keeping their due time and attempts.
func (s *Service) migrateTasks() error {
	type old struct {
		key string
		due time.Time
		t   task
	}
	var olds []old
	err := s.store.Scan([]byte(legacyTaskPrefix), func(key, value []byte) error {
		o := old{key: string(key)}
		var ns uint64
		if _, err := fmt.Sscanf(strings.TrimPrefix(o.key, legacyTaskPrefix), "%016x/", &ns); err == nil {
			o.due = time.Unix(0, int64(ns))
		}
		if err := json.Unmarshal(value, &o.t); err != nil {
			o.t = task{}
		}
		olds = append(olds, o)
		return nil
	})
	if err != nil || len(olds) == 0 {
		return err
	}
	bt := s.store.NewBatch()
	defer bt.Close()
	for _, o := range olds {
		bt.Delete([]byte(o.key))
		if o.t.Endpoint == "" || o.t.Hook == "" {
			continue // unreadable: it could never be delivered
		}
		attempts := o.t.Attempts
		o.t.Attempts = 0
		v, err := json.Marshal(o.t)
		if err != nil {
			return fmt.Errorf("webhooks: encode task: %w", err)
		}
		if err := s.tasks.Add(bt, outbox.Entry{ID: o.t.Endpoint + "/" + o.t.Hook, Value: v, NextAt: o.due,
			Attempts: attempts}); err != nil {
			return err
		}
	}
	if err := s.store.Commit(bt); err != nil {
		return fmt.Errorf("webhooks: carry over %d queued deliveries: %w", len(olds), err)
	}
	return nil
}

// pendingPrefix keys, in cluster mode, a fanned-out webhook event's count
// of deliveries not yet settled: pendingPrefix + hook = decimal count. The
// queue entry of the event (its hookfanout entry, parked) is deleted with
// the count's last decrement, which settles it for the cluster (package
// cluster's owed entries): until then a new owner of the event fans it
// out again, so a delivery queued on a lost node is still made, at least
// once, by the next owner (to every endpoint: receivers tell a repeat by
// the webhook event's id).
const pendingPrefix = persistence.PrefixHookPending

// fannedOut is the hook whose pending count task e's settling decrements:
// a fan-out's task in cluster mode, not a resend ("" otherwise).
func (s *Service) fannedOut(e outbox.Entry) string {
	if s.share == nil {
		return ""
	}
	var t task
	if err := json.Unmarshal(e.Value, &t); err != nil || t.Hook == "" || e.ID != t.Endpoint+"/"+t.Hook {
		return ""
	}
	return t.Hook
}

// settlePending counts one of hook's deliveries settled, in bt, and
// deletes the count and the hook's parked entry with the last one; s.pmu
// must be held until bt is committed.
func (s *Service) settlePending(bt *persistence.Batch, hook string) error {
	key := []byte(pendingPrefix + hook)
	v, ok, err := s.store.Get(key)
	if err != nil {
		return fmt.Errorf("webhooks: pending deliveries of %s: %w", hook, err)
	}
	if !ok {
		return nil // an earlier version's fan-out, or released
	}
	n, _ := strconv.Atoi(string(v))
	if n > 1 {
		bt.Put(key, []byte(strconv.Itoa(n-1)))
		return nil
	}
	bt.Delete(key)
	s.events.Done(bt, outbox.Entry{ID: hook, State: outbox.Parked})
	return nil
}

// Release drops, from this node's store, the deliveries queued for the
// events keep refuses, and their pending counts (cluster mode: the node
// no longer owns them; their next owner fans the webhook events that are
// still pending out again). A POST in flight finishes; its outcome is
// logged.
func (s *Service) Release(keep func(eventID string) bool) error {
	// Under pmu throughout: an attempt settling meanwhile (finish) either
	// comes first, and what it wrote is read here, or after, and finds its
	// task gone.
	s.pmu.Lock()
	defer s.pmu.Unlock()
	released := func(hook string) bool {
		ev := eventOfHook(hook)
		if !strings.HasPrefix(ev, "evt_") || keep(ev) {
			return false
		}
		// A task the round leased meanwhile may be written back after
		// the deletion below: the mark drops it when it comes due.
		s.released[ev] = true
		return true
	}
	var ids []string
	state := outbox.Prefix + TaskQueue + "/s/"
	err := s.store.Scan([]byte(state), func(key, _ []byte) error {
		// A task's id is <endpointId>/<hook>; a resend's hook part is
		// "resend-...": it stays with the node it was asked of.
		id := strings.TrimPrefix(string(key), state)
		if _, hook, _ := strings.Cut(id, "/"); released(hook) {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("webhooks: release: %w", err)
	}
	bt := s.store.NewBatch()
	defer bt.Close()
	for _, id := range ids {
		e, err := s.tasks.Get(id)
		if errors.Is(err, outbox.ErrNotFound) {
			continue // settled meanwhile
		}
		if err != nil {
			return fmt.Errorf("webhooks: release: %w", err)
		}
		s.tasks.Done(bt, e)
	}
	err = s.store.Scan([]byte(pendingPrefix), func(key, _ []byte) error {
		if released(strings.TrimPrefix(string(key), pendingPrefix)) {
			bt.Delete(bytes.Clone(key))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("webhooks: release: %w", err)
	}
	if bt.Empty() {
		return nil
	}
	return s.store.Commit(bt)
}

// isReleased reports whether hook's event was released (Release) and not
// fanned out here since.
func (s *Service) isReleased(hook string) bool {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	return s.released[eventOfHook(hook)]
}

// eventOfHook is the event id a hook (a webhook queue key after "hook/")
// starts with.
func eventOfHook(hook string) string {
	ev, _, _ := strings.Cut(hook, "/")
	return ev
}
