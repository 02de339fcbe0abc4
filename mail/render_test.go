package mail

import (
	"bytes"
	"mime"
	netmail "net/mail"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/outbox"
)

func TestMoney(t *testing.T) {
	for m, want := range map[event.Money]string{0: "EUR 0.00", 5: "EUR 0.05", 1850: "EUR 18.50", 123456: "EUR 1234.56", -500: "-EUR 5.00"} {
		require.Equal(t, want, Money("eur", m))
	}
}

// paidTicket is the ticket mail of a paid order in Berlin in summer.
func paidTicket(t *testing.T) TicketMail {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	tm := ticket(InboxPrefix+"evt_1/0000000000000009-0000", "ada@example.com")
	starts, ends := time.Date(2027, 6, 12, 19, 30, 0, 0, loc).UTC(), time.Date(2027, 6, 12, 23, 0, 0, 0, loc).UTC()
	tm.Timezone, tm.StartsAt, tm.EndsAt = "Europe/Berlin", &starts, &ends
	tm.Location = "Kulturbrauerei, Schönhauser Allee 36, Berlin"
	tm.OrderID, tm.OrderNumber, tm.OrderURL = "ord_1", "EVT1-ABCD2345", "https://tickets.example.com/orders/EVT1-ABCD2345"
	tm.Currency = "EUR"
	tm.Lines = []ReceiptLine{{Name: "General admission", Quantity: 1, UnitPrice: 1850}, {Name: "Workshop", Quantity: 2, UnitPrice: 1000}}
	tm.Discount, tm.Total = 500, 3350
	tm.PaidAt = time.Date(2027, 5, 3, 8, 15, 0, 0, time.UTC) // 10:15 CEST
	return tm
}

func render(t *testing.T, tm TicketMail) ([]byte, Message) {
	t.Helper()
	m, err := New(Config{From: "Tickets <tickets@example.com>"}, openStore(t))
	require.NoError(t, err)
	msg, err := m.Render(tm)
	require.NoError(t, err)
	var b bytes.Buffer
	_, err = msg.WriteTo(&b)
	require.NoError(t, err)
	got, err := ParseMessage(b.Bytes())
	require.NoError(t, err)
	return b.Bytes(), got
}

func TestTicketEmailCarriesReceiptAndCalendar(t *testing.T) {
	tm := paidTicket(t)
	raw, got := render(t, tm)
	top, err := netmail.ReadMessage(bytes.NewReader(raw))
	require.NoError(t, err)
	mt, _, err := mime.ParseMediaType(top.Header.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "multipart/mixed", mt)
	require.Equal(t, "Your ticket: Go Meetup <Berlin>", got.Headers["Subject"])

	for part, body := range map[string]string{"text": got.Text, "html": got.HTML} {
		for _, want := range []string{"EVT1-ABCD2345", "General admission", "EUR 18.50", "Workshop", "EUR 10.00", "EUR 20.00",
			"-EUR 5.00", "EUR 33.50", "Mon 3 May 2027, 10:15 CEST", "Sat 12 Jun 2027, 19:30 to 23:00 (Europe/Berlin)"} {
			require.Contains(t, body, want, "%s part", part)
		}
	}
	require.Contains(t, got.Text, "Workshop: 2 x EUR 10.00 = EUR 20.00")
	require.Contains(t, got.Text, "Total paid: EUR 33.50")
	require.Contains(t, got.Text, "Where: Kulturbrauerei, Schönhauser Allee 36, Berlin")

	require.Len(t, got.Attachments, 1)
	a := got.Attachments[0]
	require.Equal(t, CalendarFile, a.Filename)
	ct, params, err := mime.ParseMediaType(a.ContentType)
	require.NoError(t, err)
	require.Equal(t, "text/calendar", ct)
	require.Equal(t, "PUBLISH", params["method"])
	require.Equal(t, "UTF-8", params["charset"])
	cal := strings.ReplaceAll(string(a.Content), "\r\n ", "")
	require.Contains(t, cal, "DTSTART;TZID=Europe/Berlin:20270612T193000\r\n")
	require.Contains(t, cal, "DTEND;TZID=Europe/Berlin:20270612T230000\r\n")
	require.Contains(t, cal, "BEGIN:VTIMEZONE\r\nTZID:Europe/Berlin\r\n")
	require.Contains(t, cal, `LOCATION:Kulturbrauerei\, Schönhauser Allee 36\, Berlin`+"\r\n")
	require.Contains(t, cal, "UID:reg_1@tickets.example.com\r\n")
	require.Contains(t, cal, "URL:"+tm.PassURL+"\r\n")
}

func TestFreeTicketHasCalendarButNoReceipt(t *testing.T) {
	tm := paidTicket(t)
	tm.Lines, tm.Discount, tm.Total, tm.PaidAt, tm.Currency = nil, 0, 0, time.Time{}, ""
	_, got := render(t, tm)
	require.NotContains(t, got.Text, "Receipt")
	require.NotContains(t, got.Text, "EUR")
	require.NotContains(t, got.HTML, "Receipt")
	require.Len(t, got.Attachments, 1)
	require.Contains(t, string(got.Attachments[0].Content), "DTSTART;TZID=Europe/Berlin:20270612T193000")

	// Without a start there is nothing to put in a calendar: no file, and
	// the message stays multipart/alternative.
	tm.StartsAt, tm.EndsAt = nil, nil
	raw, got := render(t, tm)
	require.Empty(t, got.Attachments)
	top, err := netmail.ReadMessage(bytes.NewReader(raw))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(top.Header.Get("Content-Type"), "multipart/alternative"))
}

func TestRefundCancellationAndPromotionEmails(t *testing.T) {
	base := paidTicket(t)
	refund := func(full bool, amount, refunded event.Money) TicketMail {
		tm := base
		tm.Kind, tm.Lines, tm.PaidAt, tm.Discount = MailRefund, nil, time.Time{}, 0
		tm.RefundID, tm.RefundAmount, tm.RefundFull, tm.Refunded, tm.Reason = "rf_1", amount, full, refunded, "cannot come"
		if !full {
			tm.RegistrationID = ""
		}
		return tm
	}
	_, got := render(t, refund(false, 1000, 1000))
	require.Equal(t, "Refund of order EVT1-ABCD2345: Go Meetup <Berlin>", got.Headers["Subject"])
	require.Contains(t, got.Text, "we refunded EUR 10.00 of your order EVT1-ABCD2345")
	require.Contains(t, got.Text, "Refunded in all: EUR 10.00 of EUR 33.50")
	require.Contains(t, got.Text, "partial refund")
	require.Contains(t, got.Text, "Reason: cannot come")
	require.Contains(t, got.HTML, "EUR 10.00")
	require.Empty(t, got.Attachments, "a refund carries no calendar file")

	_, got = render(t, refund(true, 2350, 3350))
	require.Contains(t, got.Text, "Refunded now: EUR 23.50")
	require.Contains(t, got.Text, "This refunds the order in full; its ticket is cancelled.")
	require.Contains(t, got.HTML, "This refunds the order in full; its ticket is cancelled.")

	reg := base
	reg.Kind, reg.Lines, reg.Reason = MailCancellation, nil, ""
	_, got = render(t, reg)
	require.Equal(t, "Your registration is cancelled: Go Meetup <Berlin>", got.Headers["Subject"])
	require.Contains(t, got.Text, "Its entry pass no longer admits you.")
	require.NotContains(t, got.Text, base.PassURL)
	require.Empty(t, got.Attachments)

	ord := reg
	ord.RegistrationID = ""
	_, got = render(t, ord)
	require.Equal(t, "Order EVT1-ABCD2345 cancelled: Go Meetup <Berlin>", got.Headers["Subject"])
	require.Contains(t, got.Text, "no payment was taken")
	require.Contains(t, got.Text, "Your order: "+base.OrderURL)

	promo := base
	promo.Kind, promo.Lines = MailWaitlistSeated, nil
	_, got = render(t, promo)
	require.Equal(t, "A place opened up: Go Meetup <Berlin>", got.Headers["Subject"])
	require.Contains(t, got.Text, "You were on the waitlist")
	require.Contains(t, got.Text, base.PassURL)
	require.Contains(t, got.HTML, "Open your entry pass")
	require.Len(t, got.Attachments, 1, "the promotion is a ticket: it has the calendar file")

	bad := base
	bad.Kind = "postcard"
	m, err := New(Config{}, openStore(t))
	require.NoError(t, err)
	_, err = m.Render(bad)
	require.ErrorContains(t, err, "unknown outbox kind")
}

func TestPreviewRendersAQueuedEntry(t *testing.T) {
	s := openStore(t)
	tm := paidTicket(t)
	owe(t, s, tm)
	m, err := New(Config{From: "Tickets <tickets@example.com>"}, s) // no SMTP: the mail waits
	require.NoError(t, err)
	id := strings.TrimPrefix(tm.Key, InboxPrefix)
	e, raw, err := m.Preview(id)
	require.NoError(t, err)
	require.Equal(t, outbox.Pending, e.State)
	require.Equal(t, "EVT1-ABCD2345", e.OrderNumber)
	got, err := ParseMessage(raw)
	require.NoError(t, err)
	require.Equal(t, "ada@example.com", strings.Trim(got.Headers["To"], "<>"))
	require.Contains(t, got.Text, "Total paid: EUR 33.50")
	require.Equal(t, CalendarFile, got.Attachments[0].Filename)
	// Previewing sends and changes nothing.
	p, err := m.Pending("", 10)
	require.NoError(t, err)
	require.Len(t, p, 1)
	require.Equal(t, 0, p[0].Attempts)

	_, _, err = m.Preview("evt_1/00000000000000ff-0000")
	require.ErrorIs(t, err, outbox.ErrNotFound)
}
