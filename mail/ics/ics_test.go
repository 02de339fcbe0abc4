package ics

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// unfold undoes Fold over a whole file and checks its line discipline:
// CRLF only, no physical line above MaxLine octets, valid UTF-8 on every
// physical line (no sequence split by a fold).
func unfold(t *testing.T, b []byte) []string {
	t.Helper()
	s := string(b)
	require.True(t, strings.HasSuffix(s, "\r\n"), "ends in CRLF")
	require.NotContains(t, strings.ReplaceAll(s, "\r\n", ""), "\n", "bare LF")
	require.NotContains(t, strings.ReplaceAll(s, "\r\n", ""), "\r", "bare CR")
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(s, "\r\n"), "\r\n") {
		require.LessOrEqual(t, len(l), MaxLine, "line %q", l)
		require.True(t, utf8.ValidString(l), "fold split a UTF-8 sequence: %q", l)
		if strings.HasPrefix(l, " ") {
			require.NotEmpty(t, out, "continuation first")
			out[len(out)-1] += l[1:]
			continue
		}
		out = append(out, l)
	}
	return out
}

func prop(lines []string, name string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, name+":") || strings.HasPrefix(l, name+";") {
			out = append(out, l)
		}
	}
	return out
}

func TestFold(t *testing.T) {
	require.Equal(t, "SUMMARY:short\r\n", Fold("SUMMARY:short"))
	exact := "X:" + strings.Repeat("a", MaxLine-2)
	require.Equal(t, exact+"\r\n", Fold(exact), "75 octets stay on one line")
	long := "X:" + strings.Repeat("a", MaxLine-1)
	require.Equal(t, "X:"+strings.Repeat("a", MaxLine-2)+"\r\n a\r\n", Fold(long))

	// Multi-byte characters straddling every fold point: none is cut.
	for pad := range 4 {
		line := "SUMMARY:" + strings.Repeat("x", pad) + strings.Repeat("é€😀", 40)
		got := unfold(t, []byte(Fold(line)))
		require.Equal(t, []string{line}, got)
	}
}

func TestEscapeText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                  "plain",
		`a\b`:                    `a\\b`,
		"Hall A, Floor 2; left":  `Hall A\, Floor 2\; left`,
		"line1\nline2\r\nline3":  `line1\nline2\nline3`,
		"bell\x07 and\ttab":      "bell and\ttab",
		"caf\xc3\xa9 \xff bytes": "café \uFFFD bytes",
	} {
		require.Equal(t, want, EscapeText(in), "escape %q", in)
	}
}

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	return loc
}

func TestEncodeInTheEventsZone(t *testing.T) {
	loc := berlin(t)
	start := time.Date(2027, 6, 12, 19, 30, 0, 0, loc)
	b, err := Encode(MethodPublish, Event{
		UID: "reg_01@tickets.example.com", Stamp: time.Date(2027, 5, 1, 10, 0, 0, 0, time.UTC),
		Start: start, End: start.Add(3 * time.Hour), TZID: "Europe/Berlin",
		Summary: "Gopher Night, 2027; the sequel", Location: "Kulturbrauerei, Schönhauser Allee 36, 10435 Berlin",
		Description: "Your pass:\nhttps://tickets.example.com/pass/x", URL: "https://tickets.example.com/pass/tok?a=1&b=2",
	})
	require.NoError(t, err)
	l := unfold(t, b)
	require.Equal(t, "BEGIN:VCALENDAR", l[0])
	require.Equal(t, "END:VCALENDAR", l[len(l)-1])
	require.Equal(t, []string{"METHOD:PUBLISH"}, prop(l, "METHOD"))
	require.Equal(t, []string{"DTSTART;TZID=Europe/Berlin:20270612T193000"}, prop(l, "DTSTART")[len(prop(l, "DTSTART"))-1:])
	require.Equal(t, []string{"DTEND;TZID=Europe/Berlin:20270612T223000"}, prop(l, "DTEND"))
	require.Equal(t, []string{"DTSTAMP:20270501T100000Z"}, prop(l, "DTSTAMP"))
	require.Equal(t, []string{`SUMMARY:Gopher Night\, 2027\; the sequel`}, prop(l, "SUMMARY"))
	require.Equal(t, []string{`LOCATION:Kulturbrauerei\, Schönhauser Allee 36\, 10435 Berlin`}, prop(l, "LOCATION"))
	require.Equal(t, []string{`DESCRIPTION:Your pass:\nhttps://tickets.example.com/pass/x`}, prop(l, "DESCRIPTION"))
	require.Equal(t, []string{"URL:https://tickets.example.com/pass/tok?a=1&b=2"}, prop(l, "URL"))
	require.Equal(t, []string{"UID:reg_01@tickets.example.com"}, prop(l, "UID"))

	// The zone: one summer-time observance covers the event, starting at
	// the March 2027 change (02:00 CET becomes 03:00 CEST).
	tz := strings.Join(l[indexOf(l, "BEGIN:VTIMEZONE"):indexOf(l, "END:VTIMEZONE")+1], "\n")
	require.Equal(t, strings.Join([]string{"BEGIN:VTIMEZONE", "TZID:Europe/Berlin",
		"BEGIN:DAYLIGHT", "DTSTART:20270328T020000", "TZOFFSETFROM:+0100", "TZOFFSETTO:+0200", "TZNAME:CEST", "END:DAYLIGHT",
		"END:VTIMEZONE"}, "\n"), tz)
	require.Less(t, indexOf(l, "END:VTIMEZONE"), indexOf(l, "BEGIN:VEVENT"), "the zone comes before the event using it")
}

func indexOf(l []string, s string) int {
	for i, x := range l {
		if x == s {
			return i
		}
	}
	return -1
}

func TestEncodeAcrossAnOffsetChange(t *testing.T) {
	loc := berlin(t)
	// A weekend festival over the October 2027 change back to CET.
	start := time.Date(2027, 10, 30, 12, 0, 0, 0, loc)
	end := time.Date(2027, 10, 31, 18, 0, 0, 0, loc)
	b, err := Encode(MethodPublish, Event{UID: "u", Start: start, End: end, TZID: "Europe/Berlin", Summary: "Fest"})
	require.NoError(t, err)
	l := unfold(t, b)
	require.Equal(t, []string{"DTSTART;TZID=Europe/Berlin:20271030T120000", "DTSTART:20270328T020000", "DTSTART:20271031T030000"},
		[]string{prop(l, "DTSTART")[2], prop(l, "DTSTART")[0], prop(l, "DTSTART")[1]})
	require.Equal(t, []string{"TZOFFSETFROM:+0100", "TZOFFSETFROM:+0200"}, prop(l, "TZOFFSETFROM"))
	require.Equal(t, []string{"TZOFFSETTO:+0200", "TZOFFSETTO:+0100"}, prop(l, "TZOFFSETTO"))
	require.Contains(t, l, "BEGIN:STANDARD")
	require.Equal(t, []string{"DTEND;TZID=Europe/Berlin:20271031T180000"}, prop(l, "DTEND"))
}

func TestEncodeZonesWithoutChangesAndUTC(t *testing.T) {
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)
	start := time.Date(2027, 1, 5, 9, 0, 0, 0, kolkata)
	b, err := Encode(MethodPublish, Event{UID: "u", Start: start, TZID: "Asia/Kolkata", Summary: "S"})
	require.NoError(t, err)
	l := unfold(t, b)
	require.Contains(t, l, "DTSTART;TZID=Asia/Kolkata:20270105T090000")
	require.Contains(t, l, "TZOFFSETTO:+0530")
	require.Empty(t, prop(l, "DTEND"), "no end given, none written")

	for _, tz := range []string{"", "UTC", "Mars/Olympus_Mons"} {
		b, err := Encode(MethodPublish, Event{UID: "u", Start: start, End: start.Add(time.Hour), TZID: tz, Summary: "S"})
		require.NoError(t, err)
		l := unfold(t, b)
		require.Equal(t, []string{"DTSTART:20270105T033000Z"}, prop(l, "DTSTART"), "zone %q", tz)
		require.Equal(t, []string{"DTEND:20270105T043000Z"}, prop(l, "DTEND"), "zone %q", tz)
		require.NotContains(t, l, "BEGIN:VTIMEZONE")
	}
}

func TestEncodeRefusesWhatNoCalendarCanImport(t *testing.T) {
	now := time.Now()
	_, err := Encode(MethodPublish, Event{Start: now})
	require.ErrorIs(t, err, ErrNoUID)
	_, err = Encode(MethodPublish, Event{UID: "u"})
	require.ErrorIs(t, err, ErrNoStart)
	_, err = Encode(MethodPublish, Event{UID: "u", Start: now, End: now.Add(-time.Minute)})
	require.ErrorIs(t, err, ErrEndEarly)
}
