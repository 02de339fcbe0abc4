package event

import (
	"slices"
	"time"
)

// Hold limits of the storefront (decisions §22). An unpaid order holds its
// places for the order hold; with nothing to bound them, a handful of
// addresses could hold a drop's whole stock for free, renewing the holds
// as they lapse. So, on the storefront only (the Developer API is trusted:
// box office, server integrations):
//
//   - one open order per email per event: a second order answers 409
//     ORDER_ALREADY_OPEN naming the open order (the buyer continues it);
//   - at most Config.OpenOrdersPerClient open orders per client, where a
//     client is the shell's opaque id of (publishable key, client address)
//     carried on the command (PlaceOrder.Client): beyond it 429 HOLD_LIMIT;
//   - at most Config.OpenSessionsPerClient unused, unexpired checkout
//     sessions per client: beyond it 429 CHECKOUT_SESSION_LIMIT, so a
//     session flood cannot grow the event's state without bound.
//
// The counts live in the core, next to the holds they count, so they are
// exact however many requests race (the actor decides one at a time) and
// survive a restart (the client id is in the change, the indexes are
// rebuilt from the records).

// Defaults of the limits (Config fields of zero take them; negative turns
// a limit off).
const (
	defaultOpenOrdersPerClient   = 10
	defaultOpenSessionsPerClient = 20
)

// holdLimits are the derived indexes of the limits: open orders by email
// and by client, and live checkout sessions by client. Entries are added
// when an order is placed or a session created, and removed when the order
// stops holding; sessions are pruned when their client creates another.
// Readers check each entry against its record, so an entry left behind
// (a late payment reopening an order, say) is never miscounted. Never
// encoded: rebuilt with the other indexes.
type holdLimits struct {
	byEmail  map[string][]string // normalized email -> holding orders
	byClient map[string][]string // client -> holding orders
	sessions map[string][]string // client -> checkout sessions, oldest first
}

func (l *holdLimits) add(m *map[string][]string, k, id string) {
	if k == "" {
		return
	}
	if *m == nil {
		*m = map[string][]string{}
	}
	(*m)[k] = append((*m)[k], id)
}

func (l *holdLimits) remove(m map[string][]string, k, id string) {
	ids, ok := m[k]
	if !ok {
		return
	}
	if i := slices.Index(ids, id); i >= 0 {
		ids = slices.Delete(ids, i, i+1)
	}
	if len(ids) == 0 {
		delete(m, k)
		return
	}
	m[k] = ids
}

// indexOpenOrder records a holding order (placement, snapshot load).
func (s *State) indexOpenOrder(o *OrderRec) {
	l := &s.idx.limits
	k := normEmail(o.Email)
	l.add(&l.byEmail, k, o.ID)
	l.add(&l.byClient, o.Client, o.ID)
	s.noteBlocked(k, o.Client)
}

// unindexOpenOrder forgets an order that stopped holding (paid, cancelled,
// expired).
func (s *State) unindexOpenOrder(o *OrderRec) {
	l := &s.idx.limits
	l.remove(l.byEmail, normEmail(o.Email), o.ID)
	l.remove(l.byClient, o.Client, o.ID)
}

// indexSession records a checkout session created by a client, and drops
// the client's sessions that no longer count (used or expired at now).
func (s *State) indexSession(r *CheckoutRec, now time.Time) {
	if r.Client == "" {
		return
	}
	l := &s.idx.limits
	if ids, ok := l.sessions[r.Client]; ok {
		l.sessions[r.Client] = slices.DeleteFunc(ids, func(id string) bool { return !s.sessionLive(id, now) })
	}
	l.add(&l.sessions, r.Client, r.ID)
}

// sessionLive reports whether a checkout session still counts against its
// client: unexpired and no order placed from it yet.
func (s *State) sessionLive(id string, now time.Time) bool {
	r, ok := s.Checkouts[id]
	return ok && r.OrderID == "" && now.Before(r.ExpiresAt)
}

// openOrderOf returns the oldest holding order of an email.
func (s *State) openOrderOf(email string) (*OrderRec, bool) {
	for _, id := range s.idx.limits.byEmail[normEmail(email)] {
		if o, ok := s.Orders[id]; ok && o.holding() {
			return o, true
		}
	}
	return nil, false
}

// openOrdersOf counts the holding orders of a client.
func (s *State) openOrdersOf(client string) int {
	n := 0
	for _, id := range s.idx.limits.byClient[client] {
		if o, ok := s.Orders[id]; ok && o.holding() {
			n++
		}
	}
	return n
}

// liveSessionsOf counts the checkout sessions of a client that still count
// at now.
func (s *State) liveSessionsOf(client string, now time.Time) int {
	n := 0
	for _, id := range s.idx.limits.sessions[client] {
		if s.sessionLive(id, now) {
			n++
		}
	}
	return n
}

// limitOf is a configured limit: 0 takes the default, negative is off (0).
func limitOf(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// checkOrderLimits refuses a storefront order that would break a hold
// limit. An order placed again from its own checkout session never gets
// here (the session's order stands).
func (m *Machine) checkOrderLimits(email, client string) error {
	if o, ok := m.s.openOrderOf(email); ok {
		return &Error{
			Code: AlreadyExists, Reason: ReasonOrderAlreadyOpen,
			Message: "this email has an open order in the event: continue it (orderNumber " + o.Number + ")",
			Details: []Detail{{Field: "orderNumber", Reason: o.Number}},
		}
	}
	if max := limitOf(m.cfg.OpenOrdersPerClient, defaultOpenOrdersPerClient); client != "" && max > 0 && m.s.openOrdersOf(client) >= max {
		return Reasonf(ResourceExhausted, ReasonHoldLimit,
			"this address holds %d open orders in the event, the most allowed: pay or cancel one, or wait for a hold to lapse", max)
	}
	return nil
}

// checkSessionLimit refuses a storefront checkout session beyond its
// client's live sessions.
func (m *Machine) checkSessionLimit(now time.Time, client string) error {
	if max := limitOf(m.cfg.OpenSessionsPerClient, defaultOpenSessionsPerClient); client != "" && max > 0 && m.s.liveSessionsOf(client, now) >= max {
		return Reasonf(ResourceExhausted, ReasonCheckoutSessionLimit,
			"this address has %d unused checkout sessions in the event, the most allowed: use one or wait for one to expire", max)
	}
	return nil
}
