package api_test

// Black-box tests of the buyer emails: the real service (app.Main) queues
// them in its durable outbox and its mailer delivers them to a real SMTP
// relay on loopback; each message is read back with net/mail and
// mime/multipart as a mail client would.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/mail"
	"ticketd/mail/smtptest"
)

// apiMail is a delivered email read back.
type apiMail struct {
	to, subject string
	text, html  string
	files       []apiMailFile
}

type apiMailFile struct {
	name, contentType, disposition string
	body                           string
}

// apiReadMail parses a raw message: its subject, text and HTML parts and
// attached files, walking nested multiparts.
func apiReadMail(t testing.TB, raw []byte) apiMail {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	require.NoError(t, err)
	subj, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	require.NoError(t, err)
	out := apiMail{to: msg.Header.Get("To"), subject: subj}
	var walk func(h interface{ Get(string) string }, body io.Reader)
	walk = func(h interface{ Get(string) string }, body io.Reader) {
		mt, params, err := mime.ParseMediaType(h.Get("Content-Type"))
		require.NoError(t, err)
		if strings.HasPrefix(mt, "multipart/") {
			mr := multipart.NewReader(body, params["boundary"])
			for {
				p, err := mr.NextRawPart()
				if err == io.EOF {
					return
				}
				require.NoError(t, err)
				walk(p.Header, p)
			}
		}
		var r io.Reader = body
		switch strings.ToLower(h.Get("Content-Transfer-Encoding")) {
		case "quoted-printable":
			r = quotedprintable.NewReader(body)
		case "base64":
			r = base64.NewDecoder(base64.StdEncoding, body)
		}
		b, err := io.ReadAll(r)
		require.NoError(t, err)
		disp, dp, _ := mime.ParseMediaType(h.Get("Content-Disposition"))
		switch {
		case disp == "attachment":
			out.files = append(out.files, apiMailFile{name: dp["filename"], contentType: h.Get("Content-Type"), disposition: disp, body: string(b)})
		case mt == "text/plain":
			out.text = string(b)
		case mt == "text/html":
			out.html = string(b)
		default:
			t.Fatalf("unexpected part %s", mt)
		}
	}
	walk(msg.Header, msg.Body)
	return out
}

// apiInbox collects what the relay delivers, by recipient.
type apiInbox struct {
	relay *smtptest.Relay
	got   []apiMail
}

// next waits for the next email to address and returns it.
func (in *apiInbox) next(t testing.TB, address string) apiMail {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		for i, m := range in.got {
			if strings.Contains(m.to, address) {
				in.got = append(in.got[:i], in.got[i+1:]...)
				return m
			}
		}
		select {
		case msg := <-in.relay.Delivered():
			in.got = append(in.got, apiReadMail(t, msg.Data))
		case <-deadline:
			t.Fatalf("no email to %s arrived (others: %d)", address, len(in.got))
		}
	}
}

// none checks that nothing more arrives for a moment.
func (in *apiInbox) none(t testing.TB) {
	t.Helper()
	select {
	case msg := <-in.relay.Delivered():
		t.Fatalf("unexpected email: %s", msg.Data)
	case <-time.After(300 * time.Millisecond):
	}
	require.Empty(t, in.got)
}

func withMailRelay(t testing.TB) (serviceOption, *apiInbox) {
	relay, err := smtptest.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = relay.Close() })
	return func(c *app.Config) {
		c.SMTPAddr = relay.Addr
		c.Tune = &app.Tuning{Mail: func(mc *mail.Config) {
			mc.BackoffMin, mc.BackoffMax = 10*time.Millisecond, 50*time.Millisecond
		}}
	}, &apiInbox{relay: relay}
}

// unfoldICS undoes the folding of a calendar file and splits its lines.
func unfoldICS(s string) []string {
	return strings.Split(strings.TrimSuffix(strings.ReplaceAll(s, "\r\n ", ""), "\r\n"), "\r\n")
}

func TestAPIBuyerEmailsOverSMTP(t *testing.T) {
	t.Parallel()
	opt, inbox := withMailRelay(t)
	f := newAPIFx(t, opt)
	u := f.unit(t)
	c, adm := u.dev, f.admin(t)
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)

	ev := apiS(apiEvent(t, c, map[string]any{"name": "Gopher Night", "timezone": "Europe/Berlin", "currency": "EUR",
		"startsAt": "2030-06-01T17:00:00Z", "endsAt": "2030-06-01T21:30:00Z"}), "id")
	apiWant(t, c.Do("PATCH", "/v1/events/"+ev, map[string]any{"status": "published"}), 200)
	s := apiShop{c: c, ev: ev, tt: apiOpenType(t, c, ev, map[string]any{"name": "Standard", "priceAmount": 25, "capacity": 1, "allowWaitlist": true})}
	shirt := apiS(apiWant(t, c.Do("POST", s.path("/addons"), map[string]any{"name": "T-shirt", "priceAmount": 15.5, "capacity": 5}), 201), "id")
	apiSetStatus(t, c, s.path("/addons/"+shirt), "open")
	apiWant(t, adm.Do("POST", "/admin/v1/events/"+ev+"/promotion-codes", map[string]any{"code": "TENOFF", "percentOff": 10}), 201)
	loc := apiWant(t, adm.Do("PUT", "/admin/v1/events/"+ev+"/location", map[string]any{
		"venue": "Kulturbrauerei", "address": "Schönhauser Allee 36, 10435 Berlin"}), 200)
	require.Equal(t, "Kulturbrauerei", loc["venue"])
	require.Equal(t, loc, apiWant(t, adm.Do("GET", "/admin/v1/events/"+ev+"/location", nil), 200))

	// A paid order of a ticket and two shirts, 10% off: 56.00 - 5.60.
	o := apiWant(t, s.c.Do("POST", s.path("/orders"), map[string]any{"email": "buyer@example.com", "name": "Ada",
		"promotionCode": "TENOFF", "items": []map[string]any{
			{"itemType": "registration_type", "itemId": s.tt, "quantity": 1},
			{"itemType": "addon", "itemId": shirt, "quantity": 2}}}), 201)
	require.EqualValues(t, 50.4, o["totalAmount"])
	number := apiS(o, "orderNumber")
	aw := apiWant(t, s.c.Do("POST", s.path("/orders/"+number+"/confirm"), map[string]any{
		"successUrl": "https://shop.example.com/ok", "cancelUrl": "https://shop.example.com/cancel"}), 200)
	st, b := apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), apiPaymentBody("dlv_mail_1", "payment.succeeded", aw, "50.40"))
	require.Equalf(t, 200, st, "webhook: %s", b)
	paidDay := time.Now().In(berlin).Format("Mon 2 Jan 2006")
	paid := apiWant(t, s.c.Do("GET", s.path("/orders/"+number), nil), 200)
	reg := apiWant(t, s.c.Do("GET", s.path("/registrations/"+apiS(paid, "registrationId")), nil), 200)

	t.Run("ticket email with receipt and calendar file", func(t *testing.T) {
		m := inbox.next(t, "buyer@example.com")
		require.Equal(t, "Your ticket: Gopher Night", m.subject)
		for part, body := range map[string]string{"text": m.text, "html": m.html} {
			for _, want := range []string{number, "Standard", "EUR 25.00", "T-shirt", "EUR 15.50", "EUR 31.00", "-EUR 5.60",
				"EUR 50.40", "Paid: " + paidDay, "Kulturbrauerei, Schönhauser Allee 36, 10435 Berlin", apiS(reg, "checkinCode"), "Sat 1 Jun 2030, 19:00 to 23:30 (Europe/Berlin)"} {
				require.Contains(t, body, want, "%s part", part)
			}
		}
		require.Contains(t, m.text, "Standard: 1 x EUR 25.00 = EUR 25.00")
		require.Contains(t, m.text, "T-shirt: 2 x EUR 15.50 = EUR 31.00")
		require.Contains(t, m.text, "Discount: -EUR 5.60")
		require.Contains(t, m.text, "Total paid: EUR 50.40")
		require.Contains(t, m.text, apiS(reg, "passUrl"))

		require.Len(t, m.files, 1)
		ics := m.files[0]
		require.Equal(t, "event.ics", ics.name)
		ct, params, err := mime.ParseMediaType(ics.contentType)
		require.NoError(t, err)
		require.Equal(t, "text/calendar", ct)
		require.Equal(t, "PUBLISH", params["method"])
		require.Equal(t, "UTF-8", params["charset"])
		lines := unfoldICS(ics.body)
		require.Equal(t, "BEGIN:VCALENDAR", lines[0])
		require.Contains(t, lines, "DTSTART;TZID=Europe/Berlin:20300601T190000")
		require.Contains(t, lines, "DTEND;TZID=Europe/Berlin:20300601T233000")
		require.Contains(t, lines, "TZID:Europe/Berlin")
		require.Contains(t, lines, "SUMMARY:Gopher Night")
		require.Contains(t, lines, `LOCATION:Kulturbrauerei\, Schönhauser Allee 36\, 10435 Berlin`)
		require.Contains(t, lines, "URL:"+apiS(reg, "passUrl"))
		require.Contains(t, lines, "UID:"+apiS(reg, "id")+"@127.0.0.1")
	})

	// A second person waits for the one place.
	w := apiRegister(t, c, ev, s.tt, "waiter@example.com")
	require.Equal(t, "waitlisted", w["status"])

	t.Run("partial refund email", func(t *testing.T) {
		apiWant(t, adm.Do("POST", s.refundPath(number), map[string]any{"amount": 10, "reason": "shirt too small"}), 200)
		m := inbox.next(t, "buyer@example.com")
		require.Equal(t, "Refund of order "+number+": Gopher Night", m.subject)
		require.Contains(t, m.text, "we refunded EUR 10.00 of your order "+number)
		require.Contains(t, m.text, "Refunded in all: EUR 10.00 of EUR 50.40")
		require.Contains(t, m.text, "partial refund")
		require.Contains(t, m.text, "Reason: shirt too small")
		require.Contains(t, m.html, "EUR 10.00")
		require.Empty(t, m.files)
	})

	t.Run("full refund email, and the waitlist promotion it causes", func(t *testing.T) {
		apiWant(t, adm.Do("POST", s.refundPath(number), nil), 200)
		m := inbox.next(t, "buyer@example.com")
		require.Contains(t, m.text, "we refunded EUR 40.40 of your order "+number)
		require.Contains(t, m.text, "Refunded in all: EUR 50.40 of EUR 50.40")
		require.Contains(t, m.text, "This refunds the order in full; its ticket is cancelled.")

		p := inbox.next(t, "waiter@example.com")
		require.Equal(t, "A place opened up: Gopher Night", p.subject)
		require.Contains(t, p.text, "You were on the waitlist")
		require.Contains(t, p.text, apiS(w, "passUrl"))
		require.Contains(t, p.html, apiS(w, "passUrl"))
		require.NotContains(t, p.text, "Receipt", "a free registration gets no money receipt")
		require.Len(t, p.files, 1, "the calendar file comes with the place")
		require.Contains(t, unfoldICS(p.files[0].body), "DTSTART;TZID=Europe/Berlin:20300601T190000")
	})

	t.Run("cancellation emails", func(t *testing.T) {
		apiWant(t, c.Do("POST", s.path("/registrations/"+apiS(w, "id")+"/cancel"), nil), 200)
		m := inbox.next(t, "waiter@example.com")
		require.Equal(t, "Your registration is cancelled: Gopher Night", m.subject)
		require.Contains(t, m.text, "Its entry pass no longer admits you.")

		q := apiWant(t, s.c.Do("POST", s.path("/orders"), map[string]any{"email": "quitter@example.com",
			"items": []map[string]any{{"itemType": "addon", "itemId": shirt, "quantity": 1}}}), 201)
		apiWant(t, s.c.Do("POST", s.path("/orders/"+apiS(q, "orderNumber")+"/cancel"), nil), 200)
		m = inbox.next(t, "quitter@example.com")
		require.Equal(t, fmt.Sprintf("Order %s cancelled: Gopher Night", apiS(q, "orderNumber")), m.subject)
		require.Contains(t, m.text, "no payment was taken")
	})

	// Each change owed one email: nothing was sent twice.
	inbox.none(t)
}
