package shell

import (
	"encoding/json"
	"slices"

	"github.com/valyala/fasthttp"

	"ticketd/audit"
	thttp "ticketd/http"
)

// SignInUnit is the audit log's unit of the console's sign-in events that
// belong to no unit: the operator's, and failed sign-ins that name no
// member. The operator reads them on the sign-ins page. A member's events
// go to each unit the member has a role in, for its owners and admins.
const SignInUnit = "console"

// signInEmailMax bounds the email a failed sign-in's entry keeps (bytes):
// a longer one is cut, so what someone types cannot grow the audit log.
const signInEmailMax = 100

// signInUnitsMax bounds the units one member's sign-in event is copied to.
const signInUnitsMax = 50

// SignInRecord is what the audit log keeps of a sign-in event (in After):
// the address tried for a failed sign-in, and the client's IP.
type SignInRecord struct {
	Email string `json:"email,omitempty"`
	IP    string `json:"ip"`
}

// auditSignIn records sign-in event op (signIn, signInFailed, signOut,
// signOutEverywhere) of the operator, of member memberID, or of nobody
// known (memberID "": the email tried), with the client's IP, and the
// HTTP status it answered.
func (c *Console) auditSignIn(rc *fasthttp.RequestCtx, op string, operator bool, memberID, email string, status int) {
	e := audit.AuditEntry{Actor: memberID, ActorType: "member", OperationID: "console." + op, Method: "POST",
		Route: string(rc.Path()), Path: string(rc.Path()), Status: status, TargetIDs: map[string]string{},
		RequestID: string(rc.Response.Header.Peek("Request-Id"))}
	if operator {
		e.Actor, e.ActorType = "admin", "admin"
	}
	if memberID != "" {
		e.TargetIDs["memberId"] = memberID
	}
	if len(email) > signInEmailMax {
		email = CapText(email, signInEmailMax) + "…"
	}
	e.After, _ = json.Marshal(SignInRecord{Email: email, IP: thttp.ClientIP(rc, c.Config.TrustedProxies).String()})
	e.CreatedAt.Time = c.Config.Now().UTC()
	units := []string{SignInUnit}
	if memberID != "" {
		if m, ok := c.Ops.Directory().Member(memberID); ok && len(m.Roles) > 0 {
			units = units[:0]
			for u := range m.Roles {
				units = append(units, u)
			}
			slices.Sort(units)
			units = units[:min(len(units), signInUnitsMax)]
		}
	}
	for _, u := range units {
		e.UnitID = u
		c.Ops.RecordWrite(e)
	}
}

// SignInIP is the client IP a sign-in event recorded, "" for another
// entry.
func SignInIP(e audit.AuditEntry) string {
	var rec SignInRecord
	if len(e.After) == 0 || json.Unmarshal(e.After, &rec) != nil {
		return ""
	}
	return rec.IP
}
