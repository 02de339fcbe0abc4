package mail

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"ticketd/event"
	"ticketd/mail/ics"
)

// CalendarType is the media type of the calendar file a ticket email
// attaches (RFC 5545 section 8.1, with the method RFC 5546 asks for).
const CalendarType = "text/calendar; method=PUBLISH; charset=UTF-8"

// CalendarFile is the attachment's file name.
const CalendarFile = "event.ics"

// Render builds the email of a mail inbox entry: a text part and an HTML
// alternative saying the same, and for a ticket whose event has a start
// the calendar file as an attachment (then the message is
// multipart/mixed).
func (m *Mailer) Render(tm TicketMail) (*gomail.Msg, error) {
	if tm.Kind == MailInvitation || tm.Kind == MailReset {
		return m.renderLink(tm)
	}
	v, err := newView(tm)
	if err != nil {
		return nil, err
	}
	if v.Ticket && tm.PassURL != "" {
		v.PDFURL = under(tm.PassURL, "ticket.pdf")
		if m.cfg.AppleWallet {
			v.AppleURL = under(tm.PassURL, "wallet.pkpass")
		}
		if m.cfg.GoogleWallet {
			v.GoogleURL = under(tm.PassURL, "google-wallet")
		}
	}
	msg := gomail.NewMsg(gomail.WithCharset(gomail.CharsetUTF8))
	if err := msg.From(m.cfg.From); err != nil {
		return nil, fmt.Errorf("mail: from: %w", err)
	}
	if err := msg.To(tm.Email); err != nil {
		return nil, fmt.Errorf("mail: to %q: %w", tm.Email, err)
	}
	msg.Subject(oneLine(v.Subject))
	msg.SetDateWithValue(m.cfg.Now())
	msg.SetMessageID()
	var text, html strings.Builder
	if err := m.text.Execute(&text, v); err != nil {
		return nil, fmt.Errorf("mail: render text: %w", err)
	}
	if err := m.html.Execute(&html, v); err != nil {
		return nil, fmt.Errorf("mail: render html: %w", err)
	}
	msg.SetBodyString(gomail.TypeTextPlain, text.String())
	msg.AddAlternativeString(gomail.TypeTextHTML, html.String())
	if v.Ticket && tm.StartsAt != nil {
		cal, err := Calendar(tm)
		if err != nil {
			return nil, err
		}
		if err := msg.AttachReader(CalendarFile, bytes.NewReader(cal),
			gomail.WithFileContentType(gomail.ContentType(CalendarType))); err != nil {
			return nil, fmt.Errorf("mail: attach calendar: %w", err)
		}
	}
	return msg, nil
}

// under is the address of name under the pass page at pass (its query,
// if any, kept after the path).
func under(pass, name string) string {
	u, err := url.Parse(pass)
	if err != nil {
		return ""
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/" + name
	u.RawPath = ""
	return u.String()
}

// Calendar is the calendar file of a ticket: its UID is the registration's
// (at the pass page's host), so a second email of the same registration
// updates the entry instead of adding one, and its URL is the pass.
func Calendar(tm TicketMail) ([]byte, error) {
	if tm.StartsAt == nil {
		return nil, fmt.Errorf("mail: calendar of %s: the event has no start", tm.Key)
	}
	host := "ticketd"
	if u, err := url.Parse(tm.PassURL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	e := ics.Event{
		UID: tm.RegistrationID + "@" + host, Stamp: tm.CreatedAt, Start: *tm.StartsAt, TZID: tm.Timezone,
		Summary: tm.EventName, Location: tm.Location, URL: tm.PassURL,
		Description: "Your entry pass (it asks for your email address): " + tm.PassURL,
	}
	if tm.TicketName != "" {
		e.Description = "Ticket: " + tm.TicketName + "\n" + e.Description
	}
	if tm.EndsAt != nil {
		e.End = *tm.EndsAt
	}
	b, err := ics.Encode(ics.MethodPublish, e)
	if err != nil {
		return nil, fmt.Errorf("mail: calendar of %s: %w", tm.Key, err)
	}
	return b, nil
}

// view is what the templates show: every value formatted here, so the
// text and HTML parts cannot disagree.
type view struct {
	TicketMail
	Subject string
	// Intro is the first paragraph: what happened.
	Intro string
	// Ticket: the mail carries the pass (ticket and promotion).
	Ticket bool
	// When is the event's time in its zone, "" without a start.
	When    string
	Receipt *receiptView
	Refund  *refundView
	// Cancelled: a cancellation; Order says it is the order's.
	Cancelled bool
	// PDFURL, AppleURL and GoogleURL keep the ticket: the PDF always,
	// each wallet when configured ("" otherwise). Each is behind the pass
	// page's email gate.
	PDFURL, AppleURL, GoogleURL string
}

type receiptView struct {
	OrderNumber string
	PaidAt      string
	Lines       []lineView
	Discount    string // "" without one
	Total       string
}

type lineView struct {
	Name, Quantity, UnitPrice, Amount string
}

type refundView struct {
	Amount, Refunded, Total string
	Full                    bool
}

func newView(tm TicketMail) (view, error) {
	v := view{TicketMail: tm, When: when(tm)}
	ev := oneLine(tm.EventName)
	switch tm.Kind {
	case "", MailTicket:
		v.Ticket, v.Subject = true, "Your ticket: "+ev
		v.Intro = "your ticket for " + ev + " is confirmed."
	case MailWaitlistSeated:
		v.Ticket, v.Subject = true, "A place opened up: "+ev
		v.Intro = "good news: a place opened up for " + ev + " and it is yours. You were on the waitlist; " +
			"your registration is now confirmed, and there is nothing more to do before the day: " +
			"bring the entry pass below."
	case MailRefund:
		if tm.OrderNumber == "" || tm.Currency == "" {
			return view{}, fmt.Errorf("mail: refund mail %s without its order", tm.Key)
		}
		v.Subject = "Refund of order " + tm.OrderNumber + ": " + ev
		v.Refund = &refundView{Amount: Money(tm.Currency, tm.RefundAmount), Refunded: Money(tm.Currency, tm.Refunded),
			Total: Money(tm.Currency, tm.Total), Full: tm.RefundFull}
		v.Intro = "we refunded " + v.Refund.Amount + " of your order " + tm.OrderNumber + " for " + ev + "."
	case MailCancellation:
		v.Cancelled = true
		if tm.RegistrationID != "" {
			v.Subject = "Your registration is cancelled: " + ev
			v.Intro = "your registration for " + ev + " is cancelled. Its entry pass no longer admits you."
		} else {
			if tm.OrderNumber == "" {
				return view{}, fmt.Errorf("mail: cancellation mail %s names nothing", tm.Key)
			}
			v.Subject = "Order " + tm.OrderNumber + " cancelled: " + ev
			v.Intro = "your order " + tm.OrderNumber + " for " + ev + " is cancelled before it was paid: " +
				"no payment was taken for it, and the places it held are released."
		}
	default:
		return view{}, fmt.Errorf("mail: unknown outbox kind %q", tm.Kind)
	}
	if v.Ticket && len(tm.Lines) > 0 && tm.Currency != "" {
		r := &receiptView{OrderNumber: tm.OrderNumber, PaidAt: localTime(tm.PaidAt, tm.Timezone), Total: Money(tm.Currency, tm.Total)}
		for _, l := range tm.Lines {
			r.Lines = append(r.Lines, lineView{Name: oneLine(l.Name), Quantity: fmt.Sprint(l.Quantity),
				UnitPrice: Money(tm.Currency, l.UnitPrice), Amount: Money(tm.Currency, l.Amount())})
		}
		if tm.Discount > 0 {
			r.Discount = "-" + Money(tm.Currency, tm.Discount)
		}
		v.Receipt = r
	}
	return v, nil
}

// Money writes an amount in minor units as people read it on a receipt:
// the currency code, a space and two decimals ("EUR 18.50").
func Money(currency string, m event.Money) string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	return fmt.Sprintf("%s%s %d.%02d", sign, strings.ToUpper(currency), m/100, m%100)
}

// zoneOf loads the event's zone; an unknown one shows UTC, said as such.
func zoneOf(tz string) *time.Location {
	if loc, err := time.LoadLocation(strings.TrimSpace(tz)); err == nil && tz != "" {
		return loc
	}
	return time.UTC
}

// localTime writes t in the event's zone ("Sat 12 Jun 2027, 19:30 CEST").
func localTime(t time.Time, tz string) string {
	if t.IsZero() {
		return ""
	}
	return t.In(zoneOf(tz)).Format("Mon 2 Jan 2006, 15:04 MST")
}

// when writes the event's time in its zone, with the zone's name, so a
// reader abroad knows which clock it is.
func when(tm TicketMail) string {
	if tm.StartsAt == nil {
		return ""
	}
	loc := zoneOf(tm.Timezone)
	s := tm.StartsAt.In(loc)
	out := s.Format("Mon 2 Jan 2006, 15:04")
	if tm.EndsAt != nil {
		e := tm.EndsAt.In(loc)
		if e.YearDay() == s.YearDay() && e.Year() == s.Year() {
			out += " to " + e.Format("15:04")
		} else {
			out += " to " + e.Format("Mon 2 Jan 2006, 15:04")
		}
	}
	return out + " (" + loc.String() + ")"
}

// oneLine keeps a header value on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
