package event

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
)

// Binary wire forms of the commands and results a cluster forwards most
// (a storefront drop's orders, a door's check-ins) and of Error (a sold
// out answer): the cluster's forwarding (cluster/wire.go) sends every
// other value in gob, which took about 16 µs of CPU per forwarded order
// (encode and decode of PlaceOrder and Order, both ends) against about 1
// µs here. Each form is its fields in declaration order with the change
// codec's encodings (bincodec.go), except times: a flag, then varint Unix
// seconds and uvarint nanoseconds (UTC on decode). TestWireCoversEveryField
// fails when a type gains a field its form lacks. As with gob, a body
// that ends early decodes the missing fields as zero values and trailing
// bytes are ignored, so nodes one field apart still talk.

// AppendWire appends v's wire form to dst and answers its name; ok is
// false when v's type has none.
func AppendWire(dst []byte, v any) (name string, out []byte, ok bool) {
	e := enc(dst)
	switch v := v.(type) {
	case PlaceOrder:
		return "PlaceOrder", e.placeOrder(v), true
	case GetOrder:
		return "GetOrder", e.str(v.Ref), true
	case RecordCheckin:
		return "RecordCheckin", e.str(v.RegistrationID).str(v.CheckinCode).str(v.SubjectType).str(v.SubjectID).str(v.Method), true
	case Order:
		return "Order", e.order(v), true
	case CheckinResult:
		return "CheckinResult", e.checkinResult(v), true
	case Error:
		e = e.int(int64(v.Code)).str(v.Message).uvarint(len(v.Details))
		for _, d := range v.Details {
			e = e.str(d.Field).str(d.Reason)
		}
		return "Error", e.str(v.Reason), true
	}
	return "", dst, false
}

// ReadWire decodes the wire form of the type name.
func ReadWire(name string, b []byte) (any, error) {
	d := &dec{s: string(b)}
	var v any
	switch name {
	case "PlaceOrder":
		v = d.placeOrder()
	case "GetOrder":
		v = GetOrder{Ref: d.str()}
	case "RecordCheckin":
		v = RecordCheckin{RegistrationID: d.str(), CheckinCode: d.str(), SubjectType: d.str(), SubjectID: d.str(), Method: d.str()}
	case "Order":
		v = d.order()
	case "CheckinResult":
		v = d.checkinResult()
	case "Error":
		e := Error{Code: Code(d.int()), Message: d.str()}
		if n := d.count(); n > 0 {
			e.Details = make([]Detail, n)
			for i := range e.Details {
				e.Details[i] = Detail{Field: d.str(), Reason: d.str()}
			}
		}
		e.Reason = d.str()
		v = e
	default:
		return nil, fmt.Errorf("event: no wire form named %q", name)
	}
	if d.err != nil {
		return nil, fmt.Errorf("event: wire form of %s: %w", name, d.err)
	}
	return v, nil
}

func (e enc) uvarint(n int) enc { return binary.AppendUvarint(e, uint64(n)) }

func (e enc) strp(s *string) enc {
	if s == nil {
		return append(e, 0)
	}
	return append(e, 1).str(*s)
}

func (d *dec) strptr() *string {
	if !d.flag() {
		return nil
	}
	s := d.str()
	return &s
}

// raw keeps nil and empty apart, as gob does not but JSON does (null).
func (e enc) raw(r json.RawMessage) enc {
	if r == nil {
		return append(e, 0)
	}
	return append(e, 1).bytes(r)
}

func (d *dec) raw() json.RawMessage {
	if !d.flag() {
		return nil
	}
	s := d.str()
	return json.RawMessage(s)
}

func (e enc) wtime(t Time) enc {
	if t.IsZero() {
		return append(e, 0)
	}
	e = binary.AppendVarint(append(e, 1), t.Unix())
	return binary.AppendUvarint(e, uint64(t.Nanosecond()))
}

func (d *dec) wtime() Time {
	if !d.flag() {
		return Time{}
	}
	sec := d.int()
	ns := d.uvarint()
	if ns >= 1e9 {
		d.fail()
		return Time{}
	}
	return Time{time.Unix(sec, int64(ns)).UTC()}
}

func (e enc) wtimep(t *Time) enc {
	if t == nil {
		return append(e, 0)
	}
	return append(e, 1).wtime(*t)
}

func (d *dec) wtimep() *Time {
	if !d.flag() {
		return nil
	}
	t := d.wtime()
	return &t
}

func (e enc) placeOrder(c PlaceOrder) enc {
	e = e.str(c.Email).str(c.Name).orderItems(c.Items).str(c.RedemptionCode).str(c.PromotionCode)
	return e.raw(c.Responses).bool(c.Storefront).str(c.CheckoutSessionID).str(c.Client).str(c.QueueToken)
}

func (d *dec) placeOrder() PlaceOrder {
	return PlaceOrder{Email: d.str(), Name: d.str(), Items: d.orderItems(), RedemptionCode: d.str(), PromotionCode: d.str(),
		Responses: d.raw(), Storefront: d.bool(), CheckoutSessionID: d.str(), Client: d.str(), QueueToken: d.str()}
}

func (e enc) order(o Order) enc {
	e = e.str(o.ID).str(o.EventID).str(o.OrderNumber).str(o.Status).str(o.Email).strp(o.Name)
	e = e.uvarint(len(o.Items))
	for _, it := range o.Items {
		e = e.str(it.ItemType).str(it.ItemID).str(it.Name).int(int64(it.Quantity)).int(int64(it.UnitPriceAmount)).int(int64(it.Amount))
	}
	e = e.int(int64(o.TotalAmount)).str(o.Currency).bool(o.AlreadyRegistered).strp(o.RegistrationID).strp(o.RedemptionCode).
		strp(o.PromotionCode).int(int64(o.DiscountAmount)).raw(o.Responses).wtimep(o.HoldExpiresAt).strp(o.PaymentID).
		str(o.OrderURL).strp(o.CheckoutURL).strp(o.PaymentURL).strp(o.SuccessURL).strp(o.CancelURL).
		wtime(o.CreatedAt).wtime(o.UpdatedAt)
	e = e.uvarint(len(o.Refunds))
	for _, r := range o.Refunds {
		e = e.str(r.ID).int(int64(r.Amount)).strp(r.Reason).str(r.Status).bool(r.Full).bool(r.Force).strp(r.Error).
			wtime(r.RequestedAt).wtimep(r.At).str(r.ProviderRef)
	}
	return e.str(o.Provider).str(o.ProviderRef).wtime(At(o.PreparedAt))
}

func (d *dec) order() Order {
	o := Order{ID: d.str(), EventID: d.str(), OrderNumber: d.str(), Status: d.str(), Email: d.str(), Name: d.strptr()}
	if n := d.count(); n > 0 {
		o.Items = make([]OrderItemView, n)
		for i := range o.Items {
			o.Items[i] = OrderItemView{ItemType: d.str(), ItemID: d.str(), Name: d.str(), Quantity: int(d.int()),
				UnitPriceAmount: Money(d.int()), Amount: Money(d.int())}
		}
	}
	o.TotalAmount, o.Currency, o.AlreadyRegistered = Money(d.int()), d.str(), d.bool()
	o.RegistrationID, o.RedemptionCode, o.PromotionCode = d.strptr(), d.strptr(), d.strptr()
	o.DiscountAmount, o.Responses, o.HoldExpiresAt, o.PaymentID = Money(d.int()), d.raw(), d.wtimep(), d.strptr()
	o.OrderURL, o.CheckoutURL, o.PaymentURL, o.SuccessURL, o.CancelURL = d.str(), d.strptr(), d.strptr(), d.strptr(), d.strptr()
	o.CreatedAt, o.UpdatedAt = d.wtime(), d.wtime()
	if n := d.count(); n > 0 {
		o.Refunds = make([]Refund, n)
		for i := range o.Refunds {
			o.Refunds[i] = Refund{ID: d.str(), Amount: Money(d.int()), Reason: d.strptr(), Status: d.str(), Full: d.bool(),
				Force: d.bool(), Error: d.strptr(), RequestedAt: d.wtime(), At: d.wtimep(), ProviderRef: d.str()}
		}
	}
	o.Provider, o.ProviderRef, o.PreparedAt = d.str(), d.str(), d.wtime().Time
	return o
}

func (e enc) checkinResult(r CheckinResult) enc {
	c := r.Checkin
	e = e.str(c.ID).str(c.RegistrationID).str(c.SubjectType).strp(c.SubjectID).str(c.Method).str(c.RegistrationEmail).
		strp(c.RegistrationName).wtime(c.CheckedInAt).bool(r.AlreadyCheckedIn)
	if r.Access == nil {
		e = append(e, 0)
	} else {
		e = append(e, 1).bool(r.Access.Allowed).strs(r.Access.RequiredPerkIDs).strs(r.Access.MissingPerkIDs)
	}
	return e.strp(c.DeviceID)
}

func (d *dec) checkinResult() CheckinResult {
	r := CheckinResult{Checkin: Checkin{ID: d.str(), RegistrationID: d.str(), SubjectType: d.str(), SubjectID: d.strptr(),
		Method: d.str(), RegistrationEmail: d.str(), RegistrationName: d.strptr(), CheckedInAt: d.wtime()}, AlreadyCheckedIn: d.bool()}
	if d.flag() {
		r.Access = &Access{Allowed: d.bool(), RequiredPerkIDs: d.strs(), MissingPerkIDs: d.strs()}
	}
	r.Checkin.DeviceID = d.strptr()
	return r
}
