package event

// PassChanged says whose wallet passes change with ch (decisions §21): the
// registrations regIDs (cancelled, confirmed, seated from the waitlist, the pass rotated),
// or with all every pass of the event (its name, time or location
// changed). A pass shows the registration's status and the event's name,
// start and venue; other changes leave passes as they are.
func PassChanged(ch Change) (regIDs []string, all bool) {
	switch c := ch.(type) {
	case RegistrationStatusChanged:
		return []string{c.ID}, false
	case PassRotated:
		return []string{c.ID}, false
	case WaitlistSeated:
		return c.RegistrationIDs, false
	case EventUpdated, LocationSet:
		// A ticket type's edits are mostly capacity and sale windows,
		// which no pass shows: a push to every holder for each would be a
		// storm during a drop. A renamed type shows at the next refresh.
		return nil, true
	}
	return nil, false
}
