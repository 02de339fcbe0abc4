package event

import (
	"encoding/json"
	"time"
)

// Changes: what Decide emits, the log stores and Apply performs. Each
// carries its own timestamp and every generated value (ids, codes, tokens,
// deadlines), so Apply is a pure function of state and change. JSON names
// are short because the log stores them.

// EventCreated creates the event.
type EventCreated struct {
	At       time.Time  `json:"at"`
	Name     string     `json:"name"`
	Timezone string     `json:"tz"`
	StartsAt *time.Time `json:"startsAt,omitempty"`
	EndsAt   *time.Time `json:"endsAt,omitempty"`
	Currency string     `json:"cur"`
}

// EventUpdated sets every mutable field of the event; AgendaReset clears the
// agenda (the start moved and the caller confirmed).
type EventUpdated struct {
	At          time.Time  `json:"at"`
	Name        string     `json:"name"`
	Timezone    string     `json:"tz"`
	StartsAt    *time.Time `json:"startsAt,omitempty"`
	EndsAt      *time.Time `json:"endsAt,omitempty"`
	Status      string     `json:"status"`
	Currency    string     `json:"cur"`
	AgendaReset bool       `json:"agendaReset,omitempty"`
}

// SiteURLSet sets the event's public page address ("" clears it).
type SiteURLSet struct {
	At      time.Time `json:"at"`
	SiteURL string    `json:"siteUrl,omitempty"`
}

func (SiteURLSet) isChange() {}

// ChangeKind names the change in the log.
func (SiteURLSet) ChangeKind() string { return "event.site_url_set" }

// TicketTypeCreated creates a ticket type.
type TicketTypeCreated struct {
	At time.Time `json:"at"`
	ID string    `json:"id"`
	TicketTypeSpec
}

// TicketTypeUpdated replaces a ticket type's mutable fields.
type TicketTypeUpdated struct {
	At time.Time `json:"at"`
	ID string    `json:"id"`
	TicketTypeSpec
}

// RegistrationCreated creates a registration through the API. Its status
// counts against the type: confirmed and waitlisted are counted, pending not.
type RegistrationCreated struct {
	At          time.Time `json:"at"`
	ID          string    `json:"id"`
	Email       string    `json:"email"`
	Name        string    `json:"name,omitempty"`
	TypeID      string    `json:"typeId,omitempty"`
	Status      string    `json:"status"`
	CheckinCode string    `json:"chk"`
	PassToken   string    `json:"pass"`
}

// RegistrationStatusChanged moves a registration (approve, reject, cancel,
// waitlist promotion); Apply moves the counters and releases a code use.
type RegistrationStatusChanged struct {
	At     time.Time `json:"at"`
	ID     string    `json:"id"`
	Status string    `json:"status"`
	Reason string    `json:"reason,omitempty"`
}

// PassRotated replaces a registration's pass token.
type PassRotated struct {
	At        time.Time `json:"at"`
	ID        string    `json:"id"`
	PassToken string    `json:"pass"`
}

// CheckedIn records the first check-in of a registration at a door.
type CheckedIn struct {
	At          time.Time `json:"at"`
	ID          string    `json:"id"`
	RegID       string    `json:"reg"`
	SubjectType string    `json:"st"`
	SubjectID   string    `json:"sid,omitempty"`
	Method      string    `json:"m"`
}

// TicketIssued says these registrations became confirmed and should get
// their ticket email (pass link). The shell turns it into outbox mail.
type TicketIssued struct {
	At              time.Time `json:"at"`
	RegistrationIDs []string  `json:"regs"`
}

// MintedCode is one code of a mint.
type MintedCode struct {
	ID   string `json:"id"`
	Code string `json:"code"`
}

// CodesMinted creates redemption codes sharing one configuration.
type CodesMinted struct {
	At        time.Time    `json:"at"`
	TypeID    string       `json:"typeId"`
	Label     string       `json:"label,omitempty"`
	MaxUses   *int         `json:"maxUses,omitempty"`
	ExpiresAt *time.Time   `json:"expiresAt,omitempty"`
	Codes     []MintedCode `json:"codes"`
}

// CodeDisabled disables a redemption code.
type CodeDisabled struct {
	At time.Time `json:"at"`
	ID string    `json:"id"`
}

// AddonCreated creates an add-on.
type AddonCreated struct {
	At time.Time `json:"at"`
	ID string    `json:"id"`
	AddonSpec
}

// AddonUpdated replaces an add-on's mutable fields.
type AddonUpdated struct {
	At time.Time `json:"at"`
	ID string    `json:"id"`
	AddonSpec
}

// BundleCreated creates a bundle.
type BundleCreated struct {
	At time.Time `json:"at"`
	ID string    `json:"id"`
	BundleSpec
}

// BundleUpdated replaces a bundle's mutable fields, items included.
type BundleUpdated struct {
	At time.Time `json:"at"`
	ID string    `json:"id"`
	BundleSpec
}

// OrderPlaced creates an order and takes its holds (until HoldUntil). An
// order of an already registered buyer holds nothing and is born cancelled
// with AlreadyRegistered set.
type OrderPlaced struct {
	At                time.Time       `json:"at"`
	ID                string          `json:"id"`
	Number            string          `json:"num"`
	Email             string          `json:"email"`
	Name              string          `json:"name,omitempty"`
	Lines             []OrderLine     `json:"lines"`
	Holds             []Hold          `json:"holds,omitempty"`
	AdmissionTypeID   string          `json:"adm,omitempty"`
	CodeID            string          `json:"code,omitempty"`
	Responses         json.RawMessage `json:"resp,omitempty"`
	Total             Money           `json:"total"`
	Currency          string          `json:"cur"`
	HoldUntil         time.Time       `json:"until"`
	Status            string          `json:"status"`
	AlreadyRegistered bool            `json:"already,omitempty"`
	RegistrationID    string          `json:"reg,omitempty"`
	CheckoutSessionID string          `json:"cs,omitempty"`
	// PromoID is the promotion code that took Discount off the lines.
	PromoID  string `json:"promo,omitempty"`
	Discount Money  `json:"discount,omitempty"`
}

// OrderPaymentStarted confirms a paid order: a payment starts and the hold
// is extended to HoldUntil.
type OrderPaymentStarted struct {
	At         time.Time `json:"at"`
	ID         string    `json:"id"`
	PaymentID  string    `json:"pay"`
	HoldUntil  time.Time `json:"until"`
	SuccessURL string    `json:"ok,omitempty"`
	CancelURL  string    `json:"cancel,omitempty"`
}

// OrderPaid settles and fulfils an order: holds turn into sales, the
// admission into a confirmed registration (unless AlreadyRegistered: then
// the admission hold is released and no second seat is sold).
type OrderPaid struct {
	At                time.Time `json:"at"`
	ID                string    `json:"id"`
	DeliveryID        string    `json:"dlv,omitempty"`
	RegistrationID    string    `json:"reg,omitempty"`
	CheckinCode       string    `json:"chk,omitempty"`
	PassToken         string    `json:"pass,omitempty"`
	AlreadyRegistered bool      `json:"already,omitempty"`
}

// OrderReleased ends a holding order (cancelled or expired) and returns its
// places and code use.
type OrderReleased struct {
	At     time.Time `json:"at"`
	ID     string    `json:"id"`
	Status string    `json:"status"`
}

// CheckoutSessionCreated creates a checkout session.
type CheckoutSessionCreated struct {
	At             time.Time       `json:"at"`
	ID             string          `json:"id"`
	Items          []OrderItem     `json:"items"`
	Email          string          `json:"email,omitempty"`
	Name           string          `json:"name,omitempty"`
	Responses      json.RawMessage `json:"resp,omitempty"`
	RedemptionCode string          `json:"rc,omitempty"`
	PromotionCode  string          `json:"pc,omitempty"`
	ReturnURL      string          `json:"ret,omitempty"`
	Locale         string          `json:"loc,omitempty"`
	ExpiresAt      time.Time       `json:"exp"`
}

func (EventCreated) isChange()              {}
func (EventUpdated) isChange()              {}
func (TicketTypeCreated) isChange()         {}
func (TicketTypeUpdated) isChange()         {}
func (RegistrationCreated) isChange()       {}
func (RegistrationStatusChanged) isChange() {}
func (PassRotated) isChange()               {}
func (CheckedIn) isChange()                 {}
func (TicketIssued) isChange()              {}
func (CodesMinted) isChange()               {}
func (CodeDisabled) isChange()              {}
func (AddonCreated) isChange()              {}
func (AddonUpdated) isChange()              {}
func (BundleCreated) isChange()             {}
func (BundleUpdated) isChange()             {}
func (OrderPlaced) isChange()               {}
func (OrderPaymentStarted) isChange()       {}
func (OrderPaid) isChange()                 {}
func (OrderReleased) isChange()             {}
func (CheckoutSessionCreated) isChange()    {}

// ChangeKind implementations: the names are part of the log format.
func (EventCreated) ChangeKind() string              { return "event.created" }
func (EventUpdated) ChangeKind() string              { return "event.updated" }
func (TicketTypeCreated) ChangeKind() string         { return "ticket_type.created" }
func (TicketTypeUpdated) ChangeKind() string         { return "ticket_type.updated" }
func (RegistrationCreated) ChangeKind() string       { return "registration.created" }
func (RegistrationStatusChanged) ChangeKind() string { return "registration.status_changed" }
func (PassRotated) ChangeKind() string               { return "registration.pass_rotated" }
func (CheckedIn) ChangeKind() string                 { return "checkin.created" }
func (TicketIssued) ChangeKind() string              { return "ticket.issued" }
func (CodesMinted) ChangeKind() string               { return "code.minted" }
func (CodeDisabled) ChangeKind() string              { return "code.disabled" }
func (AddonCreated) ChangeKind() string              { return "addon.created" }
func (AddonUpdated) ChangeKind() string              { return "addon.updated" }
func (BundleCreated) ChangeKind() string             { return "bundle.created" }
func (BundleUpdated) ChangeKind() string             { return "bundle.updated" }
func (OrderPlaced) ChangeKind() string               { return "order.placed" }
func (OrderPaymentStarted) ChangeKind() string       { return "order.awaiting_payment" }
func (OrderPaid) ChangeKind() string                 { return "order.paid" }
func (OrderReleased) ChangeKind() string             { return "order.released" }
func (CheckoutSessionCreated) ChangeKind() string    { return "checkout_session.created" }
