package event

import "time"

// WaitlistPromoted says these waitlisted registrations took places that
// came free (each is confirmed by a RegistrationStatusChanged of the same
// batch). It is the promotion's TicketIssued: it owes each one its ticket
// email, worded as the news it is (a place opened up), and changes
// nothing in the state.
type WaitlistPromoted struct {
	At              time.Time `json:"at"`
	RegistrationIDs []string  `json:"regs"`
}

// ChangeKind names the change in the log (its binary tag).
func (WaitlistPromoted) ChangeKind() string { return "waitlist.promoted" }

func decodeWaitlistPromoted(d *dec) WaitlistPromoted {
	return WaitlistPromoted{At: d.time(), RegistrationIDs: d.strs()}
}

func (c WaitlistPromoted) appendBody(e enc) enc { return e.time(c.At).strs(c.RegistrationIDs) }

func (c WaitlistPromoted) apply(*State) {
	// Nothing to do: the shell reads it to queue the emails.
}
