package event

import (
	"encoding/json"
	"strings"
	"time"
)

// RedemptionCode is the redemption code record; Uses counts fulfilled uses
// plus uses reserved by live orders.
type RedemptionCode struct {
	ID                 string  `json:"id"`
	EventID            string  `json:"eventId"`
	RegistrationTypeID string  `json:"registrationTypeId"`
	Code               string  `json:"code"`
	Label              *string `json:"label"`
	MaxUses            *int    `json:"maxUses"`
	Uses               int     `json:"uses"`
	Status             string  `json:"status" v:"enum=active|disabled|expired|exhausted"`
	ExpiresAt          *Time   `json:"expiresAt"`
	CreatedAt          Time    `json:"createdAt"`
}

// MintResult answers MintCodes.
type MintResult struct {
	RedemptionCodes []RedemptionCode `json:"redemptionCodes"`
}

// Perk is a perk an admission carries (filled by the program feature).
type Perk struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
}

// CodeLookup answers LookupCode: the ticket the code unlocks (hidden ones
// included), the admission's perks and the price after discount.
type CodeLookup struct {
	Code                  string     `json:"code"`
	RegistrationType      TicketType `json:"registrationType"`
	Perks                 []Perk     `json:"perks"`
	PriceAmount           Money      `json:"priceAmount"`
	DiscountedPriceAmount Money      `json:"discountedPriceAmount"`
	ExpiresAt             *Time      `json:"expiresAt"`
}

// Addon is the add-on record. Sold and Held are live counts.
type Addon struct {
	ID          string `json:"id"`
	EventID     string `json:"eventId"`
	Name        string `json:"name"`
	PriceAmount Money  `json:"priceAmount"`
	Capacity    *int   `json:"capacity"`
	Status      string `json:"status" v:"enum=draft|open|closed|archived"`
	Sold        int    `json:"sold"`
	Held        int    `json:"held"`
	CreatedAt   Time   `json:"createdAt"`
	UpdatedAt   Time   `json:"updatedAt"`
}

// Bundle is the bundle record; Items are its contents.
type Bundle struct {
	ID          string       `json:"id"`
	EventID     string       `json:"eventId"`
	Name        string       `json:"name"`
	PriceAmount Money        `json:"priceAmount"`
	Capacity    *int         `json:"capacity"`
	Status      string       `json:"status" v:"enum=draft|open|closed|archived"`
	Items       []BundleItem `json:"items"`
	Sold        int          `json:"sold"`
	Held        int          `json:"held"`
	CreatedAt   Time         `json:"createdAt"`
	UpdatedAt   Time         `json:"updatedAt"`
}

// OrderItemView is a priced line of an order (purchase-time prices).
type OrderItemView struct {
	ItemType        string `json:"itemType" v:"enum=registration_type|addon|bundle"`
	ItemID          string `json:"itemId"`
	Name            string `json:"name"`
	Quantity        int    `json:"quantity"`
	UnitPriceAmount Money  `json:"unitPriceAmount"`
	Amount          Money  `json:"amount"`
}

// Order is the order record. CheckoutURL is set while the order is open;
// PaymentURL once a paid order was confirmed. HoldExpiresAt is set while
// the order holds places. AlreadyRegistered: the buyer was registered, no
// second seat was sold (the order holds nothing and is cancelled, or, if it
// was discovered at payment, paid without a new registration).
type Order struct {
	ID                string          `json:"id"`
	EventID           string          `json:"eventId"`
	OrderNumber       string          `json:"orderNumber"`
	Status            string          `json:"status" v:"enum=open|awaiting_payment|paid|cancelled|expired|refunded"`
	Email             string          `json:"email"`
	Name              *string         `json:"name"`
	Items             []OrderItemView `json:"items"`
	TotalAmount       Money           `json:"totalAmount"`
	Currency          string          `json:"currency"`
	AlreadyRegistered bool            `json:"alreadyRegistered"`
	RegistrationID    *string         `json:"registrationId"`
	RedemptionCode    *string         `json:"redemptionCode"`
	PromotionCode     *string         `json:"promotionCode"`
	DiscountAmount    Money           `json:"discountAmount" doc:"What the promotion code took off; items and totalAmount are already discounted."`
	Responses         json.RawMessage `json:"responses"`
	HoldExpiresAt     *Time           `json:"holdExpiresAt"`
	PaymentID         *string         `json:"paymentId"`
	OrderURL          string          `json:"orderUrl"`
	CheckoutURL       *string         `json:"checkoutUrl"`
	PaymentURL        *string         `json:"paymentUrl"`
	SuccessURL        *string         `json:"successUrl"`
	CancelURL         *string         `json:"cancelUrl"`
	CreatedAt         Time            `json:"createdAt"`
	UpdatedAt         Time            `json:"updatedAt"`
	// Refunds are the console's refunds of the order, oldest first;
	// absent on an order that never had one.
	Refunds []Refund `json:"refunds,omitempty"`
	// Provider and ProviderRef are for the shell (provider.go): the
	// hosted provider of the payment and its payment's id.
	Provider    string `json:"-"`
	ProviderRef string `json:"-"`
	// PreparedAt is set on the answer of a prepared confirm
	// (ConfirmOrder.Prepare): the instant a hosted provider's window is
	// counted from, the same for every retry of the confirm.
	PreparedAt time.Time `json:"-"`
}

// CheckoutSession is the checkout session record. Status is open or
// expired (past ExpiresAt).
type CheckoutSession struct {
	ID             string          `json:"id"`
	EventID        string          `json:"eventId"`
	URL            string          `json:"url"`
	ExpiresAt      Time            `json:"expiresAt"`
	Status         string          `json:"status" v:"enum=open|expired"`
	Items          []OrderItem     `json:"items"`
	Email          *string         `json:"email"`
	Name           *string         `json:"name"`
	Responses      json.RawMessage `json:"responses"`
	RedemptionCode *string         `json:"redemptionCode"`
	PromotionCode  *string         `json:"promotionCode"`
	ReturnURL      *string         `json:"returnUrl"`
	Locale         *string         `json:"locale"`
	CreatedAt      Time            `json:"createdAt"`
}

// CatalogTicketType is a ticket type as a sales page sees it: no counts.
type CatalogTicketType struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	PriceAmount      Money  `json:"priceAmount"`
	SoldOut          bool   `json:"soldOut"`
	AllowWaitlist    bool   `json:"allowWaitlist"`
	RequiresApproval bool   `json:"requiresApproval"`
	OpensAt          *Time  `json:"opensAt"`
	ClosesAt         *Time  `json:"closesAt"`
	Perks            []Perk `json:"perks"`
	// Description is the translated description (?lang=), else null.
	Description *string `json:"description"`
	// Questions is the published registration form (forms.go).
	Questions []Question `json:"questions"`

	// Availability says whether a buyer can get it now: a state, never
	// a count.
	Availability string `json:"availability" v:"enum=available|waitlist|sold_out|upcoming|closed" doc:"available; waitlist (no room, an order joins the waitlist); sold_out; upcoming (opensAt is ahead); closed. Never a count."`
}

// CatalogItem is an add-on as a sales page sees it.
type CatalogItem struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	PriceAmount Money  `json:"priceAmount"`
	SoldOut     bool   `json:"soldOut"`
	// Description is the translated description (?lang=), else null.
	Description *string `json:"description"`

	// Availability says whether a buyer can get it now: a state, never
	// a count.
	Availability string `json:"availability" v:"enum=available|sold_out" doc:"available or sold_out; never a count."`
}

// CatalogBundle is a bundle as a sales page sees it, with its contents.
type CatalogBundle struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	PriceAmount Money        `json:"priceAmount"`
	SoldOut     bool         `json:"soldOut"`
	Items       []BundleItem `json:"items"`
	// Description is the translated description (?lang=), else null.
	Description *string `json:"description"`

	// Availability says whether a buyer can get it now: a state, never
	// a count.
	Availability string `json:"availability" v:"enum=available|sold_out" doc:"available or sold_out; never a count."`
}

// Catalog answers GetCatalog.
type Catalog struct {
	Event               Event               `json:"event"`
	TicketTypes         []CatalogTicketType `json:"ticketTypes"`
	UpcomingTicketTypes []CatalogTicketType `json:"upcomingTicketTypes"`
	Addons              []CatalogItem       `json:"addons"`
	Bundles             []CatalogBundle     `json:"bundles"`
	// Agenda is every session in time order with its venue and gate;
	// Speakers and Sponsors in creation order (program_views.go).
	Agenda   []CatalogSession `json:"agenda"`
	Speakers []CatalogSpeaker `json:"speakers"`
	Sponsors []CatalogSponsor `json:"sponsors"`
	// WaitingRoom is the event's waiting room as buyers see it (no
	// counts); absent without an enabled one (waitingroom.go).
	WaitingRoom *StorefrontWaitingRoom `json:"waitingRoom,omitempty" doc:"The event's waiting room as buyers see it (never a count); absent when the event has none: order directly."`
}

func (m *Machine) codeView(c *CodeRec, now time.Time) RedemptionCode {
	return RedemptionCode{
		ID: c.ID, EventID: m.s.ID, RegistrationTypeID: c.TypeID, Code: c.Code, Label: strp(c.Label),
		MaxUses: intp(c.MaxUses), Uses: c.Uses + c.Held, Status: c.status(now), ExpiresAt: tp(c.ExpiresAt),
		CreatedAt: At(c.CreatedAt),
	}
}

func (m *Machine) addonView(a *AddonRec) Addon {
	return Addon{
		ID: a.ID, EventID: m.s.ID, Name: a.Name, PriceAmount: a.Price, Capacity: intp(a.Capacity), Status: a.Status,
		Sold: a.Sold, Held: a.Held, CreatedAt: At(a.CreatedAt), UpdatedAt: At(a.UpdatedAt),
	}
}

func (m *Machine) bundleView(b *BundleRec) Bundle {
	items := append([]BundleItem{}, b.Items...)
	return Bundle{
		ID: b.ID, EventID: m.s.ID, Name: b.Name, PriceAmount: b.Price, Capacity: intp(b.Capacity), Status: b.Status,
		Items: items, Sold: b.Sold, Held: b.Held, CreatedAt: At(b.CreatedAt), UpdatedAt: At(b.UpdatedAt),
	}
}

// OrderURL, CheckoutURL and PaymentURL are the hosted pages of an order.
func (m *Machine) orderURL(number string) string { return m.cfg.BaseURL + "/orders/" + number }

func (m *Machine) orderView(o *OrderRec) Order {
	orderURL := m.orderURL(o.Number)
	opt := new(strs)
	v := Order{
		ID: o.ID, EventID: m.s.ID, OrderNumber: o.Number, Status: o.Status, Email: o.Email, Name: opt.p(o.Name),
		Items: make([]OrderItemView, len(o.Lines)), TotalAmount: o.Total, Currency: o.Currency,
		AlreadyRegistered: o.AlreadyRegistered, RegistrationID: opt.p(o.RegistrationID), PaymentID: opt.p(o.PaymentID),
		OrderURL: orderURL, SuccessURL: opt.p(o.SuccessURL), CancelURL: opt.p(o.CancelURL),
		CreatedAt: At(o.CreatedAt), UpdatedAt: At(o.UpdatedAt), Refunds: refundViews(o),
	}
	for i, l := range o.Lines {
		v.Items[i] = OrderItemView{ItemType: l.ItemType, ItemID: l.ItemID, Name: l.Name, Quantity: l.Quantity, UnitPriceAmount: l.UnitPrice, Amount: l.Amount}
	}
	if len(o.Responses) > 0 {
		v.Responses = append(json.RawMessage{}, o.Responses...)
	}
	if o.CodeID != "" {
		if c, ok := m.s.Codes[o.CodeID]; ok {
			v.RedemptionCode = strp(c.Code)
		}
	}
	if p := m.s.Content.Promos[o.PromoID]; p != nil {
		v.PromotionCode, v.DiscountAmount = strp(p.Code), o.Discount
	}
	if o.holding() {
		v.HoldExpiresAt = &Time{o.HoldUntil}
	}
	if o.Status == OrderStatusOpen {
		v.CheckoutURL = opt.p(orderURL + "/checkout")
	}
	if o.PaymentID != "" {
		v.PaymentURL = opt.p(m.cfg.BaseURL + "/pay/" + o.PaymentID)
	}
	if o.ProviderURL != "" {
		v.PaymentURL = opt.p(o.ProviderURL)
	}
	v.Provider, v.ProviderRef = o.Provider, o.ProviderRef
	return v
}

func (m *Machine) checkoutView(c *CheckoutRec, now time.Time) CheckoutSession {
	v := CheckoutSession{
		ID: c.ID, EventID: m.s.ID, URL: m.cfg.BaseURL + "/checkout/" + c.ID, ExpiresAt: At(c.ExpiresAt), Status: "open",
		Items: append([]OrderItem{}, c.Items...), Email: strp(c.Email), Name: strp(c.Name),
		RedemptionCode: strp(c.RedemptionCode), PromotionCode: strp(c.PromotionCode), ReturnURL: strp(c.ReturnURL),
		Locale: strp(c.Locale), CreatedAt: At(c.CreatedAt),
	}
	if !now.Before(c.ExpiresAt) {
		v.Status = "expired"
	}
	if len(c.Responses) > 0 {
		v.Responses = append(json.RawMessage{}, c.Responses...)
	}
	return v
}

// eventSuffix is the event id without its "evt_" prefix; order numbers,
// payment ids and checkout session ids embed it so the HTTP layer can route
// them to their event.
func (m *Machine) eventSuffix() string { return strings.TrimPrefix(m.s.ID, "evt_") }

// newOrderNumber draws an order number no order of the event has. Its 8
// code characters (40 bits) keep a number short enough to read out on the
// phone, which makes a repeat likely in a big drop (the birthday bound: about
// one in two within a million orders; a benchmark run of 1,058,765 orders
// had three), and a number names the hosted order page, so a repeat would
// show one buyer another's order: draw again, as MintCodes does.
func (m *Machine) newOrderNumber() string {
	for {
		n := m.eventSuffix() + "-" + m.ids.Code(8)
		if _, taken := m.s.idx.orderByNumber[n]; !taken {
			return n
		}
	}
}

// EventIDFromOrderNumber returns the event of an order number
// ("<event suffix>-<8 code chars>").
func EventIDFromOrderNumber(s string) (string, bool) {
	i := strings.LastIndexByte(s, '-')
	if i <= 0 || i == len(s)-1 {
		return "", false
	}
	return "evt_" + s[:i], true
}

// EventIDFromCheckoutSession returns the event of a checkout session id
// ("cs_<event suffix>.<code>").
func EventIDFromCheckoutSession(id string) (string, bool) { return embedded(id, "cs_") }

// EventIDFromPayment returns the event of a payment id
// ("pay_<event suffix>.<code>").
func EventIDFromPayment(id string) (string, bool) { return embedded(id, "pay_") }

func embedded(id, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return "", false
	}
	ev, tail, ok := strings.Cut(rest, ".")
	if !ok || ev == "" || tail == "" {
		return "", false
	}
	return "evt_" + ev, true
}
