package event

import "fmt"

// The registry of change kinds. A change kind is declared once, in its
// feature file: its type, its log name (ChangeKind, the binary tag written
// before the body), its body codec (decodeX and appendBody) and its effect
// on the state (apply). The table below is the one list of them; adding a
// kind is its feature-file block plus one line here. The names and body
// encodings are the log format: records written by older builds must keep
// decoding, so a name is never reused or changed.
var changeKinds = [...]changeKind{
	// the event (changes.go)
	kindOf(decodeEventCreated),
	kindOf(decodeEventUpdated),
	kindOf(decodeSiteURLSet),
	// ticket types, registrations, check-ins, codes (changes.go)
	kindOf(decodeTicketTypeCreated),
	kindOf(decodeTicketTypeUpdated),
	kindOf(decodeRegistrationCreated),
	kindOf(decodeRegistrationStatusChanged),
	kindOf(decodePassRotated),
	kindOf(decodeCheckedIn),
	kindOf(decodeTicketIssued).replayWith(replayTicketIssued),
	kindOf(decodeCodesMinted),
	kindOf(decodeCodeDisabled),
	// commerce (changes.go)
	kindOf(decodeAddonCreated),
	kindOf(decodeAddonUpdated),
	kindOf(decodeBundleCreated),
	kindOf(decodeBundleUpdated),
	kindOf(decodeOrderPlaced),
	kindOf(decodeOrderPaymentStarted),
	kindOf(decodeOrderPaid),
	kindOf(decodeOrderReleased),
	kindOf(decodeCheckoutSessionCreated),
	// refunds (refunds.go)
	kindOf(decodeRefundPolicySet),
	kindOf(decodeRefundRequested),
	kindOf(decodeRefundSettled),
	// the program (program.go)
	kindOf(decodeVenueSaved),
	kindOf(decodeSessionSaved),
	kindOf(decodeSpeakerSaved),
	kindOf(decodeSponsorSaved),
	kindOf(decodePerkSaved),
	kindOf(decodeProgramDeleted),
	kindOf(decodePerksBound),
	kindOf(decodePerkGranted),
	// the console (console.go)
	kindOf(decodeFormSaved),
	kindOf(decodePromoSaved),
	kindOf(decodeTranslationSaved),
	kindOf(decodeDescriptionSet),
}

// changeKind describes one kind of change for the codec and replay.
type changeKind struct {
	name string
	// decode reads a body into the change value.
	decode func(d *dec) Change
	// replay decodes a body and applies it without making a Change value
	// (no interface boxing on the replay path). It returns the decode
	// error, if any, before touching the state.
	replay func(s *State, d *dec, kind []byte) error
	// view: replay may read the body in place (unsafe string over the
	// record), because apply keeps nothing of it.
	view bool
}

// kindOf makes the descriptor of change type C from its body decoder; the
// name comes from C's ChangeKind, so it is written once.
func kindOf[C Change](decode func(d *dec) C) changeKind {
	var zero C
	return changeKind{
		name:   zero.ChangeKind(),
		decode: func(d *dec) Change { return decode(d) },
		replay: func(s *State, d *dec, kind []byte) error {
			c := decode(d)
			if err := d.end(kind); err != nil {
				return err
			}
			s.countDown()
			c.apply(s)
			s.trimHolds()
			return nil
		},
	}
}

// replayWith replaces the replay of a kind whose apply needs less than
// the decoded value; such a replay reads the record in place.
func (k changeKind) replayWith(f func(s *State, d *dec, kind []byte) error) changeKind {
	k.replay, k.view = f, true
	return k
}

// kindByName finds a change kind by its log name.
var kindByName = func() map[string]*changeKind {
	m := make(map[string]*changeKind, len(changeKinds))
	for i := range changeKinds {
		k := &changeKinds[i]
		if _, dup := m[k.name]; dup || k.name == "" || len(k.name) > 255 {
			panic(fmt.Sprintf("event: change kind %q registered twice or badly named", k.name))
		}
		m[k.name] = k
	}
	return m
}()
