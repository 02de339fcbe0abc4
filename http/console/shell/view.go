package shell

import (
	"errors"
	"html/template"
	"strings"
	"time"

	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
)

// View is the data of every console template; each page fills what it
// shows.
type View struct {
	Req *Req
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

	Units      []UnitRow
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
	TicketTypes []TicketTypeRow // fields.go
	Settings    *EventSettings
	Any         any // a page's own data
}

// Here reports whether the page shown is path ("you are here" in the
// navigation).
func (v *View) Here(path string) bool {
	return v.Req != nil && string(v.Req.RC.Path()) == path
}

// Under reports whether the page shown is path or one below it.
func (v *View) Under(path string) bool {
	if v.Req == nil {
		return false
	}
	p := string(v.Req.RC.Path())
	return p == path || strings.HasPrefix(p, path+"/") || strings.HasPrefix(p, path+".")
}

// UnitRow is a unit of the home page with the caller's role in it.
type UnitRow struct {
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

// FieldErrors turns a refusal into messages next to fields: the
// directory's FieldError and the core's details name their field; other
// business errors become the form's error.
func FieldErrors(err error, v *View) bool {
	if v.Errors == nil {
		v.Errors = map[string]string{}
	}
	var fe *directory.FieldError
	var ee *event.Error
	var he *thttp.Error
	switch {
	case errors.As(err, &fe):
		v.Errors[fe.Field] = Say(fe.Field, fe.Reason)
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
			v.Errors[f] = Say(f, d.Reason)
		}
	case errors.As(err, &he) && he.Status == 400:
		v.Error = he.Message
		for _, d := range he.Details {
			v.Errors[d.Field] = Say(d.Field, d.Reason)
		}
	default:
		return false
	}
	return true
}
