package event

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bounds of commerce inputs (the binder's v tags say the same to clients;
// these are the rule).
const (
	// MaxOrderItems bounds the lines of an order or checkout session.
	MaxOrderItems = 50
	// MaxItemQuantity bounds one line's quantity.
	MaxItemQuantity  = 100
	maxMintCount     = 1000
	maxResponsesSize = 16 << 10
	defaultOrderHold = 15 * time.Minute
	defaultTTL       = 24 * time.Hour
)

func (Expire) result(*any) {}

func (c Expire) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.expire(c.Now)
}

func (MintCodes) result(*MintResult) {}

func (c MintCodes) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.mintCodes(now, c)
}

func (ListCodes) result(*List[RedemptionCode]) {}

func (c ListCodes) decide(m *Machine, now time.Time) (any, []Change, error) {
	l, err := pageOf(m.s.CodeOrder, m.s.Codes, func(r *CodeRec) int { return r.Seq }, c.Cursor, c.Limit, false, nil,
		func(r *CodeRec) RedemptionCode { return m.codeView(r, now) })
	return l, nil, err
}

func (LookupCode) result(*CodeLookup) {}

func (c LookupCode) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.lookupCode(now, c)
}

func (DisableCode) result(*RedemptionCode) {}

func (c DisableCode) decide(m *Machine, now time.Time) (any, []Change, error) {
	r, ok := m.s.Codes[c.ID]
	if !ok {
		return nil, nil, Errorf(NotFound, "redemption code not found")
	}
	if r.Disabled {
		return m.codeView(r, now), nil, nil
	}
	rec := *r
	rec.Disabled = true
	return m.codeView(&rec, now), []Change{CodeDisabled{At: now, ID: r.ID}}, nil
}

func (CreateAddon) result(*Addon) {}

func (c CreateAddon) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.createAddon(now, c)
}

func (UpdateAddon) result(*Addon) {}

func (c UpdateAddon) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.updateAddon(now, c)
}

func (GetAddon) result(*Addon) {}

func (c GetAddon) decide(m *Machine, now time.Time) (any, []Change, error) {
	a, ok := m.s.Addons[c.ID]
	if !ok {
		return nil, nil, Errorf(NotFound, "add-on not found")
	}
	return m.addonView(a), nil, nil
}

func (ListAddons) result(*List[Addon]) {}

func (c ListAddons) decide(m *Machine, now time.Time) (any, []Change, error) {
	l, err := pageOf(m.s.AddonOrder, m.s.Addons, func(r *AddonRec) int { return r.Seq }, c.Cursor, c.Limit, false, nil, m.addonView)
	return l, nil, err
}

func (CreateBundle) result(*Bundle) {}

func (c CreateBundle) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.createBundle(now, c)
}

func (UpdateBundle) result(*Bundle) {}

func (c UpdateBundle) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.updateBundle(now, c)
}

func (ReplaceBundleItems) result(*Bundle) {}

func (c ReplaceBundleItems) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.updateBundle(now, UpdateBundle{ID: c.ID, Items: Some(c.Items), bareItems: true})
}

func (GetBundle) result(*Bundle) {}

func (c GetBundle) decide(m *Machine, now time.Time) (any, []Change, error) {
	b, ok := m.s.Bundles[c.ID]
	if !ok {
		return nil, nil, Errorf(NotFound, "bundle not found")
	}
	return m.bundleView(b), nil, nil
}

func (ListBundles) result(*List[Bundle]) {}

func (c ListBundles) decide(m *Machine, now time.Time) (any, []Change, error) {
	l, err := pageOf(m.s.BundleOrder, m.s.Bundles, func(r *BundleRec) int { return r.Seq }, c.Cursor, c.Limit, false, nil, m.bundleView)
	return l, nil, err
}

func (PlaceOrder) result(*Order) {}

func (c PlaceOrder) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.placeOrder(now, c)
}

func (ConfirmOrder) result(*Order) {}

func (c ConfirmOrder) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.confirmOrder(now, c)
}

func (CancelOrder) result(*Order) {}

func (c CancelOrder) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.cancelOrder(now, c)
}

func (GetOrder) result(*Order) {}

func (c GetOrder) decide(m *Machine, now time.Time) (any, []Change, error) {
	o, err := m.order(c.Ref)
	if err != nil {
		return nil, nil, err
	}
	return m.orderView(o), nil, nil
}

func (ListOrders) result(*List[Order]) {}

func (c ListOrders) decide(m *Machine, now time.Time) (any, []Change, error) {
	email, name := normEmail(c.Email), strings.ToLower(strings.TrimSpace(c.Name))
	keep := func(o *OrderRec) bool {
		return (c.Status == "" || o.Status == c.Status) && (email == "" || normEmail(o.Email) == email) &&
			(name == "" || strings.Contains(strings.ToLower(o.Name), name))
	}
	l, err := pageOf(m.s.OrderOrder, m.s.Orders, func(r *OrderRec) int { return r.Seq }, c.Cursor, c.Limit, true, keep, m.orderView)
	l.FeedSeq = m.s.FeedSeq
	return l, nil, err
}

func (SettlePayment) result(*Order) {}

func (c SettlePayment) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.settlePayment(now, c)
}

func (CreateCheckoutSession) result(*CheckoutSession) {}

func (c CreateCheckoutSession) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.createCheckoutSession(now, c)
}

func (GetCheckoutSession) result(*CheckoutSession) {}

func (c GetCheckoutSession) decide(m *Machine, now time.Time) (any, []Change, error) {
	s, ok := m.s.Checkouts[c.ID]
	if !ok {
		return nil, nil, Errorf(NotFound, "checkout session not found")
	}
	return m.checkoutView(s, now), nil, nil
}

func (GetCatalog) result(*Catalog) {}

func (c GetCatalog) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.catalog(now, c.Lang)
}

func (GetHostedCheckout) result(*HostedCheckout) {}

func (c GetHostedCheckout) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.hostedCheckout(now, c)
}

func (GetHostedOrder) result(*HostedOrder) {}

func (c GetHostedOrder) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.hostedOrder(c)
}

// ---- redemption codes

func (m *Machine) mintCodes(now time.Time, c MintCodes) (any, []Change, error) {
	if err := m.notArchived(); err != nil {
		return nil, nil, err
	}
	if _, ok := m.s.Types[c.RegistrationTypeID]; !ok {
		return nil, nil, FieldError("registrationTypeId", "unknown ticket type")
	}
	count := c.Count
	switch {
	case c.Code != "":
		count = 1
	case count == 0:
		count = 1
	case count < 0 || count > maxMintCount:
		return nil, nil, FieldError("count", fmt.Sprintf("must be 1 to %d", maxMintCount))
	}
	ch := CodesMinted{At: now, TypeID: c.RegistrationTypeID, Label: strings.TrimSpace(c.Label), ExpiresAt: timeOf(c.ExpiresAt)}
	switch {
	case !c.MaxUses.Set:
		one := 1
		ch.MaxUses = &one
	case c.MaxUses.Null:
	case c.MaxUses.V < 1:
		return nil, nil, FieldError("maxUses", "must be at least 1, or null for unlimited")
	default:
		v := c.MaxUses.V
		ch.MaxUses = &v
	}
	taken := map[string]bool{}
	if c.Code != "" {
		code := strings.TrimSpace(c.Code)
		if code == "" || len(code) > 64 || strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return nil, nil, FieldError("code", "must be 1 to 64 letters, digits, - or _")
		}
		if _, dup := m.s.idx.codeByCode[normCode(code)]; dup {
			return nil, nil, Errorf(AlreadyExists, "redemption code %s already exists", code)
		}
		ch.Codes = append(ch.Codes, MintedCode{ID: m.newID("rc_"), Code: code})
	}
	for len(ch.Codes) < count {
		code := m.ids.Code(12)
		if _, dup := m.s.idx.codeByCode[code]; dup || taken[code] {
			continue // 60 bits of randomness: a retry is practically never needed
		}
		taken[code] = true
		ch.Codes = append(ch.Codes, MintedCode{ID: m.newID("rc_"), Code: code})
	}
	res := MintResult{RedemptionCodes: make([]RedemptionCode, len(ch.Codes))}
	for i, mc := range ch.Codes {
		rec := CodeRec{ID: mc.ID, TypeID: ch.TypeID, Code: mc.Code, Label: ch.Label, MaxUses: ch.MaxUses, ExpiresAt: ch.ExpiresAt, CreatedAt: now}
		res.RedemptionCodes[i] = m.codeView(&rec, now)
	}
	return res, []Change{ch}, nil
}

// usableCode finds an active code by its text. Every invalid form (unknown,
// disabled, expired, exhausted, archived type) is the same miss.
func (m *Machine) usableCode(now time.Time, text string) (*CodeRec, bool) {
	id, ok := m.s.idx.codeByCode[normCode(text)]
	if !ok {
		return nil, false
	}
	c := m.s.Codes[id]
	if c.status(now) != CodeStatusActive || m.s.Types[c.TypeID].Status == SellArchived {
		return nil, false
	}
	return c, true
}

func (m *Machine) lookupCode(now time.Time, c LookupCode) (any, []Change, error) {
	code, ok := m.usableCode(now, c.Code)
	if !ok {
		return nil, nil, Errorf(NotFound, "redemption code not found")
	}
	t := m.s.Types[code.TypeID]
	discounted, err := m.promoLookupPrice(now, c.PromotionCode, t)
	if err != nil {
		return nil, nil, err
	}
	return CodeLookup{
		Code: code.Code, RegistrationType: m.typeView(t), Perks: m.admissionPerks(code), PriceAmount: t.Price,
		DiscountedPriceAmount: discounted, ExpiresAt: tp(code.ExpiresAt),
	}, nil, nil
}

// ---- add-ons and bundles

func checkSellable(name string, price Money, capacity *int) error {
	if name == "" {
		return FieldError("name", "must not be empty")
	}
	if price < 0 || price > moneyMax {
		return FieldError("priceAmount", "out of range")
	}
	return checkCapacity("capacity", capacity)
}

func (m *Machine) createAddon(now time.Time, c CreateAddon) (any, []Change, error) {
	if err := m.notArchived(); err != nil {
		return nil, nil, err
	}
	spec := AddonSpec{Name: strings.TrimSpace(c.Name), Price: c.PriceAmount, Capacity: intp(c.Capacity), Status: SellDraft}
	if err := checkSellable(spec.Name, spec.Price, spec.Capacity); err != nil {
		return nil, nil, err
	}
	ch := AddonCreated{At: now, ID: m.newID("ao_"), AddonSpec: spec}
	return m.addonView(&AddonRec{ID: ch.ID, AddonSpec: spec, CreatedAt: now, UpdatedAt: now}), []Change{ch}, nil
}

func (m *Machine) updateAddon(now time.Time, c UpdateAddon) (any, []Change, error) {
	a, ok := m.s.Addons[c.ID]
	if !ok {
		return nil, nil, Errorf(NotFound, "add-on not found")
	}
	if err := m.notArchived(); err != nil {
		return nil, nil, err
	}
	if err := notNull([]nullField{{"name", c.Name.Null}, {"priceAmount", c.PriceAmount.Null}}); err != nil {
		return nil, nil, err
	}
	spec := a.AddonSpec
	spec.Name = strings.TrimSpace(optVal(c.Name, spec.Name))
	spec.Price = optVal(c.PriceAmount, spec.Price)
	spec.Capacity = optInt(c.Capacity, spec.Capacity)
	var err error
	if spec.Status, err = statusMove(c.Status, a.Status); err != nil {
		return nil, nil, err
	}
	if err := checkSellable(spec.Name, spec.Price, spec.Capacity); err != nil {
		return nil, nil, err
	}
	if err := checkShrink(spec.Capacity, a.Sold+a.Held); err != nil {
		return nil, nil, err
	}
	rec := *a
	rec.AddonSpec, rec.UpdatedAt = spec, now
	return m.addonView(&rec), []Change{AddonUpdated{At: now, ID: a.ID, AddonSpec: spec}}, nil
}

// checkBundleItems checks that every item is a real ticket type or add-on
// of this event and that the bundle admits at most one person. field names
// the items in error details ("items" or "" for a bare array body).
func (m *Machine) checkBundleItems(field string, items []BundleItem) ([]BundleItem, error) {
	if len(items) > 50 {
		return nil, FieldError(field, "at most 50 items")
	}
	out := make([]BundleItem, len(items))
	admissions := 0
	for i, it := range items {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch it.ItemType {
		case ItemRegistrationType:
			if _, ok := m.s.Types[it.ItemID]; !ok {
				return nil, FieldError(f+".itemId", "not a ticket type of this event")
			}
			admissions += it.Quantity
		case ItemAddon:
			if _, ok := m.s.Addons[it.ItemID]; !ok {
				return nil, FieldError(f+".itemId", "not an add-on of this event")
			}
		default:
			return nil, FieldError(f+".itemType", "must be registration_type or addon")
		}
		if it.Quantity < 1 || it.Quantity > MaxItemQuantity {
			return nil, FieldError(f+".quantity", "must be 1 to 100")
		}
		out[i] = it
	}
	if admissions > 1 {
		return nil, FieldError(field, "a bundle admits at most one person")
	}
	return out, nil
}

func (m *Machine) createBundle(now time.Time, c CreateBundle) (any, []Change, error) {
	if err := m.notArchived(); err != nil {
		return nil, nil, err
	}
	spec := BundleSpec{Name: strings.TrimSpace(c.Name), Price: c.PriceAmount, Capacity: intp(c.Capacity), Status: SellDraft}
	if err := checkSellable(spec.Name, spec.Price, spec.Capacity); err != nil {
		return nil, nil, err
	}
	items, err := m.checkBundleItems("items", c.Items)
	if err != nil {
		return nil, nil, err
	}
	spec.Items = items
	ch := BundleCreated{At: now, ID: m.newID("bdl_"), BundleSpec: spec}
	return m.bundleView(&BundleRec{ID: ch.ID, BundleSpec: spec, CreatedAt: now, UpdatedAt: now}), []Change{ch}, nil
}

func (m *Machine) updateBundle(now time.Time, c UpdateBundle) (any, []Change, error) {
	b, ok := m.s.Bundles[c.ID]
	if !ok {
		return nil, nil, Errorf(NotFound, "bundle not found")
	}
	if err := m.notArchived(); err != nil {
		return nil, nil, err
	}
	if err := notNull([]nullField{{"name", c.Name.Null}, {"priceAmount", c.PriceAmount.Null}, {"items", c.Items.Null}}); err != nil {
		return nil, nil, err
	}
	spec := b.BundleSpec
	spec.Name = strings.TrimSpace(optVal(c.Name, spec.Name))
	spec.Price = optVal(c.PriceAmount, spec.Price)
	spec.Capacity = optInt(c.Capacity, spec.Capacity)
	var err error
	if spec.Status, err = statusMove(c.Status, b.Status); err != nil {
		return nil, nil, err
	}
	if err := checkSellable(spec.Name, spec.Price, spec.Capacity); err != nil {
		return nil, nil, err
	}
	if err := checkShrink(spec.Capacity, b.Sold+b.Held); err != nil {
		return nil, nil, err
	}
	if c.Items.Set {
		field := "items"
		if c.bareItems {
			field = ""
		}
		if spec.Items, err = m.checkBundleItems(field, c.Items.V); err != nil {
			return nil, nil, err
		}
	}
	rec := *b
	rec.BundleSpec, rec.UpdatedAt = spec, now
	return m.bundleView(&rec), []Change{BundleUpdated{At: now, ID: b.ID, BundleSpec: spec}}, nil
}

// ---- orders

func (m *Machine) order(ref string) (*OrderRec, error) {
	if o, ok := m.s.Orders[ref]; ok {
		return o, nil
	}
	if id, ok := m.s.idx.orderByNumber[ref]; ok {
		return m.s.Orders[id], nil
	}
	return nil, Errorf(NotFound, "order not found")
}

func (m *Machine) orderHold() time.Duration {
	if m.cfg.OrderHold > 0 {
		return m.cfg.OrderHold
	}
	return defaultOrderHold
}

// holdSet aggregates holds per sellable in first-seen order, so the stored
// holds are deterministic. Orders have at most a few dozen lines: a linear
// scan beats a map and allocates nothing.
type holdSet struct {
	holds []Hold
}

func (h *holdSet) add(kind, id string, q int) { h.holds = addHold(h.holds, kind, id, q) }

// addHold is holdSet.add on a bare slice. Storing through a pointer makes
// escape analysis move the slice to the heap; returning it lets a caller
// keep it in a stack buffer.
func addHold(holds []Hold, kind, id string, q int) []Hold {
	for i := range holds {
		if holds[i].Kind == kind && holds[i].ID == id {
			holds[i].Qty += q
			return holds
		}
	}
	return append(holds, Hold{Kind: kind, ID: id, Qty: q})
}

// onSale checks a ticket type's status and sale window at now.
func onSale(t *TicketTypeRec, now time.Time) error {
	if t.Status != SellOpen {
		return Reasonf(FailedPrecondition, ReasonNotOnSale, "ticket type %s is not on sale", t.ID)
	}
	if t.OpensAt != nil && now.Before(*t.OpensAt) {
		return Reasonf(FailedPrecondition, ReasonSaleNotStarted, "ticket type %s is not on sale yet", t.ID)
	}
	if t.ClosesAt != nil && !now.Before(*t.ClosesAt) {
		return Reasonf(FailedPrecondition, ReasonSaleEnded, "sale of ticket type %s has closed", t.ID)
	}
	return nil
}

func checkResponses(field string, b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) > maxResponsesSize {
		return FieldError(field, "at most 16 KiB")
	}
	if b[0] != '{' {
		return FieldError(field, "must be an object")
	}
	return nil
}

// pricedOrder is the checked form of an order's items. The admission (the
// ticket type of the one admission, if any) is returned beside it: escape
// analysis does not tell fields apart, and the admission goes into the
// change while lines and holds may sit in the caller's stack buffers.
type pricedOrder struct {
	lines []OrderLine
	holds holdSet
	total Money
}

// orderItems checks what an order would buy: the redemption code (400 on
// redemptionCode when it is not usable or does not unlock the admission)
// and the items (priceItems). Order placement and checkout-session
// creation share it, so a session is refused for exactly the reasons its
// order would be, and the hosted page never gets a session it cannot
// place. It does not check capacity: a session holds nothing, and a place
// free now may be gone at placement.
func (m *Machine) orderItems(now time.Time, items []OrderItem, redemptionCode string, storefront bool, lines []OrderLine, holds []Hold) (p pricedOrder, admission string, code *CodeRec, err error) {
	if redemptionCode != "" {
		var ok bool
		if code, ok = m.usableCode(now, redemptionCode); !ok {
			return p, "", nil, FieldError("redemptionCode", "not a valid redemption code")
		}
	}
	if p, admission, err = m.priceItems(now, items, code, storefront, lines, holds); err != nil {
		return p, "", nil, err
	}
	if code != nil && admission != code.TypeID {
		return p, "", nil, FieldError("redemptionCode", "does not unlock the ticket type of this order")
	}
	return p, admission, code, nil
}

// unlocked reports whether a buyer holding code (nil for none) may buy
// ticket type t: a public type, or a hidden one the code is for.
func unlocked(t *TicketTypeRec, code *CodeRec) bool {
	return t.IsPublic || (code != nil && code.TypeID == t.ID)
}

// priceItems checks order items against the catalog at now and computes
// lines, holds and the admission. It does not check capacity. Lines and
// holds are appended to lines and holds, so a caller can lend stack
// buffers (and must copy what it keeps).
//
// On the storefront (storefront true) an item the buyer cannot see, a
// draft one or a hidden ticket type (alone or in a bundle) that code does
// not unlock, answers exactly as an id that does not exist: a 412 for it
// would tell a guessed id of an unannounced or hidden item from noise.
// The Developer API's caller owns the ids, so it gets the precise 412.
func (m *Machine) priceItems(now time.Time, items []OrderItem, code *CodeRec, storefront bool, lines []OrderLine, holds []Hold) (p pricedOrder, admission string, err error) {
	if len(items) == 0 {
		return p, "", FieldError("items", "at least one item is required")
	}
	if len(items) > MaxOrderItems {
		return p, "", FieldError("items", fmt.Sprintf("at most %d items", MaxOrderItems))
	}
	admissions := 0
	for i, it := range items {
		// The field name is built only for an error: this loop runs for
		// every order of a drop, sold out or not.
		f := func() string { return "items[" + strconv.Itoa(i) + "]" }
		if it.Quantity < 1 || it.Quantity > MaxItemQuantity {
			return p, "", FieldError(f()+".quantity", "must be 1 to 100")
		}
		line := OrderLine{ItemType: it.ItemType, ItemID: it.ItemID, Quantity: it.Quantity}
		switch it.ItemType {
		case ItemRegistrationType:
			t, ok := m.s.Types[it.ItemID]
			if !ok || storefront && (t.Status == SellDraft || !unlocked(t, code)) {
				return p, "", FieldError(f()+".itemId", "not a ticket type of this event")
			}
			if it.Quantity != 1 {
				return p, "", FieldError(f()+".quantity", "an order admits one person: quantity must be 1")
			}
			if err := onSale(t, now); err != nil {
				return p, "", err
			}
			if !unlocked(t, code) {
				return p, "", Reasonf(FailedPrecondition, ReasonRedemptionCodeRequired, "ticket type %s needs a redemption code", t.ID)
			}
			line.Name, line.UnitPrice = t.Name, t.Price
			holds = addHold(holds, ItemRegistrationType, t.ID, 1)
			admission = t.ID
			admissions++
		case ItemAddon:
			a, ok := m.s.Addons[it.ItemID]
			if !ok || storefront && a.Status == SellDraft {
				return p, "", FieldError(f()+".itemId", "not an add-on of this event")
			}
			if a.Status != SellOpen {
				return p, "", Reasonf(FailedPrecondition, ReasonNotOnSale, "add-on %s is not on sale", a.ID)
			}
			line.Name, line.UnitPrice = a.Name, a.Price
			holds = addHold(holds, ItemAddon, a.ID, it.Quantity)
		case ItemBundle:
			b, ok := m.s.Bundles[it.ItemID]
			if !ok || storefront && (b.Status == SellDraft || !m.bundleUnlocked(b, code)) {
				return p, "", FieldError(f()+".itemId", "not a bundle of this event")
			}
			if b.Status != SellOpen {
				return p, "", Reasonf(FailedPrecondition, ReasonNotOnSale, "bundle %s is not on sale", b.ID)
			}
			line.Name, line.UnitPrice = b.Name, b.Price
			holds = addHold(holds, ItemBundle, b.ID, it.Quantity)
			for _, bi := range b.Items {
				switch bi.ItemType {
				case ItemRegistrationType:
					t := m.s.Types[bi.ItemID]
					if !unlocked(t, code) {
						return p, "", Reasonf(FailedPrecondition, ReasonRedemptionCodeRequired, "ticket type %s needs a redemption code", t.ID)
					}
					holds = addHold(holds, ItemRegistrationType, bi.ItemID, bi.Quantity*it.Quantity)
					admission = bi.ItemID
					admissions += bi.Quantity * it.Quantity
				case ItemAddon:
					holds = addHold(holds, ItemAddon, bi.ItemID, bi.Quantity*it.Quantity)
				}
			}
		default:
			return p, "", FieldError(f()+".itemType", "must be registration_type, addon or bundle")
		}
		line.Amount = line.UnitPrice * Money(line.Quantity)
		p.total += line.Amount
		lines = append(lines, line)
	}
	if admissions > 1 {
		return p, "", FieldError("items", "an order admits one person: at most one admission")
	}
	p.lines, p.holds.holds = lines, holds
	return p, admission, nil
}

// heapCopy copies a slice priced in a stack buffer, nil when empty (as
// appending to a nil slice would have left it).
func heapCopy[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// checkRoom refuses holds beyond capacity.
func (m *Machine) checkRoom(holds []Hold) error {
	for _, h := range holds {
		var free int
		switch h.Kind {
		case ItemRegistrationType:
			free = m.s.Types[h.ID].room()
		case ItemAddon:
			free = m.s.Addons[h.ID].room()
		case ItemBundle:
			free = m.s.Bundles[h.ID].room()
		}
		if free < h.Qty {
			return errSoldOut()
		}
	}
	return nil
}

func (m *Machine) placeOrder(now time.Time, c PlaceOrder) (any, []Change, error) {
	e := m.s.Event
	if e.Status != EventPublished {
		return nil, nil, Reasonf(FailedPrecondition, notPublishedReason(e.Status), "event is %s, not published", e.Status)
	}
	email, err := checkEmail("email", c.Email, true)
	if err != nil {
		return nil, nil, err
	}
	name, err := checkName("name", c.Name)
	if err != nil {
		return nil, nil, err
	}
	if err := checkResponses("responses", c.Responses); err != nil {
		return nil, nil, err
	}
	if err := m.checkHostedSession(now, c.CheckoutSessionID); err != nil {
		return nil, nil, err
	}
	if o, ok := m.liveSessionOrder(c.CheckoutSessionID); ok {
		// A second submit of the hosted page: the session's order stands.
		return m.orderView(o), nil, nil
	}
	// Most orders have a line or two: price them in stack buffers, so an
	// order refused (sold out) allocates no lines and holds; the change
	// gets copies.
	var lineBuf [4]OrderLine
	var holdBuf [4]Hold
	p, admission, code, err := m.orderItems(now, c.Items, c.RedemptionCode, c.Storefront, lineBuf[:0], holdBuf[:0])
	if err != nil {
		return nil, nil, err
	}
	if err := m.checkAnswers(admission, c.Responses, true); err != nil {
		return nil, nil, err
	}
	var promo *PromoRec
	var discount Money
	if c.PromotionCode != "" {
		if promo, err = m.usablePromo(now, c.PromotionCode); err != nil {
			return nil, nil, err
		}
		if discount, err = applyPromo(promo, &p); err != nil {
			return nil, nil, err
		}
	}
	var queued *QueueEntry
	if c.Storefront {
		if queued, err = m.useQueueToken(now, c.QueueToken, c.CheckoutSessionID); err != nil {
			return nil, nil, err
		}
		if err := m.checkOrderLimits(email, c.Client); err != nil {
			return nil, nil, err
		}
	}
	regID, already := m.s.idx.emailReg(normEmail(email))
	already = already && admission != ""
	if !already {
		// Sold out is the common answer in a drop: decide it before paying
		// for fresh ids.
		if err := m.checkRoom(p.holds.holds); err != nil {
			return nil, nil, err
		}
	}
	lines := heapCopy(p.lines)
	ch := OrderPlaced{
		At: now, ID: m.newID("ord_"), Number: m.newOrderNumber(), Email: email,
		Name: name, Lines: lines, Total: p.total, Currency: e.Currency,
		Status: OrderStatusOpen, HoldUntil: now.Add(m.orderHold()), AdmissionTypeID: admission,
		CheckoutSessionID: c.CheckoutSessionID, Client: c.Client,
	}
	if r := bytes.TrimSpace(c.Responses); len(r) > 0 && !bytes.Equal(r, []byte("null")) {
		ch.Responses = append([]byte{}, r...)
	}
	if already {
		// An already registered buyer is acknowledged, never sold a second
		// seat: the order is recorded, holds nothing and is born cancelled.
		ch.Status, ch.AlreadyRegistered, ch.RegistrationID = OrderStatusCancelled, true, regID
	} else {
		ch.Holds = heapCopy(p.holds.holds)
		if code != nil {
			ch.CodeID = code.ID
		}
		if promo != nil {
			ch.PromoID, ch.Discount = promo.ID, discount
		}
	}
	rec := OrderRec{
		ID: ch.ID, Number: ch.Number, Email: ch.Email, Name: ch.Name, Lines: ch.Lines, Holds: ch.Holds,
		AdmissionTypeID: ch.AdmissionTypeID, CodeID: ch.CodeID, Responses: ch.Responses, Status: ch.Status,
		Total: ch.Total, Currency: ch.Currency, HoldUntil: ch.HoldUntil, AlreadyRegistered: ch.AlreadyRegistered,
		RegistrationID: ch.RegistrationID, CreatedAt: now, UpdatedAt: now, CheckoutSessionID: ch.CheckoutSessionID,
		PromoID: ch.PromoID, Discount: ch.Discount, Client: ch.Client,
	}
	if queued != nil {
		// The token places this one order (decisions §19).
		return m.orderView(&rec), []Change{ch, QueueTokenUsed{At: now, ID: queued.ID, OrderID: ch.ID}}, nil
	}
	return m.orderView(&rec), []Change{ch}, nil
}

// fulfil returns the changes that settle o: a confirmed registration for
// its admission (unless the buyer got registered meanwhile) and the ticket
// email.
func (m *Machine) fulfil(now time.Time, o *OrderRec, deliveryID string) (OrderRec, []Change) {
	ch := OrderPaid{At: now, ID: o.ID, DeliveryID: deliveryID}
	rec := *o
	rec.Status, rec.UpdatedAt = OrderStatusPaid, now
	var changes []Change
	if o.AdmissionTypeID != "" {
		if _, taken := m.s.idx.emailReg(normEmail(o.Email)); taken {
			ch.AlreadyRegistered = true
			rec.AlreadyRegistered = true
			changes = append(changes, ch)
			// The admission's place returns: seat from the waitlist.
			return rec, appendWaitlistSeated(changes, now, m.seatFromWaitlist(now, m.s.Types[o.AdmissionTypeID], 1, ""))
		}
		ch.RegistrationID, ch.CheckinCode, ch.PassToken = m.newID("reg_"), m.newCheckinCode(), m.newPassToken()
		rec.RegistrationID = ch.RegistrationID
	}
	changes = append(changes, ch)
	if ch.RegistrationID != "" {
		changes = append(changes, TicketIssued{At: now, RegistrationIDs: []string{ch.RegistrationID}})
	}
	return rec, changes
}

func (m *Machine) confirmOrder(now time.Time, c ConfirmOrder) (any, []Change, error) {
	o, err := m.order(c.Ref)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case o.AlreadyRegistered, o.Status == OrderStatusAwaitingPayment, o.Status == OrderStatusPaid, refundedOrder(o.Status):
		// Confirming again is harmless: answer the order as it is.
		return m.orderView(o), nil, nil
	case o.Status != OrderStatusOpen:
		return nil, nil, Reasonf(FailedPrecondition, ReasonOrderNotOpen, "order is %s", o.Status)
	case !now.Before(o.HoldUntil):
		return nil, nil, Reasonf(FailedPrecondition, ReasonOrderHoldExpired, "order hold has lapsed")
	}
	if o.Total == 0 {
		if c.Prepare {
			return m.orderView(o), nil, nil // a free order needs no payment page
		}
		rec, changes := m.fulfil(now, o, "")
		return m.orderView(&rec), changes, nil
	}
	if !c.Storefront && (c.SuccessURL == "" || c.CancelURL == "") {
		if c.SuccessURL == "" {
			return nil, nil, FieldError("successUrl", "required to confirm a paid order")
		}
		return nil, nil, FieldError("cancelUrl", "required to confirm a paid order")
	}
	if err := checkRedirect("successUrl", c.SuccessURL, c.Storefront, c.Origins); err != nil {
		return nil, nil, err
	}
	if err := checkRedirect("cancelUrl", c.CancelURL, c.Storefront, c.Origins); err != nil {
		return nil, nil, err
	}
	if c.Prepare {
		return m.prepareConfirm(now, o, c.Renew)
	}
	ch := OrderPaymentStarted{
		At: now, ID: o.ID, PaymentID: "pay_" + m.eventSuffix() + "." + m.ids.Code(20),
		HoldUntil: now.Add(m.orderHold()), SuccessURL: c.SuccessURL, CancelURL: c.CancelURL,
	}
	if err := withProvider(now, &ch, c.Provider); err != nil {
		return nil, nil, err
	}
	rec := *o
	rec.Status, rec.PaymentID, rec.HoldUntil, rec.SuccessURL, rec.CancelURL, rec.UpdatedAt =
		OrderStatusAwaitingPayment, ch.PaymentID, ch.HoldUntil, ch.SuccessURL, ch.CancelURL, now
	rec.Provider, rec.ProviderRef, rec.ProviderURL = ch.Provider, ch.ProviderRef, ch.ProviderURL
	return m.orderView(&rec), []Change{ch}, nil
}

// releaseToWaitlist seats waitlisted registrations in the ticket type
// places that releasing holds frees.
func (m *Machine) releaseToWaitlist(now time.Time, changes []Change, holds []Hold) []Change {
	var freed holdSet
	for _, h := range holds {
		if h.Kind == ItemRegistrationType {
			freed.add(h.Kind, h.ID, h.Qty)
		}
	}
	for _, h := range freed.holds {
		if len(m.s.idx.waitlist[h.ID]) > 0 {
			changes = appendWaitlistSeated(changes, now, m.seatFromWaitlist(now, m.s.Types[h.ID], h.Qty, ""))
		}
	}
	return changes
}

func (m *Machine) cancelOrder(now time.Time, c CancelOrder) (any, []Change, error) {
	o, err := m.order(c.Ref)
	if err != nil {
		return nil, nil, err
	}
	switch o.Status {
	case OrderStatusCancelled, OrderStatusExpired:
		return m.orderView(o), nil, nil
	case OrderStatusPaid, OrderStatusRefunded:
		return nil, nil, Reasonf(FailedPrecondition, ReasonOrderPaid, "order is %s: refunds are made in the console", o.Status)
	}
	rec := *o
	rec.Status, rec.UpdatedAt = OrderStatusCancelled, now
	changes := []Change{OrderReleased{At: now, ID: o.ID, Status: OrderStatusCancelled, CloseRef: o.ProviderRef}}
	return m.orderView(&rec), m.releaseToWaitlist(now, changes, o.Holds), nil
}

func (m *Machine) settlePayment(now time.Time, c SettlePayment) (any, []Change, error) {
	o, err := m.paymentOrder(c)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case m.secondCharge(o, c):
		// Another payment of an order paid already: money taken twice.
		return m.refundSecondCharge(now, o, c)
	case o.Status == OrderStatusPaid || refundedOrder(o.Status):
		// A repeated delivery (or a second success) changes nothing more.
		return m.orderView(o), nil, nil
	case c.Outcome == "failed":
		// A declined payment leaves the order awaiting payment until its
		// hold lapses, so the buyer can retry on the payment page.
		return m.orderView(o), nil, nil
	case c.Outcome != "" && c.Outcome != "succeeded":
		return nil, nil, Errorf(InvalidArgument, "unknown payment outcome %q", c.Outcome)
	case c.Amount != o.Total || !strings.EqualFold(c.Currency, o.Currency):
		return nil, nil, Reasonf(FailedPrecondition, ReasonPaymentAmountMismatch, "payment of %s %s does not match the order total %s %s", c.Amount, c.Currency, o.Total, o.Currency)
	case o.Status == OrderStatusExpired || o.Status == OrderStatusCancelled:
		// The money moved after the order stopped holding (latepay.go).
		return m.settleLate(now, o, c)
	case o.Status != OrderStatusAwaitingPayment:
		return nil, nil, Reasonf(FailedPrecondition, ReasonOrderNotAwaitingPayment, "order is %s", o.Status)
	}
	rec, changes := m.fulfil(now, o, c.DeliveryID)
	return m.orderView(&rec), paidWith(changes, c.ProviderRef), nil
}

// expire lapses every hold whose deadline is at or before now, in placement
// order. It visits only holding orders (bounded by the places on sale), not
// the whole order history.
func (m *Machine) expire(now time.Time) (any, []Change, error) {
	m.lastTick = now
	lapsed := m.s.lapsedOrders(now)
	var changes []Change
	var holds []Hold
	for _, o := range lapsed {
		changes = append(changes, OrderReleased{At: now, ID: o.ID, Status: OrderStatusExpired, CloseRef: o.ProviderRef})
		holds = append(holds, o.Holds...)
	}
	changes = append(m.releaseToWaitlist(now, changes, holds), m.roomTick(now)...)
	return nil, append(changes, m.purgeSessions(now)...), nil
}

// NextDeadline reports the earliest instant at which Expire would produce
// changes: the earliest deadline of a holding order, the waiting room's
// next tick, or the purge of the oldest unused checkout session.
func (m *Machine) NextDeadline() (time.Time, bool) {
	at, ok := m.s.nextHold()
	if r, rok := m.roomDeadline(); rok && (!ok || r.Before(at)) {
		at, ok = r, true
	}
	if p, pok := m.purgeDeadline(); pok && (!ok || p.Before(at)) {
		at, ok = p, true
	}
	return at, ok
}

// ---- checkout sessions and catalog

func (m *Machine) createCheckoutSession(now time.Time, c CreateCheckoutSession) (any, []Change, error) {
	if m.s.Event.Status != EventPublished {
		return nil, nil, Reasonf(FailedPrecondition, notPublishedReason(m.s.Event.Status), "event is %s, not published", m.s.Event.Status)
	}
	// The hosted page places the session's order later: refuse now what
	// it could not place then (except sold out, which may change).
	p, admission, _, err := m.orderItems(now, c.Items, c.RedemptionCode, c.Storefront, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := checkResponses("responses", c.Responses); err != nil {
		return nil, nil, err
	}
	if err := m.checkAnswers(admission, c.Responses, false); err != nil {
		return nil, nil, err
	}
	if c.PromotionCode != "" {
		promo, err := m.usablePromo(now, c.PromotionCode)
		if err != nil {
			return nil, nil, err
		}
		if _, err := applyPromo(promo, &p); err != nil {
			return nil, nil, err
		}
	}
	email, err := checkEmail("email", c.Email, false)
	if err != nil {
		return nil, nil, err
	}
	name, err := checkName("name", c.Name)
	if err != nil {
		return nil, nil, err
	}
	switch c.Locale {
	case "", "en", "zh-CN":
	default:
		return nil, nil, FieldError("locale", "must be en or zh-CN")
	}
	if err := checkRedirect("returnUrl", c.ReturnURL, c.Storefront, c.Origins); err != nil {
		return nil, nil, err
	}
	if c.Storefront {
		if m.roomGates(now) {
			if _, err := m.checkQueueToken(now, c.QueueToken); err != nil {
				return nil, nil, err
			}
		}
		if err := m.checkSessionLimit(now, c.Client); err != nil {
			return nil, nil, err
		}
	}
	ttl := m.cfg.CheckoutSessionTTL
	if ttl <= 0 {
		ttl = defaultTTL
	}
	ch := CheckoutSessionCreated{
		At: now, ID: "cs_" + m.eventSuffix() + "." + m.ids.Code(24), Items: append([]OrderItem{}, c.Items...),
		Email: email, Name: name, RedemptionCode: c.RedemptionCode,
		PromotionCode: c.PromotionCode, ReturnURL: c.ReturnURL, Locale: c.Locale, ExpiresAt: now.Add(ttl),
		Client: c.Client, QueueToken: c.QueueToken,
	}
	if r := bytes.TrimSpace(c.Responses); len(r) > 0 && !bytes.Equal(r, []byte("null")) {
		ch.Responses = append([]byte{}, r...)
	}
	rec := CheckoutRec{
		ID: ch.ID, Items: ch.Items, Email: ch.Email, Name: ch.Name, Responses: ch.Responses,
		RedemptionCode: ch.RedemptionCode, PromotionCode: ch.PromotionCode, ReturnURL: ch.ReturnURL,
		Locale: ch.Locale, CreatedAt: now, ExpiresAt: ch.ExpiresAt,
	}
	return m.checkoutView(&rec, now), []Change{ch}, nil
}

func (m *Machine) catalog(now time.Time, lang string) (any, []Change, error) {
	if m.s.Event.Status != EventPublished {
		return nil, nil, Errorf(NotFound, "event not found")
	}
	cat := Catalog{Event: m.eventView(), TicketTypes: []CatalogTicketType{}, UpcomingTicketTypes: []CatalogTicketType{}, Addons: []CatalogItem{}, Bundles: []CatalogBundle{}}
	for _, id := range m.s.TypeOrder {
		t := m.s.Types[id]
		if !t.IsPublic || t.Status != SellOpen || (t.ClosesAt != nil && !now.Before(*t.ClosesAt)) {
			continue
		}
		v := CatalogTicketType{
			ID: t.ID, Name: t.Name, PriceAmount: t.Price, SoldOut: t.room() == 0, AllowWaitlist: t.AllowWaitlist,
			RequiresApproval: t.RequiresApproval, OpensAt: tp(t.OpensAt), ClosesAt: tp(t.ClosesAt), Perks: m.perksOf(m.s.TypePerks[t.ID]),
		}
		if t.OpensAt != nil && now.Before(*t.OpensAt) {
			cat.UpcomingTicketTypes = append(cat.UpcomingTicketTypes, v)
		} else {
			cat.TicketTypes = append(cat.TicketTypes, v)
		}
	}
	for _, id := range m.s.AddonOrder {
		if a := m.s.Addons[id]; a.Status == SellOpen {
			cat.Addons = append(cat.Addons, CatalogItem{ID: a.ID, Name: a.Name, PriceAmount: a.Price, SoldOut: a.room() == 0})
		}
	}
	for _, id := range m.s.BundleOrder {
		if b := m.s.Bundles[id]; b.Status == SellOpen && m.bundlePublic(b) {
			cat.Bundles = append(cat.Bundles, CatalogBundle{ID: b.ID, Name: b.Name, PriceAmount: b.Price, SoldOut: !m.bundleAvailable(b), Items: append([]BundleItem{}, b.Items...)})
		}
	}
	m.catalogStates(&cat, now)
	m.programCatalog(&cat)
	m.contentCatalog(&cat, lang)
	m.roomCatalog(&cat, now)
	return cat, nil, nil
}

// bundlePublic hides bundles containing a hidden ticket type.
func (m *Machine) bundlePublic(b *BundleRec) bool {
	for _, it := range b.Items {
		if it.ItemType == ItemRegistrationType && !m.s.Types[it.ItemID].IsPublic {
			return false
		}
	}
	return true
}

// bundleUnlocked reports whether a buyer holding code (nil for none) may
// buy bundle b: every ticket type inside it is unlocked.
func (m *Machine) bundleUnlocked(b *BundleRec, code *CodeRec) bool {
	for _, it := range b.Items {
		if it.ItemType == ItemRegistrationType && !unlocked(m.s.Types[it.ItemID], code) {
			return false
		}
	}
	return true
}

// bundleAvailable reports whether one more bundle fits, contents included.
func (m *Machine) bundleAvailable(b *BundleRec) bool {
	if b.room() == 0 {
		return false
	}
	for _, it := range b.Items {
		switch it.ItemType {
		case ItemRegistrationType:
			if m.s.Types[it.ItemID].room() < it.Quantity {
				return false
			}
		case ItemAddon:
			if m.s.Addons[it.ItemID].room() < it.Quantity {
				return false
			}
		}
	}
	return true
}
