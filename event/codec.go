package event

import (
	"errors"
	"fmt"
	"sync"
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
	if kindByName[kind] == nil {
		return dst, fmt.Errorf("event: marshal change: unknown change %T", ch)
	}
	return ch.appendBody(e), nil
}

// UnmarshalChange decodes a change encoded by MarshalChange.
func UnmarshalChange(b []byte) (Change, error) {
	kind, body, err := splitRecord(b)
	if err != nil {
		return nil, err
	}
	k := kindByName[string(kind)]
	if k == nil {
		return nil, fmt.Errorf("event: unmarshal change: unknown kind %q", kind)
	}
	// The decoder is called through the registry, so the compiler cannot
	// see that it keeps no pointer to d: a pooled d saves an allocation.
	d := decPool.Get().(*dec)
	*d = dec{s: string(body)}
	ch := k.decode(d)
	err = d.end(kind)
	*d = dec{}
	decPool.Put(d)
	if err != nil {
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
// result, for replay, which has no use for the Change value: each kind
// decodes into its own type and applies it without boxing it into a Change
// (a registration costs one copy of its record instead of five
// allocations), and a kind whose apply keeps nothing of the record (a
// ticket.issued) reads it in place. On an error nothing is applied. rec is
// not kept.
func (m *Machine) ApplyRecord(rec []byte) error {
	kind, body, err := splitRecord(rec)
	if err != nil {
		return err
	}
	k := kindByName[string(kind)]
	if k == nil {
		return fmt.Errorf("event: unmarshal change: unknown kind %q", kind)
	}
	// The machine's own decoder: one called through the registry would
	// escape to the heap (see UnmarshalChange).
	d := &m.dec
	if k.view {
		// The view over rec is dropped before returning.
		d.s = unsafe.String(unsafe.SliceData(body), len(body))
	} else {
		// The record keeps its strings: one copy of the body holds them all.
		d.s = string(body)
	}
	err = k.replay(m.s, d, kind)
	*d = dec{}
	return err
}

var decPool = sync.Pool{New: func() any { return new(dec) }}

// replayTicketIssued checks a ticket.issued record: applying it changes
// nothing, so its ids are read and dropped.
func replayTicketIssued(s *State, d *dec, kind []byte) error {
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
