package shell

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/audit"
	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/devlog"
	"ticketd/ops"
)

//go:embed templates
var templateFS embed.FS

// Config is what the console needs of the service.
type Config struct {
	// BaseURL is the absolute prefix of the service's URLs (invitation
	// links are made from it; https makes cookies Secure).
	BaseURL string
	// AdminToken is the operator's sign-in secret.
	AdminToken string
	// AdminTokenHint tells the sign-in page's reader where the admin
	// token is (a file, a variable), never the token.
	AdminTokenHint string
	// TrustedProxies are the CIDRs whose X-Forwarded-For names the client
	// (sign-in throttling) and whose X-Forwarded-Proto says https.
	TrustedProxies []netip.Prefix
	// SessionIdle and SessionMax end a session after that long without a
	// request, and that long after sign-in whatever the use.
	SessionIdle time.Duration
	SessionMax  time.Duration
	// Sessions bounds the sessions kept in memory (single node); one
	// person keeps at most SessionsPerPerson of them and one client
	// address (IPv6: its /64) SessionsPerIP, their own least recently
	// used giving way. At the whole bound, sessions past their timeouts
	// go first, then the least recently used of whoever holds the most.
	Sessions          int
	SessionsPerPerson int
	SessionsPerIP     int
	// LinkTTL is how long an invitation or password reset link works.
	LinkTTL time.Duration
	// SignInFailures failed sign-ins per account, and SignInFailuresPerIP
	// per client address (IPv6: per /64), cost nothing; each further one
	// makes the next try wait, 1 s doubling up to SignInDelayMax. Counts
	// are forgotten SignInWindow after the last failure. A browser that
	// signed in to the account before (a signed cookie) has a count of
	// its own, so an attack on an account does not slow its owner down.
	// SignInKeys bounds each count table (by eviction of the keys with
	// fewest failures, never by refusing new ones).
	SignInFailures      int
	SignInFailuresPerIP int
	SignInDelayMax      time.Duration
	SignInWindow        time.Duration
	SignInKeys          int
	Logger              *slog.Logger
	// Now is the console's clock (nil: time.Now).
	Now func() time.Time
}

// DefaultConfig returns the console's defaults.
func DefaultConfig() Config {
	return Config{
		SessionIdle:         2 * time.Hour,
		SessionMax:          12 * time.Hour,
		Sessions:            10_000,
		SessionsPerPerson:   20,
		SessionsPerIP:       200,
		LinkTTL:             72 * time.Hour,
		SignInFailures:      5,
		SignInFailuresPerIP: 20,
		SignInDelayMax:      time.Minute,
		SignInWindow:        15 * time.Minute,
		SignInKeys:          100_000,
	}
}

// Validate checks c.
func (c Config) Validate() error {
	var errs []error
	if c.AdminToken == "" {
		errs = append(errs, errors.New("console: no admin token"))
	}
	if c.SessionIdle <= 0 || c.SessionMax <= 0 || c.LinkTTL <= 0 || c.SignInWindow <= 0 {
		errs = append(errs, errors.New("console: session timeouts, link ttl and sign-in window must be positive"))
	}
	if c.Sessions <= 0 || c.Sessions > 1_000_000 {
		errs = append(errs, errors.New("console: sessions must be 1 to 1000000"))
	}
	if c.SignInFailures <= 0 || c.SignInFailuresPerIP <= 0 || c.SignInDelayMax <= 0 || c.SignInKeys <= 0 {
		errs = append(errs, errors.New("console: sign-in failure limits, delay and table size must be positive"))
	}
	if c.SessionsPerPerson <= 0 || c.SessionsPerIP <= 0 {
		errs = append(errs, errors.New("console: sessions per person and per address must be positive"))
	}
	return errors.Join(errs...)
}

// Deps are the parts of the service the console calls: the same ones the
// API handlers call, in process.
type Deps struct {
	// Ops is the application layer: every operation the console asks, and
	// the audit log, refunds and webhook endpoints (Ops.Webhooks nil: no
	// webhooks page).
	Ops *ops.Ops
	// DevLog is the developer (request) log (nil: no developer log page).
	DevLog *devlog.Log
	// Outbox is the ticket-mail outbox (nil: no outbox page).
	Outbox Outbox
	// Wallets says which wallet passes buyers are offered (the operator's
	// home page lists them; never a key).
	Wallets []WalletStatus
}

// WalletStatus is one wallet as the operator sees it: configured or not,
// and as what (pass type, issuer, certificate expiry).
type WalletStatus struct {
	ID         string // "apple", "google": the list item's id
	Name       string
	Configured bool
	Detail     string
}

// Console serves the console pages. Built once by New; its handlers are
// safe for concurrent use.
type Console struct {
	Config Config
	// takeIP counts a checkout link's session against the client's
	// storefront budget (the server's per (key, IP) limiter).
	takeIP   func(rc *fasthttp.RequestCtx, key string) (bool, int)
	Deps     Deps
	Ops      *ops.Ops
	log      *slog.Logger
	Tmpl     map[string]*template.Template
	css      []byte
	js       []byte
	sess     sessionStore
	acct     *throttle // failed sign-ins per account
	ips      *throttle // failed sign-ins per client IP
	secure   bool      // the base URL is https
	adminSum [32]byte
	// macKey signs the console's own cookies (confirmations, known
	// browsers); derived from the admin token, so every node agrees.
	macKey [32]byte
	// areas are the page packages (New's areas).
	areas []Area
}

// New parses the templates and returns the console of cfg over deps,
// serving the signed-in routes of areas (the page packages) besides its
// own.
func New(cfg Config, deps Deps, areas ...Area) (*Console, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Ops == nil || deps.Ops.Audit() == nil {
		return nil, errors.New("console: the application layer and its audit log are required")
	}
	c := &Console{Config: cfg, Deps: deps, areas: areas, Ops: deps.Ops, log: cfg.Logger, Tmpl: map[string]*template.Template{},
		sess: newSessions(cfg.SessionIdle, cfg.SessionMax, cfg.Sessions, cfg.SessionsPerPerson, cfg.SessionsPerIP),
		acct: newThrottle(cfg.SignInFailures, cfg.SignInDelayMax, cfg.SignInWindow, cfg.SignInKeys),
		ips:  newThrottle(cfg.SignInFailuresPerIP, cfg.SignInDelayMax, cfg.SignInWindow, cfg.SignInKeys)}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.Config.Now == nil {
		c.Config.Now = time.Now
	}
	c.adminSum = sha256.Sum256([]byte(cfg.AdminToken))
	c.macKey = sha256.Sum256([]byte("ticketd console cookies\x00" + cfg.AdminToken))
	if u, err := url.Parse(cfg.BaseURL); err == nil {
		c.secure = u.Scheme == "https"
	}
	// Every template is parsed with every area's functions: the layout
	// and a page may call any of them.
	fm, names := template.FuncMap{}, slices.Clone(pageNames)
	maps.Copy(fm, funcs)
	for _, a := range areas {
		maps.Copy(fm, a.Funcs)
		names = append(names, a.Pages...)
	}
	base, err := template.New("layout").Funcs(fm).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: parse layout: %w", err)
	}
	for _, name := range names {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", name, err)
		}
		c.Tmpl[name] = t
	}
	if c.css, err = templateFS.ReadFile("templates/console.css"); err != nil {
		return nil, fmt.Errorf("console: stylesheet: %w", err)
	}
	if c.js, err = templateFS.ReadFile("templates/console.js"); err != nil {
		return nil, fmt.Errorf("console: script: %w", err)
	}
	return c, nil
}

var pageNames = []string{"login", "message", "home", "unit", "accept", "reset", "keys", "event", "orders", "order", "attendees", "door", "devices", "dashboard", "audit", "codes", "hooks", "outbox", "devlog", "mailpreview", "tickettypes", "tickettype", "venue", "buy"}

// Cookie names. The session cookie is HttpOnly, SameSite=Lax, Path
// /console, Secure behind https.
const (
	sessionCookie = "ticketd_console"
	loginCookie   = "ticketd_console_login" // double-submit token of the sign-in form
	knownCookie   = "ticketd_console_known" // a browser that signed in to an account before
)

// Req is one console request after authentication.
type Req struct {
	Console *Console
	RC      *fasthttp.RequestCtx
	Session session
	sid     string
	Now     time.Time
	Dir     *directory.State
	name    string // who, for the header
}

// who is the actor recorded in the audit log.
func (r *Req) who() (actor, kind string) {
	if r.Session.Operator {
		return "admin", "admin"
	}
	return r.Session.MemberID, "member"
}

// Role is the caller's role in unit (the operator is an owner of every
// unit), "" when none. Read from the current directory view, so a changed
// Role applies at the next request.
func (r *Req) Role(unitID string) string {
	if r.Session.Operator {
		if _, ok := r.Dir.Unit(unitID); ok {
			return directory.RoleOwner
		}
		return ""
	}
	m, ok := r.Dir.Member(r.Session.MemberID)
	if !ok {
		return ""
	}
	if _, ok := r.Dir.Unit(unitID); !ok {
		return ""
	}
	return m.Roles[unitID]
}

// Permissions a page or a form needs.
type Perm int

const (
	PermRead    Perm = iota // owner, admin, viewer
	PermDoor                // owner, admin, door
	PermWrite               // owner, admin
	PermMembers             // owner
)

// Allowed reports whether role grants p.
func Allowed(role string, p Perm) bool {
	switch role {
	case directory.RoleOwner:
		return true
	case directory.RoleAdmin:
		return p != PermMembers
	case directory.RoleViewer:
		return p == PermRead
	case directory.RoleDoor:
		return p == PermDoor
	}
	return false
}

// Page errors: a missing thing and another unit's thing are the same 404.
var (
	ErrNotFound  = errors.New("console: not found")
	ErrForbidden = errors.New("console: forbidden")
)

// Need checks the caller's permission p in unit: no role at all is the
// 404 of a missing unit, a role without p a 403.
func (r *Req) Need(unitID string, p Perm) error {
	role := r.Role(unitID)
	if role == "" {
		return ErrNotFound
	}
	if !Allowed(role, p) {
		return ErrForbidden
	}
	return nil
}

// EventUnit returns the unit of the path's event after checking p there.
func (r *Req) EventUnit(p Perm) (eventID, unitID string, err error) {
	eventID = Param(r.RC, "eventId")
	unitID, ok := r.Console.Ops.EventUnit(eventID)
	if !ok {
		return "", "", ErrNotFound
	}
	return eventID, unitID, r.Need(unitID, p)
}

// Param is the path parameter name of the request, "" when none.
func Param(rc *fasthttp.RequestCtx, name string) string {
	v, _ := rc.UserValue(name).(string)
	return v
}

// Form is the posted field name, trimmed of surrounding space.
func Form(rc *fasthttp.RequestCtx, name string) string {
	return strings.TrimSpace(string(rc.PostArgs().Peek(name)))
}

// handler is a console page or form handler.
type handler func(r *Req) error

// Register adds the console's routes to srv. Call it before Serve.
func (c *Console) Register(srv *thttp.Server) {
	srv.Handle("GET", "/console/console.css", c.stylesheet)
	srv.Handle("GET", "/console/console.js", c.script)
	srv.Handle("GET", "/console/login", c.loginPage)
	srv.Handle("POST", "/console/login", c.login)
	srv.Handle("GET", "/console/invitations/{token}", c.acceptPage)
	srv.Handle("POST", "/console/invitations/{token}", c.accept)
	srv.Handle("GET", "/console/reset/{token}", c.resetPage)
	srv.Handle("POST", "/console/reset/{token}", c.reset)
	srv.Handle("GET", "/buy/{eventId}/{typeId}", c.buy)
	srv.Handle("POST", "/buy/{eventId}/{typeId}", c.buy)
	c.takeIP = srv.TakeIPBudget
	// The service's root has nothing of its own: a person who opens it
	// wants the console (a program reads the API's paths).
	srv.Handle("GET", "/", func(rc *fasthttp.RequestCtx) { seeOther(rc, "/console"); c.Headers(rc) })
	for _, rt := range c.routes() {
		srv.Handle(rt.Method, rt.Path, c.wrap(rt))
	}
}

// Area is one package of signed-in pages (units, eventsetup,
// eventwork), as New serves it.
type Area struct {
	// Routes are its routes over c.
	Routes func(c *Console) []Route
	// Pages are the templates it renders beyond the shell's list
	// (templates/<name>.html), Funcs the template functions they call.
	Pages []string
	Funcs template.FuncMap
}

// Route is one signed-in console route.
type Route struct {
	Method, Path string
	H            handler
}

func (c *Console) routes() []Route {
	rs := []Route{
		{"POST", "/console/logout", c.logout},
		{"POST", "/console/logout-everywhere", c.logoutEverywhere},
	}
	for _, a := range c.areas {
		rs = append(rs, a.Routes(c)...)
	}
	return rs
}

// wrap authenticates a console route: no session is a 303 to the sign-in
// page; a POST must carry the session's CSRF token (403 otherwise).
func (c *Console) wrap(rt Route) fasthttp.RequestHandler {
	return func(rc *fasthttp.RequestCtx) {
		now := c.Config.Now()
		sid := string(rc.Request.Header.Cookie(sessionCookie))
		s, ok := c.sess.get(sid, now)
		dir := c.Ops.Directory()
		if ok && !s.Operator {
			// A member removed or whose password changed since sign-in
			// is signed out.
			m, found := dir.Member(s.MemberID)
			if !found || m.PasswordAt.After(s.created) {
				if err := c.sess.end(sid); err != nil {
					c.log.Warn("console: session of a removed member not ended", "err", err)
				}
				ok = false
			}
		}
		if !ok {
			if rt.Method == "GET" {
				seeOther(rc, "/console/login?next="+url.QueryEscape(string(rc.RequestURI())))
			} else {
				seeOther(rc, "/console/login")
			}
			c.Headers(rc)
			return
		}
		r := &Req{Console: c, RC: rc, Session: s, sid: sid, Now: now, Dir: dir, name: "Operator"}
		if !s.Operator {
			m, _ := dir.Member(s.MemberID)
			r.name = m.Name
		}
		if rt.Method == "POST" && !sameToken(string(rc.PostArgs().Peek("csrf")), s.csrf) {
			c.fail(r, ErrForbidden, "The form was stale or not from this console. Reload the page and try again.")
			return
		}
		if rt.Method == "POST" && !checksOwnText[rt.Path] {
			if field := controlField(rc); field != "" {
				c.Render(rc, 400, "message", &View{Req: r, Title: "Not saved",
					Message: "The field “" + field + "” holds a control character (such as a NUL byte), which a person cannot type and the console does not store. Go back, retype that field and send the form again."})
				return
			}
		}
		if err := rt.H(r); err != nil {
			c.fail(r, err, "")
		}
	}
}

// checksOwnText are the forms that refuse a control character next to
// its field themselves (the directory's and the event's checks).
var checksOwnText = map[string]bool{
	"/console/units":                      true,
	"/console/units/{unitId}/invitations": true,
}

// controlField names the first form field holding a control character
// other than a tab or a line break (which text areas hold), "" when none:
// no console form stores one, whatever page sent it. The forms that can
// say it next to their field check first (textProblem).
func controlField(rc *fasthttp.RequestCtx) string {
	bad := ""
	rc.PostArgs().VisitAll(func(k, v []byte) {
		if bad != "" {
			return
		}
		for _, b := range v {
			if (b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f {
				bad = CapText(string(k), 64)
				return
			}
		}
	})
	return bad
}

// fail renders the message page of a handler's error.
func (c *Console) fail(r *Req, err error, msg string) {
	status, title := 500, "Something went wrong"
	var ee *event.Error
	var he *thttp.Error
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, directory.ErrNotFound):
		status, title = 404, "Not found"
		msg = "There is nothing here, or it is not yours to see."
	case errors.Is(err, ErrForbidden):
		status, title = 403, "Not allowed"
		if msg == "" {
			msg = "Your role in this business unit does not allow this."
		}
	case errors.As(err, &ee) && ee.Code == event.NotFound:
		status, title, msg = 404, "Not found", "There is nothing here, or it is not yours to see."
	case errors.As(err, &ee):
		status, title, msg = 409, "Refused", ee.Message
	case errors.As(err, &he):
		status, title, msg = he.Status, "Refused", he.Message
	case ops.IsShellFailure(err), errors.Is(err, ops.ErrUnavailable), errors.Is(err, ops.ErrBusy), errors.Is(err, ops.ErrStorageFailed):
		status, title, msg = 503, "Temporarily unavailable", "The service could not do this now. Try again shortly."
	default:
		c.log.Error("console: handler failed", "path", string(r.RC.Path()), "err", err)
		msg = "The service failed to do this."
	}
	c.Render(r.RC, status, "message", &View{Req: r, Title: title, Message: msg})
}

// Headers sets the console's security headers: no scripts but the
// console's own file, no framing, nothing cached.
func (c *Console) Headers(rc *fasthttp.RequestCtx) {
	h := &rc.Response.Header
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// Render writes page name with v in the layout, with status and the
// console's security headers; a confirmation waiting in its cookie is
// shown on a successful page.
func (c *Console) Render(rc *fasthttp.RequestCtx, status int, name string, v *View) {
	if v.Req != nil {
		v.CSRF = v.Req.Session.csrf
		v.Who = v.Req.name
		if v.Notice == "" && status < 300 {
			v.Notice = c.takeFlash(rc)
		}
	}
	var buf bytes.Buffer
	if err := c.Tmpl[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		c.log.Error("console: render", "page", name, "err", err)
		rc.ResetBody()
		rc.SetStatusCode(500)
		rc.SetContentType("text/plain; charset=utf-8")
		rc.SetBodyString("internal error")
		return
	}
	c.Headers(rc)
	rc.SetStatusCode(status)
	rc.SetContentType("text/html; charset=utf-8")
	rc.SetBody(buf.Bytes())
}

func (c *Console) stylesheet(rc *fasthttp.RequestCtx) {
	rc.SetContentType("text/css; charset=utf-8")
	rc.Response.Header.Set("Cache-Control", "public, max-age=3600")
	rc.SetBody(c.css)
}

func (c *Console) script(rc *fasthttp.RequestCtx) {
	rc.SetContentType("text/javascript; charset=utf-8")
	rc.Response.Header.Set("Cache-Control", "public, max-age=3600")
	rc.SetBody(c.js)
}

// Redirect answers a successful form with 303 to where the result shows.
func Redirect(r *Req, to string) error {
	seeOther(r.RC, to)
	r.Console.Headers(r.RC)
	return nil
}

// secureCookie reports whether cookies get Secure: an https base URL, a
// TLS connection, or a trusted proxy saying the client used https.
func (c *Console) secureCookie(rc *fasthttp.RequestCtx) bool {
	if c.secure || rc.IsTLS() {
		return true
	}
	if string(rc.Request.Header.Peek("X-Forwarded-Proto")) != "https" {
		return false
	}
	peer, ok := netip.AddrFromSlice(rc.RemoteIP())
	if !ok {
		return false
	}
	peer = peer.Unmap()
	for _, p := range c.Config.TrustedProxies {
		if p.Contains(peer) {
			return true
		}
	}
	return false
}

func (c *Console) setCookie(rc *fasthttp.RequestCtx, name, value string, maxAge time.Duration) {
	var k fasthttp.Cookie
	k.SetKey(name)
	k.SetValue(value)
	k.SetPath("/console")
	k.SetHTTPOnly(true)
	k.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	k.SetSecure(c.secureCookie(rc))
	if maxAge < 0 {
		k.SetExpire(fasthttp.CookieExpireDelete)
		k.SetMaxAge(-1)
	} else if maxAge > 0 {
		k.SetMaxAge(int(maxAge / time.Second))
	}
	rc.Response.Header.SetCookie(&k)
}

// isAdminToken compares a typed token with the admin token in constant
// time (over hashes, so the length is not revealed either).
func (c *Console) isAdminToken(tok string) bool {
	got := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(got[:], c.adminSum[:]) == 1
}

// Audit records a console write: who made it, what it touched, and the
// result (secrets redacted).
func (r *Req) Audit(op, unitID string, targets map[string]string, after any) {
	actor, kind := r.who()
	e := audit.AuditEntry{UnitID: unitID, Actor: actor, ActorType: kind, OperationID: "console." + op, Method: "POST",
		Route: string(r.RC.Path()), Path: string(r.RC.Path()), TargetIDs: targets, Status: 303,
		RequestID: string(r.RC.Response.Header.Peek("Request-Id"))}
	if e.TargetIDs == nil {
		e.TargetIDs = map[string]string{}
	}
	if after != nil {
		if b, err := json.Marshal(after); err == nil {
			if len(b) > audit.BodyMax {
				b = []byte(`{"truncated":true}`)
			}
			e.After = audit.RedactSecrets(b)
		}
	}
	e.CreatedAt.Time = r.Now.UTC()
	r.Console.Ops.RecordWrite(e)
}

// Ask sends a command to an event's actor through the application layer,
// as the API handlers do.
func (c *Console) Ask(eventID string, cmd event.Command) (any, error) {
	return c.Ops.Ask(context.Background(), eventID, cmd)
}

// AskOp is Ask with the command's own result type.
func AskOp[R any](c *Console, eventID string, cmd event.Op[R]) (R, error) {
	return ops.Do(context.Background(), c.Ops, eventID, cmd)
}

// seeOther answers 303 with a relative Location, so the address stays
// the one the browser used (a proxy's public name, not the listener's).
func seeOther(rc *fasthttp.RequestCtx, to string) {
	rc.Response.Header.Set("Location", to)
	rc.SetStatusCode(303)
}

// WriteRoutes lists the signed-in POST routes as paths (tests walk every
// one for the role and CSRF rules).
func WriteRoutes(areas ...Area) []string {
	var out []string
	for _, rt := range (&Console{areas: areas}).routes() {
		if rt.Method == "POST" {
			out = append(out, rt.Path)
		}
	}
	return out
}
