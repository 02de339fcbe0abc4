package pages

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/skip2/go-qrcode"
	"github.com/valyala/fasthttp"

	"ticketd/event"
	thttp "ticketd/http"
)

// maxPageAddons bounds the add-ons one checkout form may add.
const maxPageAddons = 50

// checkout is the hosted checkout page of a session: GET shows the lines
// and the form; POST places the order (the hold starts here), confirms it
// and sends a paid order to the payment page, a free one to the order page.
// The same address takes the page's next steps: joining a sold-out free
// admission's waitlist (form=waitlist) and resending the ticket of a buyer
// who is already registered (form=resend).
func (p *Pages) checkout(rc *fasthttp.RequestCtx) {
	id, _ := rc.UserValue("sessionId").(string)
	eventID, ok := event.EventIDFromCheckoutSession(id)
	if !p.knownEvent(eventID, ok) {
		p.notFound(rc, p.localeOf(rc, ""))
		return
	}
	h, err := ask(p, eventID, event.OnStorefront(event.GetHostedCheckout{ID: id}))
	if err != nil {
		p.fail(rc, p.localeOf(rc, ""), err)
		return
	}
	s := h.Session
	if h.OrderURL != "" && !rc.IsPost() {
		// The session already placed a live order (a reload, the back
		// button, a second tab): show that order, never the form again. A
		// repeated POST answers the same order too (the core's rule).
		p.headers(rc)
		rc.Redirect(h.OrderURL, fasthttp.StatusSeeOther)
		return
	}
	l := p.localeOf(rc, deref(s.Locale))
	if s.Status == "expired" {
		var back *pageLink
		if deref(s.ReturnURL) != "" && originOf(*s.ReturnURL) != "" {
			back = &pageLink{Href: *s.ReturnURL, Text: l.T("checkout.back")}
		}
		p.message(rc, 410, l, h.Event.Name, l.T("checkout.expired_title"), back, l.T("checkout.expired_body"))
		return
	}
	v := &view{L: l, Hold: l.Duration(p.cfg.Ops.OrderHold()), Title: l.T("checkout.title"), EventName: h.Event.Name, Place: p.place(h.Event, l.Lang, true), Lines: h.Lines, Total: h.Total, Currency: h.Event.Currency,
		Questions: p.formQuestions(h), Waitlist: h.Waitlist, Errors: map[string]string{}, ReturnURL: p.sessionReturn(h)}
	if s.Email != nil {
		v.FixedEmail = MaskEmail(*s.Email)
	}
	if s.Name != nil {
		v.FixedName = *s.Name
	}
	for _, a := range h.Addons {
		v.Addons = append(v.Addons, addonChoice{CatalogItem: a})
	}
	if !rc.IsPost() {
		p.render(rc, 200, "checkout", v)
		return
	}

	args := rc.PostArgs()
	if string(args.Peek("form")) == "resend" {
		p.resend(rc, v, h)
		return
	}
	email, name := deref(s.Email), deref(s.Name)
	if s.Email == nil {
		email = strings.TrimSpace(string(args.Peek("email")))
		v.Email = email
	}
	if s.Name == nil {
		name = strings.TrimSpace(string(args.Peek("name")))
		v.Name = name
	}
	responses := formResponses(h, args, v.Questions)
	items := append([]event.OrderItem{}, s.Items...)
	chosen := map[string]bool{}
	for _, raw := range args.PeekMulti("addon") {
		chosen[string(raw)] = true
	}
	for i := range v.Addons {
		if a := &v.Addons[i]; chosen[a.ID] && !a.SoldOut && len(items) < maxPageAddons {
			a.Checked = true
			items = append(items, event.OrderItem{ItemType: event.ItemAddon, ItemID: a.ID, Quantity: 1})
			v.Lines = append(v.Lines, event.OrderItemView{ItemType: event.ItemAddon, ItemID: a.ID, Name: a.Name, Quantity: 1, UnitPriceAmount: a.PriceAmount, Amount: a.PriceAmount})
			v.Total += a.PriceAmount
		}
	}
	// Every mistake the page can see is marked at once; the machine then
	// checks the rest (one field at a time).
	if s.Email == nil && !event.ValidEmail(email) {
		v.Errors["email"] = l.T("err.email")
	}
	if !event.ValidName(name) {
		v.Errors["name"] = l.T("err.name")
	}
	if !h.Waitlist { // joining the waitlist places no order: no questions
		for _, q := range v.Questions {
			if q.Required && !q.answered() {
				v.Errors["q."+q.ID] = l.T("err.required")
			}
		}
	}
	if len(v.Errors) > 0 {
		v.Error = l.T("err.fields")
		p.render(rc, 400, "checkout", v)
		return
	}
	if h.Waitlist {
		// Only the buyer's own choice joins the waitlist: a checkout
		// that finds the admission sold out offers it. (A waitlist form
		// sent once there is room again checks out instead.)
		if string(args.Peek("form")) != "waitlist" {
			v.Error, v.SoldOut = l.T("err.soldout"), true
			p.render(rc, 412, "checkout", v)
			return
		}
		p.joinWaitlist(rc, v, eventID, s.ID, email, name, s.Email == nil)
		return
	}
	o, err := ask(p, eventID, event.OnStorefront(event.PlaceOrder{
		Email: email, Name: name, Items: items, RedemptionCode: deref(s.RedemptionCode), Responses: responses,
		PromotionCode: deref(s.PromotionCode), Storefront: true, CheckoutSessionID: s.ID,
		// The hosted pages are one client namespace of the event: the
		// buyer's address counts its open orders (holdlimits.go).
		Client: thttp.HoldClientOf(hostedClients, thttp.ClientIP(rc, p.cfg.TrustedProxies)),
	}))
	if err != nil {
		if ee := (*event.Error)(nil); errors.As(err, &ee) && ee.Code == event.FailedPrecondition {
			// Sold out since the page was read: its waitlist may now be
			// the way in.
			if h2, err2 := ask(p, eventID, event.OnStorefront(event.GetHostedCheckout{ID: id})); err2 == nil {
				v.Waitlist = h2.Waitlist
			}
		}
		p.checkoutError(rc, v, err)
		return
	}
	if o.AlreadyRegistered {
		v.Title = l.T("checkout.already_title")
		v.Paragraphs = []string{l.T("checkout.already_body"), l.T("resend.hint")}
		v.Resend = true
		if s.Email == nil {
			v.ResendEmail = email
		}
		p.render(rc, 200, "next", v)
		return
	}
	if s.Email == nil {
		// The buyer typed the order's email on this device: its order page
		// (and, once paid, the pass) opens without asking again. A session
		// that fixed the email proves nothing about knowing it (the page
		// shows it masked), so its order page asks once, as the gate does.
		p.remember(rc, "order:"+o.OrderNumber, "/orders/"+o.OrderNumber, o.Email)
	}
	p.confirm(rc, v, eventID, o.OrderNumber)
}

// sessionReturn is where a checkout's "back to the event site" goes: the
// session's returnUrl, else the event's public page.
func (p *Pages) sessionReturn(h event.HostedCheckout) string {
	if u := deref(h.Session.ReturnURL); originOf(u) != "" {
		return u
	}
	return p.publicPage(h.Event)
}

// resend sends the ticket of an already registered buyer again. Every
// request counts against a small per (session, client IP) budget, since
// each one is an email to somebody's inbox.
func (p *Pages) resend(rc *fasthttp.RequestCtx, v *view, h event.HostedCheckout) {
	now := p.now()
	key := "resend\x00" + h.Session.ID + "\x00" + thttp.ClientIP(rc, p.cfg.TrustedProxies).String()
	if wait, limited := p.resends.blocked(key, now); limited {
		rc.Response.Header.Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
		p.message(rc, 429, v.L, v.EventName, v.L.T("gate.limited"), &pageLink{Href: v.ReturnURL, Text: v.L.T("checkout.back")})
		return
	}
	p.resends.fail(key, now)
	email := deref(h.Session.Email)
	if email == "" {
		email = strings.TrimSpace(string(rc.PostArgs().Peek("email")))
	}
	if len(email) > maxEmailLen || !event.ValidEmail(email) {
		p.message(rc, 400, v.L, v.EventName, v.L.T("err.email"), &pageLink{Href: v.ReturnURL, Text: v.L.T("checkout.back")})
		return
	}
	// One answer whether or not a mail went out: the page is no way to
	// learn which emails hold a confirmed ticket.
	if _, err := ask(p, h.Event.ID, event.OnStorefront(event.ResendTicket{Email: email})); err != nil {
		p.fail(rc, v.L, err)
		return
	}
	p.message(rc, 200, v.L, v.EventName, v.L.T("resend.sent_title"), &pageLink{Href: v.ReturnURL, Text: v.L.T("checkout.back")}, v.L.T("resend.sent"))
}

// joinWaitlist puts the buyer on the sold-out admission's waitlist and
// shows the pass page of the new registration (its status says waitlist);
// typed: the buyer typed the email here, so the pass opens without asking.
func (p *Pages) joinWaitlist(rc *fasthttp.RequestCtx, v *view, eventID, sessionID, email, name string, typed bool) {
	r, err := ask(p, eventID, event.OnStorefront(event.JoinWaitlist{CheckoutSessionID: sessionID, Email: email, Name: name}))
	if err != nil {
		p.checkoutError(rc, v, err)
		return
	}
	if !r.Created {
		v.Title = v.L.T("checkout.already_title")
		v.Paragraphs = []string{v.L.T("checkout.already_body"), v.L.T("resend.hint")}
		v.Resend, v.ResendEmail = true, email
		if v.FixedEmail != "" {
			v.ResendEmail = ""
		}
		p.render(rc, 200, "next", v)
		return
	}
	if typed { // as for an order: only an email typed here is proven
		token := passToken(r.PassURL)
		p.remember(rc, "pass:"+token, "/pass/"+token, r.Email)
	}
	p.headers(rc)
	rc.Redirect(r.PassURL, fasthttp.StatusSeeOther)
}

// passToken is the token of a pass page address.
func passToken(passURL string) string {
	if i := strings.LastIndex(passURL, "/pass/"); i >= 0 {
		return passURL[i+len("/pass/"):]
	}
	return ""
}

// confirm confirms an order placed from a hosted page and sends the buyer
// on: to the payment page for a paid order, else to the order page.
func (p *Pages) confirm(rc *fasthttp.RequestCtx, v *view, eventID, number string) {
	o, err := ask(p, eventID, event.OnStorefront(event.ConfirmOrder{Ref: number, Storefront: true}))
	if err != nil {
		p.checkoutError(rc, v, err)
		return
	}
	p.headers(rc)
	if o.Status == "awaiting_payment" && o.PaymentURL != nil {
		rc.Redirect(*o.PaymentURL, fasthttp.StatusSeeOther)
		return
	}
	rc.Redirect(o.OrderURL, fasthttp.StatusSeeOther)
}

// checkoutError shows a refused placement on the form: sold out (with the
// next step), closed, or the field to fix next to that field, in the
// page's language. Buyers never see the API's field paths.
// hostedClients is the hold limits' namespace of the hosted pages' buyers
// (thttp.HoldClientOf): a buyer's address counts its hosted orders apart
// from those an integrator's storefront places with its key.
const hostedClients = "hosted"

func (p *Pages) checkoutError(rc *fasthttp.RequestCtx, v *view, err error) {
	var ee *event.Error
	if !errors.As(err, &ee) {
		p.fail(rc, v.L, err)
		return
	}
	status := 400
	field := ""
	if len(ee.Details) > 0 {
		field = ee.Details[0].Field
	}
	if v.Errors == nil {
		v.Errors = map[string]string{}
	}
	switch {
	case ee.Code == event.NotFound:
		p.notFound(rc, v.L)
		return
	case ee.Reason == event.ReasonOrderAlreadyOpen && field == "orderNumber":
		// The open order's own page takes its cancel (behind its gate).
		v.Error, v.ContinueURL, v.Cancel, status = v.L.T("err.already_open"), "/orders/"+url.PathEscape(ee.Details[0].Reason), true, 409
	case ee.Reason == event.ReasonHoldLimit:
		v.Error, status = v.L.T("err.hold_limit"), 429
	case ee.Code == event.FailedPrecondition && strings.Contains(ee.Message, "sold out"):
		v.Error, v.SoldOut, status = v.L.T("err.soldout"), true, 412
	case ee.Code == event.FailedPrecondition:
		v.Error, status = v.L.T("err.closed"), 412
	case field == "email":
		v.Errors["email"], v.Error = v.L.T("err.email"), v.L.T("err.fields")
	case field == "name":
		v.Errors["name"], v.Error = v.L.T("err.name"), v.L.T("err.fields")
	case strings.HasPrefix(field, "responses."):
		id := strings.TrimPrefix(field, "responses.")
		if q, ok := findQuestion(v.Questions, id); ok {
			v.Errors["q."+id], v.Error = answerError(v.L, q, ee.Details[0].Reason), v.L.T("err.fields")
		} else {
			v.Error = v.L.T("err.generic")
		}
	default:
		v.Error = v.L.T("err.generic")
	}
	p.render(rc, status, pageOf(rc), v)
}

// answerError says in the page's language what is wrong with an answer,
// from the machine's reason and the question's type.
func answerError(l loc, q formQuestion, reason string) string {
	switch {
	case reason == "required":
		return l.T("err.required")
	case strings.HasPrefix(reason, "at most"):
		return l.T("err.too_long")
	}
	switch q.Type {
	case event.QEmail:
		return l.T("err.q_email")
	case event.QPhone:
		return l.T("err.q_phone")
	case event.QDate:
		return l.T("err.q_date")
	case event.QSelect, event.QMultiSelect:
		return l.T("err.q_select")
	}
	return l.T("err.answer")
}

func findQuestion(qs []formQuestion, id string) (formQuestion, bool) {
	for _, q := range qs {
		if q.ID == id {
			return q, true
		}
	}
	return formQuestion{}, false
}

// answered reports whether the buyer gave an answer to q.
func (q formQuestion) answered() bool {
	switch q.Type {
	case event.QMultiSelect:
		return len(q.Chosen) > 0
	case event.QCheckbox:
		return q.Checked
	}
	return q.Value != ""
}

// formQuestions are the published questions of the session's admission:
// the checkout page renders them as labelled inputs named "q.<id>",
// filled with the answers the session already carries.
func (p *Pages) formQuestions(h event.HostedCheckout) []formQuestion {
	given := map[string]any{}
	if len(h.Session.Responses) > 0 {
		_ = json.Unmarshal(h.Session.Responses, &given) // not an object: nothing given
	}
	out := make([]formQuestion, 0, len(h.Questions))
	for _, q := range h.Questions {
		fq := formQuestion{ID: q.ID, Label: q.Label, Required: q.Required, Type: q.Type, Options: q.Options}
		switch a := given[q.ID].(type) {
		case string:
			fq.Value = a
		case bool:
			fq.Checked = a
		case []any:
			fq.Chosen = map[string]bool{}
			for _, o := range a {
				if s, ok := o.(string); ok {
					fq.Chosen[s] = true
				}
			}
		}
		out = append(out, fq)
	}
	return out
}

// formResponses merges the session's responses with the answers posted
// by the page ("q.<id>") and keeps each answer in qs, so a form sent back
// with errors shows what the buyer typed; the machine checks them against
// the form. A blank field is no answer; a checkbox posts "on" when ticked.
func formResponses(h event.HostedCheckout, args *fasthttp.Args, qs []formQuestion) json.RawMessage {
	if len(h.Questions) == 0 {
		return h.Session.Responses
	}
	answers := map[string]any{}
	if len(h.Session.Responses) > 0 {
		if err := json.Unmarshal(h.Session.Responses, &answers); err != nil {
			answers = map[string]any{}
		}
	}
	for i, q := range h.Questions {
		key := "q." + q.ID
		var kept *formQuestion
		if i < len(qs) && qs[i].ID == q.ID {
			kept = &qs[i]
		}
		switch q.Type {
		case event.QMultiSelect:
			var vs []string
			for _, v := range args.PeekMulti(key) {
				vs = append(vs, string(v))
			}
			if len(vs) > 0 {
				answers[q.ID] = vs
				if kept != nil {
					kept.Chosen = map[string]bool{}
					for _, v := range vs {
						kept.Chosen[v] = true
					}
				}
			}
		case event.QCheckbox:
			if args.Has(key) {
				answers[q.ID] = true
				if kept != nil {
					kept.Checked = true
				}
			}
		default:
			if v := strings.TrimSpace(string(args.Peek(key))); v != "" {
				answers[q.ID] = v
				if kept != nil {
					kept.Value = v
				}
			}
		}
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return h.Session.Responses
	}
	return b
}

// hostedOrder reads the order of the path's order number for a page.
func (p *Pages) hostedOrder(rc *fasthttp.RequestCtx) (event.HostedOrder, bool) {
	number, _ := rc.UserValue("orderNumber").(string)
	eventID, ok := event.EventIDFromOrderNumber(number)
	if !p.knownEvent(eventID, ok) {
		p.notFound(rc, p.localeOf(rc, ""))
		return event.HostedOrder{}, false
	}
	h, err := ask(p, eventID, event.GetHostedOrder{Ref: number})
	if err != nil {
		p.fail(rc, p.localeOf(rc, ""), err)
		return event.HostedOrder{}, false
	}
	if h.Order.OrderNumber != number { // order ids are not page addresses
		p.notFound(rc, p.localeOf(rc, ""))
		return event.HostedOrder{}, false
	}
	return h, true
}

func (p *Pages) orderView(rc *fasthttp.RequestCtx, h event.HostedOrder) *view {
	l := p.localeOf(rc, h.Locale)
	o := h.Order
	return &view{L: l, Title: l.T("order.title") + " " + o.OrderNumber, EventName: h.Event.Name, Place: p.place(h.Event, l.Lang, true), Order: &o,
		StatusText: l.T("order.status." + o.Status), Lines: o.Items, Total: o.TotalAmount, Currency: o.Currency,
		PassURL: h.PassURL, ReturnURL: p.returnURL(h), Cancel: cancellable(o.Status)}
}

// order is the hosted order page, behind the email gate.
func (p *Pages) order(rc *fasthttp.RequestCtx) {
	h, ok := p.hostedOrder(rc)
	if !ok {
		return
	}
	v := p.orderView(rc, h)
	path := "/orders/" + h.Order.OrderNumber
	if !p.gate(rc, v, "order:"+h.Order.OrderNumber, path, path, h.Order.Email) {
		return
	}
	if token := passToken(h.PassURL); token != "" {
		// The buyer proved the order's email here: the pass of the order's
		// registration (same email) opens without asking again.
		p.remember(rc, "pass:"+token, "/pass/"+token, h.Order.Email)
	}
	if rc.IsPost() && string(rc.PostArgs().Peek("form")) == "cancel" {
		p.cancelOrder(rc, h, v)
		return
	}
	if h.Order.Status == event.OrderStatusCancelled && rc.QueryArgs().Has(cancelledQuery) {
		v.Notice = v.L.T("order.cancelled")
	}
	p.render(rc, 200, "order", v)
}

// continueCheckout is an open order's checkoutUrl: behind the same gate as
// the order page (the cookie's path covers it), it confirms the order and
// sends the buyer on. Once the order is no longer open it shows the order.
func (p *Pages) continueCheckout(rc *fasthttp.RequestCtx) {
	h, ok := p.hostedOrder(rc)
	if !ok {
		return
	}
	v := p.orderView(rc, h)
	v.Title = v.L.T("checkout.title")
	path := "/orders/" + h.Order.OrderNumber
	if !p.gate(rc, v, "order:"+h.Order.OrderNumber, path, path+"/checkout", h.Order.Email) {
		return
	}
	if h.Order.Status != "open" {
		p.headers(rc)
		rc.Redirect(path, fasthttp.StatusSeeOther)
		return
	}
	if rc.IsPost() && string(rc.PostArgs().Peek("form")) == "confirm" {
		p.confirm(rc, v, h.Event.ID, h.Order.OrderNumber)
		return
	}
	p.render(rc, 200, "continue", v)
}

// pass is the hosted entry-pass page, behind the email gate: the check-in
// code as a server-rendered QR code and as text. A rotated token is 404.
func (p *Pages) pass(rc *fasthttp.RequestCtx) {
	token, _ := rc.UserValue("token").(string)
	l := p.localeOf(rc, "")
	eventID, ok := event.EventIDFromPassToken(token)
	if !p.knownEvent(eventID, ok) {
		p.notFound(rc, l)
		return
	}
	ps, err := ask(p, eventID, event.GetPass{Token: token})
	if err != nil {
		p.fail(rc, l, err)
		return
	}
	r := ps.Registration
	v := &view{L: l, Title: l.T("pass.title"), EventName: ps.Event.Name, Place: p.place(ps.Event, l.Lang, false), Reg: &r, When: when(ps.Event, l.Lang),
		StatusText: l.T("reg.status." + r.Status), Admits: r.Status == "confirmed"}
	if !p.gate(rc, v, "pass:"+token, "/pass/"+token, "/pass/"+token, r.Email) {
		return
	}
	if r.RegistrationTypeID != nil {
		if t, err := ask(p, eventID, event.GetTicketType{ID: *r.RegistrationTypeID}); err == nil {
			v.Ticket = t.Name
		}
	}
	v.PassURL = "/pass/" + token
	v.AppleWallet, v.GoogleWallet = p.cfg.Wallet.Apple(), p.cfg.Wallet.Google()
	if v.Admits {
		png, err := qrcode.Encode(r.CheckinCode, qrcode.Medium, 256)
		if err != nil {
			p.fail(rc, l, err)
			return
		}
		v.QR = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png))
	}
	p.render(rc, 200, "pass", v)
}

// eventPage is the event's public page address until the console sets a
// siteUrl: the published event's name, start and ticket prices.
func (p *Pages) eventPage(rc *fasthttp.RequestCtx) {
	id, _ := rc.UserValue("eventId").(string)
	l := p.localeOf(rc, "")
	if !p.knownEvent(id, id != "") {
		p.notFound(rc, l)
		return
	}
	p.shop(rc, id, l, 200, "")
}

// payView renders the sandbox provider's payment page in the pages' look.
// Its forms redirect to the order's success / cancel URLs, so their origins
// join form-action.
func (p *Pages) payView(rc *fasthttp.RequestCtx, o event.Order) {
	l := p.localeOf(rc, "")
	v := &view{L: l, Title: l.T("pay.title"), Order: &o,
		StatusText: l.T("pay.done") + " " + l.T("order.status."+o.Status)}
	// The pay page is the event's, not the service's: its name, date and
	// place head it.
	if ev, err := ask(p, o.EventID, event.GetEvent{}); err == nil {
		v.EventName, v.Place = ev.Name, p.place(ev, l.Lang, true)
	}
	p.render(rc, 200, "pay", v, originOf(deref(o.SuccessURL)), originOf(deref(o.CancelURL)))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
