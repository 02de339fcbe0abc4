package event

import (
	"errors"
	"fmt"
	"unsafe"
)

// Byte format of a change (MarshalChange), version 1:
//
//	byte 0      version (1)
//	byte 1      n, the length of the kind (1..255)
//	bytes 2..   the kind, n bytes ("registration.created")
//	rest        the change's fields in binary (see bincodec.go)
//
// Snapshots have their own format (statecodec.go). Unknown versions are
// errors, never panics.
const codecVersion = 1

// MarshalChange encodes a change for the log.
func MarshalChange(ch Change) ([]byte, error) {
	// 256 bytes hold a placed order or a registration without regrowing.
	return AppendChange(make([]byte, 0, 256), ch)
}

// AppendChange appends the encoding of ch (MarshalChange) to dst and
// returns the extended buffer, so a caller that copies the bytes on (as
// persistence.Batch.Append does) can reuse one buffer for every change.
func AppendChange(dst []byte, ch Change) ([]byte, error) {
	kind := ch.ChangeKind()
	e := enc(dst)
	e = append(e, codecVersion, byte(len(kind)))
	e = append(e, kind...)
	e, ok := appendBody(e, ch)
	if !ok {
		return dst, fmt.Errorf("event: marshal change: unknown change %T", ch)
	}
	return e, nil
}

// UnmarshalChange decodes a change encoded by MarshalChange.
func UnmarshalChange(b []byte) (Change, error) {
	kind, body, err := splitRecord(b)
	if err != nil {
		return nil, err
	}
	d := dec{s: string(body)}
	ch, ok := readBody(string(kind), &d)
	if !ok {
		return nil, fmt.Errorf("event: unmarshal change: unknown kind %q", kind)
	}
	if err := d.end(kind); err != nil {
		return nil, err
	}
	return ch, nil
}

// splitRecord checks the header of an encoded change and splits it.
func splitRecord(b []byte) (kind, body []byte, err error) {
	if len(b) < 2 {
		return nil, nil, errors.New("event: unmarshal change: too short")
	}
	if b[0] != codecVersion {
		return nil, nil, fmt.Errorf("event: unmarshal change: unknown version %d", b[0])
	}
	n := int(b[1])
	if len(b) < 2+n {
		return nil, nil, errors.New("event: unmarshal change: truncated kind")
	}
	return b[2 : 2+n], b[2+n:], nil
}

// end reports a body that failed to decode or has bytes left over.
func (d *dec) end(kind []byte) error {
	if d.err != nil {
		return fmt.Errorf("event: unmarshal change %s: %w", kind, d.err)
	}
	if len(d.s) > 0 {
		return fmt.Errorf("event: unmarshal change %s: %d trailing bytes", kind, len(d.s))
	}
	return nil
}

// ApplyRecord decodes a record written by MarshalChange and applies it. It
// is Apply(UnmarshalChange(rec)) with the same errors and the same
// result, for replay, which has no use for the Change value: the most
// common records (registrations, tickets, placed orders, check-ins) skip
// the value and its allocations (a registration costs one copy of its
// record instead of five allocations, a ticket.issued none). On an error
// nothing is applied. rec is not kept.
func (m *Machine) ApplyRecord(rec []byte) error {
	kind, body, err := splitRecord(rec)
	if err != nil {
		return err
	}
	s := m.s
	switch string(kind) {
	case "registration.created":
		// The record keeps its strings: one copy of the body holds them all.
		d := dec{s: string(body)}
		c := d.registrationCreated()
		if err := d.end(kind); err != nil {
			return err
		}
		s.countDown()
		s.applyRegistrationCreated(c)
		s.trimHolds()
		return nil
	case "order.placed":
		d := dec{s: string(body)}
		c := d.orderPlaced()
		if err := d.end(kind); err != nil {
			return err
		}
		s.countDown()
		s.applyOrderPlaced(c)
		s.trimHolds()
		return nil
	case "checkin.created":
		d := dec{s: string(body)}
		c := d.checkedIn()
		if err := d.end(kind); err != nil {
			return err
		}
		s.countDown()
		s.applyCheckedIn(c)
		s.trimHolds()
		return nil
	case "ticket.issued":
		// Applying it changes nothing, so it is only checked; the view
		// over rec is dropped before returning.
		d := dec{s: unsafe.String(unsafe.SliceData(body), len(body))}
		d.time()
		for n := d.count(); n > 0; n-- {
			d.str()
		}
		if err := d.end(kind); err != nil {
			return err
		}
		s.countDown()
		s.trimHolds()
		return nil
	}
	ch, err := UnmarshalChange(rec)
	if err != nil {
		return err
	}
	m.Apply(ch)
	return nil
}
