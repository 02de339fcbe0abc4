package pages_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// pgFormEvent is a published event whose free ticket type has a published
// registration form of every question type; it returns the event and a
// checkout session url.
func pgFormEvent(t *testing.T, s *service, u unit) (pgEvent, string) {
	t.Helper()
	ev := pgPublished(t, s, u.Secret, 0)
	form := "/admin/v1/events/" + ev.ID + "/ticket-types/" + ev.TypeID + "/form"
	pgAPI(t, s, s.Admin, "PUT", form, map[string]any{"questions": []map[string]any{
		{"id": "company", "type": "text", "label": "Company", "required": true},
		{"id": "phone", "type": "phone", "label": "Mobile phone"},
		{"id": "dob", "type": "date", "label": "Date of birth"},
		{"id": "shirt", "type": "select", "label": "T-shirt size", "required": true, "options": []string{"S", "M", "L"}},
		{"id": "diet", "type": "multi_select", "label": "Diet", "options": []string{"vegan", "halal"}},
		{"id": "terms", "type": "checkbox", "label": "I accept the code of conduct", "required": true},
	}})
	pgAPI(t, s, s.Admin, "POST", form+"/publish", nil)
	cs := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
		"items": []map[string]any{{"itemType": "registration_type", "itemId": ev.TypeID, "quantity": 1}}, "locale": "en",
	})
	return ev, cs["url"].(string)
}

// TestCheckoutFieldErrorsKeepAnswers: mistakes come back next to their
// field, in words, with everything the buyer typed still there; the
// machine's field paths (responses.phone) never reach the page.
func TestCheckoutFieldErrorsKeepAnswers(t *testing.T) {
	s := pgStart(t)
	u := s.NewUnit("Forms")
	ev, csURL := pgFormEvent(t, s, u)
	b := apptest.NewBrowser(t)

	p := b.Get(csURL)
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, "Fields marked * are required.")
	require.Contains(t, p.Body, `<label for="q-company">Company<span class="req" aria-hidden="true">*</span></label>`)
	require.Contains(t, p.Body, `<label for="q-phone">Mobile phone</label>`, "optional fields carry no mark")
	require.Contains(t, p.Body, `type="tel" autocomplete="tel"`)
	require.Contains(t, p.Body, `type="date"`)

	// What the page can see is marked at once, every field keeps its answer.
	p = b.Post(csURL, url.Values{"form": {"checkout"}, "email": {"ada@"}, "name": {"Ada"}, "q.phone": {"call me"},
		"q.dob": {"1990-12-10"}, "q.shirt": {"M"}, "q.diet": {"halal"}})
	require.Equal(t, 400, p.Status)
	require.Contains(t, p.Body, "Check the fields marked below.")
	require.Contains(t, p.Body, `aria-invalid="true" aria-describedby="err-email"`)
	require.Contains(t, p.Body, `<p class="field-error" id="err-email">Enter a valid email address.</p>`)
	require.Contains(t, p.Body, `<p class="field-error" id="err-q-company">This field is required.</p>`)
	require.Contains(t, p.Body, `<p class="field-error" id="err-q-terms">This field is required.</p>`)
	require.NotContains(t, p.Body, `id="err-q-shirt"`)
	require.Contains(t, p.Body, `value="ada@"`)
	require.Contains(t, p.Body, `value="Ada"`)
	require.Contains(t, p.Body, `value="call me"`)
	require.Contains(t, p.Body, `value="1990-12-10"`)
	require.Contains(t, p.Body, `<option selected>M</option>`)
	require.Contains(t, p.Body, `value="halal" checked`)

	// What only the service knows (a phone number's form) comes back the
	// same way, named by the question, not by its path.
	p = b.Post(csURL, url.Values{"form": {"checkout"}, "email": {"ada@example.com"}, "q.company": {"Acme"}, "q.phone": {"call me"},
		"q.shirt": {"L"}, "q.terms": {"on"}})
	require.Equal(t, 400, p.Status)
	require.Contains(t, p.Body, `<p class="field-error" id="err-q-phone">Enter a phone number: digits, with an optional leading &#43;.</p>`)
	require.NotContains(t, p.Body, "responses.")
	require.Contains(t, p.Body, `value="Acme"`)
	require.Contains(t, p.Body, `id="q-terms" name="q.terms" required checked`)

	p = b.Post(csURL, url.Values{"form": {"checkout"}, "email": {"ada@example.com"}, "q.company": {"Acme"}, "q.phone": {"+49 30 1234567"},
		"q.shirt": {"L"}, "q.terms": {"on"}})
	require.Equal(t, 303, p.Status, p.Body)

	// Answers the integrator put in the session fill the form and count.
	cs := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
		"items":     []map[string]any{{"itemType": "registration_type", "itemId": ev.TypeID, "quantity": 1}},
		"responses": map[string]any{"company": "Initech", "diet": []string{"vegan"}, "terms": true},
	})
	p = b.Get(cs["url"].(string))
	require.Contains(t, p.Body, `value="Initech"`)
	require.Contains(t, p.Body, `value="vegan" checked`)
	require.Contains(t, p.Body, `id="q-terms" name="q.terms" required checked`)
	p = b.Post(cs["url"].(string), url.Values{"form": {"checkout"}, "email": {"bob@example.com"}, "q.shirt": {"S"}})
	require.Equal(t, 303, p.Status, p.Body)
}

// TestSoldOutPagesOfferANextStep: a sold-out free admission with a
// waitlist offers joining it (the buyer lands on their pass, not asked for
// the email); without a waitlist the page sends the buyer back to the
// event's site.
func TestSoldOutPagesOfferANextStep(t *testing.T) {
	s := pgStart(t)
	u := s.NewUnit("Sold out")
	ev := pgPublished(t, s, u.Secret, 0)
	wl := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/ticket-types", map[string]any{"name": "Workshop", "capacity": 1, "allowWaitlist": true})
	wlID := wl["id"].(string)
	pgAPI(t, s, u.Secret, "PATCH", "/v1/events/"+ev.ID+"/ticket-types/"+wlID, map[string]any{"status": "open"})
	pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations", map[string]any{"email": "first@example.com", "registrationTypeId": wlID})
	cs := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
		"items": []map[string]any{{"itemType": "registration_type", "itemId": wlID, "quantity": 1}}, "returnUrl": "https://shop.example.com/",
	})
	b := apptest.NewBrowser(t)
	p := b.Get(cs["url"].(string))
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, "it has a waitlist")
	require.Contains(t, p.Body, `id="co-waitlist-submit">Join the waitlist</button>`)
	require.NotContains(t, p.Body, `id="co-submit"`)

	p = b.Post(cs["url"].(string), url.Values{"form": {"waitlist"}, "email": {"second@example.com"}, "name": {"Sam"}})
	require.Equal(t, 303, p.Status, p.Body)
	passURL := p.Header.Get("Location")
	require.True(t, strings.HasPrefix(passURL, s.URL+"/pass/"), passURL)
	p = b.Get(passURL)
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, "On the waitlist")
	require.NotContains(t, p.Body, `value="gate"`, "the device that joined is not asked for the email")
	regs := pgAPI(t, s, u.Secret, "GET", "/v1/events/"+ev.ID+"/registrations?email=second@example.com", nil)
	require.Len(t, regs["data"], 1)
	require.Equal(t, "waitlisted", regs["data"].([]any)[0].(map[string]any)["status"])

	// A paid admission sold out without a waitlist: the way back.
	paid := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/ticket-types", map[string]any{"name": "Dinner", "capacity": 1, "priceAmount": 30})
	paidID := paid["id"].(string)
	pgAPI(t, s, u.Secret, "PATCH", "/v1/events/"+ev.ID+"/ticket-types/"+paidID, map[string]any{"status": "open"})
	cs2 := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
		"items": []map[string]any{{"itemType": "registration_type", "itemId": paidID, "quantity": 1}}, "returnUrl": "https://shop.example.com/",
	})
	pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations", map[string]any{"email": "diner@example.com", "registrationTypeId": paidID})
	p = b.Post(cs2["url"].(string), url.Values{"form": {"checkout"}, "email": {"late@example.com"}})
	require.Equal(t, 412, p.Status)
	require.Contains(t, p.Body, "Sorry, this is sold out.")
	require.Contains(t, p.Body, "It sold out while you were checking out.")
	require.Contains(t, p.Body, `<a class="btn" id="co-back" href="https://shop.example.com/">`)
	require.Contains(t, p.Body, `value="late@example.com"`, "the form stays, as typed")
	require.NotContains(t, p.Body, "Join the waitlist")

	// Sold out while the buyer filled the form: the waitlist is offered
	// with what they typed.
	late := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/ticket-types", map[string]any{"name": "Meetup", "capacity": 1, "allowWaitlist": true})
	lateID := late["id"].(string)
	pgAPI(t, s, u.Secret, "PATCH", "/v1/events/"+ev.ID+"/ticket-types/"+lateID, map[string]any{"status": "open"})
	cs3 := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
		"items": []map[string]any{{"itemType": "registration_type", "itemId": lateID, "quantity": 1}},
	})
	require.Contains(t, b.Get(cs3["url"].(string)).Body, `id="co-submit"`)
	pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations", map[string]any{"email": "quick@example.com", "registrationTypeId": lateID})
	p = b.Post(cs3["url"].(string), url.Values{"form": {"checkout"}, "email": {"slow@example.com"}, "name": {"Slow"}})
	require.Equal(t, 412, p.Status)
	require.Contains(t, p.Body, "Sorry, this is sold out.")
	require.Contains(t, p.Body, `id="co-waitlist-submit"`)
	require.Contains(t, p.Body, `value="slow@example.com"`)
	p = b.Post(cs3["url"].(string), url.Values{"form": {"waitlist"}, "email": {"slow@example.com"}, "name": {"Slow"}})
	require.Equal(t, 303, p.Status, p.Body)

	// The event's public page says the same, in states and the locale's money.
	p = b.Get(s.URL + "/e/" + ev.ID)
	require.Equal(t, 200, p.Status)
	// (the shop's items, read as text: each line with its Buy button)
	require.Contains(t, shopText(p.Body), "Workshop: Free · sold out, waitlist open")
	require.Contains(t, shopText(p.Body), "Dinner: 30,00 € · sold out")
	require.Contains(t, shopText(p.Body), "General admission: Free Buy")
	p = b.Get(s.URL+"/e/"+ev.ID, "Accept-Language", "zh-CN")
	require.Contains(t, shopText(p.Body), "Dinner: €30.00 · 已售罄")
}

// TestFixedEmailCheckoutIsNotRemembered: a session whose email the
// integrator fixed shows it masked, so holding the session proves nothing
// about knowing the email: the order page asks for it, once.
func TestFixedEmailCheckoutIsNotRemembered(t *testing.T) {
	s := pgStart(t)
	u := s.NewUnit("Fixed")
	ev := pgPublished(t, s, u.Secret, 0)
	cs := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
		"items": []map[string]any{{"itemType": "registration_type", "itemId": ev.TypeID, "quantity": 1}}, "email": "fixed@example.com",
	})
	b := apptest.NewBrowser(t)
	p := b.Post(cs["url"].(string), url.Values{"form": {"checkout"}})
	require.Equal(t, 303, p.Status, p.Body)
	require.NotContains(t, p.Header.Get("Set-Cookie"), "ticketd_gate")
	orderURL := p.Header.Get("Location")
	p = b.Get(orderURL)
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, `value="gate"`)
	require.Equal(t, 303, b.Post(orderURL, url.Values{"form": {"gate"}, "email": {"fixed@example.com"}}).Status)
	require.Contains(t, b.Get(orderURL).Body, `id="order-status"`)
}

// shopText is a page's text: tags dropped, white space folded.
func shopText(html string) string {
	html = regexp.MustCompile(`<[^>]*>`).ReplaceAllString(html, " ")
	return strings.Join(strings.Fields(html), " ")
}
