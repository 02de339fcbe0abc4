package event

import (
	"fmt"
	"net/url"
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
	MaxOnlineLen  = 2000
)

// SetLocation replaces the event's location (admin API, web console); an empty field
// clears that part.
type SetLocation struct {
	Venue   string `json:"venue" v:"maxLen=200" doc:"The venue's name, e.g. Kulturbrauerei; empty clears it."`
	Address string `json:"address" v:"maxLen=500" doc:"The street address, one line, e.g. Schönhauser Allee 36, 10435 Berlin; empty clears it."`
	// OnlineURL is where an online (or hybrid) event is joined.
	OnlineURL string `json:"onlineUrl,omitempty" v:"maxLen=2000" doc:"The link to join the event online (an http or https address), for an online or hybrid event; empty or absent clears it."`
}

// GetLocation reads the event's location.
type GetLocation struct{}

// Location is where the event takes place.
type Location struct {
	EventID   string  `json:"eventId" doc:"The event."`
	Venue     *string `json:"venue" doc:"The venue's name, null when not set."`
	Address   *string `json:"address" doc:"The street address, null when not set."`
	OnlineURL *string `json:"onlineUrl" doc:"The link to join the event online, null when not set."`
}

// LocationSet sets the event's location.
type LocationSet struct {
	At      time.Time `json:"at"`
	Venue   string    `json:"venue,omitempty"`
	Address string    `json:"address,omitempty"`
	// OnlineURL was appended to the record (an older record has none).
	OnlineURL string `json:"onlineUrl,omitempty"`
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
	online, err := locationField("onlineUrl", c.OnlineURL, MaxOnlineLen)
	if err != nil {
		return nil, nil, err
	}
	if online != "" {
		u, perr := url.Parse(online)
		if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, nil, FieldError("onlineUrl", "must be an http or https address, such as https://meet.example.com/gopher-night")
		}
	}
	v := Location{EventID: m.s.ID, Venue: strp(venue), Address: strp(address), OnlineURL: strp(online)}
	if e := m.s.Event; e.Venue == venue && e.Address == address && e.OnlineURL == online {
		return v, nil, nil
	}
	return v, []Change{LocationSet{At: now, Venue: venue, Address: address, OnlineURL: online}}, nil
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
	return Location{EventID: m.s.ID, Venue: strp(e.Venue), Address: strp(e.Address), OnlineURL: strp(e.OnlineURL)}, nil, nil
}

// PlaceText is LocationText with the online link after it, for a mail
// and its calendar file.
func PlaceText(venue, address, online string) string {
	t := LocationText(venue, address)
	switch {
	case online == "":
		return t
	case t == "":
		return online
	}
	return t + " · " + online
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
	// OnlineURL is last: a record written before it existed reads "".
	return LocationSet{At: d.time(), Venue: d.str(), Address: d.str(), OnlineURL: d.str()}
}

func (c LocationSet) appendBody(e enc) enc {
	return e.time(c.At).str(c.Venue).str(c.Address).str(c.OnlineURL)
}

func (c LocationSet) apply(s *State) {
	e := s.mustEvent()
	e.Venue, e.Address, e.OnlineURL, e.UpdatedAt = c.Venue, c.Address, c.OnlineURL, c.At
}
