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

func (d *dec) registrationCreated() RegistrationCreated {
	return RegistrationCreated{At: d.time(), ID: d.str(), Email: d.str(), Name: d.str(), TypeID: d.str(), Status: d.str(), CheckinCode: d.str(), PassToken: d.str()}
}

func (d *dec) checkedIn() CheckedIn {
	return CheckedIn{At: d.time(), ID: d.str(), RegID: d.str(), SubjectType: d.str(), SubjectID: d.str(), Method: d.str(),
		DeviceID: d.str(), ScanID: d.str(), CheckedInAt: d.time()}
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
