package event

import (
	"encoding/binary"
	"errors"
	"time"
)

// Binary change bodies (codec version 1). Each change is its fields in
// declaration order (see changes.go), with these encodings:
//
//	string, bytes   uvarint length, then the bytes
//	int, Money      zigzag varint
//	bool            one byte, 0 or 1
//	time.Time       one byte 0 (zero time) or 1 then varint Unix nanoseconds
//	*time.Time      as time.Time, 0 meaning nil
//	*int            one byte 0 (nil) or 1 then varint
//	slice           uvarint count, then the elements
//
// Fields are only ever appended to a change type, and a body that ends
// before a field decodes that field and all later ones as zero values, so
// old log records stay readable after a change type grows.

type enc []byte

func (e enc) str(s string) enc {
	e = binary.AppendUvarint(e, uint64(len(s)))
	return append(e, s...)
}

func (e enc) bytes(b []byte) enc {
	e = binary.AppendUvarint(e, uint64(len(b)))
	return append(e, b...)
}

func (e enc) int(n int64) enc { return binary.AppendVarint(e, n) }

func (e enc) bool(v bool) enc {
	if v {
		return append(e, 1)
	}
	return append(e, 0)
}

func (e enc) time(t time.Time) enc {
	if t.IsZero() {
		return append(e, 0)
	}
	return binary.AppendVarint(append(e, 1), t.UnixNano())
}

func (e enc) timep(t *time.Time) enc {
	if t == nil {
		return append(e, 0)
	}
	return binary.AppendVarint(append(e, 1), t.UnixNano())
}

func (e enc) intp(p *int) enc {
	if p == nil {
		return append(e, 0)
	}
	return binary.AppendVarint(append(e, 1), int64(*p))
}

func (e enc) strs(ss []string) enc {
	e = binary.AppendUvarint(e, uint64(len(ss)))
	for _, s := range ss {
		e = e.str(s)
	}
	return e
}

// dec reads a body; the first error sticks and later reads return zeros.
// It reads from a string so that decoded strings are substrings of one
// allocation instead of one allocation each.
type dec struct {
	s   string
	err error
}

var errCorrupt = errors.New("corrupt body")

// maxCount bounds decoded slice lengths so bad bytes cannot ask for huge
// allocations.
const maxCount = 1 << 24

func (d *dec) fail() { d.err = errCorrupt; d.s = "" }

func (d *dec) uvarint() uint64 {
	var v uint64
	for i := 0; i < len(d.s) && i < binary.MaxVarintLen64; i++ {
		c := d.s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			d.s = d.s[i+1:]
			return v | uint64(c)<<(7*i)
		}
		v |= uint64(c&0x7f) << (7 * i)
	}
	if len(d.s) > 0 {
		d.fail()
	}
	return 0
}

func (d *dec) int() int64 {
	u := d.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (d *dec) str() string {
	n := d.uvarint()
	if n > uint64(len(d.s)) {
		d.fail()
		return ""
	}
	v := d.s[:n]
	d.s = d.s[n:]
	return v
}

func (d *dec) bytes() []byte {
	v := d.str()
	if v == "" {
		return nil
	}
	return []byte(v)
}

func (d *dec) flag() bool {
	if len(d.s) == 0 {
		return false
	}
	v := d.s[0]
	d.s = d.s[1:]
	if v > 1 {
		d.fail()
		return false
	}
	return v == 1
}

func (d *dec) bool() bool { return d.flag() }

func (d *dec) time() time.Time {
	if !d.flag() {
		return time.Time{}
	}
	return time.Unix(0, d.int()).UTC()
}

func (d *dec) timep() *time.Time {
	if !d.flag() {
		return nil
	}
	t := time.Unix(0, d.int()).UTC()
	return &t
}

func (d *dec) intp() *int {
	if !d.flag() {
		return nil
	}
	v := int(d.int())
	return &v
}

func (d *dec) count() int {
	n := d.uvarint()
	if n > maxCount || n > uint64(len(d.s)) {
		// Every element takes at least one byte.
		d.fail()
		return 0
	}
	return int(n)
}

func (d *dec) strs() []string {
	n := d.count()
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (e enc) typeSpec(s TicketTypeSpec) enc {
	return e.str(s.Name).intp(s.Capacity).int(int64(s.Price)).bool(s.AllowWaitlist).bool(s.IsPublic).
		bool(s.RequiresApproval).timep(s.OpensAt).timep(s.ClosesAt).str(s.Status)
}

func (d *dec) typeSpec() TicketTypeSpec {
	return TicketTypeSpec{Name: d.str(), Capacity: d.intp(), Price: Money(d.int()), AllowWaitlist: d.bool(), IsPublic: d.bool(),
		RequiresApproval: d.bool(), OpensAt: d.timep(), ClosesAt: d.timep(), Status: d.str()}
}

func (e enc) addonSpec(s AddonSpec) enc {
	return e.str(s.Name).int(int64(s.Price)).intp(s.Capacity).str(s.Status)
}

func (d *dec) addonSpec() AddonSpec {
	return AddonSpec{Name: d.str(), Price: Money(d.int()), Capacity: d.intp(), Status: d.str()}
}

func (e enc) bundleSpec(s BundleSpec) enc {
	e = e.str(s.Name).int(int64(s.Price)).intp(s.Capacity).str(s.Status)
	e = binary.AppendUvarint(e, uint64(len(s.Items)))
	for _, it := range s.Items {
		e = e.str(it.ItemType).str(it.ItemID).int(int64(it.Quantity))
	}
	return e
}

func (d *dec) bundleSpec() BundleSpec {
	s := BundleSpec{Name: d.str(), Price: Money(d.int()), Capacity: d.intp(), Status: d.str()}
	if n := d.count(); n > 0 {
		s.Items = make([]BundleItem, n)
		for i := range s.Items {
			s.Items[i] = BundleItem{ItemType: d.str(), ItemID: d.str(), Quantity: int(d.int())}
		}
	}
	return s
}

func (e enc) orderItems(items []OrderItem) enc {
	e = binary.AppendUvarint(e, uint64(len(items)))
	for _, it := range items {
		e = e.str(it.ItemType).str(it.ItemID).int(int64(it.Quantity))
	}
	return e
}

func (d *dec) orderItems() []OrderItem {
	n := d.count()
	if n == 0 {
		return nil
	}
	out := make([]OrderItem, n)
	for i := range out {
		out[i] = OrderItem{ItemType: d.str(), ItemID: d.str(), Quantity: int(d.int())}
	}
	return out
}

// appendBody encodes a change's fields.
func appendBody(e enc, ch Change) (enc, bool) {
	switch c := ch.(type) {
	case EventCreated:
		return e.time(c.At).str(c.Name).str(c.Timezone).timep(c.StartsAt).timep(c.EndsAt).str(c.Currency), true
	case EventUpdated:
		return e.time(c.At).str(c.Name).str(c.Timezone).timep(c.StartsAt).timep(c.EndsAt).str(c.Status).str(c.Currency).bool(c.AgendaReset), true
	case SiteURLSet:
		return e.time(c.At).str(c.SiteURL), true
	case TicketTypeCreated:
		return e.time(c.At).str(c.ID).typeSpec(c.TicketTypeSpec), true
	case TicketTypeUpdated:
		return e.time(c.At).str(c.ID).typeSpec(c.TicketTypeSpec), true
	case RegistrationCreated:
		return e.time(c.At).str(c.ID).str(c.Email).str(c.Name).str(c.TypeID).str(c.Status).str(c.CheckinCode).str(c.PassToken), true
	case RegistrationStatusChanged:
		return e.time(c.At).str(c.ID).str(c.Status).str(c.Reason), true
	case PassRotated:
		return e.time(c.At).str(c.ID).str(c.PassToken), true
	case CheckedIn:
		return e.time(c.At).str(c.ID).str(c.RegID).str(c.SubjectType).str(c.SubjectID).str(c.Method), true
	case TicketIssued:
		return e.time(c.At).strs(c.RegistrationIDs), true
	case CodesMinted:
		e = e.time(c.At).str(c.TypeID).str(c.Label).intp(c.MaxUses).timep(c.ExpiresAt)
		e = binary.AppendUvarint(e, uint64(len(c.Codes)))
		for _, mc := range c.Codes {
			e = e.str(mc.ID).str(mc.Code)
		}
		return e, true
	case CodeDisabled:
		return e.time(c.At).str(c.ID), true
	case AddonCreated:
		return e.time(c.At).str(c.ID).addonSpec(c.AddonSpec), true
	case AddonUpdated:
		return e.time(c.At).str(c.ID).addonSpec(c.AddonSpec), true
	case BundleCreated:
		return e.time(c.At).str(c.ID).bundleSpec(c.BundleSpec), true
	case BundleUpdated:
		return e.time(c.At).str(c.ID).bundleSpec(c.BundleSpec), true
	case OrderPlaced:
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
			str(c.PromoID).int(int64(c.Discount)), true
	case OrderPaymentStarted:
		return e.time(c.At).str(c.ID).str(c.PaymentID).time(c.HoldUntil).str(c.SuccessURL).str(c.CancelURL), true
	case OrderPaid:
		return e.time(c.At).str(c.ID).str(c.DeliveryID).str(c.RegistrationID).str(c.CheckinCode).str(c.PassToken).bool(c.AlreadyRegistered), true
	case OrderReleased:
		return e.time(c.At).str(c.ID).str(c.Status), true
	case CheckoutSessionCreated:
		return e.time(c.At).str(c.ID).orderItems(c.Items).str(c.Email).str(c.Name).bytes(c.Responses).str(c.RedemptionCode).
			str(c.PromotionCode).str(c.ReturnURL).str(c.Locale).time(c.ExpiresAt), true
	}
	if out, ok := appendRefundBody(e, ch); ok {
		return out, true
	}
	if e, ok := appendConsoleBody(e, ch); ok {
		return e, true
	}
	return appendProgramBody(e, ch)
}

func (d *dec) registrationCreated() RegistrationCreated {
	return RegistrationCreated{At: d.time(), ID: d.str(), Email: d.str(), Name: d.str(), TypeID: d.str(), Status: d.str(), CheckinCode: d.str(), PassToken: d.str()}
}

func (d *dec) checkedIn() CheckedIn {
	return CheckedIn{At: d.time(), ID: d.str(), RegID: d.str(), SubjectType: d.str(), SubjectID: d.str(), Method: d.str()}
}

func (d *dec) orderPlaced() OrderPlaced {
	c := OrderPlaced{At: d.time(), ID: d.str(), Number: d.str(), Email: d.str(), Name: d.str()}
	if n := d.count(); n > 0 {
		c.Lines = make([]OrderLine, n)
		for i := range c.Lines {
			c.Lines[i] = OrderLine{ItemType: d.str(), ItemID: d.str(), Name: d.str(), Quantity: int(d.int()), UnitPrice: Money(d.int()), Amount: Money(d.int())}
		}
	}
	if n := d.count(); n > 0 {
		c.Holds = make([]Hold, n)
		for i := range c.Holds {
			c.Holds[i] = Hold{Kind: d.str(), ID: d.str(), Qty: int(d.int())}
		}
	}
	c.AdmissionTypeID, c.CodeID, c.Responses, c.Total, c.Currency = d.str(), d.str(), d.bytes(), Money(d.int()), d.str()
	c.HoldUntil, c.Status, c.AlreadyRegistered, c.RegistrationID = d.time(), d.str(), d.bool(), d.str()
	c.CheckoutSessionID = d.str()
	if len(d.s) > 0 {
		// Appended fields: orders logged before promotion codes end here.
		c.PromoID, c.Discount = d.str(), Money(d.int())
	}
	return c
}

// readBody decodes the fields of a change of the given kind.
func readBody(kind string, d *dec) (Change, bool) {
	switch kind {
	case "event.created":
		return EventCreated{At: d.time(), Name: d.str(), Timezone: d.str(), StartsAt: d.timep(), EndsAt: d.timep(), Currency: d.str()}, true
	case "event.updated":
		return EventUpdated{At: d.time(), Name: d.str(), Timezone: d.str(), StartsAt: d.timep(), EndsAt: d.timep(), Status: d.str(), Currency: d.str(), AgendaReset: d.bool()}, true
	case "event.site_url_set":
		return SiteURLSet{At: d.time(), SiteURL: d.str()}, true
	case "ticket_type.created":
		return TicketTypeCreated{At: d.time(), ID: d.str(), TicketTypeSpec: d.typeSpec()}, true
	case "ticket_type.updated":
		return TicketTypeUpdated{At: d.time(), ID: d.str(), TicketTypeSpec: d.typeSpec()}, true
	case "registration.created":
		return d.registrationCreated(), true
	case "registration.status_changed":
		return RegistrationStatusChanged{At: d.time(), ID: d.str(), Status: d.str(), Reason: d.str()}, true
	case "registration.pass_rotated":
		return PassRotated{At: d.time(), ID: d.str(), PassToken: d.str()}, true
	case "checkin.created":
		return d.checkedIn(), true
	case "ticket.issued":
		return TicketIssued{At: d.time(), RegistrationIDs: d.strs()}, true
	case "code.minted":
		c := CodesMinted{At: d.time(), TypeID: d.str(), Label: d.str(), MaxUses: d.intp(), ExpiresAt: d.timep()}
		if n := d.count(); n > 0 {
			c.Codes = make([]MintedCode, n)
			for i := range c.Codes {
				c.Codes[i] = MintedCode{ID: d.str(), Code: d.str()}
			}
		}
		return c, true
	case "code.disabled":
		return CodeDisabled{At: d.time(), ID: d.str()}, true
	case "addon.created":
		return AddonCreated{At: d.time(), ID: d.str(), AddonSpec: d.addonSpec()}, true
	case "addon.updated":
		return AddonUpdated{At: d.time(), ID: d.str(), AddonSpec: d.addonSpec()}, true
	case "bundle.created":
		return BundleCreated{At: d.time(), ID: d.str(), BundleSpec: d.bundleSpec()}, true
	case "bundle.updated":
		return BundleUpdated{At: d.time(), ID: d.str(), BundleSpec: d.bundleSpec()}, true
	case "order.placed":
		return d.orderPlaced(), true
	case "order.awaiting_payment":
		return OrderPaymentStarted{At: d.time(), ID: d.str(), PaymentID: d.str(), HoldUntil: d.time(), SuccessURL: d.str(), CancelURL: d.str()}, true
	case "order.paid":
		return OrderPaid{At: d.time(), ID: d.str(), DeliveryID: d.str(), RegistrationID: d.str(), CheckinCode: d.str(), PassToken: d.str(), AlreadyRegistered: d.bool()}, true
	case "order.released":
		return OrderReleased{At: d.time(), ID: d.str(), Status: d.str()}, true
	case "checkout_session.created":
		return CheckoutSessionCreated{At: d.time(), ID: d.str(), Items: d.orderItems(), Email: d.str(), Name: d.str(), Responses: d.bytes(),
			RedemptionCode: d.str(), PromotionCode: d.str(), ReturnURL: d.str(), Locale: d.str(), ExpiresAt: d.time()}, true
	}
	if ch, ok := readRefundBody(kind, d); ok {
		return ch, true
	}
	if ch, ok := readConsoleBody(kind, d); ok {
		return ch, true
	}
	return readProgramBody(kind, d)
}
