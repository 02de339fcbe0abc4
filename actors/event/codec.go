package event

import (
	"errors"
	"fmt"
	json "github.com/goccy/go-json"
)

// Byte format of a change (MarshalChange), version 1:
//
//	byte 0      version (1)
//	byte 1      n, the length of the kind (1..255)
//	bytes 2..   the kind, n bytes ("registration.created")
//	rest        the change as JSON (field names in changes.go)
//
// A snapshot (MarshalState), version 1: byte 0 is the version, the rest is
// the State as JSON. Unknown versions are errors, never panics.
const codecVersion = 1

// MarshalChange encodes a change for the log.
func MarshalChange(ch Change) ([]byte, error) {
	kind := ch.ChangeKind()
	body, err := json.Marshal(ch)
	if err != nil {
		return nil, fmt.Errorf("event: marshal change %s: %w", kind, err)
	}
	b := make([]byte, 0, 2+len(kind)+len(body))
	b = append(b, codecVersion, byte(len(kind)))
	b = append(b, kind...)
	return append(b, body...), nil
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
	kind, body := string(b[2:2+n]), b[2+n:]
	dec, ok := changeDecoders[kind]
	if !ok {
		return nil, fmt.Errorf("event: unmarshal change: unknown kind %q", kind)
	}
	ch, err := dec(body)
	if err != nil {
		return nil, fmt.Errorf("event: unmarshal change %s: %w", kind, err)
	}
	return ch, nil
}

func decodeAs[T Change](b []byte) (Change, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// changeDecoders is a constant table (never mutated), keyed by ChangeKind.
var changeDecoders = map[string]func([]byte) (Change, error){
	EventCreated{}.ChangeKind():              decodeAs[EventCreated],
	EventUpdated{}.ChangeKind():              decodeAs[EventUpdated],
	TicketTypeCreated{}.ChangeKind():         decodeAs[TicketTypeCreated],
	TicketTypeUpdated{}.ChangeKind():         decodeAs[TicketTypeUpdated],
	RegistrationCreated{}.ChangeKind():       decodeAs[RegistrationCreated],
	RegistrationStatusChanged{}.ChangeKind(): decodeAs[RegistrationStatusChanged],
	PassRotated{}.ChangeKind():               decodeAs[PassRotated],
	CheckedIn{}.ChangeKind():                 decodeAs[CheckedIn],
	TicketIssued{}.ChangeKind():              decodeAs[TicketIssued],
	CodesMinted{}.ChangeKind():               decodeAs[CodesMinted],
	CodeDisabled{}.ChangeKind():              decodeAs[CodeDisabled],
	AddonCreated{}.ChangeKind():              decodeAs[AddonCreated],
	AddonUpdated{}.ChangeKind():              decodeAs[AddonUpdated],
	BundleCreated{}.ChangeKind():             decodeAs[BundleCreated],
	BundleUpdated{}.ChangeKind():             decodeAs[BundleUpdated],
	OrderPlaced{}.ChangeKind():               decodeAs[OrderPlaced],
	OrderPaymentStarted{}.ChangeKind():       decodeAs[OrderPaymentStarted],
	OrderPaid{}.ChangeKind():                 decodeAs[OrderPaid],
	OrderReleased{}.ChangeKind():             decodeAs[OrderReleased],
	CheckoutSessionCreated{}.ChangeKind():    decodeAs[CheckoutSessionCreated],
}

// MarshalState encodes the whole state for a snapshot.
func MarshalState(s *State) ([]byte, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("event: marshal state %s: %w", s.ID, err)
	}
	return append([]byte{codecVersion}, body...), nil
}

// UnmarshalState decodes a snapshot and rebuilds the indexes. It checks the
// structural invariants a hostile or corrupt snapshot could break (every
// ordered id has its record), so later code never meets a nil record.
func UnmarshalState(b []byte) (*State, error) {
	if len(b) < 1 {
		return nil, errors.New("event: unmarshal state: empty")
	}
	if b[0] != codecVersion {
		return nil, fmt.Errorf("event: unmarshal state: unknown version %d", b[0])
	}
	s := newState("")
	if err := json.Unmarshal(b[1:], s); err != nil {
		return nil, fmt.Errorf("event: unmarshal state: %w", err)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("event: unmarshal state %s: %w", s.ID, err)
	}
	s.reindex()
	return s, nil
}
