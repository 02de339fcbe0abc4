package event

import (
	"strings"
	"time"
)

// pageOf pages through order (creation order; newest first when newest),
// keeping records that pass keep. The cursor is the last id of the previous
// page; an unknown cursor is an InvalidArgument on the cursor field.
func pageOf[R any, V any](order []string, recs map[string]*R, seq func(*R) int, cursor string, limit int, newest bool, keep func(*R) bool, view func(*R) V) (List[V], error) {
	limit = clampLimit(limit)
	out := List[V]{Data: []V{}}
	i, step := 0, 1
	if newest {
		i, step = len(order)-1, -1
	}
	if cursor != "" {
		id, ok := decodeCursor(cursor)
		r, found := recs[id]
		if !ok || !found {
			return out, FieldError("cursor", "unknown cursor")
		}
		i = seq(r) + step
	}
	var last string
	for ; i >= 0 && i < len(order); i += step {
		r := recs[order[i]]
		if keep != nil && !keep(r) {
			continue
		}
		if len(out.Data) == limit {
			out.HasMore = true
			c := encodeCursor(last)
			out.NextCursor = &c
			break
		}
		out.Data = append(out.Data, view(r))
		last = order[i]
	}
	return out, nil
}

func (m *Machine) registration(id string) (*RegistrationRec, error) {
	r, ok := m.s.regs()[id]
	if !ok {
		return nil, Errorf(NotFound, "registration not found")
	}
	return r, nil
}

// newPassToken embeds the event id so the HTTP layer can route a pass URL
// to its event: "<eventId>.<32 code chars>".
func (m *Machine) newPassToken() string { return m.s.ID + "." + m.ids.Code(32) }

// EventIDFromPassToken returns the event id a pass token belongs to.
func EventIDFromPassToken(token string) (string, bool) {
	id, rest, ok := strings.Cut(token, ".")
	return id, ok && id != "" && rest != ""
}

func (m *Machine) newCheckinCode() string { return "CHK-" + m.ids.Code(16) }

func (m *Machine) createRegistration(now time.Time, c CreateRegistration) (any, []Change, error) {
	if err := m.notArchived(); err != nil {
		return nil, nil, err
	}
	email, err := checkEmail("email", c.Email, true)
	if err != nil {
		return nil, nil, err
	}
	name, err := checkName("name", c.Name)
	if err != nil {
		return nil, nil, err
	}
	if id, ok := m.s.idx.emailReg(normEmail(email)); ok {
		return RegistrationResult{Registration: m.regView(m.s.regs()[id]), Created: false}, nil, nil
	}
	var t *TicketTypeRec
	switch {
	case c.RegistrationTypeID != "":
		var ok bool
		if t, ok = m.s.Types[c.RegistrationTypeID]; !ok {
			return nil, nil, FieldError("registrationTypeId", "unknown ticket type")
		}
	case len(m.s.TypeOrder) > 0:
		return nil, nil, FieldError("registrationTypeId", "required: the event has ticket types")
	}
	status := RegConfirmed
	if t != nil {
		// API registrations go on open types only: a draft, closed or
		// archived type is not taking people.
		if t.Status != SellOpen {
			return nil, nil, Reasonf(FailedPrecondition, ReasonNotOnSale, "ticket type is %s, not open", t.Status)
		}
		switch {
		case t.RequiresApproval:
			status = RegPending
		case t.room() > 0:
		case t.AllowWaitlist:
			status = RegWaitlisted
		default:
			return nil, nil, Reasonf(FailedPrecondition, ReasonSoldOut, "sold out")
		}
	}
	ch := RegistrationCreated{
		At: now, ID: m.newID("reg_"), Email: email, Name: name, Status: status,
		CheckinCode: m.newCheckinCode(), PassToken: m.newPassToken(),
	}
	if t != nil {
		ch.TypeID = t.ID
	}
	rec := RegistrationRec{ID: ch.ID, Email: ch.Email, Name: ch.Name, TypeID: ch.TypeID, Status: status, CheckinCode: ch.CheckinCode, PassToken: ch.PassToken, CreatedAt: now, UpdatedAt: now}
	changes := []Change{ch}
	if status == RegConfirmed {
		changes = append(changes, TicketIssued{At: now, RegistrationIDs: []string{ch.ID}})
	}
	return RegistrationResult{Registration: m.regView(&rec), Created: true}, changes, nil
}

func (m *Machine) listRegistrations(c ListRegistrations) (any, []Change, error) {
	if code := strings.ToUpper(strings.TrimSpace(c.CheckinCode)); code != "" {
		out := List[Registration]{Data: []Registration{}}
		m.s.ensureTokens()
		if id, ok := m.s.idx.regByCheckin[code]; ok {
			r := m.s.regs()[id]
			if (c.Status == "" || r.Status == c.Status) && (c.Email == "" || normEmail(r.Email) == normEmail(c.Email)) {
				out.Data = append(out.Data, m.regView(r))
			}
		}
		return out, nil, nil
	}
	if email := normEmail(c.Email); email != "" {
		l, err := m.registrationsOf(email, c)
		return l, nil, err
	}
	keep := func(r *RegistrationRec) bool { return c.Status == "" || r.Status == c.Status }
	l, err := pageOf(m.s.RegOrder, m.s.regs(), func(r *RegistrationRec) int { return r.Seq }, c.Cursor, c.Limit, true, keep, m.regView)
	return l, nil, err
}

// registrationsOf is the page of c's registrations with normalized email
// k: the same page a scan of RegOrder would give, read from the email
// index, so it costs the email's registrations instead of the event's.
func (m *Machine) registrationsOf(k string, c ListRegistrations) (List[Registration], error) {
	limit := clampLimit(c.Limit)
	out := List[Registration]{Data: []Registration{}}
	before := len(m.s.RegOrder)
	if c.Cursor != "" {
		id, ok := decodeCursor(c.Cursor)
		r, found := m.s.regs()[id]
		if !ok || !found {
			return out, FieldError("cursor", "unknown cursor")
		}
		before = r.Seq
	}
	var last string
	m.s.emailRegsOf(k, before, func(r *RegistrationRec) bool {
		if c.Status != "" && r.Status != c.Status {
			return true
		}
		if len(out.Data) == limit {
			out.HasMore = true
			cur := encodeCursor(last)
			out.NextCursor = &cur
			return false
		}
		out.Data = append(out.Data, m.regView(r))
		last = r.ID
		return true
	})
	return out, nil
}

// statusChange returns the change and the view of r moved to status.
func (m *Machine) statusChange(now time.Time, r *RegistrationRec, status, reason string) (Registration, Change) {
	rec := *r
	rec.Status, rec.UpdatedAt = status, now
	if reason != "" {
		rec.Reason = reason
	}
	return m.regView(&rec), RegistrationStatusChanged{At: now, ID: r.ID, Status: status, Reason: reason}
}

func (m *Machine) approveRegistration(now time.Time, c ApproveRegistration) (any, []Change, error) {
	r, err := m.registration(c.ID)
	if err != nil {
		return nil, nil, err
	}
	if r.Status != RegPending {
		return nil, nil, Reasonf(FailedPrecondition, ReasonRegistrationNotPending, "registration is %s, not pending", r.Status)
	}
	status := RegConfirmed
	if r.TypeID != "" {
		t := m.s.Types[r.TypeID]
		switch {
		case t.room() > 0:
		case t.AllowWaitlist:
			status = RegWaitlisted
		default:
			return nil, nil, Reasonf(FailedPrecondition, ReasonSoldOut, "sold out")
		}
	}
	v, ch := m.statusChange(now, r, status, "")
	changes := []Change{ch}
	if status == RegConfirmed {
		changes = append(changes, TicketIssued{At: now, RegistrationIDs: []string{r.ID}})
	}
	return v, changes, nil
}

func (m *Machine) rejectRegistration(now time.Time, c RejectRegistration) (any, []Change, error) {
	r, err := m.registration(c.ID)
	if err != nil {
		return nil, nil, err
	}
	if r.Status != RegPending {
		return nil, nil, Reasonf(FailedPrecondition, ReasonRegistrationNotPending, "registration is %s, not pending", r.Status)
	}
	v, ch := m.statusChange(now, r, RegRejected, strings.TrimSpace(c.Reason))
	return v, []Change{ch}, nil
}

func (m *Machine) cancelRegistration(now time.Time, c CancelRegistration) (any, []Change, error) {
	r, err := m.registration(c.ID)
	if err != nil {
		return nil, nil, err
	}
	if r.Status == RegCancelled {
		return nil, nil, Reasonf(FailedPrecondition, ReasonRegistrationCancelled, "registration is already cancelled")
	}
	v, ch := m.statusChange(now, r, RegCancelled, "")
	changes := []Change{ch}
	if r.TypeID != "" {
		freed := 0
		if r.Status == RegConfirmed {
			freed = 1
		}
		changes = appendWaitlistSeated(changes, now, m.seatFromWaitlist(now, m.s.Types[r.TypeID], freed, r.ID))
	}
	return v, changes, nil
}

func (m *Machine) rotatePass(now time.Time, c RotatePass) (any, []Change, error) {
	r, err := m.registration(c.ID)
	if err != nil {
		return nil, nil, err
	}
	ch := PassRotated{At: now, ID: r.ID, PassToken: m.newPassToken()}
	rec := *r
	rec.PassToken, rec.UpdatedAt = ch.PassToken, now
	return m.regView(&rec), []Change{ch}, nil
}

func (m *Machine) recordCheckin(now time.Time, c RecordCheckin) (any, []Change, error) {
	var r *RegistrationRec
	switch {
	case c.RegistrationID != "" && c.CheckinCode != "":
		return nil, nil, FieldError("checkinCode", "give registrationId or checkinCode, not both")
	case c.RegistrationID != "":
		r = m.s.regs()[c.RegistrationID]
	case c.CheckinCode != "":
		m.s.ensureTokens()
		if id, ok := m.s.idx.regByCheckin[strings.ToUpper(strings.TrimSpace(c.CheckinCode))]; ok {
			r = m.s.regs()[id]
		}
	default:
		return nil, nil, FieldError("registrationId", "registrationId or checkinCode is required")
	}
	if r == nil {
		return nil, nil, Errorf(NotFound, "registration not found")
	}
	subjectID := strings.TrimSpace(c.SubjectID)
	switch c.SubjectType {
	case "event":
		// The event door needs no id: one door per event.
		subjectID = ""
	case "session", "venue":
		if subjectID == "" {
			return nil, nil, FieldError("subjectId", "required for session and venue doors")
		}
	default:
		return nil, nil, FieldError("subjectType", "must be event, session or venue")
	}
	method := c.Method
	switch method {
	case "":
		method = "scan"
	case "scan", "manual":
	default:
		return nil, nil, FieldError("method", "must be scan or manual")
	}
	if first := m.s.doorIdx().doorCheckin(r, c.SubjectType, subjectID); first != nil {
		return CheckinResult{Checkin: m.checkinView(first), AlreadyCheckedIn: true, Access: m.access(r, c.SubjectType, subjectID)}, nil, nil
	}
	// A repeat scan (above) answers even if its door was deleted since.
	if err := m.checkDoor(c.SubjectType, subjectID); err != nil {
		return nil, nil, err
	}
	if r.Status != RegConfirmed {
		return nil, nil, Reasonf(FailedPrecondition, ReasonRegistrationNotConfirmed, "registration is %s, not confirmed", r.Status)
	}
	ch := CheckedIn{At: now, ID: m.newID("chk_"), RegID: r.ID, SubjectType: c.SubjectType, SubjectID: subjectID, Method: method}
	rec := CheckinRec{ID: ch.ID, RegID: r.ID, SubjectType: ch.SubjectType, SubjectID: subjectID, Method: method, At: now}
	return CheckinResult{Checkin: m.checkinView(&rec), Access: m.access(r, c.SubjectType, subjectID)}, []Change{ch}, nil
}

func (m *Machine) listCheckins(c ListCheckins) (any, []Change, error) {
	keep := func(k *CheckinRec) bool {
		return (c.SubjectType == "" || k.SubjectType == c.SubjectType) &&
			(c.SubjectID == "" || k.SubjectID == c.SubjectID) &&
			(c.RegistrationID == "" || k.RegID == c.RegistrationID)
	}
	l, err := pageOf(m.s.CheckinOrder, m.s.checkins(), func(k *CheckinRec) int { return k.Seq }, c.Cursor, c.Limit, true, keep, m.checkinView)
	return l, nil, err
}
