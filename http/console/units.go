package console

import (
	"context"
	"errors"
	"html/template"
	"slices"
	"strings"
	"time"

	"ticketd/actors"
	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/api"
)

// view is the data of every console template; each page fills what it
// shows.
type view struct {
	req *req
	// Wallets: the wallet passes buyers are offered (operator's home).
	Wallets []WalletStatus
	Title   string
	Who     string
	CSRF    string
	Error   string
	Notice  string
	Message string
	// Form holds what was typed, Errors the problem of each field, so a
	// refused form shows both next to the field.
	Form   map[string]string
	Errors map[string]string
	// Canon is the address of the page a form lives on: a refused form
	// shown at its POST address puts it back in the address bar.
	Canon string

	Units      []unitRow
	Unit       *directory.Unit
	Role       string
	CanWrite   bool
	CanMembers bool
	Members    []directory.Member
	// MayReset names the members whose password the caller may reset
	// (the operator, or an owner of every unit of theirs).
	MayReset   map[string]bool
	Pending    []directory.Invitation
	Invitation *directory.Invitation
	Existing   bool
	Link       string // a link shown once
	Keys       []directory.Key
	NewKey     string // a key shown once
	Events     []event.Event
	Roles      []string

	Event       *event.Event
	Venue       string          // where the event takes place, one line
	PublicURL   string          // the event's public page
	TicketTypes []ticketTypeRow // events.go
	Settings    *eventSettings
	Any         any // a page's own data
}

// Here reports whether the page shown is path ("you are here" in the
// navigation).
func (v *view) Here(path string) bool {
	return v.req != nil && string(v.req.rc.Path()) == path
}

// Under reports whether the page shown is path or one below it.
func (v *view) Under(path string) bool {
	if v.req == nil {
		return false
	}
	p := string(v.req.rc.Path())
	return p == path || strings.HasPrefix(p, path+"/") || strings.HasPrefix(p, path+".")
}

type unitRow struct {
	Unit directory.Unit
	Role string
}

var funcs = template.FuncMap{
	"roleOf": func(m directory.Member, unit string) string { return m.Roles[unit] },
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"whenp": func(t *time.Time) string {
		if t == nil {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"join":  strings.Join,
	"split": strings.Fields,
	"err":   func(m map[string]string, k string) string { return m[k] },
	"val":   func(m map[string]string, k string) string { return m[k] },
	"eq2":   func(a, b string) bool { return a == b },
}

// fieldErrors turns a refusal into messages next to fields: the
// directory's FieldError and the core's details name their field; other
// business errors become the form's error.
func fieldErrors(err error, v *view) bool {
	if v.Errors == nil {
		v.Errors = map[string]string{}
	}
	var fe *directory.FieldError
	var ee *event.Error
	var he *thttp.Error
	switch {
	case errors.As(err, &fe):
		v.Errors[fe.Field] = say(fe.Field, fe.Reason)
	case errors.As(err, &ee) && ee.Code != event.NotFound:
		if len(ee.Details) == 0 {
			v.Error = ee.Message
		}
		for _, d := range ee.Details {
			f := d.Field
			if f == "" {
				v.Error = d.Reason
				continue
			}
			if i := strings.IndexAny(f, ".["); i > 0 {
				f = f[:i]
			}
			v.Errors[f] = say(f, d.Reason)
		}
	case errors.As(err, &he) && he.Status == 400:
		v.Error = he.Message
		for _, d := range he.Details {
			v.Errors[d.Field] = say(d.Field, d.Reason)
		}
	default:
		return false
	}
	return true
}

// home lists the units the caller can see; the operator also creates
// units there.
func (c *Console) home(r *req) error {
	v := &view{req: r, Title: "Business units"}
	c.fillHome(r, v)
	if !r.s.operator && len(v.Units) == 1 && v.Units[0].Role == directory.RoleDoor {
		// A door member has one thing to do: go to the unit's events.
		return redirect(r, "/console/units/"+v.Units[0].Unit.ID)
	}
	c.render(r.rc, 200, "home", v)
	return nil
}

func (c *Console) fillHome(r *req, v *view) {
	for _, u := range r.dir.Units() {
		if role := r.role(u.ID); role != "" {
			v.Units = append(v.Units, unitRow{Unit: u, Role: role})
		}
	}
	v.CanWrite = r.s.operator
	v.Wallets = c.deps.Wallets
}

// createUnit is the operator's: members belong to units they are given.
func (c *Console) createUnit(r *req) error {
	if !r.s.operator {
		return errForbidden
	}
	name := form(r.rc, "name")
	u, err := c.sys.CreateUnit(context.Background(), name)
	if err != nil {
		v := &view{req: r, Title: "Business units", Form: map[string]string{"name": name}, Errors: map[string]string{}}
		c.fillHome(r, v)
		if fieldErrors(err, v) {
			c.render(r.rc, 400, "home", v)
			return nil
		}
		return err
	}
	r.audit("createUnit", u.ID, map[string]string{"unitId": u.ID}, u)
	return redirect(r, "/console/units/"+u.ID)
}

// unitPage shows a unit: its events, and for owners its members and open
// links.
func (c *Console) unitPage(r *req) error {
	return c.showUnit(r, &view{req: r}, 200)
}

func (c *Console) showUnit(r *req, v *view, status int) error {
	unitID := param(r.rc, "unitId")
	role := r.role(unitID)
	if role == "" {
		return errNotFound
	}
	// The view as it now stands: this request's own write is in it.
	r.dir = c.sys.Directory()
	u, _ := r.dir.Unit(unitID)
	v.Unit, v.Role, v.Title, v.Canon = &u, role, u.Name, "/console/units/"+unitID
	v.CanWrite, v.CanMembers = allowed(role, permWrite), allowed(role, permMembers)
	v.Roles = []string{directory.RoleOwner, directory.RoleAdmin, directory.RoleDoor, directory.RoleViewer}
	if v.CanMembers || allowed(role, permRead) {
		v.Members = r.dir.Members(unitID)
	}
	if v.CanMembers {
		v.Pending = r.dir.Pending(unitID, r.now)
		v.MayReset = map[string]bool{}
		for _, m := range v.Members {
			v.MayReset[m.ID] = r.dir.MayReset(r.by(), m.ID)
		}
	}
	evs, err := c.unitEvents(unitID, 100)
	if err != nil {
		return err
	}
	v.Events = evs
	if v.Form == nil {
		v.Form = map[string]string{"timezone": "UTC", "currency": "EUR"}
	}
	c.render(r.rc, status, "unit", v)
	return nil
}

// unitEvents reads the unit's newest events (at most limit) from their
// actors.
func (c *Console) unitEvents(unitID string, limit int) ([]event.Event, error) {
	ids := c.sys.UnitEvents(unitID)
	var out []event.Event
	for i := len(ids) - 1; i >= 0 && len(out) < limit; i-- {
		ev, err := askOp(c, ids[i], event.GetEvent{})
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// invite makes an invitation link, shows it once and audits it (without
// the token: only its hash is kept).
func (c *Console) invite(r *req) error {
	unitID := param(r.rc, "unitId")
	if err := r.need(unitID, permMembers); err != nil {
		return err
	}
	email, role := form(r.rc, "email"), form(r.rc, "role")
	by := r.by()
	u, _ := r.dir.Unit(unitID)
	inv, tok, err := c.sys.CreateLink(context.Background(), actors.LinkSpec{UnitID: unitID, Email: email, Role: role, By: by, TTL: c.cfg.LinkTTL,
		UnitName: u.Name, LinkURL: func(t string) string { return c.cfg.BaseURL + "/console/invitations/" + t }})
	if err != nil {
		v := &view{req: r, Form: map[string]string{"email": email, "role": role}}
		if fieldErrors(err, v) {
			return c.showUnit(r, v, 400)
		}
		return err
	}
	r.audit("createInvitation", unitID, map[string]string{"unitId": unitID, "invitationId": inv.ID}, linkRecord(inv))
	v := &view{req: r, Link: c.cfg.BaseURL + "/console/invitations/" + tok,
		Notice: "Invitation for " + inv.Email + " as " + inv.Role + ": mailed to them, and shown here only now. It works once, until " + inv.ExpiresAt.Format("2006-01-02 15:04 UTC") + "."}
	return c.showUnit(r, v, 200)
}

func linkRecord(inv directory.Invitation) any {
	return struct {
		ID        string    `json:"id"`
		Kind      string    `json:"kind"`
		Email     string    `json:"email"`
		Role      string    `json:"role,omitempty"`
		MemberID  string    `json:"memberId,omitempty"`
		ExpiresAt time.Time `json:"expiresAt"`
		Ended     string    `json:"ended,omitempty"`
	}{inv.ID, inv.Kind, inv.Email, inv.Role, inv.MemberID, inv.ExpiresAt, inv.Ended}
}

// setRole changes a member's role in the unit, or removes the member.
func (c *Console) setRole(r *req) error {
	unitID, memberID := param(r.rc, "unitId"), param(r.rc, "memberId")
	if err := r.need(unitID, permMembers); err != nil {
		return err
	}
	role := form(r.rc, "role")
	if role == "remove" {
		role = ""
	}
	m, err := c.sys.SetMemberRole(context.Background(), memberID, unitID, role)
	if err != nil {
		v := &view{req: r}
		if fieldErrors(err, v) {
			v.Error = "The role of that member is unchanged: " + v.Errors["role"]
			return c.showUnit(r, v, 400)
		}
		return err
	}
	r.audit("setMemberRole", unitID, map[string]string{"unitId": unitID, "memberId": memberID}, memberRecord(m, ""))
	return redirect(r, "/console/units/"+unitID)
}

// resetLink makes a password reset link for a member of the unit, shown
// once. Only the operator, or an owner of every unit the member is in,
// may: a password opens all of them (the directory decides it again).
func (c *Console) resetLink(r *req) error {
	unitID, memberID := param(r.rc, "unitId"), param(r.rc, "memberId")
	if err := r.need(unitID, permMembers); err != nil {
		return err
	}
	if m, ok := r.dir.Member(memberID); !ok || m.Roles[unitID] == "" {
		return errNotFound
	}
	by := r.by()
	u, _ := r.dir.Unit(unitID)
	inv, tok, err := c.sys.CreateLink(context.Background(), actors.LinkSpec{UnitID: unitID, MemberID: memberID, By: by, TTL: c.cfg.LinkTTL,
		UnitName: u.Name, LinkURL: func(t string) string { return c.cfg.BaseURL + "/console/reset/" + t }})
	if errors.Is(err, directory.ErrNotOwnerOfAll) {
		return c.showUnit(r, &view{req: r, Error: notOwnerOfAll}, 403)
	}
	if err != nil {
		return err
	}
	r.audit("createResetLink", unitID, map[string]string{"unitId": unitID, "memberId": memberID, "invitationId": inv.ID}, linkRecord(inv))
	v := &view{req: r, Link: c.cfg.BaseURL + "/console/reset/" + tok,
		Notice: "Password reset link for " + inv.Email + ": mailed to them, and shown here only now. It works once, until " +
			inv.ExpiresAt.Format("2006-01-02 15:04 UTC") + "; any older reset link of theirs no longer works."}
	return c.showUnit(r, v, 200)
}

// notOwnerOfAll is the refusal of a reset link the caller may not make.
const notOwnerOfAll = "Only the operator, or an owner of every business unit this member belongs to, can reset their password: a password opens all of their units. Ask the operator."

// by is who makes a link: the member, or "operator".
func (r *req) by() string {
	if r.s.operator {
		return "operator"
	}
	return r.s.memberID
}

// revokeLink ends an open link the unit's owners see: one of its
// invitations, or a reset link of one of its members.
func (c *Console) revokeLink(r *req) error {
	unitID, linkID := param(r.rc, "unitId"), param(r.rc, "linkId")
	if err := r.need(unitID, permMembers); err != nil {
		return err
	}
	inv, err := c.sys.RevokeLink(context.Background(), linkID, unitID, r.by())
	if err != nil {
		return err
	}
	r.audit("revokeLink", unitID, map[string]string{"unitId": unitID, "invitationId": inv.ID}, linkRecord(inv))
	what := "The invitation for " + inv.Email
	if inv.Kind == directory.KindReset {
		what = "The password reset link of " + inv.Email
	}
	return redirectNotice(r, "/console/units/"+unitID, what+" no longer works.")
}

// keysPage lists the unit's API keys: secret keys masked, publishable
// keys whole.
func (c *Console) keysPage(r *req) error {
	return c.showKeys(r, &view{req: r}, 200)
}

func (c *Console) showKeys(r *req, v *view, status int) error {
	unitID := param(r.rc, "unitId")
	if err := r.need(unitID, permRead); err != nil {
		return err
	}
	r.dir = c.sys.Directory() // with this request's own write
	u, _ := r.dir.Unit(unitID)
	v.Unit, v.Title, v.Canon = &u, "API keys · "+u.Name, "/console/units/"+unitID+"/keys"
	v.CanWrite = allowed(r.role(unitID), permWrite)
	v.Keys = r.dir.Keys(unitID)
	slices.Reverse(v.Keys)
	if v.Form == nil {
		v.Form = map[string]string{"type": directory.Secret, "version": thttp.CurrentVersion}
	}
	v.Any = thttp.KnownVersions()
	c.render(r.rc, status, "keys", v)
	return nil
}

// createKey makes a key as the admin API does (same checks): a secret
// key is shown once.
func (c *Console) createKey(r *req) error {
	unitID := param(r.rc, "unitId")
	if err := r.need(unitID, permWrite); err != nil {
		return err
	}
	f := map[string]string{"type": form(r.rc, "type"), "name": form(r.rc, "name"), "origins": form(r.rc, "origins"),
		"expiresAt": form(r.rc, "expiresAt"), "version": form(r.rc, "version")}
	v := &view{req: r, Form: f, Errors: map[string]string{}}
	spec := actors.NewKeySpec{UnitID: unitID, Type: f["type"], Name: f["name"], Version: f["version"]}
	if spec.Version == "" {
		spec.Version = thttp.CurrentVersion
	}
	if !thttp.ValidVersion(spec.Version) {
		v.Errors["version"] = "The version must be one of the API versions: " + strings.Join(thttp.KnownVersions(), ", ") + "."
	}
	if len(spec.Name) > 200 {
		v.Errors["name"] = "The name must be at most 200 characters."
	}
	for _, line := range strings.Split(f["origins"], "\n") {
		if o := strings.TrimSpace(line); o != "" {
			spec.Origins = append(spec.Origins, o)
		}
	}
	if spec.Type == directory.Publishable {
		if len(spec.Origins) == 0 {
			v.Errors["origins"] = "A publishable key needs at least one origin, one per line."
		}
		if len(spec.Origins) > 20 {
			v.Errors["origins"] = "At most 20 origins."
		}
		for _, o := range spec.Origins {
			if reason := api.ValidOrigin(o); reason != "" {
				v.Errors["origins"] = "“" + o + "” " + reason + "."
				break
			}
		}
	} else {
		spec.Origins = nil
	}
	if e := f["expiresAt"]; e != "" {
		t, err := time.Parse("2006-01-02T15:04", e)
		if err != nil {
			v.Errors["expiresAt"] = "The expiry must be a date and time, such as 2030-06-01 18:00."
		} else {
			t = t.UTC()
			spec.ExpiresAt = &t
		}
	}
	if len(v.Errors) > 0 {
		return c.showKeys(r, v, 400)
	}
	k, secret, err := c.sys.CreateKey(context.Background(), spec)
	if err != nil {
		if fieldErrors(err, v) {
			return c.showKeys(r, v, 400)
		}
		return err
	}
	r.audit("createApiKey", unitID, map[string]string{"unitId": unitID, "keyId": k.ID}, keyRecord(k))
	v = &view{req: r, NewKey: secret}
	if k.Type == directory.Secret {
		v.Notice = "Secret key “" + k.Name + "” created. Copy it now: it is shown only once."
	} else {
		v.Notice = "Publishable key “" + k.Name + "” created. It is public and stays listed below."
	}
	return c.showKeys(r, v, 201)
}

func keyRecord(k directory.Key) any {
	return struct {
		ID        string     `json:"id"`
		Type      string     `json:"type"`
		Name      string     `json:"name"`
		Origins   []string   `json:"origins"`
		Version   string     `json:"version"`
		ExpiresAt *time.Time `json:"expiresAt"`
		RevokedAt *time.Time `json:"revokedAt"`
	}{k.ID, k.Type, k.Name, k.Origins, k.Version, k.ExpiresAt, k.RevokedAt}
}

func (c *Console) revokeKey(r *req) error {
	unitID, keyID := param(r.rc, "unitId"), param(r.rc, "keyId")
	if err := r.need(unitID, permWrite); err != nil {
		return err
	}
	if k, ok := r.dir.Key(keyID); !ok || k.UnitID != unitID {
		return errNotFound
	}
	k, err := c.sys.RevokeKey(context.Background(), keyID)
	if err != nil {
		return err
	}
	r.audit("revokeApiKey", unitID, map[string]string{"unitId": unitID, "keyId": keyID}, keyRecord(k))
	return redirect(r, "/console/units/"+unitID+"/keys")
}
