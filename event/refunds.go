package event

import (
	"fmt"
	"strings"
	"time"
)

// Refunds: an event's refund policy and refunds of paid
// orders decided in the console. A refund is two steps around the payment
// provider, so the actor is never held across the provider call:
// RequestRefund records RefundRequested (durable before the provider is
// asked), the shell calls the provider, and CompleteRefund records
// RefundSucceeded or RefundFailed. See doc.go, "Refunds".

// OrderStatusRefunded is the status of a fully refunded order. A paid
// order with only part of its money returned stays paid (it keeps its
// place, code use and promotion use); its refunds list says what went back.
const OrderStatusRefunded = "refunded"

// Refund statuses.
const (
	RefundPending   = "pending"
	RefundSucceeded = "succeeded"
	RefundFailed    = "failed"
)

// Bounds of refund inputs.
const (
	maxRefundReason      = 500
	maxRefundsPerOrder   = 20
	maxRefundHoursBefore = 24 * 366
)

// RefundPolicyRec is an event's refund policy. Deadline and HoursBefore
// are exclusive; HoursBefore counts back from the event's start and binds
// only while the event has a start.
type RefundPolicyRec struct {
	Refundable  bool       `json:"refundable"`
	Deadline    *time.Time `json:"deadline,omitempty"`
	HoursBefore *int       `json:"hoursBefore,omitempty"`
	FeePercent  int        `json:"feePercent,omitempty"`
	UpdatedAt   time.Time  `json:"updatedAt"`
}

// RefundRec is one refund of an order.
type RefundRec struct {
	ID          string    `json:"id"`
	Amount      Money     `json:"amount"`
	Reason      string    `json:"reason,omitempty"`
	Status      string    `json:"status"`
	Full        bool      `json:"full,omitempty"`
	Force       bool      `json:"force,omitempty"`
	Error       string    `json:"error,omitempty"`
	RequestedAt time.Time `json:"requestedAt"`
	SettledAt   time.Time `json:"settledAt"`
	// ProviderRef is the provider's payment this refund returns when it
	// is not the order's own: a second charge (provider.go).
	ProviderRef string `json:"providerRef,omitempty"`
}

// ---- commands

// GetRefundPolicy reads the event's refund policy (admin API, web console).
type GetRefundPolicy struct{}

// SetRefundPolicy replaces the event's refund policy (admin API, web
// console). At most one of deadline and hoursBeforeStart.
type SetRefundPolicy struct {
	Refundable       bool  `json:"refundable"`
	Deadline         *Time `json:"deadline" v:"nullable"`
	HoursBeforeStart *int  `json:"hoursBeforeStart" v:"nullable,min=0,max=8784"`
	FeePercent       int   `json:"feePercent,omitempty" v:"min=0,max=100"`
}

// RequestRefund starts a refund of a paid order (admin API, web console):
// step one of three. Amount absent means everything still refundable. Force
// overrides the policy (refundable, deadline and fee). While the order has
// a pending refund, RequestRefund answers that refund and changes nothing,
// so a retry after a crash resumes it.
type RequestRefund struct {
	Ref    string `json:"-"`
	Amount *Money `json:"amount" v:"nullable"`
	Reason string `json:"reason,omitempty" v:"maxLen=500"`
	Force  bool   `json:"force,omitempty"`
	// ResumeID, set by the shell's refund resumer (never decoded from a
	// client body), only resumes: it answers the order's pending refund of
	// that id, and FailedPrecondition when it is no longer pending, and
	// never starts a refund.
	ResumeID string `json:"-"`
}

// CompleteRefund records the provider's answer to a pending refund; the
// shell builds it (never decoded from a client body). Outcome is
// "succeeded" or "failed". Completing a settled refund changes nothing.
type CompleteRefund struct {
	Ref      string `json:"-"`
	RefundID string `json:"-"`
	Outcome  string `json:"-"`
	Error    string `json:"-"`
}

// ---- changes

// RefundPolicySet replaces the event's refund policy.
type RefundPolicySet struct {
	At          time.Time  `json:"at"`
	Refundable  bool       `json:"refundable"`
	Deadline    *time.Time `json:"deadline,omitempty"`
	HoursBefore *int       `json:"hoursBefore,omitempty"`
	FeePercent  int        `json:"fee,omitempty"`
}

// RefundRequested records a refund about to be asked of the provider.
// Full says the refund ends the order (place released, sales returned).
type RefundRequested struct {
	At       time.Time `json:"at"`
	OrderID  string    `json:"order"`
	RefundID string    `json:"id"`
	Amount   Money     `json:"amount"`
	Reason   string    `json:"reason,omitempty"`
	Force    bool      `json:"force,omitempty"`
	Full     bool      `json:"full,omitempty"`
	// ProviderRef: see RefundRec.
	ProviderRef string `json:"ref,omitempty"`
}

// RefundSettled records the provider's answer to a pending refund. A
// succeeded full refund returns the order's add-on and bundle sales to
// stock; its registration is cancelled by a RegistrationStatusChanged of
// the same batch.
type RefundSettled struct {
	At       time.Time `json:"at"`
	OrderID  string    `json:"order"`
	RefundID string    `json:"id"`
	Status   string    `json:"status"`
	Error    string    `json:"error,omitempty"`
}

// ---- views

// RefundPolicy is the event's refund policy. EffectiveDeadline is the
// instant after which refunds need force (null: no deadline).
type RefundPolicy struct {
	EventID           string `json:"eventId"`
	Refundable        bool   `json:"refundable"`
	Deadline          *Time  `json:"deadline"`
	HoursBeforeStart  *int   `json:"hoursBeforeStart"`
	FeePercent        int    `json:"feePercent"`
	EffectiveDeadline *Time  `json:"effectiveDeadline"`
	UpdatedAt         *Time  `json:"updatedAt"`
}

// Refund is one refund of an order.
type Refund struct {
	ID          string  `json:"id"`
	Amount      Money   `json:"amount"`
	Reason      *string `json:"reason"`
	Status      string  `json:"status" v:"enum=pending|succeeded|failed"`
	Full        bool    `json:"full"`
	Force       bool    `json:"force"`
	Error       *string `json:"error"`
	RequestedAt Time    `json:"requestedAt"`
	At          *Time   `json:"at"`
	// ProviderRef is for the shell's refund call (see RefundRec).
	ProviderRef string `json:"-"`
}

// RefundStart answers RequestRefund: the order and the pending refund the
// shell must now ask of the provider.
type RefundStart struct {
	Order  Order  `json:"order"`
	Refund Refund `json:"refund"`
}

// ---- decide

func (GetRefundPolicy) result(*RefundPolicy) {}

func (c GetRefundPolicy) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.refundPolicyView(m.refundPolicy()), nil, nil
}

func (SetRefundPolicy) result(*RefundPolicy) {}

func (c SetRefundPolicy) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.setRefundPolicy(now, c)
}

func (RequestRefund) result(*RefundStart) {}

func (c RequestRefund) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.requestRefund(now, c)
}

func (CompleteRefund) result(*Order) {}

func (c CompleteRefund) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.completeRefund(now, c)
}

func (m *Machine) refundPolicy() RefundPolicyRec {
	if p := m.s.Event.Refund; p != nil {
		return *p
	}
	// An event whose console never set a policy: refunds allowed, no
	// deadline, no fee (refunds are decided in the console anyway).
	return RefundPolicyRec{Refundable: true}
}

// refundDeadline is the instant from which refunds need force, if any.
func (m *Machine) refundDeadline(p RefundPolicyRec) *time.Time {
	switch {
	case p.Deadline != nil:
		return p.Deadline
	case p.HoursBefore != nil && m.s.Event.StartsAt != nil:
		d := m.s.Event.StartsAt.Add(-time.Duration(*p.HoursBefore) * time.Hour)
		return &d
	}
	return nil
}

func (m *Machine) refundPolicyView(p RefundPolicyRec) RefundPolicy {
	v := RefundPolicy{
		EventID: m.s.ID, Refundable: p.Refundable, Deadline: tp(p.Deadline), FeePercent: p.FeePercent,
		EffectiveDeadline: tp(m.refundDeadline(p)),
	}
	if p.HoursBefore != nil {
		h := *p.HoursBefore
		v.HoursBeforeStart = &h
	}
	if !p.UpdatedAt.IsZero() {
		v.UpdatedAt = &Time{p.UpdatedAt}
	}
	return v
}

func (m *Machine) setRefundPolicy(now time.Time, c SetRefundPolicy) (any, []Change, error) {
	if err := m.notArchived(); err != nil {
		return nil, nil, err
	}
	if c.Deadline != nil && c.HoursBeforeStart != nil {
		return nil, nil, FieldError("hoursBeforeStart", "give a deadline or hoursBeforeStart, not both")
	}
	if h := c.HoursBeforeStart; h != nil && (*h < 0 || *h > maxRefundHoursBefore) {
		return nil, nil, FieldError("hoursBeforeStart", fmt.Sprintf("must be 0 to %d", maxRefundHoursBefore))
	}
	if c.FeePercent < 0 || c.FeePercent > 100 {
		return nil, nil, FieldError("feePercent", "must be 0 to 100")
	}
	ch := RefundPolicySet{At: now, Refundable: c.Refundable, Deadline: timeOf(c.Deadline), FeePercent: c.FeePercent}
	if c.HoursBeforeStart != nil {
		h := *c.HoursBeforeStart
		ch.HoursBefore = &h
	}
	p := RefundPolicyRec{Refundable: ch.Refundable, Deadline: ch.Deadline, HoursBefore: ch.HoursBefore, FeePercent: ch.FeePercent, UpdatedAt: now}
	return m.refundPolicyView(p), []Change{ch}, nil
}

// refundedOrder reports whether an order was paid and refunded since.
func refundedOrder(status string) bool { return status == OrderStatusRefunded }

// refundable is what may still be refunded of o at now: the total less
// what is refunded or pending, less the policy's fee unless forced. err
// says why the policy refuses.
func (m *Machine) refundable(now time.Time, o *OrderRec, force bool) (Money, error) {
	left := o.Total
	for _, r := range o.Refunds {
		// A second charge's refund returns other money than the order's.
		if r.Status != RefundFailed && r.ProviderRef == "" {
			left -= r.Amount
		}
	}
	if force {
		return left, nil
	}
	p := m.refundPolicy()
	if !p.Refundable {
		return 0, Reasonf(FailedPrecondition, ReasonRefundNotAllowed, "the event's refund policy allows no refunds (force overrides)")
	}
	if d := m.refundDeadline(p); d != nil && !now.Before(*d) {
		return 0, Reasonf(FailedPrecondition, ReasonRefundDeadlinePassed, "the refund deadline %s has passed (force overrides)", d.UTC().Format(time.RFC3339))
	}
	// The fee is kept once per order, rounded down in the buyer's favour.
	left -= o.Total * Money(p.FeePercent) / 100
	if left < 0 {
		left = 0
	}
	return left, nil
}

func (m *Machine) requestRefund(now time.Time, c RequestRefund) (any, []Change, error) {
	o, err := m.order(c.Ref)
	if err != nil {
		return nil, nil, err
	}
	for i := range o.Refunds {
		if r := &o.Refunds[i]; r.Status == RefundPending && (c.ResumeID == "" || c.ResumeID == r.ID) {
			// A retry resumes the pending refund, whatever its body.
			return RefundStart{Order: m.orderView(o), Refund: refundView(r)}, nil, nil
		}
	}
	if c.ResumeID != "" {
		return nil, nil, Reasonf(FailedPrecondition, ReasonRefundNotPending, "refund %s is not pending", c.ResumeID)
	}
	switch {
	case o.Status == OrderStatusRefunded:
		return nil, nil, Reasonf(FailedPrecondition, ReasonOrderRefunded, "order is already refunded")
	case o.Status != OrderStatusPaid:
		return nil, nil, Reasonf(FailedPrecondition, ReasonOrderNotPaid, "order is %s: only paid orders are refunded", o.Status)
	case o.Total == 0 || o.PaymentID == "":
		return nil, nil, Reasonf(FailedPrecondition, ReasonOrderFree, "a free order has no payment to refund: cancel its registration instead")
	case len(o.Refunds) >= maxRefundsPerOrder:
		return nil, nil, Reasonf(FailedPrecondition, ReasonRefundLimitReached, "order has %d refunds, the most allowed", maxRefundsPerOrder)
	}
	reason := strings.TrimSpace(c.Reason)
	if len(reason) > maxRefundReason {
		return nil, nil, FieldError("reason", fmt.Sprintf("at most %d characters", maxRefundReason))
	}
	left, err := m.refundable(now, o, c.Force)
	if err != nil {
		return nil, nil, err
	}
	if left <= 0 {
		return nil, nil, Reasonf(FailedPrecondition, ReasonNothingToRefund, "nothing left to refund on this order")
	}
	amount := left
	if c.Amount != nil {
		amount = *c.Amount
		if amount <= 0 {
			return nil, nil, FieldError("amount", "must be more than 0")
		}
		if amount > left {
			return nil, nil, FieldError("amount", fmt.Sprintf("at most %s is refundable", left))
		}
	}
	ch := RefundRequested{
		At: now, OrderID: o.ID, RefundID: m.newID("rf_"), Amount: amount, Reason: reason, Force: c.Force,
		Full: amount == left,
	}
	rec := *o
	rec.Refunds = append(append([]RefundRec{}, o.Refunds...), refundOf(ch))
	rec.UpdatedAt = now
	return RefundStart{Order: m.orderView(&rec), Refund: refundView(&rec.Refunds[len(rec.Refunds)-1])}, []Change{ch}, nil
}

func refundOf(ch RefundRequested) RefundRec {
	return RefundRec{ID: ch.RefundID, Amount: ch.Amount, Reason: ch.Reason, Status: RefundPending, Full: ch.Full, Force: ch.Force, RequestedAt: ch.At,
		ProviderRef: ch.ProviderRef}
}

func (m *Machine) completeRefund(now time.Time, c CompleteRefund) (any, []Change, error) {
	o, err := m.order(c.Ref)
	if err != nil {
		return nil, nil, err
	}
	i := o.refundIndex(c.RefundID)
	if i < 0 {
		return nil, nil, Errorf(NotFound, "refund not found")
	}
	r := o.Refunds[i]
	if r.Status != RefundPending {
		return m.orderView(o), nil, nil
	}
	ch := RefundSettled{At: now, OrderID: o.ID, RefundID: r.ID, Status: RefundSucceeded}
	switch c.Outcome {
	case "succeeded":
	case "failed":
		ch.Status, ch.Error = RefundFailed, truncate(strings.TrimSpace(c.Error), maxRefundReason)
	default:
		return nil, nil, Errorf(InvalidArgument, "unknown refund outcome %q", c.Outcome)
	}
	rec := *o
	rec.Refunds = append([]RefundRec{}, o.Refunds...)
	settleRefund(&rec, ch)
	changes := []Change{ch}
	if ch.Status == RefundSucceeded && r.Full && o.Status == OrderStatusPaid {
		changes = m.releaseRefunded(now, o, changes)
	}
	return m.orderView(&rec), changes, nil
}

// releaseRefunded cancels the registration of a fully refunded order: its
// place is freed, its code use returned and the waitlist seated.
func (m *Machine) releaseRefunded(now time.Time, o *OrderRec, changes []Change) []Change {
	reg, ok := m.s.regs()[o.RegistrationID]
	if !ok || reg.OrderID != o.ID || !activeReg(reg.Status) {
		return changes
	}
	changes = append(changes, RegistrationStatusChanged{At: now, ID: reg.ID, Status: RegCancelled, Reason: "refunded"})
	if reg.TypeID == "" {
		return changes
	}
	freed := 0
	if reg.Status == RegConfirmed {
		freed = 1
	}
	return appendWaitlistSeated(changes, now, m.seatFromWaitlist(now, m.s.Types[reg.TypeID], freed, reg.ID))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func (o *OrderRec) refundIndex(id string) int {
	for i := range o.Refunds {
		if o.Refunds[i].ID == id {
			return i
		}
	}
	return -1
}

// settleRefund performs a RefundSettled on an order record (Apply and the
// preview of Decide share it).
func settleRefund(o *OrderRec, ch RefundSettled) *RefundRec {
	i := o.refundIndex(ch.RefundID)
	if i < 0 || o.Refunds[i].Status != RefundPending {
		panic(fmt.Sprintf("event: settle of refund %s that is not pending on order %s", ch.RefundID, o.ID))
	}
	r := &o.Refunds[i]
	r.Status, r.Error, r.SettledAt = ch.Status, ch.Error, ch.At
	o.UpdatedAt = ch.At
	if ch.Status == RefundSucceeded && r.Full && o.Status == OrderStatusPaid {
		// A late payment's refund leaves its expired or cancelled order
		// as it is: it sold nothing.
		o.Status = OrderStatusRefunded
	}
	return r
}

// ---- apply

// promoRefunded gives a fully refunded order's promotion use back.
func (s *State) promoRefunded(o *OrderRec) {
	if o.PromoID == "" {
		return
	}
	p := s.Content.Promos[o.PromoID]
	if p == nil {
		panic(fmt.Sprintf("event: order %s refers to unknown promotion code %s", o.ID, o.PromoID))
	}
	p.Uses--
}

// refundView is the wire form of a refund.
func refundView(r *RefundRec) Refund {
	v := Refund{
		ID: r.ID, Amount: r.Amount, Reason: strp(r.Reason), Status: r.Status, Full: r.Full, Force: r.Force,
		Error: strp(r.Error), RequestedAt: At(r.RequestedAt), ProviderRef: r.ProviderRef,
	}
	if !r.SettledAt.IsZero() {
		v.At = &Time{r.SettledAt}
	}
	return v
}

// refundViews lists an order's refunds, oldest first (nil when none).
func refundViews(o *OrderRec) []Refund {
	if len(o.Refunds) == 0 {
		return nil
	}
	out := make([]Refund, len(o.Refunds))
	for i := range o.Refunds {
		out[i] = refundView(&o.Refunds[i])
	}
	return out
}

// ---- codecs (bincodec.go, statecodec.go)

// refundPolicy encodes an optional policy: a flag byte, then its fields.
func (e enc) refundPolicy(p *RefundPolicyRec) enc {
	if p == nil {
		return append(e, 0)
	}
	return append(e, 1).bool(p.Refundable).timep(p.Deadline).intp(p.HoursBefore).int(int64(p.FeePercent)).time(p.UpdatedAt)
}

func (d *dec) refundPolicy() *RefundPolicyRec {
	if !d.flag() {
		return nil
	}
	return &RefundPolicyRec{Refundable: d.bool(), Deadline: d.timep(), HoursBefore: d.intp(), FeePercent: int(d.int()), UpdatedAt: d.time()}
}

// refunds encodes an order's refunds: a count, then each refund's fields.
func (e enc) refunds(rs []RefundRec) enc {
	e = e.uvarintBytes(uint64(len(rs)))
	for _, r := range rs {
		e = e.str(r.ID).int(int64(r.Amount)).str(r.Reason).str(r.Status).bool(r.Full).bool(r.Force).str(r.Error).
			time(r.RequestedAt).time(r.SettledAt)
	}
	return e
}

func (d *dec) refunds() []RefundRec {
	n := d.count()
	if n == 0 {
		return nil
	}
	out := make([]RefundRec, n)
	for i := range out {
		out[i] = RefundRec{ID: d.str(), Amount: Money(d.int()), Reason: d.str(), Status: d.str(), Full: d.bool(), Force: d.bool(),
			Error: d.str(), RequestedAt: d.time(), SettledAt: d.time()}
	}
	return out
}

// ---- change kinds: each one's log name, body codec and apply

// ChangeKind names the change in the log (its binary tag).
func (RefundPolicySet) ChangeKind() string { return "refund_policy.set" }

func decodeRefundPolicySet(d *dec) RefundPolicySet {
	return RefundPolicySet{At: d.time(), Refundable: d.bool(), Deadline: d.timep(), HoursBefore: d.intp(), FeePercent: int(d.int())}
}

func (c RefundPolicySet) appendBody(e enc) enc {
	return e.time(c.At).bool(c.Refundable).timep(c.Deadline).intp(c.HoursBefore).int(int64(c.FeePercent))
}

func (c RefundPolicySet) apply(s *State) {
	e := s.mustEvent()
	e.Refund = &RefundPolicyRec{Refundable: c.Refundable, Deadline: c.Deadline, HoursBefore: c.HoursBefore, FeePercent: c.FeePercent, UpdatedAt: c.At}
	e.UpdatedAt = c.At
}

// ChangeKind names the change in the log (its binary tag).
func (RefundRequested) ChangeKind() string { return "refund.requested" }

func decodeRefundRequested(d *dec) RefundRequested {
	return RefundRequested{At: d.time(), OrderID: d.str(), RefundID: d.str(), Amount: Money(d.int()), Reason: d.str(), Force: d.bool(), Full: d.bool(),
		ProviderRef: d.str()}
}

func (c RefundRequested) appendBody(e enc) enc {
	return e.time(c.At).str(c.OrderID).str(c.RefundID).int(int64(c.Amount)).str(c.Reason).bool(c.Force).bool(c.Full).str(c.ProviderRef)
}

func (c RefundRequested) apply(s *State) {
	o := s.mustOrder(c.OrderID)
	if !paidOrLate(o) && !(c.ProviderRef != "" && refundedOrder(o.Status)) {
		panic(fmt.Sprintf("event: refund of order %s in status %s", o.ID, o.Status))
	}
	o.Refunds = append(o.Refunds, refundOf(c))
	o.UpdatedAt = c.At
}

// ChangeKind names the change in the log (its binary tag).
func (RefundSettled) ChangeKind() string { return "refund.settled" }

func decodeRefundSettled(d *dec) RefundSettled {
	return RefundSettled{At: d.time(), OrderID: d.str(), RefundID: d.str(), Status: d.str(), Error: d.str()}
}

func (c RefundSettled) appendBody(e enc) enc {
	return e.time(c.At).str(c.OrderID).str(c.RefundID).str(c.Status).str(c.Error)
}

func (c RefundSettled) apply(s *State) {
	o := s.mustOrder(c.OrderID)
	sold := o.Status == OrderStatusPaid
	r := settleRefund(o, c)
	if r.Status == RefundSucceeded && sold {
		s.idx.dash.revenue -= r.Amount
	}
	if r.Status == RefundSucceeded && r.Full && sold {
		// Add-on and bundle units go back on sale and the promotion
		// code's use returns; the admission's place and code use are freed
		// by the registration's cancellation.
		s.promoRefunded(o)
		for _, h := range o.Holds {
			switch h.Kind {
			case ItemAddon:
				s.mustAddon(h.ID).Sold -= h.Qty
			case ItemBundle:
				s.mustBundle(h.ID).Sold -= h.Qty
			}
		}
	}
}
