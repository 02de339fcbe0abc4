// Package ics encodes the calendar file a ticket email attaches: one
// VCALENDAR with one VEVENT, as RFC 5545 writes it, so that calendar
// applications (Apple Calendar, Google Calendar, Outlook, Thunderbird)
// import it as the event it is.
//
// # Byte format
//
// Content lines end in CRLF and are folded at 75 octets (a continuation
// line starts with one space; a UTF-8 sequence is never split). TEXT
// values escape backslash, semicolon, comma and line breaks; other control
// characters are dropped. Times are written in the event's IANA time zone
// (DTSTART;TZID=...) with a VTIMEZONE built from the Go time zone
// database: one observance per offset in effect from the start to the end
// of the event, each with its exact onset, so no recurrence rule has to
// be trusted. A zone the database does not know, and UTC itself, are
// written in UTC form ("...Z") without a VTIMEZONE.
//
// # Concurrency
//
// The package is pure: no state, no I/O; every function is safe from any
// goroutine.
package ics
