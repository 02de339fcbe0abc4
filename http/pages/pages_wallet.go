package pages

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/ticketpdf"
	"ticketd/wallet"
	"ticketd/wallet/apple"
)

// The buyer's ticket beyond the page (decisions §21): the PDF always, the
// wallets that are configured, each behind the pass page's email gate
// (its cookie's path covers them), and Apple's pass web service, which
// authenticates by the pass's own token instead.

// appleBodyMax bounds a web service request body (a push token, a log).
const appleBodyMax = 16 << 10

func (p *Pages) registerWallet(srv *thttp.Server) {
	srv.Handle("GET", "/pass/{token}/ticket.pdf", p.ticketPDF)
	srv.Handle("GET", "/pass/{token}/wallet.pkpass", p.applePass)
	srv.Handle("GET", "/pass/{token}/google-wallet", p.googleWallet)
	if p.cfg.Wallet == nil {
		return
	}
	p.cfg.Wallet.SetLookup(p.walletLookup)
	if !p.cfg.Wallet.Apple() {
		return
	}
	base := wallet.AppleWebServicePath + "/v1"
	srv.Handle("POST", base+"/devices/{device}/registrations/{passType}/{serial}", p.appleRegister)
	srv.Handle("DELETE", base+"/devices/{device}/registrations/{passType}/{serial}", p.appleUnregister)
	srv.Handle("GET", base+"/devices/{device}/registrations/{passType}", p.appleUpdated)
	srv.Handle("GET", base+"/passes/{passType}/{serial}", p.appleLatest)
	srv.Handle("POST", base+"/log", p.appleLog)
}

// gatedTicket reads the pass of the request's token once its device has
// passed the pass page's gate; otherwise it sends the visitor to the pass
// page (which asks for the email) and answers false.
func (p *Pages) gatedTicket(rc *fasthttp.RequestCtx) (wallet.Ticket, bool) {
	token, _ := rc.UserValue("token").(string)
	l := p.localeOf(rc, "")
	eventID, ok := event.EventIDFromPassToken(token)
	if !p.knownEvent(eventID, ok) {
		p.notFound(rc, l)
		return wallet.Ticket{}, false
	}
	ps, err := ask(p, eventID, event.GetPass{Token: token})
	if err != nil {
		p.fail(rc, l, err)
		return wallet.Ticket{}, false
	}
	if p.checkGate(rc, "pass:"+token, ps.Registration.Email, p.now()) != gateOK || ps.Registration.Status != event.RegConfirmed {
		// The pass page asks for the email, or says why it does not admit.
		rc.Response.Header.Set("Cache-Control", "no-store")
		rc.Redirect("/pass/"+token, fasthttp.StatusSeeOther)
		return wallet.Ticket{}, false
	}
	return p.ticketOf(ps.Registration, ps.Event, token), true
}

// ticketOf is a registration as the PDF and wallets show it.
func (p *Pages) ticketOf(r event.Registration, ev event.Event, token string) wallet.Ticket {
	t := wallet.Ticket{EventID: ev.ID, RegistrationID: r.ID, PassToken: token, PassURL: r.PassURL, EventName: ev.Name,
		Timezone: ev.Timezone, Email: r.Email, Attendee: r.Email, CheckinCode: r.CheckinCode, Admits: r.Status == event.RegConfirmed,
		UpdatedAt: r.UpdatedAt.Time}
	if ev.UpdatedAt.After(t.UpdatedAt) {
		t.UpdatedAt = ev.UpdatedAt.Time
	}
	if r.Name != nil && *r.Name != "" {
		t.Attendee = *r.Name
	}
	if ev.StartsAt != nil {
		s := ev.StartsAt.Time
		t.StartsAt = &s
	}
	if ev.EndsAt != nil {
		e := ev.EndsAt.Time
		t.EndsAt = &e
	}
	if r.RegistrationTypeID != nil {
		if tt, err := ask(p, ev.ID, event.GetTicketType{ID: *r.RegistrationTypeID}); err == nil {
			t.TicketType = tt.Name
		}
	}
	if loc, err := ask(p, ev.ID, event.GetLocation{}); err == nil {
		t.Venue, t.Address = deref(loc.Venue), deref(loc.Address)
	}
	return t
}

// walletLookup is wallet.Config.Lookup: a registration by its id.
func (p *Pages) walletLookup(eventID, regID string) (wallet.Ticket, error) {
	if _, ok := p.cfg.Ops.EventUnit(eventID); !ok {
		return wallet.Ticket{}, wallet.ErrNotFound
	}
	r, err := ask(p, eventID, event.GetRegistration{ID: regID})
	var ee *event.Error
	if errors.As(err, &ee) && ee.Code == event.NotFound {
		return wallet.Ticket{}, wallet.ErrNotFound
	}
	if err != nil {
		return wallet.Ticket{}, err
	}
	ev, err := ask(p, eventID, event.GetEvent{})
	if err != nil {
		return wallet.Ticket{}, err
	}
	token := r.PassURL[strings.LastIndex(r.PassURL, "/pass/")+len("/pass/"):]
	return p.ticketOf(r, ev, token), nil
}

// binaryHeaders are the headers of a personal file: never cached, never
// sniffed, no referrer.
func binaryHeaders(rc *fasthttp.RequestCtx, contentType, filename string) {
	h := &rc.Response.Header
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Disposition", `attachment; filename="`+filename+`"`)
	rc.SetContentType(contentType)
}

// ticketPDF is GET /pass/{token}/ticket.pdf: built on each request.
func (p *Pages) ticketPDF(rc *fasthttp.RequestCtx) {
	t, ok := p.gatedTicket(rc)
	if !ok {
		return
	}
	var buf bytes.Buffer
	err := ticketpdf.Render(&buf, ticketpdf.Ticket{EventName: t.EventName, Attendee: t.Attendee, Email: t.Email,
		TicketType: t.TicketType, StartsAt: t.StartsAt, EndsAt: t.EndsAt, Timezone: t.Timezone, Venue: t.Venue,
		Address: t.Address, CheckinCode: t.CheckinCode})
	if err != nil {
		p.fail(rc, p.localeOf(rc, ""), err)
		return
	}
	binaryHeaders(rc, "application/pdf", "ticket.pdf")
	rc.SetBody(buf.Bytes())
}

// applePass is GET /pass/{token}/wallet.pkpass.
func (p *Pages) applePass(rc *fasthttp.RequestCtx) {
	if !p.cfg.Wallet.Apple() {
		p.notFound(rc, p.localeOf(rc, ""))
		return
	}
	t, ok := p.gatedTicket(rc)
	if !ok {
		return
	}
	b, err := p.cfg.Wallet.PKPass(t)
	if err != nil {
		p.fail(rc, p.localeOf(rc, ""), err)
		return
	}
	binaryHeaders(rc, apple.ContentType, "ticket.pkpass")
	rc.SetBody(b)
}

// googleWallet is GET /pass/{token}/google-wallet: a redirect to the Save
// link, made now (its JWT carries the ticket as it is).
func (p *Pages) googleWallet(rc *fasthttp.RequestCtx) {
	if !p.cfg.Wallet.Google() {
		p.notFound(rc, p.localeOf(rc, ""))
		return
	}
	t, ok := p.gatedTicket(rc)
	if !ok {
		return
	}
	link, err := p.cfg.Wallet.GoogleSaveURL(t)
	if err != nil {
		p.fail(rc, p.localeOf(rc, ""), err)
		return
	}
	rc.Response.Header.Set("Cache-Control", "no-store")
	rc.Response.Header.Set("Referrer-Policy", "no-referrer")
	rc.Redirect(link, fasthttp.StatusSeeOther)
}

// appleStatus answers a web service error as Apple's reference asks:
// 401 for a wrong token, 404 for an unknown pass or device.
func (p *Pages) appleStatus(rc *fasthttp.RequestCtx, err error) {
	switch {
	case errors.Is(err, wallet.ErrUnauthorized):
		rc.SetStatusCode(http.StatusUnauthorized)
	case errors.Is(err, wallet.ErrNotFound):
		rc.SetStatusCode(http.StatusNotFound)
	case errors.Is(err, wallet.ErrInvalid), errors.Is(err, wallet.ErrTooMany):
		rc.SetStatusCode(http.StatusBadRequest)
	default:
		p.log.Error("pages: apple pass web service", "path", thttp.LogPath(rc, rc.Path()), "err", err)
		rc.SetStatusCode(http.StatusServiceUnavailable)
	}
}

func param(rc *fasthttp.RequestCtx, name string) string {
	s, _ := rc.UserValue(name).(string)
	return s
}

func (p *Pages) appleRegister(rc *fasthttp.RequestCtx) {
	var body struct {
		PushToken string `json:"pushToken"`
	}
	raw := rc.PostBody()
	if len(raw) > appleBodyMax || json.Unmarshal(raw, &body) != nil {
		rc.SetStatusCode(http.StatusBadRequest)
		return
	}
	created, err := p.cfg.Wallet.Register(param(rc, "device"), param(rc, "passType"), param(rc, "serial"),
		string(rc.Request.Header.Peek("Authorization")), body.PushToken)
	if err != nil {
		p.appleStatus(rc, err)
		return
	}
	if created {
		rc.SetStatusCode(http.StatusCreated)
		return
	}
	rc.SetStatusCode(http.StatusOK)
}

func (p *Pages) appleUnregister(rc *fasthttp.RequestCtx) {
	if err := p.cfg.Wallet.Unregister(param(rc, "device"), param(rc, "passType"), param(rc, "serial"),
		string(rc.Request.Header.Peek("Authorization"))); err != nil {
		p.appleStatus(rc, err)
		return
	}
	rc.SetStatusCode(http.StatusOK)
}

func (p *Pages) appleUpdated(rc *fasthttp.RequestCtx) {
	serials, last, err := p.cfg.Wallet.Updated(param(rc, "device"), param(rc, "passType"),
		string(rc.QueryArgs().Peek("passesUpdatedSince")))
	if errors.Is(err, wallet.ErrNotFound) {
		rc.SetStatusCode(http.StatusNoContent)
		return
	}
	if err != nil {
		p.appleStatus(rc, err)
		return
	}
	if len(serials) == 0 {
		rc.SetStatusCode(http.StatusNoContent)
		return
	}
	b, _ := json.Marshal(map[string]any{"serialNumbers": serials, "lastUpdated": last})
	rc.SetContentType("application/json")
	rc.SetBody(b)
}

func (p *Pages) appleLatest(rc *fasthttp.RequestCtx) {
	b, modified, err := p.cfg.Wallet.Latest(param(rc, "passType"), param(rc, "serial"), string(rc.Request.Header.Peek("Authorization")))
	if err != nil {
		p.appleStatus(rc, err)
		return
	}
	modified = modified.UTC().Truncate(time.Second)
	if ims, err := http.ParseTime(string(rc.Request.Header.Peek("If-Modified-Since"))); err == nil && !modified.After(ims) {
		rc.SetStatusCode(http.StatusNotModified)
		return
	}
	rc.Response.Header.Set("Last-Modified", modified.Format(http.TimeFormat))
	rc.Response.Header.Set("Cache-Control", "no-store")
	rc.SetContentType(apple.ContentType)
	rc.SetBody(b)
}

// appleLog takes the error messages a device reports about the service.
// Anyone may post here (Apple's reference has no token on it): the
// messages go to the debug log only, at most 10 of 500 bytes a request.
func (p *Pages) appleLog(rc *fasthttp.RequestCtx) {
	var body struct {
		Logs []string `json:"logs"`
	}
	raw := rc.PostBody()
	if len(raw) <= appleBodyMax && json.Unmarshal(raw, &body) == nil {
		for i, l := range body.Logs {
			if i == 10 {
				break
			}
			p.log.Debug("pages: apple wallet device log", "message", strings.ToValidUTF8(l[:min(len(l), 500)], "?"))
		}
	}
	rc.SetStatusCode(http.StatusOK)
}
