package event

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Decide checks c against the state at time now and says what would change.
// It does not mutate the state: the shell applies the returned changes right
// after (and logs them first). A business rejection is an *Error. The result
// is a fresh value (see views.go) of the command's result type (Op). What
// holds for every command of a kind (the event must exist; an archived
// event refuses edits) is checked here from the command registry
// (registry.go); the rest is the command's own decide.
func (m *Machine) Decide(now time.Time, c Command) (any, []Change, error) {
	if c == nil {
		return nil, nil, Errorf(InvalidArgument, "no command")
	}
	if sc, ok := c.(storefronter); ok {
		return m.decideStorefront(now, sc.storefront())
	}
	k := commandKindOf(c)
	if k == nil {
		return nil, nil, Errorf(InvalidArgument, "unsupported command %T", c)
	}
	if m.s.Event == nil && k.mode != opCreate {
		if k.mode == opTick {
			return nil, nil, nil
		}
		return nil, nil, Errorf(NotFound, "event not found")
	}
	if k.mode == opEdit {
		if err := m.notArchived(); err != nil {
			return nil, nil, err
		}
	}
	return c.decide(m, now)
}

func (CreateEvent) result(*Event) {}

func (c CreateEvent) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.createEvent(now, c)
}

func (UpdateEvent) result(*Event) {}

func (c UpdateEvent) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.updateEvent(now, c)
}

func (ArchiveEvent) result(*Event) {}

func (c ArchiveEvent) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.archiveEvent(now)
}

func (SetSiteURL) result(*Event) {}

func (c SetSiteURL) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.setSiteURL(now, c)
}

func (GetEvent) result(*Event) {}

func (c GetEvent) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.eventView(), nil, nil
}

func (CreateTicketType) result(*TicketType) {}

func (c CreateTicketType) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.createTicketType(now, c)
}

func (UpdateTicketType) result(*TicketType) {}

func (c UpdateTicketType) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.updateTicketType(now, c)
}

func (GetTicketType) result(*TicketType) {}

func (c GetTicketType) decide(m *Machine, now time.Time) (any, []Change, error) {
	t, err := m.ticketType(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return m.typeView(t), nil, nil
}

func (ListTicketTypes) result(*List[TicketType]) {}

func (c ListTicketTypes) decide(m *Machine, now time.Time) (any, []Change, error) {
	l, err := pageOf(m.s.TypeOrder, m.s.Types, func(t *TicketTypeRec) int { return t.Seq }, c.Cursor, c.Limit, false, nil, m.typeView)
	return l, nil, err
}

func (GetAvailability) result(*Availability) {}

func (c GetAvailability) decide(m *Machine, now time.Time) (any, []Change, error) {
	t, err := m.ticketType(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return availability(t), nil, nil
}

func (CreateRegistration) result(*RegistrationResult) {}

func (c CreateRegistration) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.createRegistration(now, c)
}

func (ListRegistrations) result(*List[Registration]) {}

func (c ListRegistrations) decide(m *Machine, now time.Time) (any, []Change, error) {
	res, _, err := m.listRegistrations(c)
	if l, ok := res.(List[Registration]); ok {
		l.FeedSeq = m.s.FeedSeq
		res = l
	}
	return res, nil, err
}

func (GetRegistration) result(*Registration) {}

func (c GetRegistration) decide(m *Machine, now time.Time) (any, []Change, error) {
	r, err := m.registration(c.ID)
	if err != nil {
		return nil, nil, err
	}
	return m.regView(r), nil, nil
}

func (ApproveRegistration) result(*Registration) {}

func (c ApproveRegistration) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.approveRegistration(now, c)
}

func (RejectRegistration) result(*Registration) {}

func (c RejectRegistration) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.rejectRegistration(now, c)
}

func (CancelRegistration) result(*Registration) {}

func (c CancelRegistration) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.cancelRegistration(now, c)
}

func (RotatePass) result(*Registration) {}

func (c RotatePass) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.rotatePass(now, c)
}

func (GetPass) result(*Pass) {}

func (c GetPass) decide(m *Machine, now time.Time) (any, []Change, error) {
	m.s.ensureTokens()
	id, ok := m.s.idx.regByPass[c.Token]
	if !ok || c.Token == "" {
		return nil, nil, Errorf(NotFound, "pass not found")
	}
	return Pass{Registration: m.regView(m.s.regs()[id]), Event: m.eventView()}, nil, nil
}

func (RecordCheckin) result(*CheckinResult) {}

func (c RecordCheckin) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.recordCheckin(now, c)
}

func (ListCheckins) result(*List[Checkin]) {}

func (c ListCheckins) decide(m *Machine, now time.Time) (any, []Change, error) {
	res, _, err := m.listCheckins(c)
	if l, ok := res.(List[Checkin]); ok {
		l.FeedSeq = m.s.FeedSeq
		res = l
	}
	return res, nil, err
}

func (GetPayment) result(*Order) {}

func (c GetPayment) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.getPayment(c)
}

// ids generates record ids. Generated values are put into changes, so
// replay never calls it.
func (m *Machine) newID(prefix string) string { return m.ids.New(prefix) }

func (m *Machine) createEvent(now time.Time, c CreateEvent) (any, []Change, error) {
	if m.s.Event != nil {
		return nil, nil, Errorf(AlreadyExists, "event %s already exists", m.s.ID)
	}
	name, tz := strings.TrimSpace(c.Name), strings.TrimSpace(c.Timezone)
	if name == "" {
		return nil, nil, FieldError("name", "required")
	}
	if tz == "" {
		return nil, nil, FieldError("timezone", "required")
	}
	cur := "USD"
	if c.Currency != "" {
		var err error
		if cur, err = currency(c.Currency); err != nil {
			return nil, nil, err
		}
	}
	starts, ends := timeOf(c.StartsAt), timeOf(c.EndsAt)
	if err := checkWindow(starts, ends, "endsAt", "startsAt"); err != nil {
		return nil, nil, err
	}
	ch := EventCreated{At: now, Name: name, Timezone: tz, StartsAt: starts, EndsAt: ends, Currency: cur}
	v := Event{ID: m.s.ID, Name: name, Timezone: tz, StartsAt: tp(starts), EndsAt: tp(ends), Status: EventDraft, Currency: cur, CreatedAt: At(now), UpdatedAt: At(now)}
	return v, []Change{ch}, nil
}

func currency(s string) (string, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if len(u) != 3 || strings.Trim(u, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return "", FieldError("currency", "must be an ISO 4217 code such as USD")
	}
	return u, nil
}

func timeOf(t *Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}

// optTime resolves a PATCH timestamp against its current value.
func optTime(o Opt[Time], cur *time.Time) *time.Time {
	switch {
	case !o.Set:
		return cur
	case o.Null:
		return nil
	}
	v := o.V.UTC()
	return &v
}

func optInt(o Opt[int], cur *int) *int {
	switch {
	case !o.Set:
		return cur
	case o.Null:
		return nil
	}
	v := o.V
	return &v
}

func optVal[T any](o Opt[T], cur T) T {
	if !o.Set || o.Null {
		return cur
	}
	return o.V
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// checkWindow refuses an end before its start.
func checkWindow(start, end *time.Time, endField, startField string) error {
	if start != nil && end != nil && end.Before(*start) {
		return FieldError(endField, "must not be before "+startField)
	}
	return nil
}

func (m *Machine) updateEvent(now time.Time, c UpdateEvent) (any, []Change, error) {
	e := m.s.Event
	if e.Status == EventArchived {
		return nil, nil, Reasonf(FailedPrecondition, ReasonEventArchived, "event is archived")
	}
	if c.Name.Set && (c.Name.Null || strings.TrimSpace(c.Name.V) == "") {
		return nil, nil, FieldError("name", "must not be empty")
	}
	if c.Timezone.Set && (c.Timezone.Null || strings.TrimSpace(c.Timezone.V) == "") {
		return nil, nil, FieldError("timezone", "must not be empty")
	}
	if c.Status.Set && c.Status.Null {
		return nil, nil, FieldError("status", "must not be null")
	}
	if c.Currency.Set && c.Currency.Null {
		return nil, nil, FieldError("currency", "must not be null")
	}
	ch := EventUpdated{
		At: now, Name: strings.TrimSpace(optVal(c.Name, e.Name)), Timezone: strings.TrimSpace(optVal(c.Timezone, e.Timezone)),
		StartsAt: optTime(c.StartsAt, e.StartsAt), EndsAt: optTime(c.EndsAt, e.EndsAt),
		Status: optVal(c.Status, e.Status), Currency: e.Currency,
	}
	switch ch.Status {
	case EventDraft, EventPublished, EventArchived:
	default:
		return nil, nil, FieldError("status", "must be draft, published or archived")
	}
	if c.Currency.Set {
		cur, err := currency(c.Currency.V)
		if err != nil {
			return nil, nil, err
		}
		if cur != e.Currency && e.OrdersTaken > 0 {
			return nil, nil, Reasonf(FailedPrecondition, ReasonCurrencyLocked, "currency is locked: the event has taken orders")
		}
		ch.Currency = cur
	}
	if err := checkWindow(ch.StartsAt, ch.EndsAt, "endsAt", "startsAt"); err != nil {
		return nil, nil, err
	}
	if ch.Status == EventPublished && ch.StartsAt == nil {
		return nil, nil, FieldError("startsAt", "an event needs a start time to be published")
	}
	if !sameTime(ch.StartsAt, e.StartsAt) && len(m.s.Sessions) > 0 {
		if !c.ConfirmAgendaReset {
			return nil, nil, Reasonf(FailedPrecondition, ReasonAgendaResetUnconfirmed, "moving the start clears the agenda: repeat with confirmAgendaReset true")
		}
		ch.AgendaReset = true
	}
	changes := []Change{ch}
	if c.WaitingRoom != nil {
		room, err := m.configureRoom(now, *c.WaitingRoom)
		if err != nil {
			return nil, nil, err
		}
		if room != nil {
			changes = append(changes, room)
		}
	}
	v := m.eventView()
	v.Name, v.Timezone, v.StartsAt, v.EndsAt = ch.Name, ch.Timezone, tp(ch.StartsAt), tp(ch.EndsAt)
	v.Status, v.Currency, v.UpdatedAt = ch.Status, ch.Currency, At(now)
	if len(changes) > 1 {
		v.WaitingRoom = m.roomAfter(changes[1].(WaitingRoomSet))
	}
	return v, changes, nil
}

func (m *Machine) archiveEvent(now time.Time) (any, []Change, error) {
	e := m.s.Event
	if e.Status == EventArchived {
		return m.eventView(), nil, nil
	}
	ch := EventUpdated{At: now, Name: e.Name, Timezone: e.Timezone, StartsAt: e.StartsAt, EndsAt: e.EndsAt, Status: EventArchived, Currency: e.Currency}
	v := m.eventView()
	v.Status, v.UpdatedAt = EventArchived, At(now)
	return v, []Change{ch}, nil
}

func (m *Machine) notArchived() error {
	if m.s.Event.Status == EventArchived {
		return Reasonf(FailedPrecondition, ReasonEventArchived, "event is archived")
	}
	return nil
}

func (m *Machine) ticketType(id string) (*TicketTypeRec, error) {
	t, ok := m.s.Types[id]
	if !ok {
		return nil, Errorf(NotFound, "ticket type not found")
	}
	return t, nil
}

func checkCapacity(field string, c *int) error {
	if c != nil && *c < 0 {
		return FieldError(field, "must not be negative")
	}
	return nil
}

func (m *Machine) createTicketType(now time.Time, c CreateTicketType) (any, []Change, error) {
	if err := m.notArchived(); err != nil {
		return nil, nil, err
	}
	spec := TicketTypeSpec{
		Name: strings.TrimSpace(c.Name), Capacity: intp(c.Capacity), Price: c.PriceAmount, AllowWaitlist: c.AllowWaitlist,
		IsPublic: c.IsPublic == nil || *c.IsPublic, RequiresApproval: c.RequiresApproval,
		OpensAt: timeOf(c.OpensAt), ClosesAt: timeOf(c.ClosesAt), Status: SellDraft,
	}
	if err := checkTypeSpec(spec); err != nil {
		return nil, nil, err
	}
	id := m.newID("tt_")
	ch := TicketTypeCreated{At: now, ID: id, TicketTypeSpec: spec}
	rec := TicketTypeRec{ID: id, Seq: len(m.s.TypeOrder), TicketTypeSpec: spec, CreatedAt: now, UpdatedAt: now}
	return m.typeView(&rec), []Change{ch}, nil
}

func checkTypeSpec(s TicketTypeSpec) error {
	if s.Name == "" {
		return FieldError("name", "must not be empty")
	}
	if s.Price < 0 || s.Price > moneyMax {
		return FieldError("priceAmount", "out of range")
	}
	if err := checkCapacity("capacity", s.Capacity); err != nil {
		return err
	}
	return checkWindow(s.OpensAt, s.ClosesAt, "closesAt", "opensAt")
}

// sellMove reports whether the sellable lifecycle allows from -> to:
// draft -> open <-> closed -> archived.
func sellMove(from, to string) bool {
	if from == to {
		return true
	}
	switch from {
	case SellDraft:
		return to == SellOpen
	case SellOpen:
		return to == SellClosed
	case SellClosed:
		return to == SellOpen || to == SellArchived
	}
	return false
}

func statusMove(o Opt[string], cur string) (string, error) {
	if !o.Set {
		return cur, nil
	}
	if o.Null {
		return "", FieldError("status", "must not be null")
	}
	switch o.V {
	case SellDraft, SellOpen, SellClosed, SellArchived:
	default:
		return "", FieldError("status", "must be draft, open, closed or archived")
	}
	if !sellMove(cur, o.V) {
		return "", Reasonf(FailedPrecondition, ReasonStatusTransition, "status cannot move from %s to %s", cur, o.V)
	}
	return o.V, nil
}

func (m *Machine) updateTicketType(now time.Time, c UpdateTicketType) (any, []Change, error) {
	t, err := m.ticketType(c.ID)
	if err != nil {
		return nil, nil, err
	}
	if err := m.notArchived(); err != nil {
		return nil, nil, err
	}
	if err := notNull([]nullField{{"name", c.Name.Null}, {"priceAmount", c.PriceAmount.Null}, {"allowWaitlist", c.AllowWaitlist.Null}, {"isPublic", c.IsPublic.Null}, {"requiresApproval", c.RequiresApproval.Null}}); err != nil {
		return nil, nil, err
	}
	spec := t.TicketTypeSpec
	spec.Name = strings.TrimSpace(optVal(c.Name, spec.Name))
	spec.Capacity = optInt(c.Capacity, spec.Capacity)
	spec.Price = optVal(c.PriceAmount, spec.Price)
	spec.AllowWaitlist = optVal(c.AllowWaitlist, spec.AllowWaitlist)
	spec.IsPublic = optVal(c.IsPublic, spec.IsPublic)
	spec.RequiresApproval = optVal(c.RequiresApproval, spec.RequiresApproval)
	spec.OpensAt = optTime(c.OpensAt, spec.OpensAt)
	spec.ClosesAt = optTime(c.ClosesAt, spec.ClosesAt)
	if spec.Status, err = statusMove(c.Status, t.Status); err != nil {
		return nil, nil, err
	}
	if err := checkTypeSpec(spec); err != nil {
		return nil, nil, err
	}
	if err := checkShrink(spec.Capacity, t.Confirmed+t.Held); err != nil {
		return nil, nil, err
	}
	rec := *t
	rec.TicketTypeSpec, rec.UpdatedAt = spec, now
	changes := []Change{TicketTypeUpdated{At: now, ID: t.ID, TicketTypeSpec: spec}}
	// More room (or a waitlist turned off is left alone): seat from the
	// waitlist at once.
	seated := m.seatFromWaitlist(now, &rec, 0, "")
	changes = appendWaitlistSeated(changes, now, seated)
	rec.Confirmed += len(seated)
	rec.Waitlisted -= len(seated)
	return m.typeView(&rec), changes, nil
}

// mustNotHappen documents a broken invariant in Decide.
func mustNotHappen(format string, args ...any) { panic(fmt.Sprintf("event: "+format, args...)) }

type nullField struct {
	name string
	null bool
}

// notNull refuses null for PATCH fields that have no null meaning.
func notNull(fs []nullField) error {
	for _, f := range fs {
		if f.null {
			return FieldError(f.name, "must not be null")
		}
	}
	return nil
}

// checkShrink refuses a capacity below the places already taken (sold or
// confirmed, plus held): capacity is never oversold, not even on paper.
func checkShrink(capacity *int, taken int) error {
	if capacity != nil && *capacity < taken {
		return Reasonf(FailedPrecondition, ReasonCapacityBelowTaken, "capacity %d is below the %d places already taken", *capacity, taken)
	}
	return nil
}

func (m *Machine) setSiteURL(now time.Time, c SetSiteURL) (any, []Change, error) {
	if !c.SiteURL.Set {
		return nil, nil, FieldError("siteUrl", "required (null clears it)")
	}
	u := strings.TrimSpace(c.SiteURL.V)
	if !c.SiteURL.Null {
		p, err := url.Parse(u)
		if err != nil || p.Host == "" || (p.Scheme != "https" && p.Scheme != "http") {
			return nil, nil, FieldError("siteUrl", "must be an absolute http or https URL")
		}
	}
	v := m.eventView()
	v.SiteURL, v.UpdatedAt = strp(u), At(now)
	return v, []Change{SiteURLSet{At: now, SiteURL: u}}, nil
}
