package event

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Promotion codes: discounts a buyer types in at checkout (the spec's
// promotionCode). Not to be confused with a waitlisted registration given
// a place that came free (waitlist.go), which the code calls a waitlist place.
//
// Decisions:
//   - Promotion codes discount order lines: percentOff rounds half up per
//     line (amount*percent/100), amountOff is taken per unit and never below
//     zero. appliesTo with all lists empty means every item; otherwise only
//     the listed items. Code and discount are fixed at creation; maxUses,
//     expiresAt, appliesTo and active can change. DELETE disables (orders
//     keep referring to the code). Uses count like redemption codes: live
//     orders reserve one, expiry or cancel returns it, payment spends it.
//   - The redemption-code lookup takes an optional promotionCode: when it
//     is usable and applies to the code's ticket type, discountedPriceAmount
//     is the discounted price (otherwise the plain price); an unusable one
//     is 400 on promotionCode.

// Bounds of promotion codes.
const (
	maxPromos       = 1000
	maxPromoCodeLen = 64
)

// PromotionScope limits a promotion code to items; all lists empty means
// every item of the event.
type PromotionScope struct {
	TicketTypeIDs []string `json:"ticketTypeIds" v:"maxItems=100"`
	AddonIDs      []string `json:"addonIds" v:"maxItems=100"`
	BundleIDs     []string `json:"bundleIds" v:"maxItems=100"`
}

func (p PromotionScope) all() bool {
	return len(p.TicketTypeIDs) == 0 && len(p.AddonIDs) == 0 && len(p.BundleIDs) == 0
}

func (p PromotionScope) covers(itemType, id string) bool {
	if p.all() {
		return true
	}
	switch itemType {
	case ItemRegistrationType:
		return slices.Contains(p.TicketTypeIDs, id)
	case ItemAddon:
		return slices.Contains(p.AddonIDs, id)
	case ItemBundle:
		return slices.Contains(p.BundleIDs, id)
	}
	return false
}

// PromoRec is a promotion code. Held counts live orders, Uses paid ones.
type PromoRec struct {
	ID         string         `json:"id"`
	Seq        int            `json:"seq"`
	Code       string         `json:"code"`
	PercentOff int            `json:"percentOff,omitempty"`
	AmountOff  Money          `json:"amountOff,omitempty"`
	MaxUses    *int           `json:"maxUses,omitempty"`
	ExpiresAt  *time.Time     `json:"expiresAt,omitempty"`
	Scope      PromotionScope `json:"scope"`
	Disabled   bool           `json:"disabled,omitempty"`
	Uses       int            `json:"uses,omitempty"`
	Held       int            `json:"held,omitempty"`
	CreatedAt  time.Time      `json:"createdAt"`
	UpdatedAt  time.Time      `json:"updatedAt"`
}

// Promotion code statuses.
const (
	PromoActive    = "active"
	PromoDisabled  = "disabled"
	PromoExpired   = "expired"
	PromoExhausted = "exhausted"
)

func (p *PromoRec) status(now time.Time) string {
	switch {
	case p.Disabled:
		return PromoDisabled
	case p.ExpiresAt != nil && !now.Before(*p.ExpiresAt):
		return PromoExpired
	case p.MaxUses != nil && p.Uses+p.Held >= *p.MaxUses:
		return PromoExhausted
	}
	return PromoActive
}

// CreatePromotionCode creates a promotion code: exactly one of percentOff
// and amountOff.
type CreatePromotionCode struct {
	Code       string          `json:"code" v:"required,minLen=1,maxLen=64,pattern=nospace" doc:"1 to 64 characters without spaces; kept in upper case."`
	PercentOff *int            `json:"percentOff" v:"nullable,min=1,max=100"`
	AmountOff  *Money          `json:"amountOff" v:"nullable" doc:"Minor units off each unit of a covered item."`
	MaxUses    *int            `json:"maxUses" v:"nullable,min=1,max=10000000"`
	ExpiresAt  *Time           `json:"expiresAt" v:"nullable"`
	AppliesTo  *PromotionScope `json:"appliesTo" v:"nullable" doc:"Empty (or absent) means every item."`
}

// UpdatePromotionCode patches a promotion code; null clears maxUses or
// expiresAt, active false disables it.
type UpdatePromotionCode struct {
	ID        string              `json:"-"`
	MaxUses   Opt[int]            `json:"maxUses,omitzero" v:"nullable,min=1,max=10000000"`
	ExpiresAt Opt[Time]           `json:"expiresAt,omitzero" v:"nullable"`
	AppliesTo Opt[PromotionScope] `json:"appliesTo,omitzero" v:"nullable"`
	Active    Opt[bool]           `json:"active,omitzero"`
}

// GetPromotionCode reads a promotion code by id.
type GetPromotionCode struct {
	ID string `json:"-"`
}

// ListPromotionCodes lists promotion codes in creation order.
type ListPromotionCodes struct {
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// DeletePromotionCode disables a promotion code; it stays listed.
type DeletePromotionCode struct {
	ID string `json:"-"`
}

// PromoSaved creates a promotion code or replaces its settings (uses and
// holds stay).
type PromoSaved struct {
	At         time.Time      `json:"at"`
	ID         string         `json:"id"`
	Code       string         `json:"code"`
	PercentOff int            `json:"pct,omitempty"`
	AmountOff  Money          `json:"off,omitempty"`
	MaxUses    *int           `json:"max,omitempty"`
	ExpiresAt  *time.Time     `json:"exp,omitempty"`
	Scope      PromotionScope `json:"scope"`
	Disabled   bool           `json:"disabled,omitempty"`
}

func (CreatePromotionCode) result(*PromotionCode) {}

func (c CreatePromotionCode) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.createPromo(now, c)
}

func (UpdatePromotionCode) result(*PromotionCode) {}

func (c UpdatePromotionCode) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.updatePromo(now, c)
}

func (GetPromotionCode) result(*PromotionCode) {}

func (c GetPromotionCode) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Content
	p, ok := cs.Promos[c.ID]
	if !ok {
		return nil, nil, Errorf(NotFound, "promotion code not found")
	}
	return m.promoView(p, now), nil, nil
}

func (ListPromotionCodes) result(*List[PromotionCode]) {}

func (c ListPromotionCodes) decide(m *Machine, now time.Time) (any, []Change, error) {
	cs := &m.s.Content
	l, err := pageOf(cs.PromoOrder, cs.Promos, func(p *PromoRec) int { return p.Seq }, c.Cursor, c.Limit, false, nil,
		func(p *PromoRec) PromotionCode { return m.promoView(p, now) })
	return l, nil, err
}

func (DeletePromotionCode) result(*PromotionCode) {}

func (c DeletePromotionCode) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.updatePromo(now, UpdatePromotionCode{ID: c.ID, Active: Some(false)})
}

func (m *Machine) createPromo(now time.Time, c CreatePromotionCode) (any, []Change, error) {
	cs := &m.s.Content
	if len(cs.PromoOrder) >= maxPromos {
		return nil, nil, Reasonf(FailedPrecondition, ReasonEventLimitReached, "an event has at most %d promotion codes", maxPromos)
	}
	// The same rule as the schema's (minLength, maxLength in characters,
	// pattern nospace), so that what a validator passes the core takes.
	code := normCode(c.Code)
	if code == "" || utf8.RuneCountInString(code) > maxPromoCodeLen || strings.IndexFunc(code, func(r rune) bool { return unicode.IsSpace(r) || r == '\ufeff' }) >= 0 {
		return nil, nil, FieldError("code", "must be 1 to 64 characters without spaces")
	}
	if _, taken := cs.byCode()[code]; taken {
		return nil, nil, Errorf(AlreadyExists, "promotion code %s already exists", code)
	}
	ch := PromoSaved{At: now, Code: code, ExpiresAt: timeOf(c.ExpiresAt), MaxUses: c.MaxUses}
	switch {
	case (c.PercentOff == nil) == (c.AmountOff == nil):
		return nil, nil, FieldError("percentOff", "exactly one of percentOff and amountOff is required")
	case c.PercentOff != nil:
		if *c.PercentOff < 1 || *c.PercentOff > 100 {
			return nil, nil, FieldError("percentOff", "must be 1 to 100")
		}
		ch.PercentOff = *c.PercentOff
	default:
		if *c.AmountOff < 1 || *c.AmountOff > moneyMax {
			return nil, nil, FieldError("amountOff", "must be positive")
		}
		ch.AmountOff = *c.AmountOff
	}
	if c.MaxUses != nil && *c.MaxUses < 1 {
		return nil, nil, FieldError("maxUses", "must be at least 1")
	}
	if c.AppliesTo != nil {
		var err error
		if ch.Scope, err = m.checkScope(*c.AppliesTo); err != nil {
			return nil, nil, err
		}
	}
	ch.ID = m.newID("prm_")
	rec := PromoRec{CreatedAt: now}
	rec.saved(ch)
	return m.promoView(&rec, now), []Change{ch}, nil
}

func (m *Machine) updatePromo(now time.Time, c UpdatePromotionCode) (any, []Change, error) {
	p, ok := m.s.Content.Promos[c.ID]
	if !ok {
		return nil, nil, Errorf(NotFound, "promotion code not found")
	}
	ch := PromoSaved{At: now, ID: p.ID, Code: p.Code, PercentOff: p.PercentOff, AmountOff: p.AmountOff,
		MaxUses: p.MaxUses, ExpiresAt: p.ExpiresAt, Scope: p.Scope, Disabled: p.Disabled}
	if c.MaxUses.Set {
		ch.MaxUses = nil
		if !c.MaxUses.Null {
			if c.MaxUses.V < 1 || c.MaxUses.V > 10000000 {
				return nil, nil, FieldError("maxUses", "must be 1 to 10000000")
			}
			ch.MaxUses = &c.MaxUses.V
		}
	}
	if c.ExpiresAt.Set {
		ch.ExpiresAt = nil
		if !c.ExpiresAt.Null {
			t := c.ExpiresAt.V.Time
			ch.ExpiresAt = &t
		}
	}
	if c.AppliesTo.Set {
		ch.Scope = PromotionScope{}
		if !c.AppliesTo.Null {
			var err error
			if ch.Scope, err = m.checkScope(c.AppliesTo.V); err != nil {
				return nil, nil, err
			}
		}
	}
	if c.Active.Set {
		if c.Active.Null {
			return nil, nil, FieldError("active", "must not be null")
		}
		ch.Disabled = !c.Active.V
	}
	rec := *p
	rec.saved(ch)
	return m.promoView(&rec, now), []Change{ch}, nil
}

func (m *Machine) checkScope(s PromotionScope) (PromotionScope, error) {
	var out PromotionScope
	var err error
	if out.TicketTypeIDs, err = checkIDs("appliesTo.ticketTypeIds", s.TicketTypeIDs, 100, "ticket type", func(id string) bool { return m.s.Types[id] != nil }); err != nil {
		return out, err
	}
	if out.AddonIDs, err = checkIDs("appliesTo.addonIds", s.AddonIDs, 100, "add-on", func(id string) bool { return m.s.Addons[id] != nil }); err != nil {
		return out, err
	}
	if out.BundleIDs, err = checkIDs("appliesTo.bundleIds", s.BundleIDs, 100, "bundle", func(id string) bool { return m.s.Bundles[id] != nil }); err != nil {
		return out, err
	}
	return out, nil
}

func (p *PromoRec) saved(c PromoSaved) {
	p.ID, p.Code, p.PercentOff, p.AmountOff, p.MaxUses, p.ExpiresAt, p.Scope, p.Disabled, p.UpdatedAt =
		c.ID, c.Code, c.PercentOff, c.AmountOff, c.MaxUses, c.ExpiresAt, c.Scope, c.Disabled, c.At
}

func (cs *OrganizerContent) byCode() map[string]string {
	if cs.promoByCode == nil {
		cs.promoByCode = make(map[string]string, len(cs.Promos))
		for id, p := range cs.Promos {
			cs.promoByCode[p.Code] = id
		}
	}
	return cs.promoByCode
}

// usablePromo finds an active promotion code by its text.
func (m *Machine) usablePromo(now time.Time, text string) (*PromoRec, error) {
	id, ok := m.s.Content.byCode()[normCode(text)]
	if !ok {
		return nil, FieldError("promotionCode", "unknown promotion code")
	}
	p := m.s.Content.Promos[id]
	if st := p.status(now); st != PromoActive {
		return nil, FieldError("promotionCode", "promotion code is "+st)
	}
	return p, nil
}

// lineDiscount is the discount of p on one line: percent rounds half up on
// the line amount, an amount is taken per unit and never below zero.
func lineDiscount(p *PromoRec, l OrderLine) Money {
	if !p.Scope.covers(l.ItemType, l.ItemID) {
		return 0
	}
	if p.PercentOff > 0 {
		return (l.Amount*Money(p.PercentOff) + 50) / 100
	}
	return min(p.AmountOff, l.UnitPrice) * Money(l.Quantity)
}

// applyPromo discounts the priced lines of an order in place and returns
// the total discount; 400 when the code covers no line.
func applyPromo(p *PromoRec, po *pricedOrder) (Money, error) {
	var total Money
	covered := false
	for i := range po.lines {
		l := &po.lines[i]
		if p.Scope.covers(l.ItemType, l.ItemID) {
			covered = true
		}
		d := lineDiscount(p, *l)
		l.Amount -= d
		total += d
	}
	if !covered {
		return 0, FieldError("promotionCode", "does not apply to the items of this order")
	}
	po.total -= total
	return total, nil
}

// promoLookupPrice is the price of a ticket type under an optional
// promotion code, for the redemption-code lookup.
func (m *Machine) promoLookupPrice(now time.Time, text string, t *TicketTypeRec) (Money, error) {
	if strings.TrimSpace(text) == "" {
		return t.Price, nil
	}
	p, err := m.usablePromo(now, text)
	if err != nil {
		return 0, err
	}
	return t.Price - lineDiscount(p, OrderLine{ItemType: ItemRegistrationType, ItemID: t.ID, Quantity: 1, UnitPrice: t.Price, Amount: t.Price}), nil
}

// promoHeld moves an order's promotion use: a placed holding order
// reserves one (delta +1), a released one returns it (-1), a paid one
// spends it (paid true).
func (s *State) promoHeld(o *OrderRec, delta int, paid bool) {
	if o.PromoID == "" {
		return
	}
	p := s.Content.Promos[o.PromoID]
	if p == nil {
		panic(fmt.Sprintf("event: order %s refers to unknown promotion code %s", o.ID, o.PromoID))
	}
	p.Held += delta
	if paid {
		p.Uses++
	}
}

// ---- change kinds: each one's log name, body codec and apply

// ChangeKind names the change in the log (its binary tag).
func (PromoSaved) ChangeKind() string { return "promotion_code.saved" }

func decodePromoSaved(d *dec) PromoSaved {
	return readJSONChange(d, func(c *PromoSaved, at time.Time) { c.At = at })
}

func (c PromoSaved) appendBody(e enc) enc { return appendJSONBody(e, c.At, c) }

func (c PromoSaved) apply(s *State) {
	cs := &s.Content
	if cs.Promos == nil {
		cs.Promos = map[string]*PromoRec{}
	}
	p := cs.Promos[c.ID]
	if p == nil {
		p = &PromoRec{Seq: len(cs.PromoOrder), CreatedAt: c.At}
		cs.Promos[c.ID] = p
		cs.PromoOrder = append(cs.PromoOrder, c.ID)
	}
	p.saved(c)
	cs.byCode()[p.Code] = p.ID
}
