package event

import "time"

// Storefront wraps a command that arrives through the publishable-key
// Storefront API. The storefront sees only published events: for any other
// event every storefront command answers the same NotFound as a missing or
// foreign event, so a draft cannot be told apart from nothing. Wrapping
// (rather than a second check by the caller) keeps it to one round trip to
// the event's actor on the order-placement hot path.
type Storefront struct {
	Cmd Command
}

// storefronter is a command wrapped for the storefront: Storefront, or
// the typed form OnStorefront makes.
type storefronter interface {
	Command
	storefront() Storefront
}

func (c Storefront) storefront() Storefront { return c }

// decide is never called: Decide unwraps a storefront command first.
func (c Storefront) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.decideStorefront(now, c)
}

// OnStorefront wraps c for the storefront (see Storefront) and keeps its
// result type.
func OnStorefront[R any](c Op[R]) Op[R] { return storefrontOp[R]{Storefront{Cmd: c}} }

type storefrontOp[R any] struct{ Storefront }

func (storefrontOp[R]) result(*R) {}

func (m *Machine) decideStorefront(now time.Time, c Storefront) (any, []Change, error) {
	if m.s.Event == nil || m.s.Event.Status != EventPublished || c.Cmd == nil {
		return nil, nil, Errorf(NotFound, "event not found")
	}
	if _, nested := c.Cmd.(storefronter); nested {
		return nil, nil, Errorf(InvalidArgument, "nested storefront command")
	}
	return m.Decide(now, c.Cmd)
}

// GetPayment reads the order a payment id belongs to: what the sandbox
// provider's hosted payment page shows.
type GetPayment struct {
	ID string `json:"-"`
}

func (m *Machine) getPayment(c GetPayment) (any, []Change, error) {
	id, ok := m.s.idx.orderByPayment[c.ID]
	if !ok || c.ID == "" {
		return nil, nil, Errorf(NotFound, "payment not found")
	}
	return m.orderView(m.s.Orders[id]), nil, nil
}

// The storefront never shows a count of places (capacity, confirmed,
// waitlisted, held, remaining): a competitor or a scalper could read sales
// off them. What a sales page needs is a state, one of these.
const (
	// SaleAvailable: on sale with room.
	SaleAvailable = "available"
	// SaleWaitlist: no room, but an order joins the waitlist.
	SaleWaitlist = "waitlist"
	// SaleSoldOut: no room and no waitlist.
	SaleSoldOut = "sold_out"
	// SaleUpcoming: announced, its sale window not open yet.
	SaleUpcoming = "upcoming"
	// SaleClosed: not on sale (closed, not opened, or past its window).
	SaleClosed = "closed"
)

// StorefrontTicketType is a ticket type as the storefront shows it: no
// capacity, no counts, no internal status or visibility flag.
type StorefrontTicketType struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	PriceAmount      Money  `json:"priceAmount"`
	Availability     string `json:"availability" v:"enum=available|waitlist|sold_out|upcoming|closed" doc:"Whether a buyer can get this ticket now: available; waitlist (no room, an order joins the waitlist); sold_out; upcoming (opensAt is ahead); closed. Never a count."`
	SoldOut          bool   `json:"soldOut" doc:"No room left (the waitlist may still take orders)."`
	AllowWaitlist    bool   `json:"allowWaitlist"`
	RequiresApproval bool   `json:"requiresApproval"`
	OpensAt          *Time  `json:"opensAt"`
	ClosesAt         *Time  `json:"closesAt"`
}

// StorefrontCodeLookup answers LookupStorefrontCode: the ticket a buyer's
// code unlocks, as the storefront shows it.
type StorefrontCodeLookup struct {
	Code                  string               `json:"code"`
	RegistrationType      StorefrontTicketType `json:"registrationType"`
	Perks                 []Perk               `json:"perks"`
	PriceAmount           Money                `json:"priceAmount"`
	DiscountedPriceAmount Money                `json:"discountedPriceAmount"`
	ExpiresAt             *Time                `json:"expiresAt"`
}

// LookupStorefrontCode is LookupCode for the storefront: the same checks
// (every invalid code is the same NotFound), the storefront's view.
type LookupStorefrontCode struct {
	LookupCode
}

func (LookupStorefrontCode) result(*StorefrontCodeLookup) {}

func (c LookupStorefrontCode) decide(m *Machine, now time.Time) (any, []Change, error) {
	code, ok := m.usableCode(now, c.Code)
	if !ok {
		return nil, nil, Errorf(NotFound, "redemption code not found")
	}
	t := m.s.Types[code.TypeID]
	discounted, err := m.promoLookupPrice(now, c.PromotionCode, t)
	if err != nil {
		return nil, nil, err
	}
	return StorefrontCodeLookup{
		Code: code.Code, RegistrationType: m.storefrontType(t, now), Perks: m.admissionPerks(code), PriceAmount: t.Price,
		DiscountedPriceAmount: discounted, ExpiresAt: tp(code.ExpiresAt),
	}, nil, nil
}

func (m *Machine) storefrontType(t *TicketTypeRec, now time.Time) StorefrontTicketType {
	return StorefrontTicketType{
		ID: t.ID, Name: t.Name, PriceAmount: t.Price, Availability: typeSaleState(t, now), SoldOut: t.room() == 0,
		AllowWaitlist: t.AllowWaitlist, RequiresApproval: t.RequiresApproval, OpensAt: tp(t.OpensAt), ClosesAt: tp(t.ClosesAt),
	}
}

// typeSaleState is a ticket type's storefront state at now.
func typeSaleState(t *TicketTypeRec, now time.Time) string {
	switch {
	case t.Status != SellOpen || (t.ClosesAt != nil && !now.Before(*t.ClosesAt)):
		return SaleClosed
	case t.OpensAt != nil && now.Before(*t.OpensAt):
		return SaleUpcoming
	case t.room() > 0:
		return SaleAvailable
	case t.AllowWaitlist:
		return SaleWaitlist
	}
	return SaleSoldOut
}

// itemSaleState is the state of an add-on or bundle on sale.
func itemSaleState(soldOut bool) string {
	if soldOut {
		return SaleSoldOut
	}
	return SaleAvailable
}

// catalogStates fills the availability state of every entry of a sales
// page from the records it was built from.
func (m *Machine) catalogStates(cat *Catalog, now time.Time) {
	for _, tts := range [][]CatalogTicketType{cat.TicketTypes, cat.UpcomingTicketTypes} {
		for i := range tts {
			if t, ok := m.s.Types[tts[i].ID]; ok {
				tts[i].Availability = typeSaleState(t, now)
			}
		}
	}
	for i := range cat.Addons {
		cat.Addons[i].Availability = itemSaleState(cat.Addons[i].SoldOut)
	}
	for i := range cat.Bundles {
		cat.Bundles[i].Availability = itemSaleState(cat.Bundles[i].SoldOut)
	}
}

// ResendTicket sends the ticket email of Email's registration again: the
// hosted pages' "resend my ticket" for a buyer told they are already
// registered. The mail goes to the registered address only, so the answer
// reveals nothing a page should not show; Sent says whether a mail was
// queued (a confirmed registration of that email exists). The pages bound
// how often a visitor may ask. The console names the registration by ID
// instead: then a missing one is NotFound and one that is not confirmed
// is refused, since an organizer asked for that attendee's mail.
type ResendTicket struct {
	Email string `json:"email"`
	ID    string `json:"id,omitempty"`
}

// TicketResend answers ResendTicket.
type TicketResend struct {
	Sent bool `json:"sent"`
}

func (ResendTicket) result(*TicketResend) {}

func (c ResendTicket) decide(m *Machine, now time.Time) (any, []Change, error) {
	if c.ID != "" {
		r, err := m.registration(c.ID)
		if err != nil {
			return nil, nil, err
		}
		if r.Status != RegConfirmed {
			return nil, nil, Reasonf(FailedPrecondition, ReasonRegistrationNotConfirmed, "registration %s is %s: only a confirmed registration has a ticket", r.ID, r.Status)
		}
		return TicketResend{Sent: true}, []Change{TicketIssued{At: now, RegistrationIDs: []string{r.ID}}}, nil
	}
	id, ok := m.s.idx.emailReg(normEmail(c.Email))
	if !ok || normEmail(c.Email) == "" {
		return TicketResend{}, nil, nil
	}
	if r := m.s.regs()[id]; r == nil || r.Status != RegConfirmed {
		return TicketResend{}, nil, nil
	}
	return TicketResend{Sent: true}, []Change{TicketIssued{At: now, RegistrationIDs: []string{id}}}, nil
}

// JoinWaitlist puts a buyer whose checkout found the admission sold out on
// its waitlist, from the checkout session CheckoutSessionID. Only a free
// admission with a waitlist takes it: a waitlisted registration is
// confirmed without an order when a place frees up, so a paid admission's
// waitlist would hand out unpaid tickets. The admission must be sold out
// (with room the buyer checks out as usual).
type JoinWaitlist struct {
	CheckoutSessionID string `json:"-"`
	Email             string `json:"email"`
	Name              string `json:"name,omitempty"`
}

func (JoinWaitlist) result(*RegistrationResult) {}

func (c JoinWaitlist) decide(m *Machine, now time.Time) (any, []Change, error) {
	s, ok := m.s.Checkouts[c.CheckoutSessionID]
	if !ok && !m.purgedSession(c.CheckoutSessionID) {
		return nil, nil, Errorf(NotFound, "checkout session not found")
	}
	var t *TicketTypeRec
	if ok {
		t = m.waitlistOf(s, now) // a purged session is expired: none
	}
	if t == nil {
		return nil, nil, Reasonf(FailedPrecondition, ReasonWaitlistNotOffered, "this checkout offers no waitlist")
	}
	return m.createRegistration(now, CreateRegistration{Email: c.Email, Name: c.Name, RegistrationTypeID: t.ID})
}

// waitlistOf is the admission of a live checkout session whose waitlist a
// buyer may join now (see JoinWaitlist), nil when there is none.
func (m *Machine) waitlistOf(s *CheckoutRec, now time.Time) *TicketTypeRec {
	if !now.Before(s.ExpiresAt) {
		return nil
	}
	for _, it := range s.Items {
		if it.ItemType != ItemRegistrationType {
			continue
		}
		t, ok := m.s.Types[it.ItemID]
		if ok && t.AllowWaitlist && t.Price == 0 && t.Status == SellOpen && t.room() == 0 && t.IsPublic {
			return t
		}
	}
	return nil
}
