package event

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Where the event takes place: a venue's name and its street address, set
// in the console. The ticket email shows it and its calendar file carries
// it as LOCATION, so a buyer's phone can route them there. (The program's
// venues are rooms inside it, with no address.)

// Bounds of a location, in characters.
const (
	MaxVenueLen   = 200
	MaxAddressLen = 500
)

// SetLocation replaces the event's location (console); an empty field
// clears that part.
type SetLocation struct {
	Venue   string `json:"venue" v:"maxLen=200" doc:"The venue's name, e.g. Kulturbrauerei; empty clears it."`
	Address string `json:"address" v:"maxLen=500" doc:"The street address, one line, e.g. Schönhauser Allee 36, 10435 Berlin; empty clears it."`
}

// GetLocation reads the event's location.
type GetLocation struct{}

// Location is where the event takes place.
type Location struct {
	EventID string  `json:"eventId" doc:"The event."`
	Venue   *string `json:"venue" doc:"The venue's name, null when not set."`
	Address *string `json:"address" doc:"The street address, null when not set."`
}

// LocationSet sets the event's location.
type LocationSet struct {
	At      time.Time `json:"at"`
	Venue   string    `json:"venue,omitempty"`
	Address string    `json:"address,omitempty"`
}

func (SetLocation) result(*Location) {}

func (c SetLocation) decide(m *Machine, now time.Time) (any, []Change, error) {
	venue, err := locationField("venue", c.Venue, MaxVenueLen)
	if err != nil {
		return nil, nil, err
	}
	address, err := locationField("address", c.Address, MaxAddressLen)
	if err != nil {
		return nil, nil, err
	}
	v := Location{EventID: m.s.ID, Venue: strp(venue), Address: strp(address)}
	if e := m.s.Event; e.Venue == venue && e.Address == address {
		return v, nil, nil
	}
	return v, []Change{LocationSet{At: now, Venue: venue, Address: address}}, nil
}

// locationField trims s to one line and bounds it.
func locationField(field, s string, maxLen int) (string, error) {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > maxLen {
		return "", FieldError(field, fmt.Sprintf("must be at most %d characters", maxLen))
	}
	return s, nil
}

func (GetLocation) result(*Location) {}

func (GetLocation) decide(m *Machine, _ time.Time) (any, []Change, error) {
	e := m.s.mustEvent()
	return Location{EventID: m.s.ID, Venue: strp(e.Venue), Address: strp(e.Address)}, nil, nil
}

// LocationText is the one line a calendar file and an email show: the
// venue and the address, comma separated, either alone when the other is
// not set.
func LocationText(venue, address string) string {
	switch {
	case venue == "":
		return address
	case address == "":
		return venue
	}
	return venue + ", " + address
}

// ChangeKind names the change in the log (its binary tag).
func (LocationSet) ChangeKind() string { return "event.location_set" }

func decodeLocationSet(d *dec) LocationSet {
	return LocationSet{At: d.time(), Venue: d.str(), Address: d.str()}
}

func (c LocationSet) appendBody(e enc) enc { return e.time(c.At).str(c.Venue).str(c.Address) }

func (c LocationSet) apply(s *State) {
	e := s.mustEvent()
	e.Venue, e.Address, e.UpdatedAt = c.Venue, c.Address, c.At
}
