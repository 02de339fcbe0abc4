package instrument

import (
	"encoding/json"
	"strings"

	gojson "github.com/goccy/go-json"

	"ticketd/audit"
	thttp "ticketd/http"
)

// Recorder records an audited write: the application layer
// (ops.Ops.RecordWrite), which finds the write's business unit.
type Recorder interface {
	RecordWrite(e audit.AuditEntry) bool
}

// Routes wraps the handlers of rs for the developer log and the audit
// log, in place, and returns rs:
//   - Developer and Storefront handlers note the request's concrete path
//     for the developer log (the rest of the entry comes from
//     Config.OnRequest, which sees the final status and latency);
//   - Developer and Admin writes (POST, PATCH, PUT, DELETE) that succeed
//     are written to the audit log. For PATCH, PUT and DELETE the record
//     before the write is read through the GET route of the same path,
//     when there is one (one extra read through the actor; a failed read
//     leaves "before" null). Storefront traffic is not audited.
func Routes(rs []thttp.Route, rec Recorder) []thttp.Route {
	// Paths are unique across surfaces (/v1, /storefront/v1, /admin/v1).
	gets := map[string]*thttp.Route{}
	for _, r := range rs {
		if r.Method == "GET" && r.Handle != nil {
			gets[r.Path] = &r
		}
	}
	for i := range rs {
		r := &rs[i]
		next := r.Handle
		if next == nil {
			continue
		}
		write := r.Method == "POST" || r.Method == "PATCH" || r.Method == "PUT" || r.Method == "DELETE"
		switch {
		case r.Surface == thttp.Storefront:
			r.Handle = func(c *thttp.Ctx) (any, error) {
				c.NotePath()
				return next(c)
			}
		case r.Surface == thttp.Developer && !write:
			r.Handle = func(c *thttp.Ctx) (any, error) {
				c.NotePath()
				return next(c)
			}
		case write && (r.Surface == thttp.Developer || r.Surface == thttp.Admin):
			var get *thttp.Route
			if r.Method != "POST" {
				get = gets[r.Path]
			}
			params := pathParams(r.Path)
			dev := r.Surface == thttp.Developer
			r.Handle = func(c *thttp.Ctx) (any, error) {
				if dev {
					c.NotePath()
				}
				var before json.RawMessage
				if get != nil {
					// The read runs as its own route, so it binds
					// no body and the write's body stays unread.
					own := c.SwapRoute(get)
					v, err := get.Handle(c)
					c.SwapRoute(own)
					if err == nil {
						before = auditJSON(v)
					}
				}
				res, err := next(c)
				// A write answered with an alternative success status is a
				// repeat that changed nothing (a repeat scan or
				// registration, a grant already held): nothing to audit,
				// and a duplicate scan must cost no write at all.
				if err == nil && c.PrimarySuccess() {
					record(rec, c, params, before, res)
				}
				return res, err
			}
		}
	}
	return rs
}

// pathParams lists the {name} parameters of a route pattern.
func pathParams(p string) []string {
	var out []string
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, seg[1:len(seg)-1])
		}
	}
	return out
}

// auditJSON encodes a handler's result for the audit log: secrets
// redacted, bounded in size.
func auditJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	if len(b) > audit.BodyMax {
		return json.RawMessage(`{"truncated":true}`)
	}
	return audit.RedactSecrets(b)
}

// auditResult encodes a write's result for the audit log as the response
// will carry it (the response encoder's bytes), and keeps those bytes on c
// so the response is not encoded a second time. The audit copy has its
// secrets redacted and is bounded like auditJSON's.
func auditResult(c *thttp.Ctx, res any) json.RawMessage {
	if res == nil {
		return nil
	}
	b, ok := thttp.AppendJSON(nil, res)
	if !ok {
		var err error
		if b, err = gojson.Marshal(res); err != nil {
			return nil // the response encoder fails too: a logged 500
		}
	}
	c.SetEncodedBody(b)
	if len(b) > audit.BodyMax {
		return json.RawMessage(`{"truncated":true}`)
	}
	return audit.RedactSecrets(b)
}

// record records a successful write of c through rec.
func record(rec Recorder, c *thttp.Ctx, params []string, before json.RawMessage, res any) {
	p := c.Principal()
	r := c.Route()
	e := audit.AuditEntry{
		OperationID: r.OperationID, Method: r.Method, Route: r.Path, Status: r.Success,
		RequestID: c.RequestID(), Before: before, After: auditResult(c, res), TargetIDs: map[string]string{},
		Path: string(c.RequestCtx().Path()),
	}
	if len(e.Path) > thttp.MaxLoggedPath {
		e.Path = e.Path[:thttp.MaxLoggedPath]
	}
	for _, n := range params {
		e.TargetIDs[n] = c.Param(n)
	}
	if p != nil {
		e.Actor, e.UnitID = p.KeyID, p.UnitID
		e.ActorType = thttp.KeySecret
		if p.Type == thttp.KeyAdmin {
			e.Actor, e.ActorType = "admin", "admin"
		}
	}
	e.CreatedAt.Time = c.Now().UTC()
	// The layer finds the unit of a console write (path or answer) and
	// skips a write that belongs to none.
	rec.RecordWrite(e)
}
