package event

import (
	"slices"
	"strings"
	"time"
)

// Purging checkout sessions (issue 31). A checkout session holds no seat,
// but its record (items, email, name, answers up to 16 KiB) stays in the
// state and in every snapshot; with nothing removing them, sessions created
// over days (a flood within the per-client limit, or just a busy shop page
// whose visitors never buy) grow the event without bound.
//
// So a session that never placed an order is purged once it has been
// expired for Config.CheckoutSessionKeep (24h by default): the timer's
// Expire, which already lapses holds, emits CheckoutSessionsPurged naming
// the sessions due, at most maxCheckoutPurgeBatch a change. The change
// carries the ids and its own time, so a replay removes exactly what the
// live machine removed, whatever configuration it runs with.
//
// A session that placed an order is kept: the order names it, and the
// order's hosted page reads its return address and language from it. Such
// sessions are bounded by the orders, which the event keeps anyway.
//
// What a session answers:
//
//   - until ExpiresAt: open, as always;
//   - from ExpiresAt until it is purged (CheckoutSessionKeep): expired, as
//     before purging existed: GET answers it with status expired, the
//     hosted page answers 410 "This checkout link has expired" with its back
//     link, an order placed with it 412 CHECKOUT_SESSION_EXPIRED, the
//     waitlist 412 WAITLIST_NOT_OFFERED;
//   - once purged: as an unknown session (the spec's answer for an id the
//     event does not know): 404 "checkout session not found" on the
//     Developer and storefront GET, on an order placed with it and on the
//     waitlist, and the hosted page's not-found page. Keeping a tombstone
//     per purged id to answer "expired" for ever would itself grow without
//     bound; the keep period is the window in which a buyer coming back to
//     an old link still reads "expired, start again" with the way back.

// Purge limits.
const (
	// defaultCheckoutSessionKeep is how long an expired, unused session
	// still answers as expired before it is purged (Config.CheckoutSessionKeep).
	defaultCheckoutSessionKeep = 24 * time.Hour
	// maxCheckoutPurgeBatch bounds the sessions one change purges, so a
	// flood's expiry is spread over several small log records (the next
	// Expire, due at once, takes the rest).
	maxCheckoutPurgeBatch = 1000
)

// CheckoutSessionsPurged removes checkout sessions that expired unused
// (see checkoutpurge.go).
type CheckoutSessionsPurged struct {
	At  time.Time `json:"at"`
	IDs []string  `json:"ids"`
}

// ChangeKind names the change in the log (its binary tag).
func (CheckoutSessionsPurged) ChangeKind() string { return "checkout_session.purged" }

func decodeCheckoutSessionsPurged(d *dec) CheckoutSessionsPurged {
	return CheckoutSessionsPurged{At: d.time(), IDs: d.strs()}
}

func (c CheckoutSessionsPurged) appendBody(e enc) enc { return e.time(c.At).strs(c.IDs) }

func (c CheckoutSessionsPurged) apply(s *State) {
	gone := make(map[string]bool, len(c.IDs))
	l := &s.idx.limits
	for _, id := range c.IDs {
		r, ok := s.Checkouts[id]
		if !ok {
			continue
		}
		gone[id] = true
		l.remove(l.sessions, r.Client, id)
		delete(s.Checkouts, id)
	}
	if len(gone) == 0 {
		return
	}
	// Seq is the position in CheckoutOrder (a snapshot load renumbers
	// the same way).
	s.CheckoutOrder = slices.DeleteFunc(s.CheckoutOrder, func(id string) bool { return gone[id] })
	for i, id := range s.CheckoutOrder {
		s.Checkouts[id].Seq = i
	}
	s.prunePurgeQueue()
}

// purgeQueue is the derived index of the sessions that may be purged one
// day: those with no order placed, in creation order (which is expiry
// order while the TTL stays the same; after a TTL change a session waits
// behind older ones, purged late, never early). Its front is always a
// session with no order (prunePurgeQueue), so NextDeadline reads it at
// once. Never encoded: rebuilt with the other indexes.
type purgeQueue []string

// queueForPurge appends a new session (creation, snapshot load).
func (s *State) queueForPurge(r *CheckoutRec) {
	if r.OrderID == "" {
		s.idx.purge = append(s.idx.purge, r.ID)
	}
}

// prunePurgeQueue drops from the front the sessions gone or that placed
// an order (an order is never unset: they are never purged).
func (s *State) prunePurgeQueue() {
	q := s.idx.purge
	n := 0
	for n < len(q) {
		if r, ok := s.Checkouts[q[n]]; ok && r.OrderID == "" {
			break
		}
		n++
	}
	if n > 0 {
		q = q[n:]
		if len(q) == 0 {
			q = nil // let the backing array go
		}
		s.idx.purge = q
	}
}

// checkoutKeep is the configured keep period.
func (m *Machine) checkoutKeep() time.Duration {
	if m.cfg.CheckoutSessionKeep > 0 {
		return m.cfg.CheckoutSessionKeep
	}
	return defaultCheckoutSessionKeep
}

// purgeDeadline is when the oldest purgeable session is due.
func (m *Machine) purgeDeadline() (time.Time, bool) {
	q := m.s.idx.purge
	if len(q) == 0 {
		return time.Time{}, false
	}
	return m.s.Checkouts[q[0]].ExpiresAt.Add(m.checkoutKeep()), true
}

// purgeSessions is Expire's part: the change purging the sessions due at
// now, nil when none is.
func (m *Machine) purgeSessions(now time.Time) []Change {
	keep := m.checkoutKeep()
	var ids []string
	for _, id := range m.s.idx.purge {
		r, ok := m.s.Checkouts[id]
		if !ok || r.OrderID != "" {
			continue // purged before, or used: never purged
		}
		if now.Before(r.ExpiresAt.Add(keep)) || len(ids) == maxCheckoutPurgeBatch {
			break
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil
	}
	return []Change{CheckoutSessionsPurged{At: now, IDs: ids}}
}

// sessionCodeLen is the length of the random part of a checkout session id
// ("cs_<event suffix>.<24 Crockford chars>", createCheckoutSession).
const sessionCodeLen = 24

// crockfordUpper is the alphabet of IDs.Code.
const crockfordUpper = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// purgedSession reports whether id, unknown to the event, has the form of
// one of its checkout sessions: then it is taken for a purged one and
// answers as an expired session does. An id carries 120 random bits, so a
// well-formed id the event does not hold is, but for a forgery, one it
// issued and purged; a forgery learns nothing either way (every unknown
// well-formed id answers alike).
func (m *Machine) purgedSession(id string) bool {
	if _, ok := m.s.Checkouts[id]; ok {
		return false
	}
	code, ok := strings.CutPrefix(id, "cs_"+m.eventSuffix()+".")
	if !ok || len(code) != sessionCodeLen {
		return false
	}
	for i := range len(code) {
		if strings.IndexByte(crockfordUpper, code[i]) < 0 {
			return false
		}
	}
	return true
}

// purgedHosted is the hosted checkout of a purged session: an expired one
// with nothing left to show (the page answers "this checkout link has
// expired" without the way back, which left with the record).
func (m *Machine) purgedHosted(id string) HostedCheckout {
	return HostedCheckout{
		Session: CheckoutSession{ID: id, EventID: m.s.ID, URL: m.cfg.BaseURL + "/checkout/" + id, Status: "expired", Items: []OrderItem{}},
		Event:   m.eventView(), Lines: []OrderItemView{}, Addons: []CatalogItem{}, Questions: []Question{},
	}
}
