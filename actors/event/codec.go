package event

import (
	"errors"
	"fmt"
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
	kind := ch.ChangeKind()
	e := make(enc, 0, 96)
	e = append(e, codecVersion, byte(len(kind)))
	e = append(e, kind...)
	e, ok := appendBody(e, ch)
	if !ok {
		return nil, fmt.Errorf("event: marshal change: unknown change %T", ch)
	}
	return e, nil
}

// UnmarshalChange decodes a change encoded by MarshalChange.
func UnmarshalChange(b []byte) (Change, error) {
	if len(b) < 2 {
		return nil, errors.New("event: unmarshal change: too short")
	}
	if b[0] != codecVersion {
		return nil, fmt.Errorf("event: unmarshal change: unknown version %d", b[0])
	}
	n := int(b[1])
	if len(b) < 2+n {
		return nil, errors.New("event: unmarshal change: truncated kind")
	}
	kind := b[2 : 2+n]
	d := dec{s: string(b[2+n:])}
	ch, ok := readBody(string(kind), &d)
	if !ok {
		return nil, fmt.Errorf("event: unmarshal change: unknown kind %q", kind)
	}
	if d.err != nil {
		return nil, fmt.Errorf("event: unmarshal change %s: %w", kind, d.err)
	}
	if len(d.s) > 0 {
		return nil, fmt.Errorf("event: unmarshal change %s: %d trailing bytes", kind, len(d.s))
	}
	return ch, nil
}
