package pages_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html"
	"image/png"
	nethttp "net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/mail"
)

// pgOutbox returns the ticket mails in the service's mail inbox.
func pgOutbox(t testing.TB, s *service) []mail.TicketMail {
	t.Helper()
	var out []mail.TicketMail
	require.NoError(t, s.Sys.Store().Scan([]byte(mail.InboxPrefix), func(_, v []byte) error {
		var m mail.TicketMail
		if err := json.Unmarshal(v, &m); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	}))
	return out
}

func pgRequireSecure(t *testing.T, p apptest.Page) {
	t.Helper()
	csp := p.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "img-src 'self' data:", "form-action 'self'"} {
		require.Contains(t, csp, want)
	}
	require.Equal(t, "no-referrer", p.Header.Get("Referrer-Policy"))
	require.Equal(t, "DENY", p.Header.Get("X-Frame-Options"))
	require.Equal(t, "text/html; charset=utf-8", p.Header.Get("Content-Type"))
	require.Contains(t, p.Body, `<meta name="viewport"`)
}

// pgGateForm asserts p is the email gate and nothing else.
func pgGateForm(t *testing.T, p apptest.Page, hidden ...string) {
	t.Helper()
	require.Contains(t, p.Body, `<form method="post"`)
	require.Contains(t, p.Body, `<label for="gate-email">`)
	require.Contains(t, p.Body, `id="gate-email" name="email" type="email"`)
	for _, h := range hidden {
		require.NotContains(t, p.Body, h)
	}
}

// pgAdminToken is the admin token of the pages tests' services (the
// server wants at least 16 characters).
const pgAdminToken = "adm_pages_test_token"

// pgStart starts the service for the pages tests.
func pgStart(t *testing.T, opts ...serviceOption) *service {
	opts = append([]serviceOption{func(c *app.Config) { c.AdminToken = pgAdminToken }}, opts...)
	s := startService(t, opts...)
	s.Admin = pgAdminToken
	return s
}

func withTrustedLoopback() serviceOption {
	return func(c *app.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}
}

func TestPassPageEmailGate(t *testing.T) {
	s := pgStart(t)
	u := s.NewUnit("Pages")
	ev := pgPublished(t, s, u.Secret, 0)
	reg := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations", map[string]any{
		"email": "Ada.Lovelace@Example.com", "name": "Ada", "registrationTypeId": ev.TypeID})
	passURL, code := reg["passUrl"].(string), reg["checkinCode"].(string)
	token := strings.TrimPrefix(passURL, s.URL+"/pass/")

	// A new device sees only the gate.
	phone := apptest.NewBrowser(t)
	p := phone.Get(passURL)
	require.Equal(t, 200, p.Status)
	pgRequireSecure(t, p)
	pgGateForm(t, p, code, "Ada", "General admission")

	// A wrong email is refused and shows nothing.
	p = phone.Post(passURL, url.Values{"form": {"gate"}, "email": {"ada@example.org"}})
	require.Equal(t, 403, p.Status)
	require.Contains(t, p.Body, `<p class="field-error" id="err-gate-email">That email does not match.`, "next to the field")
	require.Contains(t, p.Body, `value="ada@example.org" aria-invalid="true"`, "keeping what was typed")
	pgGateForm(t, p, code)

	// The right email (case and spaces aside) opens it and is remembered.
	p = phone.Post(passURL, url.Values{"form": {"gate"}, "email": {"  ada.lovelace@example.COM "}})
	require.Equal(t, 303, p.Status)
	require.Equal(t, passURL, p.Header.Get("Location"))
	setCookie := p.Header.Get("Set-Cookie")
	require.Contains(t, setCookie, "ticketd_gate=v1.")
	require.Contains(t, setCookie, "HttpOnly")
	require.Contains(t, setCookie, "SameSite=Lax")
	require.Contains(t, setCookie, "path=/pass/"+token)
	require.NotContains(t, setCookie, "secure", "http base URL: no Secure flag")
	require.NotContains(t, strings.ToLower(setCookie), "lovelace", "the email is not in the cookie")

	p = phone.Get(passURL)
	require.Equal(t, 200, p.Status)
	pgRequireSecure(t, p)
	require.Contains(t, p.Body, `id="checkin-code">`+code+`<`)
	require.Contains(t, p.Body, "General admission")
	require.Contains(t, p.Body, "Gophers Summit")
	m := regexp.MustCompile(`<img id="qr" src="data:image/png;base64,([^"]+)"`).FindStringSubmatch(p.Body)
	require.NotNil(t, m, "QR code image")
	raw, err := base64.StdEncoding.DecodeString(html.UnescapeString(m[1]))
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, 256, img.Bounds().Dx())

	// Another device asks again.
	laptop := apptest.NewBrowser(t)
	pgGateForm(t, laptop.Get(passURL), code)

	// A tampered cookie is refused (and cleared).
	cookie := regexp.MustCompile(`ticketd_gate=([^;]+)`).FindStringSubmatch(setCookie)[1]
	tampered := cookie[:len(cookie)-2] + "AA"
	if tampered == cookie {
		tampered = cookie[:len(cookie)-2] + "BB"
	}
	p = laptop.Get(passURL, "Cookie", "ticketd_gate="+tampered)
	require.Equal(t, 403, p.Status)
	require.Contains(t, p.Body, "could not verify")
	pgGateForm(t, p, code)
	// So is a good cookie with a forged expiry, and garbage.
	parts := strings.Split(cookie, ".")
	p = laptop.Get(passURL, "Cookie", "ticketd_gate=v1.9999999999."+parts[2])
	require.Equal(t, 403, p.Status)
	p = laptop.Get(passURL, "Cookie", "ticketd_gate=hello")
	require.Equal(t, 403, p.Status)

	// A rotated link stops working; the new one asks again on every device.
	rot := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations/"+reg["id"].(string)+"/rotate-pass", nil)
	p = phone.Get(passURL)
	require.Equal(t, 404, p.Status)
	require.NotContains(t, p.Body, code)
	newURL := rot["passUrl"].(string)
	require.NotEqual(t, passURL, newURL)
	pgGateForm(t, phone.Get(newURL), code)
	// The old page's cookie does not open the new page.
	p = phone.Get(newURL, "Cookie", "ticketd_gate="+cookie)
	require.Equal(t, 403, p.Status)

	// Unknown and malformed tokens are 404 pages.
	require.Equal(t, 404, phone.Get(s.URL+"/pass/"+ev.ID+".nope").Status)
	require.Equal(t, 404, phone.Get(s.URL+"/pass/evt_nope.x").Status)
	require.Equal(t, 404, phone.Get(s.URL+"/pass/garbage").Status)
}

func TestGateRateLimitsWrongAnswersPerPageAndIP(t *testing.T) {
	s := pgStart(t, withTrustedLoopback())
	u := s.NewUnit("Pages")
	ev := pgPublished(t, s, u.Secret, 0)
	reg := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations", map[string]any{
		"email": "grace@example.com", "registrationTypeId": ev.TypeID})
	passURL := reg["passUrl"].(string)
	b := apptest.NewBrowser(t)
	ip := "X-Forwarded-For"
	for i := 0; i < 5; i++ {
		p := b.Post(passURL, url.Values{"form": {"gate"}, "email": {"guess" + string(rune('a'+i)) + "@example.com"}}, ip, "203.0.113.7")
		require.Equal(t, 403, p.Status, "attempt %d", i)
	}
	// Used up: even the right answer is refused for a while.
	p := b.Post(passURL, url.Values{"form": {"gate"}, "email": {"grace@example.com"}}, ip, "203.0.113.7")
	require.Equal(t, 429, p.Status)
	require.NotEmpty(t, p.Header.Get("Retry-After"))
	require.Contains(t, p.Body, "Too many attempts")
	require.NotContains(t, p.Body, `name="email"`)
	// Another client is not affected.
	p = b.Post(passURL, url.Values{"form": {"gate"}, "email": {"grace@example.com"}}, ip, "198.51.100.9")
	require.Equal(t, 303, p.Status)
}

func TestHostedCheckoutFreeOrderAndOrderPage(t *testing.T) {
	s := pgStart(t)
	u := s.NewUnit("Pages")
	ev := pgPublished(t, s, u.Secret, 0)
	cs := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
		"items":     []map[string]any{{"itemType": "registration_type", "itemId": ev.TypeID, "quantity": 1}},
		"returnUrl": "https://shop.example.com/thanks?ref=a+b#top",
	})
	b := apptest.NewBrowser(t)
	p := b.Get(cs["url"].(string), "Accept-Language", "en-GB,en;q=0.9")
	require.Equal(t, 200, p.Status)
	pgRequireSecure(t, p)
	require.Contains(t, p.Body, `<html lang="en">`)
	require.Contains(t, p.Body, "General admission")
	require.Contains(t, p.Body, "Conference T-shirt", "open add-ons are offered")
	require.Contains(t, p.Body, `<label for="co-email">`)
	require.Contains(t, p.Body, "Get my ticket")

	// A bad email stays on the form with a message.
	p = b.Post(cs["url"].(string), url.Values{"form": {"checkout"}, "email": {"not-an-email"}, "name": {"Lin"}})
	require.Equal(t, 400, p.Status)
	require.Contains(t, p.Body, "Enter a valid email address")
	require.Contains(t, p.Body, `value="Lin"`)

	// A free order is placed, confirmed and lands on the order page.
	p = b.Post(cs["url"].(string), url.Values{"form": {"checkout"}, "email": {"lin@example.com"}, "name": {"Lin"}})
	require.Equal(t, 303, p.Status, p.Body)
	orderURL := p.Header.Get("Location")
	require.True(t, strings.HasPrefix(orderURL, s.URL+"/orders/"), orderURL)
	number := strings.TrimPrefix(orderURL, s.URL+"/orders/")
	// The device that checked out is remembered for that order only.
	set := p.Header.Get("Set-Cookie")
	require.Contains(t, set, "ticketd_gate=v1.")
	require.Contains(t, set, "path=/orders/"+number+";")
	require.Contains(t, set, "HttpOnly")
	require.Contains(t, set, "SameSite=Lax")

	// Another device meets the gate of the order page.
	other := apptest.NewBrowser(t)
	p = other.Get(orderURL)
	require.Equal(t, 200, p.Status)
	pgGateForm(t, p, number+"</span>", "shop.example.com")
	p = other.Post(orderURL, url.Values{"form": {"gate"}, "email": {"LIN@example.com"}})
	require.Equal(t, 303, p.Status)
	require.Contains(t, p.Header.Get("Set-Cookie"), "path=/orders/"+number)
	require.Contains(t, other.Get(orderURL).Body, "Paid: you are in!")

	// The buyer's own device is not asked again, and the entry pass is the
	// order page's primary action.
	p = b.Get(orderURL)
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, "Paid: you are in!")
	require.NotContains(t, p.Body, `name="form" value="gate"`)
	require.Contains(t, p.Body, `href="https://shop.example.com/thanks?ref=a&#43;b&amp;order=`+url.QueryEscape(number)+`&amp;status=paid#top"`)
	require.Contains(t, p.Body, `<a class="btn primary wide" id="pass-link" href="`+s.URL+`/pass/`)
	require.Contains(t, p.Body, `<a class="btn" id="return-link"`)

	// The ticket email is owed, with the pass link the order page shows.
	require.Eventually(t, func() bool { return len(pgOutbox(t, s)) == 1 }, 5*time.Second, 20*time.Millisecond)
	mail := pgOutbox(t, s)[0]
	require.Equal(t, "lin@example.com", mail.Email)
	require.Contains(t, p.Body, mail.PassURL)
	// The order page vouched for the pass on this device (the same email).
	p = b.Get(mail.PassURL)
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, mail.CheckinCode, "the pass opens without the email gate")
	p = apptest.NewBrowser(t).Get(mail.PassURL)
	require.NotContains(t, p.Body, mail.CheckinCode, "elsewhere the pass is gated")

	// The admin API lists it.
	req, _ := nethttp.NewRequest("GET", s.URL+"/admin/v1/outbox?limit=10", nil)
	req.Header.Set("Authorization", "Bearer "+s.Admin)
	res, err := nethttp.DefaultClient.Do(req)
	require.NoError(t, err)
	var list struct {
		Data []map[string]any `json:"data"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&list))
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Len(t, list.Data, 1)
	require.Equal(t, mail.PassURL, list.Data[0]["passUrl"])

	// The same buyer again is acknowledged, not sold a second seat.
	cs2 := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
		"items": []map[string]any{{"itemType": "registration_type", "itemId": ev.TypeID, "quantity": 1}},
		"email": "Lin@Example.com", "locale": "zh-CN",
	})
	p = b.Get(cs2["url"].(string))
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, `<html lang="zh-CN">`)
	require.Contains(t, p.Body, "L***@Example.com", "a supplied email is shown masked")
	require.NotContains(t, p.Body, `name="email"`, "and cannot be edited")
	p = b.Post(cs2["url"].(string), url.Values{"form": {"checkout"}, "email": {"someone-else@example.com"}})
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, "您已报名")
	require.Len(t, pgOutbox(t, s), 1)
	// Its next step: resend my ticket (to the registered address only).
	require.Contains(t, p.Body, `id="resend"`)
	require.NotContains(t, p.Body, "someone-else", "the session's email is used, not a typed one")
	p = b.Post(cs2["url"].(string), url.Values{"form": {"resend"}})
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, "我们已重新发送")
	require.Eventually(t, func() bool { return len(pgOutbox(t, s)) == 2 }, 5*time.Second, 20*time.Millisecond)
	for _, m := range pgOutbox(t, s) {
		require.Equal(t, "lin@example.com", m.Email)
	}
	for range 2 {
		b.Post(cs2["url"].(string), url.Values{"form": {"resend"}})
	}
	p = b.Post(cs2["url"].(string), url.Values{"form": {"resend"}})
	require.Equal(t, 429, p.Status, "resends are bounded per session and client")
	regs := pgAPI(t, s, u.Secret, "GET", "/v1/events/"+ev.ID+"/registrations?email=lin@example.com", nil)
	require.Len(t, regs["data"], 1)

	// Without a returnUrl the button goes to the event's public page.
	cs3 := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
		"items": []map[string]any{{"itemType": "registration_type", "itemId": ev.TypeID, "quantity": 1}},
	})
	p = b.Post(cs3["url"].(string), url.Values{"form": {"checkout"}, "email": {"mo@example.com"}}, "Accept-Language", "zh-CN,zh;q=0.9")
	require.Equal(t, 303, p.Status)
	order3 := p.Header.Get("Location")
	p = b.Get(order3, "Accept-Language", "zh-CN")
	require.Contains(t, p.Body, `<html lang="zh-CN">`)
	require.Contains(t, p.Body, `id="return-link" href="`+s.URL+`/e/`+ev.ID+`"`)
	p = b.Get(s.URL + "/e/" + ev.ID)
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, "Gophers Summit")
}

func TestHostedCheckoutExpiredSessionAndUnknownPages(t *testing.T) {
	s := pgStart(t, func(c *app.Config) { c.CheckoutSessionTTL = 50 * time.Millisecond })
	u := s.NewUnit("Pages")
	ev := pgPublished(t, s, u.Secret, 25)
	cs := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
		"items": []map[string]any{{"itemType": "registration_type", "itemId": ev.TypeID, "quantity": 1}}, "locale": "zh-CN",
	})
	time.Sleep(80 * time.Millisecond)
	b := apptest.NewBrowser(t)
	p := b.Get(cs["url"].(string))
	require.Equal(t, 410, p.Status)
	require.Contains(t, p.Body, "此结账链接已过期")
	p = b.Post(cs["url"].(string), url.Values{"form": {"checkout"}, "email": {"x@example.com"}})
	require.Equal(t, 410, p.Status)
	orders := pgAPI(t, s, u.Secret, "GET", "/v1/events/"+ev.ID+"/orders", nil)
	require.Len(t, orders["data"], 0, "an expired session places nothing")

	for _, path := range []string{"/checkout/cs_nope.x", "/checkout/garbage", "/orders/nope-ABCDEFGH", "/orders/garbage", "/orders/" + strings.TrimPrefix(ev.ID, "evt_") + "-ZZZZZZZZ", "/e/evt_nope"} {
		p := b.Get(s.URL + path)
		require.Equal(t, 404, p.Status, path)
		require.Contains(t, p.Body, "Page not found", path)
	}
	st := b.Get(s.URL + "/hosted/style.css")
	require.Equal(t, 200, st.Status)
	require.Contains(t, st.Header.Get("Content-Type"), "text/css")
	require.Contains(t, st.Body, ":focus-visible")
}

func TestContinueCheckoutOfAnOpenOrder(t *testing.T) {
	s := pgStart(t)
	u := s.NewUnit("Pages")
	ev := pgPublished(t, s, u.Secret, 25)
	o := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/orders", map[string]any{
		"email": "kim@example.com", "items": []map[string]any{{"itemType": "registration_type", "itemId": ev.TypeID, "quantity": 1}}})
	checkoutURL := o["checkoutUrl"].(string)
	require.Equal(t, o["orderUrl"].(string)+"/checkout", checkoutURL)

	b := apptest.NewBrowser(t)
	p := b.Get(checkoutURL)
	require.Equal(t, 200, p.Status)
	pgGateForm(t, p, "25,00\u00a0€")
	p = b.Post(checkoutURL, url.Values{"form": {"gate"}, "email": {"kim@example.com"}})
	require.Equal(t, 303, p.Status)
	p = b.Get(checkoutURL)
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, "General admission")
	require.Contains(t, p.Body, "Continue to payment")
	// The cookie of the checkout page is the order page's too.
	require.Equal(t, 200, b.Get(o["orderUrl"].(string)).Status)
	require.Contains(t, b.Get(o["orderUrl"].(string)).Body, "Waiting for your confirmation")

	p = b.Post(checkoutURL, url.Values{"form": {"confirm"}})
	require.Equal(t, 303, p.Status)
	payURL := p.Header.Get("Location")
	require.True(t, strings.HasPrefix(payURL, s.URL+"/pay/pay_"), payURL)
	p = b.Get(payURL)
	require.Equal(t, 200, p.Status)
	pgRequireSecure(t, p)
	require.Contains(t, p.Body, `href="/hosted/style.css"`, "the pay page has the pages' look")
	require.Contains(t, p.Body, "id=\"pay-amount\">25,00\u00a0€<")
	// Once not open any more, the checkout address shows the order.
	p = b.Get(checkoutURL)
	require.Equal(t, 303, p.Status)
	require.True(t, strings.HasSuffix(p.Header.Get("Location"), "/orders/"+o["orderNumber"].(string)))
}
