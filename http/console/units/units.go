package units

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/api"
	"ticketd/http/console/shell"
	"ticketd/ops"
)

// home lists the units the caller can see; the operator also creates
// units there.
func (c *pages) home(r *shell.Req) error {
	v := &shell.View{Req: r, Title: "Business units"}
	c.fillHome(r, v)
	if !r.Session.Operator && len(v.Units) == 1 && v.Units[0].Role == directory.RoleDoor {
		// A door member has one thing to do: go to the unit's events.
		return shell.Redirect(r, "/console/units/"+v.Units[0].Unit.ID)
	}
	c.Render(r.RC, 200, "home", v)
	return nil
}

func (c *pages) fillHome(r *shell.Req, v *shell.View) {
	for _, u := range r.Dir.Units() {
		if role := r.Role(u.ID); role != "" {
			v.Units = append(v.Units, shell.UnitRow{Unit: u, Role: role})
		}
	}
	v.CanWrite = r.Session.Operator
	v.Wallets = c.Deps.Wallets
}

// createUnit is the operator's: members belong to units they are given.
func (c *pages) createUnit(r *shell.Req) error {
	if !r.Session.Operator {
		return shell.ErrForbidden
	}
	name := shell.Form(r.RC, "name")
	u, err := c.Ops.CreateUnit(context.Background(), name)
	if err != nil {
		v := &shell.View{Req: r, Title: "Business units", Form: map[string]string{"name": name}, Errors: map[string]string{}}
		c.fillHome(r, v)
		if shell.FieldErrors(err, v) {
			c.Render(r.RC, 400, "home", v)
			return nil
		}
		return err
	}
	r.Audit("createUnit", u.ID, map[string]string{"unitId": u.ID}, u)
	return shell.Redirect(r, "/console/units/"+u.ID)
}

// unitPage shows a unit: its events, and for owners its members and open
// links.
func (c *pages) unitPage(r *shell.Req) error {
	return c.showUnit(r, &shell.View{Req: r}, 200)
}

func (c *pages) showUnit(r *shell.Req, v *shell.View, status int) error {
	unitID := shell.Param(r.RC, "unitId")
	role := r.Role(unitID)
	if role == "" {
		return shell.ErrNotFound
	}
	// The view as it now stands: this request's own write is in it.
	r.Dir = c.Ops.Directory()
	u, _ := r.Dir.Unit(unitID)
	v.Unit, v.Role, v.Title, v.Canon = &u, role, u.Name, "/console/units/"+unitID
	v.CanWrite, v.CanMembers = shell.Allowed(role, shell.PermWrite), shell.Allowed(role, shell.PermMembers)
	v.Roles = []string{directory.RoleOwner, directory.RoleAdmin, directory.RoleDoor, directory.RoleViewer}
	if v.CanMembers || shell.Allowed(role, shell.PermRead) {
		v.Members = r.Dir.Members(unitID)
	}
	if v.CanMembers {
		v.Pending = r.Dir.Pending(unitID, r.Now)
		v.MayReset = map[string]bool{}
		for _, m := range v.Members {
			v.MayReset[m.ID] = r.Dir.MayReset(by(r), m.ID)
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
	c.Render(r.RC, status, "unit", v)
	return nil
}

// unitEvents reads the unit's newest events (at most limit) from their
// actors.
func (c *pages) unitEvents(unitID string, limit int) ([]event.Event, error) {
	ids := c.Ops.UnitEvents(unitID)
	var out []event.Event
	for i := len(ids) - 1; i >= 0 && len(out) < limit; i-- {
		ev, err := shell.AskOp(c.Console, ids[i], event.GetEvent{})
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// invite makes an invitation link, shows it once and audits it (without
// the token: only its hash is kept).
func (c *pages) invite(r *shell.Req) error {
	unitID := shell.Param(r.RC, "unitId")
	if err := r.Need(unitID, shell.PermMembers); err != nil {
		return err
	}
	email, role := shell.Form(r.RC, "email"), shell.Form(r.RC, "role")
	by := by(r)
	u, _ := r.Dir.Unit(unitID)
	inv, tok, err := c.Ops.CreateLink(context.Background(), ops.LinkSpec{UnitID: unitID, Email: email, Role: role, By: by, TTL: c.Config.LinkTTL,
		UnitName: u.Name, LinkURL: func(t string) string { return c.Config.BaseURL + "/console/invitations/" + t }})
	if err != nil {
		v := &shell.View{Req: r, Form: map[string]string{"email": email, "role": role}}
		if shell.FieldErrors(err, v) {
			return c.showUnit(r, v, 400)
		}
		return err
	}
	r.Audit("createInvitation", unitID, map[string]string{"unitId": unitID, "invitationId": inv.ID}, linkRecord(inv))
	v := &shell.View{Req: r, Link: c.Config.BaseURL + "/console/invitations/" + tok,
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
func (c *pages) setRole(r *shell.Req) error {
	unitID, memberID := shell.Param(r.RC, "unitId"), shell.Param(r.RC, "memberId")
	if err := r.Need(unitID, shell.PermMembers); err != nil {
		return err
	}
	role := shell.Form(r.RC, "role")
	if role == "remove" {
		role = ""
	}
	m, err := c.Ops.SetMemberRole(context.Background(), memberID, unitID, role)
	if err != nil {
		v := &shell.View{Req: r}
		if shell.FieldErrors(err, v) {
			v.Error = "The role of that member is unchanged: " + v.Errors["role"]
			return c.showUnit(r, v, 400)
		}
		return err
	}
	r.Audit("setMemberRole", unitID, map[string]string{"unitId": unitID, "memberId": memberID}, shell.MemberRecord(m, ""))
	return shell.Redirect(r, "/console/units/"+unitID)
}

// resetLink makes a password reset link for a member of the unit, shown
// once. Only the operator, or an owner of every unit the member is in,
// may: a password opens all of them (the directory decides it again).
func (c *pages) resetLink(r *shell.Req) error {
	unitID, memberID := shell.Param(r.RC, "unitId"), shell.Param(r.RC, "memberId")
	if err := r.Need(unitID, shell.PermMembers); err != nil {
		return err
	}
	if m, ok := r.Dir.Member(memberID); !ok || m.Roles[unitID] == "" {
		return shell.ErrNotFound
	}
	by := by(r)
	u, _ := r.Dir.Unit(unitID)
	inv, tok, err := c.Ops.CreateLink(context.Background(), ops.LinkSpec{UnitID: unitID, MemberID: memberID, By: by, TTL: c.Config.LinkTTL,
		UnitName: u.Name, LinkURL: func(t string) string { return c.Config.BaseURL + "/console/reset/" + t }})
	if errors.Is(err, directory.ErrNotOwnerOfAll) {
		return c.showUnit(r, &shell.View{Req: r, Error: notOwnerOfAll}, 403)
	}
	if err != nil {
		return err
	}
	r.Audit("createResetLink", unitID, map[string]string{"unitId": unitID, "memberId": memberID, "invitationId": inv.ID}, linkRecord(inv))
	v := &shell.View{Req: r, Link: c.Config.BaseURL + "/console/reset/" + tok,
		Notice: "Password reset link for " + inv.Email + ": mailed to them, and shown here only now. It works once, until " +
			inv.ExpiresAt.Format("2006-01-02 15:04 UTC") + "; any older reset link of theirs no longer works."}
	return c.showUnit(r, v, 200)
}

// notOwnerOfAll is the refusal of a reset link the caller may not make.
const notOwnerOfAll = "Only the operator, or an owner of every business unit this member belongs to, can reset their password: a password opens all of their units. Ask the operator."

// by is who makes a link: the member, or "operator".
func by(r *shell.Req) string {
	if r.Session.Operator {
		return "operator"
	}
	return r.Session.MemberID
}

// revokeLink ends an open link the unit's owners see: one of its
// invitations, or a reset link of one of its members.
func (c *pages) revokeLink(r *shell.Req) error {
	unitID, linkID := shell.Param(r.RC, "unitId"), shell.Param(r.RC, "linkId")
	if err := r.Need(unitID, shell.PermMembers); err != nil {
		return err
	}
	inv, err := c.Ops.RevokeLink(context.Background(), linkID, unitID, by(r))
	if err != nil {
		return err
	}
	r.Audit("revokeLink", unitID, map[string]string{"unitId": unitID, "invitationId": inv.ID}, linkRecord(inv))
	what := "The invitation for " + inv.Email
	if inv.Kind == directory.KindReset {
		what = "The password reset link of " + inv.Email
	}
	return shell.RedirectNotice(r, "/console/units/"+unitID, what+" no longer works.")
}

// keysPage lists the unit's API keys: secret keys masked, publishable
// keys whole.
func (c *pages) keysPage(r *shell.Req) error {
	return c.showKeys(r, &shell.View{Req: r}, 200)
}

func (c *pages) showKeys(r *shell.Req, v *shell.View, status int) error {
	unitID := shell.Param(r.RC, "unitId")
	if err := r.Need(unitID, shell.PermRead); err != nil {
		return err
	}
	r.Dir = c.Ops.Directory() // with this request's own write
	u, _ := r.Dir.Unit(unitID)
	v.Unit, v.Title, v.Canon = &u, "API keys · "+u.Name, "/console/units/"+unitID+"/keys"
	v.CanWrite = shell.Allowed(r.Role(unitID), shell.PermWrite)
	v.Keys = r.Dir.Keys(unitID)
	slices.Reverse(v.Keys)
	if v.Form == nil {
		v.Form = map[string]string{"type": directory.Secret, "version": thttp.CurrentVersion}
	}
	v.Any = thttp.KnownVersions()
	c.Render(r.RC, status, "keys", v)
	return nil
}

// createKey makes a key as the admin API does (same checks): a secret
// key is shown once.
func (c *pages) createKey(r *shell.Req) error {
	unitID := shell.Param(r.RC, "unitId")
	if err := r.Need(unitID, shell.PermWrite); err != nil {
		return err
	}
	f := map[string]string{"type": shell.Form(r.RC, "type"), "name": shell.Form(r.RC, "name"), "origins": shell.Form(r.RC, "origins"),
		"expiresAt": shell.Form(r.RC, "expiresAt"), "version": shell.Form(r.RC, "version")}
	v := &shell.View{Req: r, Form: f, Errors: map[string]string{}}
	spec := ops.KeySpec{UnitID: unitID, Type: f["type"], Name: f["name"], Version: f["version"]}
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
	k, secret, err := c.Ops.CreateKey(context.Background(), spec)
	if err != nil {
		if shell.FieldErrors(err, v) {
			return c.showKeys(r, v, 400)
		}
		return err
	}
	r.Audit("createApiKey", unitID, map[string]string{"unitId": unitID, "keyId": k.ID}, keyRecord(k))
	v = &shell.View{Req: r, NewKey: secret}
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

func (c *pages) revokeKey(r *shell.Req) error {
	unitID, keyID := shell.Param(r.RC, "unitId"), shell.Param(r.RC, "keyId")
	if err := r.Need(unitID, shell.PermWrite); err != nil {
		return err
	}
	if k, ok := r.Dir.Key(keyID); !ok || k.UnitID != unitID {
		return shell.ErrNotFound
	}
	k, err := c.Ops.RevokeKey(context.Background(), keyID)
	if err != nil {
		return err
	}
	r.Audit("revokeApiKey", unitID, map[string]string{"unitId": unitID, "keyId": keyID}, keyRecord(k))
	return shell.Redirect(r, "/console/units/"+unitID+"/keys")
}

// unitRoutes are the signed-in routes of these pages.
func (c *pages) unitRoutes() []shell.Route {
	return []shell.Route{
		{Method: "GET", Path: "/console/sign-ins", H: c.signInsPage},
		{Method: "POST", Path: "/console/units/{unitId}/events", H: c.createEvent},
		{Method: "GET", Path: "/console", H: c.home},
		{Method: "POST", Path: "/console/units", H: c.createUnit},
		{Method: "GET", Path: "/console/outbox", H: c.outboxPage},
		{Method: "POST", Path: "/console/outbox/{id}/retry", H: c.retryMail},
		{Method: "GET", Path: "/console/units/{unitId}", H: c.unitPage},
		{Method: "POST", Path: "/console/units/{unitId}/invitations", H: c.invite},
		{Method: "POST", Path: "/console/units/{unitId}/members/{memberId}/role", H: c.setRole},
		{Method: "POST", Path: "/console/units/{unitId}/members/{memberId}/reset", H: c.resetLink},
		{Method: "POST", Path: "/console/units/{unitId}/links/{linkId}/revoke", H: c.revokeLink},
		{Method: "GET", Path: "/console/units/{unitId}/audit", H: c.auditPage},
		{Method: "GET", Path: "/console/units/{unitId}/request-log", H: c.devlogPage},
		{Method: "GET", Path: "/console/units/{unitId}/webhooks", H: c.hooksPage},
		{Method: "POST", Path: "/console/units/{unitId}/webhooks", H: c.createHook},
		{Method: "POST", Path: "/console/units/{unitId}/webhooks/{endpointId}/{action}", H: c.hookAction},
		{Method: "POST", Path: "/console/units/{unitId}/webhooks/{endpointId}/deliveries/{deliveryId}/resend", H: c.resendDelivery},
		{Method: "GET", Path: "/console/units/{unitId}/keys", H: c.keysPage},
		{Method: "POST", Path: "/console/units/{unitId}/keys", H: c.createKey},
		{Method: "POST", Path: "/console/units/{unitId}/keys/{keyId}/revoke", H: c.revokeKey},
	}
}
