package ics

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxLine is the longest content line, in octets without the CRLF, that
// Encode writes (RFC 5545 section 3.1).
const MaxLine = 75

// Methods of a calendar (RFC 5546): PUBLISH announces an event.
const MethodPublish = "PUBLISH"

// Event is the one event of a calendar file.
type Event struct {
	// UID identifies the event across updates: the same UID again
	// updates the entry an application already imported.
	UID string
	// Stamp is when the file was made (DTSTAMP).
	Stamp time.Time
	// Start is required; End may be zero (an event without an end).
	Start, End time.Time
	// TZID is the IANA time zone of the event ("Europe/Berlin"); empty,
	// UTC or unknown writes UTC times.
	TZID string
	// Summary is the title; Location, Description and URL are optional.
	Summary     string
	Location    string
	Description string
	URL         string
}

// Errors of Encode.
var (
	ErrNoUID    = errors.New("ics: event without a uid")
	ErrNoStart  = errors.New("ics: event without a start")
	ErrEndEarly = errors.New("ics: event ends before it starts")
)

const stampLayout = "20060102T150405"

// Encode writes e as a calendar file of method (MethodPublish).
func Encode(method string, e Event) ([]byte, error) {
	switch {
	case strings.TrimSpace(e.UID) == "":
		return nil, ErrNoUID
	case e.Start.IsZero():
		return nil, ErrNoStart
	case !e.End.IsZero() && e.End.Before(e.Start):
		return nil, ErrEndEarly
	}
	loc := zone(e.TZID)
	var b strings.Builder
	line := func(s string) { b.WriteString(Fold(s)) }
	line("BEGIN:VCALENDAR")
	line("VERSION:2.0")
	line("PRODID:-//ticketd//ticketd//EN")
	line("CALSCALE:GREGORIAN")
	line("METHOD:" + method)
	if loc != nil {
		to := e.End
		if to.IsZero() {
			to = e.Start
		}
		for _, l := range vtimezone(loc, e.Start, to) {
			line(l)
		}
	}
	line("BEGIN:VEVENT")
	line("UID:" + EscapeText(e.UID))
	line("DTSTAMP:" + e.Stamp.UTC().Format(stampLayout) + "Z")
	line("DTSTART" + dateTime(e.Start, loc))
	if !e.End.IsZero() {
		line("DTEND" + dateTime(e.End, loc))
	}
	line("SUMMARY:" + EscapeText(e.Summary))
	if e.Location != "" {
		line("LOCATION:" + EscapeText(e.Location))
	}
	if e.Description != "" {
		line("DESCRIPTION:" + EscapeText(e.Description))
	}
	if u := uri(e.URL); u != "" {
		line("URL:" + u)
	}
	line("STATUS:CONFIRMED")
	line("TRANSP:OPAQUE")
	line("END:VEVENT")
	line("END:VCALENDAR")
	return []byte(b.String()), nil
}

// zone loads name, or nil for UTC and names the database does not know.
func zone(name string) *time.Location {
	name = strings.TrimSpace(name)
	if name == "" || name == "UTC" || name == "Etc/UTC" || name == "Local" {
		return nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil
	}
	return loc
}

// dateTime is the parameters and value of a DATE-TIME property: local time
// with its TZID, or UTC.
func dateTime(t time.Time, loc *time.Location) string {
	if loc == nil {
		return ":" + t.UTC().Format(stampLayout) + "Z"
	}
	return ";TZID=" + loc.String() + ":" + t.In(loc).Format(stampLayout)
}

// vtimezone describes loc from the observance in effect at from to the
// one in effect at to: each STANDARD or DAYLIGHT block starts at its
// exact onset, written as the local time before it (TZOFFSETFROM), as RFC
// 5545 section 3.6.5 says.
func vtimezone(loc *time.Location, from, to time.Time) []string {
	out := []string{"BEGIN:VTIMEZONE", "TZID:" + loc.String()}
	start, end := from.In(loc).ZoneBounds()
	// A bound is at most a few hundred observances away even for a long
	// event; the cap keeps a corrupt zone from looping.
	for range 400 {
		at := start
		if at.IsZero() {
			at = from // the zone never changed before from
		}
		t := at.In(loc)
		name, offTo := t.Zone()
		offFrom := offTo
		onset := "19700101T000000"
		if !start.IsZero() {
			_, offFrom = start.Add(-time.Second).In(loc).Zone()
			onset = start.UTC().Add(time.Duration(offFrom) * time.Second).Format(stampLayout)
		}
		kind := "STANDARD"
		if t.IsDST() {
			kind = "DAYLIGHT"
		}
		out = append(out, "BEGIN:"+kind, "DTSTART:"+onset, "TZOFFSETFROM:"+offset(offFrom),
			"TZOFFSETTO:"+offset(offTo), "TZNAME:"+EscapeText(name), "END:"+kind)
		if end.IsZero() || end.After(to) {
			break
		}
		start, end = end.In(loc).ZoneBounds()
	}
	return append(out, "END:VTIMEZONE")
}

// offset writes a UTC offset in seconds as RFC 5545's utc-offset.
func offset(sec int) string {
	sign := '+'
	if sec < 0 {
		sign, sec = '-', -sec
	}
	s := fmt.Sprintf("%c%02d%02d", sign, sec/3600, sec/60%60)
	if sec%60 != 0 {
		s += fmt.Sprintf("%02d", sec%60)
	}
	return s
}

// EscapeText escapes s as a TEXT value: backslash, semicolon and comma
// are escaped, line breaks become \n, and other control characters
// (which TEXT cannot hold) are dropped.
func EscapeText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', ';', ',':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				continue // CRLF is one break
			}
			b.WriteString(`\n`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteByte(c)
		default:
			if c < 0x20 || c == 0x7f {
				continue
			}
			b.WriteByte(c)
		}
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// uri keeps a URI value on its line: it is not TEXT, so nothing is
// escaped, but a line break or space would end or corrupt the property.
func uri(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// Fold writes one content line: folded into chunks of at most MaxLine
// octets (the leading space of a continuation counts), each ended by CRLF,
// never splitting a UTF-8 sequence.
func Fold(line string) string {
	var b strings.Builder
	b.Grow(len(line) + len(line)/MaxLine*3 + 2)
	limit := MaxLine
	for len(line) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		b.WriteString(line[:cut])
		b.WriteString("\r\n ")
		line = line[cut:]
		limit = MaxLine - 1
	}
	b.WriteString(line)
	b.WriteString("\r\n")
	return b.String()
}
