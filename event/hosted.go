package event

import (
	"slices"
	"time"
)

// The hosted pages' reads: one round trip to the event's actor each, with
// everything a page shows. The HTTP layer renders them; it never sees the
// state.

// GetHostedCheckout reads a checkout session for its hosted page: the
// session, the event, the session's lines priced for display (hidden
// ticket types included, since the session names them) and the add-ons on
// sale that the buyer may add.
type GetHostedCheckout struct {
	ID string `json:"-"`
}

// HostedCheckout answers GetHostedCheckout. Lines carry list prices; the
// order placed from the session prices them for real (codes included).
type HostedCheckout struct {
	Session CheckoutSession `json:"session"`
	Event   Event           `json:"event"`
	Lines   []OrderItemView `json:"lines"`
	Total   Money           `json:"total"`
	Addons  []CatalogItem   `json:"addons"`
	// Questions is the published registration form of the session's
	// admission (forms.go); the page asks them.
	Questions []Question `json:"questions"`
	// OrderURL is the hosted page of the order already placed from the
	// session while it is live (see liveSessionOrder): the page sends the
	// buyer there instead of offering the form again.
	OrderURL string `json:"orderUrl,omitempty"`
	// Waitlist: the admission is sold out and a buyer may join its
	// waitlist from the page (JoinWaitlist, storefront.go).
	Waitlist bool `json:"waitlist,omitempty"`
}

// GetHostedOrder reads an order for its hosted pages: the order, the
// event, the returnUrl and locale of the checkout session it was placed
// from (empty when placed through the API) and the pass link of its
// registration.
type GetHostedOrder struct {
	Ref string `json:"-"`
}

// HostedOrder answers GetHostedOrder.
type HostedOrder struct {
	Order     Order  `json:"order"`
	Event     Event  `json:"event"`
	ReturnURL string `json:"returnUrl"`
	Locale    string `json:"locale"`
	PassURL   string `json:"passUrl"`
}

// maxHostedAddons bounds the add-ons a checkout page offers.
const maxHostedAddons = 50

func (m *Machine) hostedCheckout(now time.Time, c GetHostedCheckout) (any, []Change, error) {
	s, ok := m.s.Checkouts[c.ID]
	if !ok && m.purgedSession(c.ID) {
		return m.purgedHosted(c.ID), nil, nil
	}
	if !ok {
		return nil, nil, Errorf(NotFound, "checkout session not found")
	}
	h := HostedCheckout{Session: m.checkoutView(s, now), Event: m.eventView(), Lines: []OrderItemView{}, Addons: []CatalogItem{}, Questions: []Question{}}
	if f := m.s.Content.Forms[m.admissionOf(s.Items)]; f != nil && f.PublishedAt != nil {
		h.Questions = slices.Clone(f.Published)
	}
	inSession := map[string]bool{}
	var promo *PromoRec
	if s.PromotionCode != "" {
		promo, _ = m.usablePromo(now, s.PromotionCode)
	}
	for _, it := range s.Items {
		var name string
		var price Money
		switch it.ItemType {
		case ItemRegistrationType:
			if t, ok := m.s.Types[it.ItemID]; ok {
				name, price = t.Name, t.Price
			}
		case ItemAddon:
			if a, ok := m.s.Addons[it.ItemID]; ok {
				name, price = a.Name, a.Price
				inSession[a.ID] = true
			}
		case ItemBundle:
			if b, ok := m.s.Bundles[it.ItemID]; ok {
				name, price = b.Name, b.Price
			}
		}
		amount := price * Money(it.Quantity)
		if promo != nil {
			// The page shows what the order will cost (promocodes.go's rule).
			amount -= lineDiscount(promo, OrderLine{ItemType: it.ItemType, ItemID: it.ItemID, Quantity: it.Quantity, UnitPrice: price, Amount: amount})
		}
		h.Lines = append(h.Lines, OrderItemView{ItemType: it.ItemType, ItemID: it.ItemID, Name: name, Quantity: it.Quantity, UnitPriceAmount: price, Amount: amount})
		h.Total += amount
	}
	if o, ok := m.liveSessionOrder(s.ID); ok {
		h.OrderURL = m.orderURL(o.Number)
	}
	h.Waitlist = m.waitlistOf(s, now) != nil
	for _, id := range m.s.AddonOrder {
		if a := m.s.Addons[id]; a.Status == SellOpen && !inSession[id] && len(h.Addons) < maxHostedAddons {
			h.Addons = append(h.Addons, CatalogItem{ID: a.ID, Name: a.Name, PriceAmount: a.Price, SoldOut: a.room() == 0})
		}
	}
	return h, nil, nil
}

func (m *Machine) hostedOrder(c GetHostedOrder) (any, []Change, error) {
	o, err := m.order(c.Ref)
	if err != nil {
		return nil, nil, err
	}
	h := HostedOrder{Order: m.orderView(o), Event: m.eventView()}
	if s, ok := m.s.Checkouts[o.CheckoutSessionID]; ok {
		h.ReturnURL, h.Locale = s.ReturnURL, s.Locale
	}
	// The pass link only for the buyer's own registration: the page is
	// behind the order's email, which must be the registration's.
	if r, ok := m.s.regs()[o.RegistrationID]; ok && normEmail(r.Email) == normEmail(o.Email) {
		h.PassURL = m.passURL(r.PassToken)
	}
	return h, nil, nil
}

// liveSessionOrder is the order last placed from checkout session id
// while it is open, awaiting payment, paid or refunded: a repeated submit
// answers it instead of placing a second order with its own hold. A
// cancelled or expired order lets the session place again.
func (m *Machine) liveSessionOrder(id string) (*OrderRec, bool) {
	s, ok := m.s.Checkouts[id]
	if !ok || s.OrderID == "" {
		return nil, false
	}
	o, ok := m.s.Orders[s.OrderID]
	if !ok || o.Status == OrderStatusCancelled || o.Status == OrderStatusExpired {
		return nil, false
	}
	return o, true
}

// checkHostedSession refuses an order from a checkout session that is
// unknown or expired: the page that placed it may have been open for long.
func (m *Machine) checkHostedSession(now time.Time, id string) error {
	if id == "" {
		return nil
	}
	s, ok := m.s.Checkouts[id]
	if !ok && !m.purgedSession(id) {
		return Errorf(NotFound, "checkout session not found")
	}
	if !ok || !now.Before(s.ExpiresAt) {
		return Reasonf(FailedPrecondition, ReasonCheckoutSessionExpired, "checkout session has expired")
	}
	return nil
}
