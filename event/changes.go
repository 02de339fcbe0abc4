package event

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
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
// seated from the waitlist); Apply moves the counters and releases a code use.
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
	// DeviceID and ScanID are a door device's scan (door.go); CheckedInAt,
	// when set, is the check-in's time where it is not At (an offline
	// scan's scannedAt).
	DeviceID    string    `json:"dev,omitempty"`
	ScanID      string    `json:"scan,omitempty"`
	CheckedInAt time.Time `json:"cat,omitzero"`
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
	// Client is the storefront caller the hold limits count the order
	// against (holdlimits.go).
	Client string `json:"client,omitempty"`
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
	// Provider, ProviderRef and ProviderURL are the hosted provider's
	// payment page, when one made it (provider.go): its name, its id
	// (a Checkout Session) and where the buyer pays.
	Provider    string `json:"provider,omitempty"`
	ProviderRef string `json:"ref,omitempty"`
	ProviderURL string `json:"url,omitempty"`
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
	// ProviderRef is the hosted provider's payment that settled the order
	// (provider.go), when it is not the one recorded at confirm.
	ProviderRef string `json:"ref,omitempty"`
}

// OrderReleased ends a holding order (cancelled or expired) and returns its
// places and code use.
type OrderReleased struct {
	At     time.Time `json:"at"`
	ID     string    `json:"id"`
	Status string    `json:"status"`
	// CloseRef is the hosted provider's payment page of the order, which
	// the shell now closes (EffectCheckoutClose, provider.go).
	CloseRef string `json:"close,omitempty"`
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
	Client         string          `json:"client,omitempty"`
	QueueToken     string          `json:"qt,omitempty"`
}

// ---- change kinds: each one's log name, body codec and apply

// ChangeKind names the change in the log (its binary tag).
func (SiteURLSet) ChangeKind() string { return "event.site_url_set" }

func decodeSiteURLSet(d *dec) SiteURLSet {
	return SiteURLSet{At: d.time(), SiteURL: d.str()}
}

func (c SiteURLSet) appendBody(e enc) enc { return e.time(c.At).str(c.SiteURL) }

func (c SiteURLSet) apply(s *State) {
	e := s.mustEvent()
	e.SiteURL, e.UpdatedAt = c.SiteURL, c.At
}

// ChangeKind names the change in the log (its binary tag).
func (EventCreated) ChangeKind() string { return "event.created" }

func decodeEventCreated(d *dec) EventCreated {
	return EventCreated{At: d.time(), Name: d.str(), Timezone: d.str(), StartsAt: d.timep(), EndsAt: d.timep(), Currency: d.str()}
}

func (c EventCreated) appendBody(e enc) enc {
	return e.time(c.At).str(c.Name).str(c.Timezone).timep(c.StartsAt).timep(c.EndsAt).str(c.Currency)
}

func (c EventCreated) apply(s *State) {
	s.Event = &EventRec{
		Name: c.Name, Timezone: c.Timezone, StartsAt: c.StartsAt, EndsAt: c.EndsAt,
		Status: EventDraft, Currency: c.Currency, CreatedAt: c.At, UpdatedAt: c.At,
	}
}

// ChangeKind names the change in the log (its binary tag).
func (EventUpdated) ChangeKind() string { return "event.updated" }

func decodeEventUpdated(d *dec) EventUpdated {
	return EventUpdated{At: d.time(), Name: d.str(), Timezone: d.str(), StartsAt: d.timep(), EndsAt: d.timep(), Status: d.str(), Currency: d.str(), AgendaReset: d.bool()}
}

func (c EventUpdated) appendBody(e enc) enc {
	return e.time(c.At).str(c.Name).str(c.Timezone).timep(c.StartsAt).timep(c.EndsAt).str(c.Status).str(c.Currency).bool(c.AgendaReset)
}

func (c EventUpdated) apply(s *State) {
	e := s.mustEvent()
	e.Name, e.Timezone, e.StartsAt, e.EndsAt = c.Name, c.Timezone, c.StartsAt, c.EndsAt
	e.Status, e.Currency, e.UpdatedAt = c.Status, c.Currency, c.At
	if c.AgendaReset {
		s.resetAgenda()
	}
}

// ChangeKind names the change in the log (its binary tag).
func (TicketTypeCreated) ChangeKind() string { return "ticket_type.created" }

func decodeTicketTypeCreated(d *dec) TicketTypeCreated {
	return TicketTypeCreated{At: d.time(), ID: d.str(), TicketTypeSpec: d.typeSpec()}
}

func (c TicketTypeCreated) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).typeSpec(c.TicketTypeSpec)
}

func (c TicketTypeCreated) apply(s *State) {
	s.mustEvent()
	s.Types[c.ID] = &TicketTypeRec{ID: c.ID, Seq: len(s.TypeOrder), TicketTypeSpec: c.TicketTypeSpec, CreatedAt: c.At, UpdatedAt: c.At}
	s.TypeOrder = append(s.TypeOrder, c.ID)
}

// ChangeKind names the change in the log (its binary tag).
func (TicketTypeUpdated) ChangeKind() string { return "ticket_type.updated" }

func decodeTicketTypeUpdated(d *dec) TicketTypeUpdated {
	return TicketTypeUpdated{At: d.time(), ID: d.str(), TicketTypeSpec: d.typeSpec()}
}

func (c TicketTypeUpdated) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).typeSpec(c.TicketTypeSpec)
}

func (c TicketTypeUpdated) apply(s *State) {
	t := s.mustType(c.ID)
	t.TicketTypeSpec, t.UpdatedAt = c.TicketTypeSpec, c.At
}

// ChangeKind names the change in the log (its binary tag).
func (RegistrationCreated) ChangeKind() string { return "registration.created" }

func decodeRegistrationCreated(d *dec) RegistrationCreated {
	return d.registrationCreated()
}

func (c RegistrationCreated) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).str(c.Email).str(c.Name).str(c.TypeID).str(c.Status).str(c.CheckinCode).str(c.PassToken)
}

func (c RegistrationCreated) apply(s *State) {
	s.applyRegistrationCreated(c)
}

// ChangeKind names the change in the log (its binary tag).
func (RegistrationStatusChanged) ChangeKind() string { return "registration.status_changed" }

func decodeRegistrationStatusChanged(d *dec) RegistrationStatusChanged {
	return RegistrationStatusChanged{At: d.time(), ID: d.str(), Status: d.str(), Reason: d.str()}
}

func (c RegistrationStatusChanged) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).str(c.Status).str(c.Reason)
}

func (c RegistrationStatusChanged) apply(s *State) {
	s.setRegStatus(c)
}

// ChangeKind names the change in the log (its binary tag).
func (PassRotated) ChangeKind() string { return "registration.pass_rotated" }

func decodePassRotated(d *dec) PassRotated {
	return PassRotated{At: d.time(), ID: d.str(), PassToken: d.str()}
}

func (c PassRotated) appendBody(e enc) enc { return e.time(c.At).str(c.ID).str(c.PassToken) }

func (c PassRotated) apply(s *State) {
	r := s.mustReg(c.ID)
	if s.idx.tokens {
		delete(s.idx.regByPass, r.PassToken)
		s.idx.regByPass[c.PassToken] = r.ID
	}
	r.PassToken, r.UpdatedAt = c.PassToken, c.At
}

// ChangeKind names the change in the log (its binary tag).
func (CheckedIn) ChangeKind() string { return "checkin.created" }

func decodeCheckedIn(d *dec) CheckedIn {
	return d.checkedIn()
}

func (c CheckedIn) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).str(c.RegID).str(c.SubjectType).str(c.SubjectID).str(c.Method).
		str(c.DeviceID).str(c.ScanID).time(c.CheckedInAt)
}

func (c CheckedIn) apply(s *State) {
	s.applyCheckedIn(c)
}

// ChangeKind names the change in the log (its binary tag).
func (TicketIssued) ChangeKind() string { return "ticket.issued" }

func decodeTicketIssued(d *dec) TicketIssued {
	return TicketIssued{At: d.time(), RegistrationIDs: d.strs()}
}

func (c TicketIssued) appendBody(e enc) enc { return e.time(c.At).strs(c.RegistrationIDs) }

func (c TicketIssued) apply(s *State) {
	// Nothing to do: the shell reads it to queue ticket emails.
}

// ChangeKind names the change in the log (its binary tag).
func (CodesMinted) ChangeKind() string { return "code.minted" }

func decodeCodesMinted(d *dec) CodesMinted {
	c := CodesMinted{At: d.time(), TypeID: d.str(), Label: d.str(), MaxUses: d.intp(), ExpiresAt: d.timep()}
	if n := d.count(); n > 0 {
		c.Codes = make([]MintedCode, n)
		for i := range c.Codes {
			c.Codes[i] = MintedCode{ID: d.str(), Code: d.str()}
		}
	}
	return c
}

func (c CodesMinted) appendBody(e enc) enc {
	e = e.time(c.At).str(c.TypeID).str(c.Label).intp(c.MaxUses).timep(c.ExpiresAt)
	e = binary.AppendUvarint(e, uint64(len(c.Codes)))
	for _, mc := range c.Codes {
		e = e.str(mc.ID).str(mc.Code)
	}
	return e
}

func (c CodesMinted) apply(s *State) {
	for _, mc := range c.Codes {
		s.Codes[mc.ID] = &CodeRec{ID: mc.ID, Seq: len(s.CodeOrder), TypeID: c.TypeID, Code: mc.Code, Label: c.Label, MaxUses: c.MaxUses, ExpiresAt: c.ExpiresAt, CreatedAt: c.At}
		s.CodeOrder = append(s.CodeOrder, mc.ID)
		s.idx.codeByCode[normCode(mc.Code)] = mc.ID
	}
}

// ChangeKind names the change in the log (its binary tag).
func (CodeDisabled) ChangeKind() string { return "code.disabled" }

func decodeCodeDisabled(d *dec) CodeDisabled {
	return CodeDisabled{At: d.time(), ID: d.str()}
}

func (c CodeDisabled) appendBody(e enc) enc { return e.time(c.At).str(c.ID) }

func (c CodeDisabled) apply(s *State) {
	s.mustCode(c.ID).Disabled = true
}

// ChangeKind names the change in the log (its binary tag).
func (AddonCreated) ChangeKind() string { return "addon.created" }

func decodeAddonCreated(d *dec) AddonCreated {
	return AddonCreated{At: d.time(), ID: d.str(), AddonSpec: d.addonSpec()}
}

func (c AddonCreated) appendBody(e enc) enc { return e.time(c.At).str(c.ID).addonSpec(c.AddonSpec) }

func (c AddonCreated) apply(s *State) {
	s.Addons[c.ID] = &AddonRec{ID: c.ID, Seq: len(s.AddonOrder), AddonSpec: c.AddonSpec, CreatedAt: c.At, UpdatedAt: c.At}
	s.AddonOrder = append(s.AddonOrder, c.ID)
}

// ChangeKind names the change in the log (its binary tag).
func (AddonUpdated) ChangeKind() string { return "addon.updated" }

func decodeAddonUpdated(d *dec) AddonUpdated {
	return AddonUpdated{At: d.time(), ID: d.str(), AddonSpec: d.addonSpec()}
}

func (c AddonUpdated) appendBody(e enc) enc { return e.time(c.At).str(c.ID).addonSpec(c.AddonSpec) }

func (c AddonUpdated) apply(s *State) {
	a := s.mustAddon(c.ID)
	a.AddonSpec, a.UpdatedAt = c.AddonSpec, c.At
}

// ChangeKind names the change in the log (its binary tag).
func (BundleCreated) ChangeKind() string { return "bundle.created" }

func decodeBundleCreated(d *dec) BundleCreated {
	return BundleCreated{At: d.time(), ID: d.str(), BundleSpec: d.bundleSpec()}
}

func (c BundleCreated) appendBody(e enc) enc { return e.time(c.At).str(c.ID).bundleSpec(c.BundleSpec) }

func (c BundleCreated) apply(s *State) {
	s.Bundles[c.ID] = &BundleRec{ID: c.ID, Seq: len(s.BundleOrder), BundleSpec: c.BundleSpec, CreatedAt: c.At, UpdatedAt: c.At}
	s.BundleOrder = append(s.BundleOrder, c.ID)
}

// ChangeKind names the change in the log (its binary tag).
func (BundleUpdated) ChangeKind() string { return "bundle.updated" }

func decodeBundleUpdated(d *dec) BundleUpdated {
	return BundleUpdated{At: d.time(), ID: d.str(), BundleSpec: d.bundleSpec()}
}

func (c BundleUpdated) appendBody(e enc) enc { return e.time(c.At).str(c.ID).bundleSpec(c.BundleSpec) }

func (c BundleUpdated) apply(s *State) {
	b := s.mustBundle(c.ID)
	b.BundleSpec, b.UpdatedAt = c.BundleSpec, c.At
}

// ChangeKind names the change in the log (its binary tag).
func (OrderPlaced) ChangeKind() string { return "order.placed" }

func decodeOrderPlaced(d *dec) OrderPlaced {
	return d.orderPlaced()
}

func (c OrderPlaced) appendBody(e enc) enc {
	e = e.time(c.At).str(c.ID).str(c.Number).str(c.Email).str(c.Name)
	e = binary.AppendUvarint(e, uint64(len(c.Lines)))
	for _, l := range c.Lines {
		e = e.str(l.ItemType).str(l.ItemID).str(l.Name).int(int64(l.Quantity)).int(int64(l.UnitPrice)).int(int64(l.Amount))
	}
	e = binary.AppendUvarint(e, uint64(len(c.Holds)))
	for _, h := range c.Holds {
		e = e.str(h.Kind).str(h.ID).int(int64(h.Qty))
	}
	return e.str(c.AdmissionTypeID).str(c.CodeID).bytes(c.Responses).int(int64(c.Total)).str(c.Currency).
		time(c.HoldUntil).str(c.Status).bool(c.AlreadyRegistered).str(c.RegistrationID).str(c.CheckoutSessionID).
		str(c.PromoID).int(int64(c.Discount)).str(c.Client)
}

func (c OrderPlaced) apply(s *State) {
	s.applyOrderPlaced(c)
}

// ChangeKind names the change in the log (its binary tag).
func (OrderPaymentStarted) ChangeKind() string { return "order.awaiting_payment" }

func decodeOrderPaymentStarted(d *dec) OrderPaymentStarted {
	return OrderPaymentStarted{At: d.time(), ID: d.str(), PaymentID: d.str(), HoldUntil: d.time(), SuccessURL: d.str(), CancelURL: d.str(),
		Provider: d.str(), ProviderRef: d.str(), ProviderURL: d.str()}
}

func (c OrderPaymentStarted) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).str(c.PaymentID).time(c.HoldUntil).str(c.SuccessURL).str(c.CancelURL).
		str(c.Provider).str(c.ProviderRef).str(c.ProviderURL)
}

func (c OrderPaymentStarted) apply(s *State) {
	o := s.mustOrder(c.ID)
	if o.Status != OrderStatusOpen {
		panic(fmt.Sprintf("event: payment on order %s in status %s", o.ID, o.Status))
	}
	o.Status, o.PaymentID, o.HoldUntil = OrderStatusAwaitingPayment, c.PaymentID, c.HoldUntil
	o.SuccessURL, o.CancelURL, o.UpdatedAt = c.SuccessURL, c.CancelURL, c.At
	o.Provider, o.ProviderRef, o.ProviderURL = c.Provider, c.ProviderRef, c.ProviderURL
	s.idx.orderByPayment[c.PaymentID] = o.ID
	s.queueHold(o)
}

// ChangeKind names the change in the log (its binary tag).
func (OrderPaid) ChangeKind() string { return "order.paid" }

func decodeOrderPaid(d *dec) OrderPaid {
	return OrderPaid{At: d.time(), ID: d.str(), DeliveryID: d.str(), RegistrationID: d.str(), CheckinCode: d.str(), PassToken: d.str(), AlreadyRegistered: d.bool(),
		ProviderRef: d.str()}
}

func (c OrderPaid) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).str(c.DeliveryID).str(c.RegistrationID).str(c.CheckinCode).str(c.PassToken).bool(c.AlreadyRegistered).
		str(c.ProviderRef)
}

func (c OrderPaid) apply(s *State) {
	s.applyOrderPaid(c)
	if c.ProviderRef != "" {
		s.mustOrder(c.ID).ProviderRef = c.ProviderRef
	}
}

// ChangeKind names the change in the log (its binary tag).
func (OrderReleased) ChangeKind() string { return "order.released" }

func decodeOrderReleased(d *dec) OrderReleased {
	return OrderReleased{At: d.time(), ID: d.str(), Status: d.str(), CloseRef: d.str()}
}

func (c OrderReleased) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).str(c.Status).str(c.CloseRef)
}

func (c OrderReleased) apply(s *State) {
	o := s.mustOrder(c.ID)
	if !o.holding() {
		panic(fmt.Sprintf("event: release of order %s in status %s", o.ID, o.Status))
	}
	s.moveHolds(o, func(n *int, q int) { *n -= q }, nil)
	if o.CodeHeld {
		s.mustCode(o.CodeID).Held--
	}
	s.promoHeld(o, -1, false)
	s.unindexOpenOrder(o)
	o.Status, o.UpdatedAt = c.Status, c.At
}

// ChangeKind names the change in the log (its binary tag).
func (CheckoutSessionCreated) ChangeKind() string { return "checkout_session.created" }

func decodeCheckoutSessionCreated(d *dec) CheckoutSessionCreated {
	c := CheckoutSessionCreated{At: d.time(), ID: d.str(), Items: d.orderItems(), Email: d.str(), Name: d.str(), Responses: d.bytes(),
		RedemptionCode: d.str(), PromotionCode: d.str(), ReturnURL: d.str(), Locale: d.str(), ExpiresAt: d.time()}
	if len(d.s) > 0 {
		c.Client = d.str() // sessions logged before the hold limits end here
	}
	if len(d.s) > 0 {
		c.QueueToken = d.str()
	}
	return c
}

func (c CheckoutSessionCreated) appendBody(e enc) enc {
	return e.time(c.At).str(c.ID).orderItems(c.Items).str(c.Email).str(c.Name).bytes(c.Responses).str(c.RedemptionCode).
		str(c.PromotionCode).str(c.ReturnURL).str(c.Locale).time(c.ExpiresAt).str(c.Client).str(c.QueueToken)
}

func (c CheckoutSessionCreated) apply(s *State) {
	s.Checkouts[c.ID] = &CheckoutRec{
		ID: c.ID, Seq: len(s.CheckoutOrder), Items: c.Items, Email: c.Email, Name: c.Name,
		Responses: c.Responses, RedemptionCode: c.RedemptionCode, PromotionCode: c.PromotionCode,
		ReturnURL: c.ReturnURL, Locale: c.Locale, CreatedAt: c.At, ExpiresAt: c.ExpiresAt, Client: c.Client,
		QueueToken: c.QueueToken,
	}
	s.CheckoutOrder = append(s.CheckoutOrder, c.ID)
	s.indexSession(s.Checkouts[c.ID], c.At)
	s.queueForPurge(s.Checkouts[c.ID])
}
