package event

import "time"

// Seating from the waitlist: when places of a ticket type come free (a
// cancel, a lapsed or released hold, a refund, more capacity), its
// waitlisted registrations take them, oldest first, and are confirmed; each
// is owed the ticket email worded as the news it is. The code says
// "seated from the waitlist" for this, never "promotion", which is a
// promotion code (promocodes.go). The log kind stays "waitlist.promoted" and
// the mail kind "promotion": both are stored bytes.

// WaitlistSeated says these waitlisted registrations were seated from the
// waitlist: they took places that came free (each is confirmed by a
// RegistrationStatusChanged of the same batch). It is the seating's
// TicketIssued: it owes each one its ticket email, worded as the news it is
// (a place opened up), and changes nothing in the state. Its log kind is
// "waitlist.promoted", the name it had before it was renamed.
type WaitlistSeated struct {
	At              time.Time `json:"at"`
	RegistrationIDs []string  `json:"regs"`
}

// ChangeKind names the change in the log (its binary tag).
func (WaitlistSeated) ChangeKind() string { return "waitlist.promoted" }

func decodeWaitlistSeated(d *dec) WaitlistSeated {
	return WaitlistSeated{At: d.time(), RegistrationIDs: d.strs()}
}

func (c WaitlistSeated) appendBody(e enc) enc { return e.time(c.At).strs(c.RegistrationIDs) }

func (c WaitlistSeated) apply(*State) {
	// Nothing to do: the shell reads it to queue the emails.
}

// seatFromWaitlist returns the waitlisted registrations of t that take the
// places free in t plus extra, oldest first, skipping skip.
func (m *Machine) seatFromWaitlist(now time.Time, t *TicketTypeRec, extra int, skip string) []string {
	free := t.room()
	if free < unlimited {
		free += extra
	}
	var out []string
	for _, id := range m.s.idx.waitlist[t.ID] {
		if len(out) >= free {
			break
		}
		if id != skip {
			out = append(out, id)
		}
	}
	return out
}

// appendWaitlistSeated confirms the registrations ids seated from the
// waitlist and says they are owed their ticket email.
func appendWaitlistSeated(changes []Change, now time.Time, ids []string) []Change {
	if len(ids) == 0 {
		return changes
	}
	for _, id := range ids {
		changes = append(changes, RegistrationStatusChanged{At: now, ID: id, Status: RegConfirmed})
	}
	return append(changes, WaitlistSeated{At: now, RegistrationIDs: ids})
}
