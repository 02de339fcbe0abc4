package event

import (
	"fmt"
	"slices"
)

// Apply performs a change. It cannot fail for a change that Decide produced
// (replay calls it); a change that does not fit the state is a broken
// invariant and panics. Each kind's apply lives with its type (see the
// registry in registry.go).
func (m *Machine) Apply(ch Change) { m.s.apply(ch) }

func (s *State) apply(ch Change) {
	s.countDown()
	ch.apply(s)
	s.FeedSeq += feedCount(ch)
	s.trimHolds()
}

func (s *State) applyCheckedIn(c CheckedIn) {
	reg := s.mustReg(c.RegID)
	if len(s.CheckinOrder) == 0 && s.reserveFor() > 0 {
		n := s.reserveFor()
		if !s.idx.checkinsLazy {
			s.Checkins = make(map[string]*CheckinRec, n)
		}
		s.CheckinOrder, s.mem.checkinList = make([]string, 0, n), make([]*CheckinRec, 0, n)
	}
	at := c.At
	if !c.CheckedInAt.IsZero() {
		at = c.CheckedInAt
	}
	r := &CheckinRec{ID: c.ID, Seq: len(s.CheckinOrder), RegID: c.RegID, SubjectType: c.SubjectType, SubjectID: c.SubjectID, Method: c.Method, At: at,
		DeviceID: c.DeviceID, ScanID: c.ScanID}
	if !s.idx.checkinsLazy {
		s.Checkins[c.ID] = r
	}
	s.CheckinOrder = append(s.CheckinOrder, c.ID)
	s.mem.checkinList = append(s.mem.checkinList, r)
	s.idx.dash.doors[c.SubjectType+":"+c.SubjectID]++
	if d := s.idx.door; d != nil {
		if d.doorCheckin(reg, c.SubjectType, c.SubjectID) != nil {
			panic(fmt.Sprintf("event: second check-in %s at one door", c.ID))
		}
		d.addCheckin(reg, r)
		if c.ScanID != "" {
			d.noteScan(s, scanDevHash(c.DeviceID), c.DeviceID, c.ScanID, scanRef{checkin: r, answer: -1})
		}
	}
	s.touchPass(reg)
}

// countDown counts one applied change off Machine.Reserve's hint.
func (s *State) countDown() {
	if s.mem.reserve > 0 {
		s.mem.reserve--
	}
}

func (s *State) applyRegistrationCreated(c RegistrationCreated) {
	r := s.mem.regs.next(len(s.RegOrder))
	*r = RegistrationRec{
		ID: c.ID, Email: c.Email, Name: c.Name, TypeID: c.TypeID, Status: c.Status,
		CheckinCode: c.CheckinCode, PassToken: c.PassToken, CreatedAt: c.At, UpdatedAt: c.At,
	}
	s.addReg(r)
}

func (s *State) applyOrderPlaced(c OrderPlaced) {
	e := s.mustEvent()
	if len(s.OrderOrder) == 0 && s.reserveFor() > 0 {
		n := s.reserveFor()
		s.Orders, s.OrderOrder = make(map[string]*OrderRec, n), make([]string, 0, n)
		s.idx.orderByNumber, s.mem.orderList = make(map[string]string, n), make([]*OrderRec, 0, n)
		if len(s.idx.holds) == 0 {
			s.idx.holds = make(holdQueue, 0, n)
		}
	}
	o := s.mem.orders.next(len(s.OrderOrder))
	*o = OrderRec{
		ID: c.ID, Seq: len(s.OrderOrder), Number: c.Number, Email: c.Email, Name: c.Name,
		Lines: c.Lines, Holds: c.Holds, AdmissionTypeID: c.AdmissionTypeID, CodeID: c.CodeID,
		Responses: c.Responses, Status: c.Status, Total: c.Total, Currency: c.Currency,
		HoldUntil: c.HoldUntil, AlreadyRegistered: c.AlreadyRegistered, RegistrationID: c.RegistrationID,
		CreatedAt: c.At, UpdatedAt: c.At, CheckoutSessionID: c.CheckoutSessionID,
		PromoID: c.PromoID, Discount: c.Discount, Client: c.Client,
	}
	s.Orders[o.ID] = o
	s.OrderOrder = append(s.OrderOrder, o.ID)
	s.mem.orderList = append(s.mem.orderList, o)
	s.idx.orderByNumber[o.Number] = o.ID
	e.OrdersTaken++
	if cs, ok := s.Checkouts[o.CheckoutSessionID]; ok {
		cs.OrderID = o.ID
		s.prunePurgeQueue() // it may have been the oldest unused one
	}
	if o.holding() {
		s.queueHold(o)
		s.moveHolds(o, func(n *int, q int) { *n += q }, nil)
		if o.CodeID != "" {
			s.mustCode(o.CodeID).Held++
			o.CodeHeld = true
		}
		s.promoHeld(o, 1, false)
		s.indexOpenOrder(o)
	}
}

func (s *State) applyOrderPaid(c OrderPaid) {
	o := s.mustOrder(c.ID)
	if !o.holding() {
		panic(fmt.Sprintf("event: payment of order %s in status %s", o.ID, o.Status))
	}
	// Every held unit becomes sold; the admission hold becomes a confirmed
	// registration below (or is released for an already registered buyer).
	s.moveHolds(o, func(n *int, q int) { *n -= q }, func(sold *int, q int) { *sold += q })
	var code *CodeRec
	if o.CodeHeld {
		code = s.mustCode(o.CodeID)
		code.Held--
	}
	s.promoHeld(o, -1, true)
	s.unindexOpenOrder(o)
	o.Status, o.UpdatedAt = OrderStatusPaid, c.At
	s.idx.dash.paid(o)
	if c.AlreadyRegistered {
		o.AlreadyRegistered = true
		return
	}
	if o.AdmissionTypeID == "" && c.RegistrationID == "" {
		return
	}
	r := s.mem.regs.next(len(s.RegOrder))
	*r = RegistrationRec{
		ID: c.RegistrationID, Email: o.Email, Name: o.Name, TypeID: o.AdmissionTypeID,
		Status: RegConfirmed, CheckinCode: c.CheckinCode, PassToken: c.PassToken,
		OrderID: o.ID, CreatedAt: c.At, UpdatedAt: c.At,
	}
	if code != nil {
		code.Uses++
		r.CodeID = code.ID
	}
	o.RegistrationID = r.ID
	s.addReg(r)
}

// moveHolds walks an order's holds: held adjusts each held counter; sold,
// when set, receives the units of add-ons and bundles (ticket type units
// become registrations instead).
func (s *State) moveHolds(o *OrderRec, held func(n *int, q int), sold func(n *int, q int)) {
	for _, h := range o.Holds {
		switch h.Kind {
		case ItemRegistrationType:
			held(&s.mustType(h.ID).Held, h.Qty)
		case ItemAddon:
			a := s.mustAddon(h.ID)
			held(&a.Held, h.Qty)
			if sold != nil {
				sold(&a.Sold, h.Qty)
			}
		case ItemBundle:
			b := s.mustBundle(h.ID)
			held(&b.Held, h.Qty)
			if sold != nil {
				sold(&b.Sold, h.Qty)
			}
		default:
			panic(fmt.Sprintf("event: order %s holds unknown kind %q", o.ID, h.Kind))
		}
	}
}

func (s *State) addReg(r *RegistrationRec) {
	if _, dup := s.regs()[r.ID]; dup {
		panic(fmt.Sprintf("event: duplicate registration %s", r.ID))
	}
	if len(s.RegOrder) == 0 && s.reserveFor() > 0 {
		n := s.reserveFor()
		s.Regs, s.RegOrder = make(map[string]*RegistrationRec, n), make([]string, 0, n)
		s.idx.regByEmail, s.idx.emailPrev = newEmailIndex(n), make([]int32, 0, n)
		s.mem.regList = make([]*RegistrationRec, 0, n)
	}
	r.Seq = len(s.RegOrder)
	if r.Status == RegWaitlisted {
		s.Event.WaitTicks++
		r.WaitSeq = s.Event.WaitTicks
	}
	s.regs()[r.ID] = r
	s.RegOrder = append(s.RegOrder, r.ID)
	s.mem.regList = append(s.mem.regList, r)
	s.count(r.TypeID, r.Status, +1)
	s.indexReg(r)
	s.touchPass(r)
}

// count moves a ticket type's counters for a registration status.
func (s *State) count(typeID, status string, d int) {
	if typeID == "" {
		return
	}
	t := s.mustType(typeID)
	switch status {
	case RegConfirmed:
		t.Confirmed += d
	case RegWaitlisted:
		t.Waitlisted += d
	}
}

func (s *State) setRegStatus(c RegistrationStatusChanged) {
	r := s.mustReg(c.ID)
	old := r.Status
	s.count(r.TypeID, old, -1)
	s.count(r.TypeID, c.Status, +1)
	if old == RegWaitlisted {
		w := s.idx.waitlist[r.TypeID]
		if i := slices.Index(w, r.ID); i >= 0 {
			w = slices.Delete(w, i, i+1)
		}
		if len(w) == 0 {
			delete(s.idx.waitlist, r.TypeID)
		} else {
			s.idx.waitlist[r.TypeID] = w
		}
	}
	if c.Status == RegWaitlisted {
		s.Event.WaitTicks++
		r.WaitSeq = s.Event.WaitTicks
		s.idx.waitlist[r.TypeID] = append(s.idx.waitlist[r.TypeID], r.ID)
	}
	if activeReg(old) && !activeReg(c.Status) {
		k := normEmail(r.Email)
		if id, _ := s.idx.emailReg(k); id == r.ID {
			s.idx.delEmailReg(k)
		}
		// A cancelled registration gives its code use back.
		if r.CodeID != "" {
			s.mustCode(r.CodeID).Uses--
		}
	}
	r.Status, r.UpdatedAt = c.Status, c.At
	if c.Reason != "" {
		r.Reason = c.Reason
	}
	s.touchPass(r)
}

func (s *State) mustEvent() *EventRec {
	if s.Event == nil {
		panic("event: change before event.created")
	}
	return s.Event
}

func mustGet[T any](m map[string]*T, id, what string) *T {
	v, ok := m[id]
	if !ok {
		panic(fmt.Sprintf("event: unknown %s %q", what, id))
	}
	return v
}

func (s *State) mustType(id string) *TicketTypeRec  { return mustGet(s.Types, id, "ticket type") }
func (s *State) mustReg(id string) *RegistrationRec { return mustGet(s.regs(), id, "registration") }
func (s *State) mustCode(id string) *CodeRec        { return mustGet(s.Codes, id, "code") }
func (s *State) mustAddon(id string) *AddonRec      { return mustGet(s.Addons, id, "add-on") }
func (s *State) mustBundle(id string) *BundleRec    { return mustGet(s.Bundles, id, "bundle") }
func (s *State) mustOrder(id string) *OrderRec      { return mustGet(s.Orders, id, "order") }

// check verifies the structure of a decoded snapshot.
func (s *State) check() error {
	if s.Types == nil || s.Regs == nil || s.Checkins == nil || s.Codes == nil || s.Addons == nil ||
		s.Bundles == nil || s.Orders == nil || s.Checkouts == nil || s.Sessions == nil || s.Venues == nil {
		return fmt.Errorf("missing collection")
	}
	if err := checkOrder(s.Types, s.TypeOrder, "ticket type", func(v *TicketTypeRec) int { return v.Seq }); err != nil {
		return err
	}
	if err := checkOrder(s.Regs, s.RegOrder, "registration", func(v *RegistrationRec) int { return v.Seq }); err != nil {
		return err
	}
	if err := checkOrder(s.Checkins, s.CheckinOrder, "check-in", func(v *CheckinRec) int { return v.Seq }); err != nil {
		return err
	}
	if err := checkOrder(s.Codes, s.CodeOrder, "code", func(v *CodeRec) int { return v.Seq }); err != nil {
		return err
	}
	if err := checkOrder(s.Addons, s.AddonOrder, "add-on", func(v *AddonRec) int { return v.Seq }); err != nil {
		return err
	}
	if err := checkOrder(s.Bundles, s.BundleOrder, "bundle", func(v *BundleRec) int { return v.Seq }); err != nil {
		return err
	}
	if err := checkOrder(s.Orders, s.OrderOrder, "order", func(v *OrderRec) int { return v.Seq }); err != nil {
		return err
	}
	if err := checkOrder(s.Checkouts, s.CheckoutOrder, "checkout session", func(v *CheckoutRec) int { return v.Seq }); err != nil {
		return err
	}
	if err := checkOrder(s.Sessions, s.SessionOrder, "session", func(v *SessionRec) int { return v.Seq }); err != nil {
		return err
	}
	if err := checkOrder(s.Venues, s.VenueOrder, "venue", func(v *VenueRec) int { return v.Seq }); err != nil {
		return err
	}
	if err := s.checkProgram(); err != nil {
		return err
	}
	return s.checkRefs()
}

// checkRefs verifies that references between records resolve.
func (s *State) checkRefs() error {
	if err := s.checkRegRefs(); err != nil {
		return err
	}
	return s.checkOtherRefs()
}

// checkRegRefs checks the references of the registrations. It reads only
// the registrations, the ticket types and the codes, so a load runs it
// beside the index builds (see DecodeState).
func (s *State) checkRegRefs() error {
	for i := range s.RegOrder {
		r := s.regAt(i)
		if r.TypeID != "" && s.Types[r.TypeID] == nil {
			return fmt.Errorf("registration %s of unknown type", r.ID)
		}
		if r.CodeID != "" && s.Codes[r.CodeID] == nil {
			return fmt.Errorf("registration %s of unknown code", r.ID)
		}
	}
	return nil
}

// checkOtherRefs is checkRefs without the registrations.
func (s *State) checkOtherRefs() error {
	if (len(s.Types) > 0 || len(s.RegOrder) > 0 || len(s.Orders) > 0) && s.Event == nil {
		return fmt.Errorf("records without an event")
	}
	for _, id := range s.CodeOrder {
		if s.Types[s.Codes[id].TypeID] == nil {
			return fmt.Errorf("code %s of unknown type", id)
		}
	}
	for _, id := range s.BundleOrder {
		for _, it := range s.Bundles[id].Items {
			if (it.ItemType == ItemRegistrationType && s.Types[it.ItemID] == nil) || (it.ItemType == ItemAddon && s.Addons[it.ItemID] == nil) ||
				(it.ItemType != ItemRegistrationType && it.ItemType != ItemAddon) {
				return fmt.Errorf("bundle %s holds unknown %s %s", id, it.ItemType, it.ItemID)
			}
		}
	}
	for i := range s.CheckinOrder {
		if c := s.checkinAt(i); s.regs()[c.RegID] == nil {
			return fmt.Errorf("check-in %s of unknown registration", c.ID)
		}
	}
	for i := range s.OrderOrder {
		o := s.orderAt(i)
		id := o.ID
		for _, h := range o.Holds {
			if (h.Kind == ItemRegistrationType && s.Types[h.ID] == nil) || (h.Kind == ItemAddon && s.Addons[h.ID] == nil) ||
				(h.Kind == ItemBundle && s.Bundles[h.ID] == nil) || (h.Kind != ItemRegistrationType && h.Kind != ItemAddon && h.Kind != ItemBundle) {
				return fmt.Errorf("order %s holds unknown %s %s", id, h.Kind, h.ID)
			}
		}
		if o.CodeID != "" && s.Codes[o.CodeID] == nil {
			return fmt.Errorf("order %s of unknown code", id)
		}
		if o.AdmissionTypeID != "" && s.Types[o.AdmissionTypeID] == nil {
			return fmt.Errorf("order %s of unknown type", id)
		}
	}
	return s.checkProgramRefs()
}

func checkOrder[T any](m map[string]*T, order []string, what string, seq func(*T) int) error {
	if len(m) != len(order) {
		return fmt.Errorf("%s index has %d ids for %d records", what, len(order), len(m))
	}
	for i, id := range order {
		v, ok := m[id]
		if !ok || v == nil {
			return fmt.Errorf("%s %q listed but missing", what, id)
		}
		if seq(v) != i {
			return fmt.Errorf("%s %q has seq %d at %d", what, id, seq(v), i)
		}
	}
	return nil
}
