package event

import (
	"time"

	json "github.com/goccy/go-json"
)

// Views are the results of Decide: plain values with the spec's field names,
// built fresh from the state (slices copied), so the caller may encode them
// after the state moved on. Unset optional values are null, never omitted.

// Event is the event record.
type Event struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Timezone string `json:"timezone"`
	StartsAt *Time  `json:"startsAt"`
	EndsAt   *Time  `json:"endsAt"`
	Status   string `json:"status" v:"enum=draft|published|archived"`
	Currency string `json:"currency"`
	// SiteURL is the event's public page address, null until set in the
	// console (SetSiteURL).
	SiteURL *string `json:"siteUrl"`
	// Description is the event's public description (content.go), null
	// until set.
	Description *string `json:"description"`
	CreatedAt   Time    `json:"createdAt"`
	UpdatedAt   Time    `json:"updatedAt"`
	// WaitingRoom is the event's waiting room with its live counts;
	// absent without one (decisions §19).
	WaitingRoom *WaitingRoom `json:"waitingRoom,omitempty" doc:"The event's waiting room with its live counts (Developer API and console); absent without one, and never on the storefront (its catalog has waitingRoom without counts)."`
}

// Counts are a ticket type's registration counts in list results.
type Counts struct {
	Confirmed  int `json:"confirmed"`
	Waitlisted int `json:"waitlisted"`
}

// TicketType is the ticket type (registration type) record.
type TicketType struct {
	ID               string `json:"id"`
	EventID          string `json:"eventId"`
	Name             string `json:"name"`
	Capacity         *int   `json:"capacity"`
	PriceAmount      Money  `json:"priceAmount"`
	AllowWaitlist    bool   `json:"allowWaitlist"`
	IsPublic         bool   `json:"isPublic"`
	RequiresApproval bool   `json:"requiresApproval"`
	OpensAt          *Time  `json:"opensAt"`
	ClosesAt         *Time  `json:"closesAt"`
	Status           string `json:"status" v:"enum=draft|open|closed|archived"`
	Counts           Counts `json:"counts"`
	CreatedAt        Time   `json:"createdAt"`
	UpdatedAt        Time   `json:"updatedAt"`
}

// Availability is a ticket type's availability object. Remaining is null
// for an unlimited type.
type Availability struct {
	Capacity   *int `json:"capacity"`
	Confirmed  int  `json:"confirmed"`
	Waitlisted int  `json:"waitlisted"`
	Held       int  `json:"held"`
	Remaining  *int `json:"remaining"`
}

// Registration is the registration record.
type Registration struct {
	ID                 string  `json:"id"`
	EventID            string  `json:"eventId"`
	Email              string  `json:"email"`
	Name               *string `json:"name"`
	RegistrationTypeID *string `json:"registrationTypeId"`
	Status             string  `json:"status" v:"enum=pending|confirmed|waitlisted|rejected|cancelled"`
	CheckinCode        string  `json:"checkinCode"`
	PassURL            string  `json:"passUrl"`
	Reason             *string `json:"reason"`
	OrderID            *string `json:"orderId"`
	// Responses are the answers to the registration form given with the
	// order (forms.go); null without an order or answers.
	Responses json.RawMessage `json:"responses"`
	CreatedAt Time            `json:"createdAt"`
	UpdatedAt Time            `json:"updatedAt"`
}

// RegistrationResult answers CreateRegistration: Created is false when the
// email was already registered and Registration is the existing one.
type RegistrationResult struct {
	Registration
	Created bool `json:"created"`
}

// Pass answers GetPass: what the hosted pass page shows.
type Pass struct {
	Registration Registration `json:"registration"`
	Event        Event        `json:"event"`
}

// Checkin is the check-in record.
type Checkin struct {
	ID                string  `json:"id"`
	RegistrationID    string  `json:"registrationId"`
	SubjectType       string  `json:"subjectType" v:"enum=event|session|venue"`
	SubjectID         *string `json:"subjectId"`
	Method            string  `json:"method" v:"enum=scan|manual"`
	RegistrationEmail string  `json:"registrationEmail"`
	RegistrationName  *string `json:"registrationName"`
	CheckedInAt       Time    `json:"checkedInAt"`
	// DeviceID is the door device that scanned it (decisions §18); null
	// for the Developer API and the console.
	DeviceID *string `json:"deviceId" doc:"The door device that scanned it; null for the Developer API and the console"`
}

// CheckinResult answers RecordCheckin. A repeat at the same door answers the
// first check-in with AlreadyCheckedIn true.
type CheckinResult struct {
	Checkin          Checkin `json:"checkin"`
	AlreadyCheckedIn bool    `json:"alreadyCheckedIn"`
	// Access is the door's advisory perk verdict for the registration
	// (program.go); it never refuses a check-in.
	Access *Access `json:"access"`
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// strs hands out the optional strings of one view from one allocation
// instead of one each: views are built for every answer on the hot paths.
type strs struct {
	a [6]string
	n int
}

// p is strp backed by the pool; past its size it falls back to strp.
func (b *strs) p(s string) *string {
	if s == "" {
		return nil
	}
	if b.n == len(b.a) {
		return strp(s)
	}
	b.a[b.n] = s
	b.n++
	return &b.a[b.n-1]
}

func intp(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func timep(p *time.Time) *time.Time {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func (m *Machine) eventView() Event {
	e := m.s.Event
	return Event{
		ID: m.s.ID, Name: e.Name, Timezone: e.Timezone, StartsAt: tp(e.StartsAt), EndsAt: tp(e.EndsAt),
		Status: e.Status, Currency: e.Currency, SiteURL: strp(e.SiteURL), CreatedAt: At(e.CreatedAt), UpdatedAt: At(e.UpdatedAt),
		Description: strp(m.s.Content.Description), WaitingRoom: m.roomView(),
	}
}

func (m *Machine) typeView(t *TicketTypeRec) TicketType {
	return TicketType{
		ID: t.ID, EventID: m.s.ID, Name: t.Name, Capacity: intp(t.Capacity), PriceAmount: t.Price,
		AllowWaitlist: t.AllowWaitlist, IsPublic: t.IsPublic, RequiresApproval: t.RequiresApproval,
		OpensAt: tp(t.OpensAt), ClosesAt: tp(t.ClosesAt), Status: t.Status,
		Counts:    Counts{Confirmed: t.Confirmed, Waitlisted: t.Waitlisted},
		CreatedAt: At(t.CreatedAt), UpdatedAt: At(t.UpdatedAt),
	}
}

func availability(t *TicketTypeRec) Availability {
	a := Availability{Capacity: intp(t.Capacity), Confirmed: t.Confirmed, Waitlisted: t.Waitlisted, Held: t.Held}
	if t.Capacity != nil {
		r := t.room()
		a.Remaining = &r
	}
	return a
}

// PassURL is the hosted pass page of a pass token.
func (m *Machine) passURL(token string) string { return m.cfg.BaseURL + "/pass/" + token }

func (m *Machine) regView(r *RegistrationRec) Registration {
	opt := new(strs)
	return Registration{
		ID: r.ID, EventID: m.s.ID, Email: r.Email, Name: opt.p(r.Name), RegistrationTypeID: opt.p(r.TypeID),
		Status: r.Status, CheckinCode: r.CheckinCode, PassURL: m.passURL(r.PassToken), Reason: opt.p(r.Reason),
		OrderID: opt.p(r.OrderID), CreatedAt: At(r.CreatedAt), UpdatedAt: At(r.UpdatedAt),
		Responses: m.regResponses(r),
	}
}

func (m *Machine) checkinView(c *CheckinRec) Checkin {
	r := m.s.regs()[c.RegID]
	return Checkin{
		ID: c.ID, RegistrationID: c.RegID, SubjectType: c.SubjectType, SubjectID: strp(c.SubjectID),
		Method: c.Method, RegistrationEmail: r.Email, RegistrationName: strp(r.Name), CheckedInAt: At(c.At),
		DeviceID: strp(c.DeviceID),
	}
}
