package shell

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
)

// dummyHash is verified against when no member has the typed email, so a
// sign-in costs the same whether the account exists or not.
var dummyHash = directory.HashPassword("no such member, no such password", make([]byte, directory.SaltLen))

// safeNext keeps a post-sign-in redirect inside the console.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/console") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return "/console"
}

// loginPage is the sign-in form: the operator's admin token, or a
// member's email and password. The form carries a double-submit token
// (cookie and field) since there is no session yet to tie one to.
func (c *Console) loginPage(rc *fasthttp.RequestCtx) {
	if s, ok := c.sess.get(string(rc.Request.Header.Cookie(sessionCookie)), c.Config.Now()); ok && s.csrf != "" {
		seeOther(rc, "/console")
		c.Headers(rc)
		return
	}
	c.showLogin(rc, 200, &View{Form: map[string]string{"next": string(rc.QueryArgs().Peek("next"))}})
}

func (c *Console) showLogin(rc *fasthttp.RequestCtx, status int, v *View) {
	tok := randomToken()
	c.setCookie(rc, loginCookie, tok, c.Config.SignInWindow)
	v.CSRF, v.Title = tok, "Sign in"
	v.Message = c.Config.AdminTokenHint
	c.Render(rc, status, "login", v)
}

// Caps of what the sign-in form reads, applied before anything is
// counted, compared or logged.
const (
	// adminTokenMax bounds a typed admin token (bytes).
	adminTokenMax = 512
	// knownTTL is how long a browser stays known to an account.
	knownTTL = 180 * 24 * time.Hour
)

func (c *Console) login(rc *fasthttp.RequestCtx) {
	now := c.Config.Now()
	rawEmail := Form(rc, "email")
	v := &View{Form: map[string]string{"email": CapText(rawEmail, directory.EmailMax), "next": CapText(Form(rc, "next"), 2048)}, Errors: map[string]string{}}
	if !sameToken(Form(rc, "csrf"), string(rc.Request.Header.Cookie(loginCookie))) {
		v.Error = "The sign-in form was stale. Try again."
		c.showLogin(rc, 403, v)
		return
	}
	ip := addrKey(thttp.ClientIP(rc, c.Config.TrustedProxies))
	token := string(rc.PostArgs().Peek("token"))
	email := directory.NormalEmail(rawEmail)
	acct := "member:" + email
	if token != "" {
		acct = "operator"
	}
	// A browser that signed in to this account before counts on its own:
	// failures of others (an attack on the account, a flood from the
	// same network) do not slow it down.
	known := c.knownBrowser(rc, acct)
	if w := c.signInWait(ip, acct, known, now); w > 0 {
		secs := int((w + time.Second - 1) / time.Second)
		rc.Response.Header.Set("Retry-After", strconv.Itoa(secs))
		v.Error = fmt.Sprintf("Too many failed sign-ins. Wait %s, then try again.", Plural(secs, "second"))
		c.showLogin(rc, 429, v)
		return
	}
	failed := func() {
		if known {
			c.acct.fail("known:"+acct, now)
			return
		}
		c.acct.fail(acct, now)
		c.ips.fail(ip, now)
	}
	var s session
	switch {
	case token != "":
		if len(token) > adminTokenMax || !c.isAdminToken(token) {
			failed()
			c.auditSignIn(rc, "signInFailed", true, "", "", 401)
			v.Errors["token"] = "That is not the admin token."
			c.showLogin(rc, 401, v)
			return
		}
		s.Operator = true
	case len(email) > directory.EmailMax:
		// Refused before it is looked up or logged whole: the audit log
		// keeps its first characters only. No account has such an email,
		// so only the address pays.
		c.ips.fail(ip, now)
		c.auditSignIn(rc, "signInFailed", false, "", email, 400)
		v.Errors["email"] = fmt.Sprintf("An email address has at most %d characters.", directory.EmailMax)
		c.showLogin(rc, 400, v)
		return
	default:
		pw := string(rc.PostArgs().Peek("password"))
		m, found := c.Ops.Directory().MemberByEmail(email)
		hash := dummyHash
		if found {
			hash = m.PasswordHash
		}
		if ok := directory.VerifyPassword(hash, pw); !ok || !found || len(m.Roles) == 0 {
			failed()
			c.auditSignIn(rc, "signInFailed", false, m.ID, email, 401) // m.ID "" when no such member
			v.Errors["password"] = "The email or the password is wrong."
			c.showLogin(rc, 401, v)
			return
		}
		s.MemberID = m.ID
	}
	c.acct.clear(acct)
	c.acct.clear("known:" + acct)
	s.ip = ip
	sid, err := c.sess.start(&s, now)
	if err != nil {
		c.log.Error("console: session not started", "err", err)
		v.Error = "Signing in is unavailable for a moment. Try again."
		c.showLogin(rc, 503, v)
		return
	}
	c.setCookie(rc, sessionCookie, sid, 0)
	c.setCookie(rc, loginCookie, "", -1)
	c.setCookie(rc, knownCookie, c.mac("known", acct), knownTTL)
	c.auditSignIn(rc, "signIn", s.Operator, s.MemberID, "", 303)
	seeOther(rc, safeNext(v.Form["next"]))
	c.Headers(rc)
}

// knownBrowser reports whether the browser carries the signed cookie of
// a past sign-in to acct.
func (c *Console) knownBrowser(rc *fasthttp.RequestCtx, acct string) bool {
	got := rc.Request.Header.Cookie(knownCookie)
	return len(got) > 0 && hmac.Equal(got, []byte(c.mac("known", acct)))
}

// signInWait is how long a try at acct from ip must still wait: a known
// browser's own count alone, else the longer of the account's and the
// address's.
func (c *Console) signInWait(ip, acct string, known bool, now time.Time) time.Duration {
	if known {
		return c.acct.wait("known:"+acct, now)
	}
	return max(c.acct.wait(acct, now), c.ips.wait(ip, now))
}

// CapText cuts s to at most n bytes (on a character boundary), for
// echoing or logging what someone typed.
func CapText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Plural writes n with its unit, pluralized with an s when n is not 1.
func Plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

func (c *Console) logout(r *Req) error {
	if err := c.sess.end(r.sid); err != nil {
		return signOutFailed(err)
	}
	c.auditSignIn(r.RC, "signOut", r.Session.Operator, r.Session.MemberID, "", 303)
	c.setCookie(r.RC, sessionCookie, "", -1)
	return Redirect(r, "/console/login")
}

// signOutFailed is a sign-out that could not be made durable (cluster
// mode): the session stands, and the page says to try again.
func signOutFailed(err error) error {
	e := thttp.NewError(503, "Signing out did not go through; try again. ("+err.Error()+")")
	e.Reason = event.ReasonUnavailable
	return e
}

// logoutEverywhere ends every session of the signed-in person, this one
// included.
func (c *Console) logoutEverywhere(r *Req) error {
	if err := c.sess.endAll(r.Session); err != nil {
		return signOutFailed(err)
	}
	c.auditSignIn(r.RC, "signOutEverywhere", r.Session.Operator, r.Session.MemberID, "", 303)
	c.setCookie(r.RC, sessionCookie, "", -1)
	return Redirect(r, "/console/login")
}

// linkPage shows the form of a usable invitation or reset link; a wrong,
// used or expired one answers the same 404.
func (c *Console) linkPage(rc *fasthttp.RequestCtx, kind string, v *View, status int) {
	inv, err := c.Ops.Directory().Link(Param(rc, "token"), c.Config.Now())
	if err != nil || inv.Kind != kind {
		c.Render(rc, 404, "message", &View{Title: "Link not valid", Message: "This link is wrong, used or expired. Ask for a new one."})
		return
	}
	tok := randomToken()
	c.setCookie(rc, loginCookie, tok, c.Config.SignInWindow)
	v.CSRF = tok
	v.Invitation = &inv
	if u, ok := c.Ops.Directory().Unit(inv.UnitID); ok {
		v.Unit = &u
	}
	if _, exists := c.Ops.Directory().MemberByEmail(inv.Email); exists {
		v.Existing = true
	}
	page := "accept"
	v.Title = "Accept the invitation"
	if kind == directory.KindReset {
		page, v.Title = "reset", "Choose a new password"
	}
	c.Render(rc, status, page, v)
}

func (c *Console) acceptPage(rc *fasthttp.RequestCtx) {
	c.linkPage(rc, directory.KindInvite, &View{}, 200)
}

func (c *Console) resetPage(rc *fasthttp.RequestCtx) {
	c.linkPage(rc, directory.KindReset, &View{}, 200)
}

// hashNew checks and hashes a new password (off the directory actor: the
// hash costs tens of milliseconds).
func hashNew(pw string) (string, error) {
	if err := directory.CheckPassword(pw); err != nil {
		return "", err
	}
	salt := make([]byte, directory.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	return directory.HashPassword(pw, salt), nil
}

// accept makes the invited person a member (or adds the unit to their
// account, after checking their password) and signs them in.
func (c *Console) accept(rc *fasthttp.RequestCtx) {
	now := c.Config.Now()
	token := Param(rc, "token")
	v := &View{Form: map[string]string{"name": Form(rc, "name")}, Errors: map[string]string{}}
	if !sameToken(Form(rc, "csrf"), string(rc.Request.Header.Cookie(loginCookie))) {
		v.Error = "The form was stale. Try again."
		c.linkPage(rc, directory.KindInvite, v, 403)
		return
	}
	dir := c.Ops.Directory()
	inv, err := dir.Link(token, now)
	if err != nil {
		c.linkPage(rc, directory.KindInvite, v, 404)
		return
	}
	pw := string(rc.PostArgs().Peek("password"))
	hash := ""
	if m, exists := dir.MemberByEmail(inv.Email); exists {
		ip := addrKey(thttp.ClientIP(rc, c.Config.TrustedProxies))
		acct := "member:" + m.Email
		if w := c.signInWait(ip, acct, false, now); w > 0 {
			secs := int((w + time.Second - 1) / time.Second)
			rc.Response.Header.Set("Retry-After", strconv.Itoa(secs))
			v.Error = fmt.Sprintf("Too many failed tries. Wait %s, then try again.", Plural(secs, "second"))
			c.linkPage(rc, directory.KindInvite, v, 429)
			return
		}
		if !directory.VerifyPassword(m.PasswordHash, pw) {
			c.acct.fail(acct, now)
			c.ips.fail(ip, now)
			c.auditSignIn(rc, "signInFailed", false, m.ID, m.Email, 401)
			v.Errors["password"] = "That is not the password of this account."
			c.linkPage(rc, directory.KindInvite, v, 401)
			return
		}
	} else {
		if pw != string(rc.PostArgs().Peek("password2")) {
			v.Errors["password2"] = "The two passwords differ."
			c.linkPage(rc, directory.KindInvite, v, 400)
			return
		}
		if hash, err = hashNew(pw); err != nil {
			c.linkFail(rc, directory.KindInvite, v, err)
			return
		}
	}
	m, err := c.Ops.AcceptInvitation(context.Background(), token, Form(rc, "name"), hash)
	if err != nil {
		c.linkFail(rc, directory.KindInvite, v, err)
		return
	}
	c.recordLink(rc, now, "acceptInvitation", inv, m)
	c.signIn(rc, m.ID, "/console/units/"+inv.UnitID)
}

// reset sets the password of a reset link and signs the member in.
func (c *Console) reset(rc *fasthttp.RequestCtx) {
	now := c.Config.Now()
	token := Param(rc, "token")
	v := &View{Errors: map[string]string{}}
	if !sameToken(Form(rc, "csrf"), string(rc.Request.Header.Cookie(loginCookie))) {
		v.Error = "The form was stale. Try again."
		c.linkPage(rc, directory.KindReset, v, 403)
		return
	}
	inv, err := c.Ops.Directory().Link(token, now)
	if err != nil {
		c.linkPage(rc, directory.KindReset, v, 404)
		return
	}
	pw := string(rc.PostArgs().Peek("password"))
	if pw != string(rc.PostArgs().Peek("password2")) {
		v.Errors["password2"] = "The two passwords differ."
		c.linkPage(rc, directory.KindReset, v, 400)
		return
	}
	hash, err := hashNew(pw)
	if err != nil {
		c.linkFail(rc, directory.KindReset, v, err)
		return
	}
	m, err := c.Ops.SetPassword(context.Background(), token, hash)
	if err != nil {
		c.linkFail(rc, directory.KindReset, v, err)
		return
	}
	// Every other session of the member ends with the old password
	// (wrap compares PasswordAt with the session's start).
	c.recordLink(rc, now, "resetPassword", inv, m)
	c.signIn(rc, m.ID, "/console")
}

func (c *Console) linkFail(rc *fasthttp.RequestCtx, kind string, v *View, err error) {
	var fe *directory.FieldError
	switch {
	case errors.As(err, &fe):
		v.Errors[fe.Field] = Say(fe.Field, fe.Reason)
		c.linkPage(rc, kind, v, 400)
	case errors.Is(err, directory.ErrLinkInvalid):
		c.linkPage(rc, kind, v, 404)
	default:
		c.log.Error("console: link", "err", err)
		c.Render(rc, 503, "message", &View{Title: "Temporarily unavailable", Message: "The service could not do this now. Try again shortly."})
	}
}

// recordLink audits the use of a link, by the member who used it.
func (c *Console) recordLink(rc *fasthttp.RequestCtx, now time.Time, op string, inv directory.Invitation, m directory.Member) {
	r := &Req{Console: c, RC: rc, Now: now, Session: session{MemberID: m.ID}}
	r.Audit(op, inv.UnitID, map[string]string{"invitationId": inv.ID, "memberId": m.ID}, MemberRecord(m, thttp.ClientIP(rc, c.Config.TrustedProxies).String()))
}

// MemberRecord is what the audit log keeps of a member: never the hash;
// ip is the client's address when the member acted on a link.
func MemberRecord(m directory.Member, ip string) any {
	return struct {
		ID    string            `json:"id"`
		Email string            `json:"email"`
		Name  string            `json:"name"`
		Roles map[string]string `json:"roles"`
		IP    string            `json:"ip,omitempty"`
	}{m.ID, m.Email, m.Name, m.Roles, ip}
}

// signIn starts a member's session after a link was used. The session
// begins now, after the password was set: one begun before is ended.
func (c *Console) signIn(rc *fasthttp.RequestCtx, memberID, to string) {
	s := session{MemberID: memberID, ip: addrKey(thttp.ClientIP(rc, c.Config.TrustedProxies))}
	sid, err := c.sess.start(&s, c.Config.Now())
	if err != nil {
		// The link is used; signing in with the new password still works.
		c.log.Error("console: session not started", "err", err)
		seeOther(rc, "/console/login")
		c.Headers(rc)
		return
	}
	c.setCookie(rc, sessionCookie, sid, 0)
	c.setCookie(rc, loginCookie, "", -1)
	if m, ok := c.Ops.Directory().Member(memberID); ok {
		c.setCookie(rc, knownCookie, c.mac("known", "member:"+m.Email), knownTTL)
	}
	seeOther(rc, to)
	c.Headers(rc)
}
