package pages

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/ops"
	"ticketd/wallet"
)

// The hosted pages: checkout, order, entry pass, the
// continue-checkout page of an open order, a minimal public event page and
// the sandbox payment page's look. Server-rendered html/template, no
// JavaScript, one stylesheet; every page that shows personal data sits
// behind the email gate (pages_gate.go).
//
// Page addresses:
//
//	GET, POST /checkout/{sessionId}          checkout session url (POST form=
//	                                         checkout, waitlist or resend)
//	GET, POST /orders/{orderNumber}          orderUrl (gated; POST form=cancel
//	                                         cancels an unpaid order)
//	GET, POST /orders/{orderNumber}/checkout checkoutUrl of an open order (gated)
//	GET, POST /pass/{token}                  passUrl (gated)
//	GET       /pass/{token}/ticket.pdf       the ticket as a PDF (gated)
//	GET       /pass/{token}/wallet.pkpass    Apple Wallet pass (gated; configured)
//	GET       /pass/{token}/google-wallet    redirect to Save to Google Wallet (gated; configured)
//	          /pass/apple/v1/...             Apple's pass web service (pages_wallet.go)
//	GET       /e/{eventId}                   the event's public page until the
//	                                         console sets a siteUrl
//	GET       /hosted/style.css              the stylesheet

//go:embed templates
var templateFS embed.FS

// Config is what the hosted pages need of the service.
type Config struct {
	// BaseURL is the absolute prefix of the service's URLs.
	BaseURL string
	// TrustedProxies are the CIDRs whose X-Forwarded-For names the client
	// (the email gate limits failures per client IP).
	TrustedProxies []netip.Prefix
	// Secret signs the email-gate cookies (HMAC-SHA256). Empty: a random
	// secret per process, so devices are asked again after a restart.
	Secret string
	// SharedSecret, when set, is asked for the secret at every cookie set
	// or checked; while it answers nil, Secret (or the random one) signs.
	// Cluster mode: the cluster's one secret, so a cookie set by one node
	// is valid on every node.
	SharedSecret func() []byte
	// Logger receives render failures and unexpected errors (nil: none).
	Logger *slog.Logger
	// Now is the clock of the gate cookies (nil: time.Now).
	Now func() time.Time
	// Ops is the application layer the pages ask (the same operations
	// as the API's); it says the order hold the checkout page shows.
	Ops *ops.Ops
	// Wallet makes the pass page's PDF and wallet passes and serves
	// Apple's pass web service (nil: the PDF alone).
	Wallet *wallet.Service
	// PaymentOrigins are the origins of a hosted payment provider's pages
	// (Stripe Checkout): the checkout form's answer redirects there, which
	// form-action must allow.
	PaymentOrigins []string
}

// Pages renders the hosted pages. It is built once by New and read
// concurrently by the handlers (the gate limiter has its own lock).
type Pages struct {
	cfg        Config
	log        *slog.Logger
	tmpl       map[string]*template.Template
	msgs       messages
	css        []byte
	secret     []byte
	secure     bool   // cookies get Secure: the base URL is https
	baseOrigin string // origin of the base URL, for CSP form-action
	limiter    *gateLimiter
	resends    *gateLimiter // "resend my ticket" requests
	shopBuys   *gateLimiter // the shop's Buy (queue joins, checkout sessions) per client IP
}

// New parses the templates and returns the hosted pages of cfg.
func New(cfg Config) (*Pages, error) {
	if cfg.Ops == nil {
		return nil, errors.New("pages: no application layer")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pages{cfg: cfg, log: log, tmpl: map[string]*template.Template{}, msgs: newMessages(), limiter: newGateLimiter(gateFailLimit, gateFailWindow, gateMaxKeys),
		resends: newGateLimiter(resendLimit, resendWindow, gateMaxKeys), shopBuys: newGateLimiter(shopBuyLimit, shopBuyWindow, gateMaxKeys)}
	base, err := template.ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("pages: parse layout: %w", err)
	}
	// Each page is the layout plus its own "content".
	for _, name := range []string{"message", "next", "checkout", "order", "continue", "pass", "event", "pay", "queue"} {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("pages: parse %s: %w", name, err)
		}
		p.tmpl[name] = t
	}
	if p.css, err = templateFS.ReadFile("templates/style.css"); err != nil {
		return nil, fmt.Errorf("pages: stylesheet: %w", err)
	}
	if cfg.Secret != "" {
		p.secret = []byte(cfg.Secret)
	} else {
		// Without a kept secret, gate cookies last as long as the process:
		// devices are asked for the email again after a restart.
		p.secret = make([]byte, 32)
		if _, err := rand.Read(p.secret); err != nil {
			return nil, fmt.Errorf("pages: secret: %w", err)
		}
	}
	if u, err := url.Parse(cfg.BaseURL); err == nil && u.Host != "" {
		p.secure = u.Scheme == "https"
		p.baseOrigin = u.Scheme + "://" + u.Host
	}
	return p, nil
}

// gateSecret is the key of the gate cookies' HMAC.
func (p *Pages) gateSecret() []byte {
	if p.cfg.SharedSecret != nil {
		if s := p.cfg.SharedSecret(); len(s) > 0 {
			return s
		}
	}
	return p.secret
}

func (p *Pages) Register(srv *thttp.Server) {
	srv.Handle("GET", "/hosted/style.css", p.stylesheet)
	srv.Handle("GET", "/checkout/{sessionId}", p.checkout)
	srv.Handle("POST", "/checkout/{sessionId}", p.checkout)
	srv.Handle("GET", "/orders/{orderNumber}", p.order)
	srv.Handle("POST", "/orders/{orderNumber}", p.order)
	srv.Handle("GET", "/orders/{orderNumber}/checkout", p.continueCheckout)
	srv.Handle("POST", "/orders/{orderNumber}/checkout", p.continueCheckout)
	srv.Handle("GET", "/pass/{token}", p.pass)
	srv.Handle("POST", "/pass/{token}", p.pass)
	p.registerWallet(srv)
	srv.Handle("GET", "/e/{eventId}", p.eventPage)
	registerDoor(srv)
	p.registerShop(srv)
}

func (p *Pages) stylesheet(rc *fasthttp.RequestCtx) {
	rc.SetContentType("text/css; charset=utf-8")
	rc.Response.Header.Set("Cache-Control", "public, max-age=3600")
	rc.SetBody(p.css)
}

// view is the data of every page template; each page fills what it shows.
type view struct {
	L         loc
	Hold      string // the order hold, in the page's language
	Title     string
	EventName string
	// Place is when and where the event takes place, one line under the
	// event's name on every buyer-facing page (the console's venue page
	// sets where).
	Place string
	Error string
	// Errors are the form's field errors by input name ("email", "name",
	// "q.<question id>"), each shown next to its field.
	Errors map[string]string

	// message page
	Paragraphs []string
	Link       *pageLink

	// email gate
	Gate    bool
	Limited bool

	// priced lines ("items" block)
	Lines    []event.OrderItemView
	Total    event.Money
	Currency string

	// checkout
	FixedEmail string
	FixedName  string
	Email      string
	Name       string
	Questions  []formQuestion
	Addons     []addonChoice
	// Waitlist: the admission is sold out and its waitlist takes buyers
	// (the form joins it instead of checking out).
	Waitlist bool
	// SoldOut: the buyer's checkout found it sold out with no waitlist.
	SoldOut bool
	// ContinueURL is the buyer's open order in the event, offered when a
	// checkout is refused because the email has one (ORDER_ALREADY_OPEN).
	ContinueURL string
	// Resend offers "resend my ticket" (already registered), with the
	// email the buyer typed when the session does not fix one.
	Resend      bool
	ResendEmail string

	// Cancel offers "Cancel this order" (a POST form=cancel to the order
	// page: the order itself, or the open order at ContinueURL); Notice
	// says what the buyer's cancel did.
	Cancel bool
	Notice string

	// order and pay pages
	Order      *event.Order
	StatusText string
	PassURL    string
	ReturnURL  string

	// pass page
	Reg    *event.Registration
	Ticket string
	When   string
	QR     template.URL
	Admits bool
	// AppleWallet and GoogleWallet: the wallets configured, offered
	// next to the PDF (PassURL is the page's own path then).
	AppleWallet, GoogleWallet bool

	// public event page: the shop (pages_shop.go)
	Tickets     []event.CatalogTicketType
	EventID     string
	Venue       string
	Description string
	Queue       *event.StorefrontWaitingRoom
	OnSale      string
	// queue page: Refresh (seconds) makes the layout reload the page
	// (meta refresh without script; queue.js with it)
	QueueState string
	Position   int
	Wait       string
	Progress   int
	Retry      int
	Refresh    int
	TypeID     string
}

type pageLink struct{ Href, Text string }

// formQuestion is one question of a ticket's registration form. The forms
// arrive with the console issue; until then a checkout page has none.
type formQuestion struct {
	ID       string
	Label    string
	Required bool
	// Type is the question's type (text, email, phone, select,
	// multi_select, checkbox, date); Options those of a select.
	Type    string
	Options []string
	// What the buyer answered, kept when the form comes back with errors:
	// Value (text, select, date...), Chosen (multi_select), Checked.
	Value   string
	Chosen  map[string]bool
	Checked bool
}

type addonChoice struct {
	event.CatalogItem
	Checked bool
}

// headers sets the hosted pages' security headers. formTargets are origins
// a form on the page may post or redirect to besides the service itself.
func (p *Pages) headers(rc *fasthttp.RequestCtx, formTargets ...string) {
	h := &rc.Response.Header
	action := "'self'"
	if p.baseOrigin != "" {
		action += " " + p.baseOrigin
	}
	for _, o := range append(formTargets, p.cfg.PaymentOrigins...) {
		if o != "" && !strings.ContainsAny(o, " ;,'\"") {
			action += " " + o
		}
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action "+action+
		"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// render writes page name with v at status.
func (p *Pages) render(rc *fasthttp.RequestCtx, status int, name string, v *view, formTargets ...string) {
	var buf bytes.Buffer
	if err := p.tmpl[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		p.log.Error("pages: render hosted page", "page", name, "err", err)
		rc.ResetBody()
		rc.SetStatusCode(500)
		rc.SetContentType("text/plain; charset=utf-8")
		rc.SetBodyString("internal error")
		return
	}
	p.headers(rc, formTargets...)
	rc.SetStatusCode(status)
	rc.SetContentType("text/html; charset=utf-8")
	rc.SetBody(buf.Bytes())
}

// message renders a page of a title and paragraphs, with an optional link.
func (p *Pages) message(rc *fasthttp.RequestCtx, status int, l loc, eventName, title string, link *pageLink, paragraphs ...string) {
	p.render(rc, status, "message", &view{L: l, Title: title, EventName: eventName, Paragraphs: paragraphs, Link: link})
}

func (p *Pages) notFound(rc *fasthttp.RequestCtx, l loc) {
	p.message(rc, 404, l, "", l.T("notfound.title"), nil, l.T("notfound.body"))
}

// fail renders the page of an error from the actor system: NotFound is the
// 404 page, an outage the busy page, anything else a generic page.
func (p *Pages) fail(rc *fasthttp.RequestCtx, l loc, err error) {
	var ee *event.Error
	var he *thttp.Error
	var oe *ops.Error
	switch {
	case errors.As(err, &ee) && ee.Code == event.NotFound:
		p.notFound(rc, l)
	case errors.As(err, &he) && he.Status == 404:
		p.notFound(rc, l)
	case errors.As(err, &he) && he.Status == 503, errors.As(err, &oe) && oe.Status() == 503:
		rc.Response.Header.Set("Retry-After", "5")
		p.message(rc, 503, l, "", l.T("err.busy"), nil)
	case errors.As(err, &ee) && ee.Code == event.FailedPrecondition:
		p.message(rc, 412, l, "", l.T("err.closed"), nil)
	default:
		p.log.Error("pages: hosted page", "path", thttp.LogPath(rc, rc.Path()), "err", err)
		p.message(rc, 500, l, "", l.T("err.generic"), nil)
	}
}

// now is the pages' clock.
func (p *Pages) now() time.Time {
	if p.cfg.Now != nil {
		return p.cfg.Now()
	}
	return time.Now()
}

// PayPage renders the sandbox provider's payment page of o, or the page of
// err when the payment could not be read.
func (p *Pages) PayPage(rc *fasthttp.RequestCtx, o event.Order, err error) {
	if err != nil {
		p.fail(rc, p.localeOf(rc, ""), err)
		return
	}
	p.payView(rc, o)
}

// localeOf is the page locale: explicit (a checkout session's) or the
// browser's.
func (p *Pages) localeOf(rc *fasthttp.RequestCtx, explicit string) loc {
	return p.msgs.loc(pickLocale(explicit, string(rc.Request.Header.Peek("Accept-Language"))))
}

// knownEvent reports whether an id routed from a page address is an event
// of some business unit, so made-up addresses never reach the actors.
func (p *Pages) knownEvent(id string, ok bool) bool {
	if !ok {
		return false
	}
	_, known := p.cfg.Ops.EventUnit(id)
	return known
}

// returnURL is where an order page's return button goes: the checkout
// session's returnUrl with order and status appended (& when it already has
// a query, before any fragment), else the event's public page.
func (p *Pages) returnURL(h event.HostedOrder) string {
	if u, err := url.Parse(h.ReturnURL); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		q := "order=" + url.QueryEscape(h.Order.OrderNumber) + "&status=" + url.QueryEscape(h.Order.Status)
		if u.RawQuery != "" {
			u.RawQuery += "&" + q
		} else {
			u.RawQuery = q
			u.ForceQuery = false
		}
		return u.String()
	}
	return p.publicPage(h.Event)
}

// publicPage is the event's public page address: its siteUrl when the
// console set one, else the service's own /e/{eventId} page.
func (p *Pages) publicPage(ev event.Event) string {
	if ev.SiteURL != nil && originOf(*ev.SiteURL) != "" {
		return *ev.SiteURL
	}
	return p.cfg.BaseURL + "/e/" + url.PathEscape(ev.ID)
}

// when formats an event's start in its timezone for the pages.
func when(ev event.Event, lang string) string {
	if ev.StartsAt == nil {
		return ""
	}
	t := ev.StartsAt.Time
	if tz, err := time.LoadLocation(ev.Timezone); err == nil {
		t = t.In(tz)
	}
	if lang == localeZH {
		return t.Format("2006年1月2日 15:04 MST")
	}
	return t.Format("Mon 2 Jan 2006, 15:04 MST")
}

// place is the line saying when and where event ev takes place, "" when
// neither is known; with date false, only where (a page that shows the
// date itself).
func (p *Pages) place(ev event.Event, lang string, date bool) string {
	var parts []string
	if date {
		if w := when(ev, lang); w != "" {
			parts = append(parts, w)
		}
	}
	if loc, err := ask(p, ev.ID, event.GetLocation{}); err == nil {
		if w := event.PlaceText(deref(loc.Venue), deref(loc.Address), deref(loc.OnlineURL)); w != "" {
			parts = append(parts, w)
		}
	}
	return strings.Join(parts, " · ")
}

// originOf returns the scheme://host of an absolute URL, else "".
func originOf(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// ask sends cmd to its event's actor through the application layer and
// answers the command's own result type.
func ask[R any](p *Pages, eventID string, cmd event.Op[R]) (R, error) {
	return ops.Do(context.Background(), p.cfg.Ops, eventID, cmd)
}
