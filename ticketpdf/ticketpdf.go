package ticketpdf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-pdf/fpdf"
	qrcode "github.com/skip2/go-qrcode"
)

// Layout bounds, in millimetres on an A4 page.
const (
	// QRSizeMM is the printed side of the QR code: at 25 modules plus the
	// quiet zone a module is over 2 mm, which a phone camera reads from
	// paper at arm's length.
	QRSizeMM = 70.0
	// qrModulePixels is the pixels of one QR module in the embedded
	// image: the PDF scales it up without smoothing (no /Interpolate), so
	// edges print sharp at any size, and a small image is cheap to encode
	// and embed (pdftoppm at 150 dpi and zbarimg read it back).
	qrModulePixels = 4
	marginMM       = 20.0
	// textMax bounds each text field, in characters: a field is one line
	// or a wrapped paragraph, never a page of its own.
	textMax = 200
)

// ErrNoCode: a ticket without a check-in code cannot admit anyone.
var ErrNoCode = errors.New("ticketpdf: ticket has no check-in code")

// Ticket is what the PDF prints. Times are shown in Timezone (an IANA
// name; UTC when empty or unknown).
type Ticket struct {
	EventName   string
	Attendee    string // the registration's name, or its email when it has none
	Email       string
	TicketType  string
	StartsAt    *time.Time
	EndsAt      *time.Time
	Timezone    string
	Venue       string
	Address     string
	CheckinCode string
	// Issuer is the line under the title (the service's or unit's name);
	// empty: none.
	Issuer string
}

// When formats the ticket's start (and end on the same day) in its
// event's time zone, "" without a start.
func (t Ticket) When() string {
	if t.StartsAt == nil {
		return ""
	}
	loc, err := time.LoadLocation(t.Timezone)
	if err != nil || t.Timezone == "" {
		loc = time.UTC
	}
	s := t.StartsAt.In(loc)
	out := s.Format("Monday 2 January 2006, 15:04")
	if t.EndsAt != nil {
		e := t.EndsAt.In(loc)
		if e.YearDay() == s.YearDay() && e.Year() == s.Year() {
			out += " - " + e.Format("15:04")
		} else {
			out += " - " + e.Format("Monday 2 January 2006, 15:04")
		}
	}
	return out + " " + zoneLabel(s, t.Timezone)
}

// zoneLabel names the zone as a reader knows it: the abbreviation when
// the zone has one (CET), else its IANA name.
func zoneLabel(t time.Time, tz string) string {
	abbr := t.Format("MST")
	if tz == "" {
		return "UTC"
	}
	if strings.HasPrefix(abbr, "+") || strings.HasPrefix(abbr, "-") {
		return "(" + tz + ")"
	}
	return abbr + " (" + tz + ")"
}

// Render writes t's one-page PDF to w.
func Render(w io.Writer, t Ticket) error {
	if strings.TrimSpace(t.CheckinCode) == "" {
		return ErrNoCode
	}
	png, err := qrcode.Encode(t.CheckinCode, qrcode.Medium, -qrModulePixels)
	if err != nil {
		return fmt.Errorf("ticketpdf: qr code: %w", err)
	}
	pdf := fpdf.New("P", "mm", "A4", "")
	// A fixed creation date: the same ticket renders the same bytes.
	// The page is a few hundred bytes of text operators and the QR image
	// is a PNG stream already: compressing would cost a flate writer per
	// stream (most of the allocations) to save a kilobyte.
	pdf.SetCompression(false)
	pdf.SetCreationDate(time.Unix(0, 0).UTC())
	pdf.SetModificationDate(time.Unix(0, 0).UTC())
	pdf.SetTitle(Transliterate("Ticket: "+t.EventName), false)
	pdf.SetCreator("ticketd", false)
	pdf.SetMargins(marginMM, marginMM, marginMM)
	pdf.SetAutoPageBreak(false, marginMM)
	pdf.AddPage()
	pageW, _ := pdf.GetPageSize()
	width := pageW - 2*marginMM
	tr := func(s string) string { return Transliterate(clip(s)) }

	pdf.SetFont("Helvetica", "B", 24)
	pdf.MultiCell(width, 11, tr(t.EventName), "", "L", false)
	if t.Issuer != "" {
		pdf.SetFont("Helvetica", "", 11)
		pdf.SetTextColor(90, 96, 104)
		pdf.MultiCell(width, 6, tr(t.Issuer), "", "L", false)
		pdf.SetTextColor(0, 0, 0)
	}
	pdf.Ln(4)
	pdf.SetDrawColor(200, 204, 210)
	pdf.Line(marginMM, pdf.GetY(), pageW-marginMM, pdf.GetY())
	pdf.Ln(6)

	field := func(label, value string) {
		if value == "" {
			return
		}
		pdf.SetFont("Helvetica", "", 10)
		pdf.SetTextColor(90, 96, 104)
		pdf.CellFormat(width, 5, label, "", 1, "L", false, 0, "")
		pdf.SetFont("Helvetica", "", 14)
		pdf.SetTextColor(0, 0, 0)
		pdf.MultiCell(width, 7, tr(value), "", "L", false)
		pdf.Ln(3)
	}
	field("ATTENDEE", t.Attendee)
	if t.Email != "" && t.Email != t.Attendee {
		field("EMAIL", t.Email)
	}
	field("TICKET", t.TicketType)
	field("DATE", t.When())
	where := t.Venue
	if t.Address != "" {
		if where != "" {
			where += ", "
		}
		where += t.Address
	}
	field("VENUE", where)

	pdf.Ln(4)
	opt := fpdf.ImageOptions{ImageType: "PNG", ReadDpi: false}
	pdf.RegisterImageOptionsReader("qr", opt, bytes.NewReader(png))
	x := (pageW - QRSizeMM) / 2
	pdf.ImageOptions("qr", x, pdf.GetY(), QRSizeMM, QRSizeMM, false, opt, 0, "")
	pdf.SetY(pdf.GetY() + QRSizeMM + 3)
	pdf.SetFont("Courier", "B", 16)
	pdf.CellFormat(width, 8, t.CheckinCode, "", 1, "C", false, 0, "")
	pdf.SetFont("Helvetica", "", 10)
	pdf.SetTextColor(90, 96, 104)
	pdf.CellFormat(width, 6, "Show this code at the entrance, printed or on your phone.", "", 1, "C", false, 0, "")
	pdf.CellFormat(width, 6, "It admits one person once. Keep it to yourself.", "", 1, "C", false, 0, "")
	if err := pdf.Error(); err != nil {
		return fmt.Errorf("ticketpdf: %w", err)
	}
	if err := pdf.Output(w); err != nil {
		return fmt.Errorf("ticketpdf: write: %w", err)
	}
	return nil
}

// clip bounds a field to textMax characters.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= textMax {
		return s
	}
	r := []rune(s)
	return string(r[:textMax-1]) + "…"
}

// Transliterate maps s to the Windows-1252 bytes the core fonts print:
// characters outside it become "?".
func Transliterate(s string) string {
	var b strings.Builder
	for _, r := range s {
		if c, ok := cp1252(r); ok {
			b.WriteByte(c)
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

// cp1252 is r's byte in Windows-1252.
func cp1252(r rune) (byte, bool) {
	switch {
	case r < 0x80:
		return byte(r), r >= 0x20 || r == '\n'
	case r >= 0xA0 && r <= 0xFF:
		return byte(r), true
	}
	if c, ok := cp1252High[r]; ok {
		return c, true
	}
	return 0, false
}

// cp1252High maps the characters Windows-1252 puts at 0x80-0x9F.
var cp1252High = map[rune]byte{
	'€': 0x80, '‚': 0x82, 'ƒ': 0x83, '„': 0x84, '…': 0x85, '†': 0x86, '‡': 0x87, 'ˆ': 0x88, '‰': 0x89,
	'Š': 0x8A, '‹': 0x8B, 'Œ': 0x8C, 'Ž': 0x8E, '‘': 0x91, '’': 0x92, '“': 0x93, '”': 0x94, '•': 0x95,
	'–': 0x96, '—': 0x97, '˜': 0x98, '™': 0x99, 'š': 0x9A, '›': 0x9B, 'œ': 0x9C, 'ž': 0x9E, 'Ÿ': 0x9F,
}
