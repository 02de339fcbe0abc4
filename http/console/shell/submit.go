package shell

import "ticketd/event"

// FormSubmit is one console form that runs one command of an event, the
// shape every such form shares: bind what was typed into the command,
// ask the event's actor, and then either audit the result and redirect
// to where it shows, or show the page again with each refusal next to
// its field and what was typed kept.
type FormSubmit[C event.Op[R], R any] struct {
	EventID, UnitID string
	// View carries what was typed (Form) back to the page; its Errors may
	// already hold the handler's own checks, which stop the command.
	View *View
	// Body is the command as the API's JSON, bound into Cmd (the API's
	// validation); nil sends Cmd as given.
	Body map[string]any
	Cmd  C
	// Prepare sets what the body does not carry (ids from the path).
	Prepare func(*C)
	// Op names the write in the audit log; Targets are the ids it touched.
	Op      string
	Targets func(R) map[string]string
	// Back is where a success redirects.
	Back string
	// Show renders the page again with View and a status.
	Show func(r *Req, v *View, status int) error
	// Fields puts a refusal next to its fields (nil: fieldErrors); false
	// means the error is not the form's to show.
	Fields func(err error, v *View) bool
	// Refused is the status of the page shown again (0: 400).
	Refused int
}

// Submit runs f. A refusal that names no field of the form is returned
// for the message page.
func Submit[C event.Op[R], R any](r *Req, f FormSubmit[C, R]) error {
	f.View.Typed()
	cmd := f.Cmd
	var err error
	if f.Body != nil {
		err = BindForm(f.Body, &cmd)
	}
	if err == nil && len(f.View.Errors) == 0 {
		if f.Prepare != nil {
			f.Prepare(&cmd)
		}
		var res R
		if res, err = AskOp(r.Console, f.EventID, cmd); err == nil {
			var targets map[string]string
			if f.Targets != nil {
				targets = f.Targets(res)
			}
			r.Audit(f.Op, f.UnitID, targets, res)
			return Redirect(r, f.Back)
		}
	}
	fields := f.Fields
	if fields == nil {
		fields = FieldErrors
	}
	if err != nil && !fields(err, f.View) {
		return err
	}
	if f.Refused == 0 {
		f.Refused = 400
	}
	return f.Show(r, f.View, f.Refused)
}

// Typed gives v the maps its page's forms read (what was typed, and the
// problem of each field), empty when the page is not shown after a
// refusal.
func (v *View) Typed() {
	if v.Form == nil {
		v.Form = map[string]string{}
	}
	if v.Errors == nil {
		v.Errors = map[string]string{}
	}
}
