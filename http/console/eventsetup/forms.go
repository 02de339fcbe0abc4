package eventsetup

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"ticketd/event"
	"ticketd/http/console/shell"
)

// The registration form builder. A ticket type has one form (the core's
// model): a draft the console edits and a published copy the hosted
// checkout asks. Every edit here replaces the draft (PutForm) with the
// question added, changed, moved or removed; "Publish" copies the draft
// to the checkout. A form is bound to several ticket types by copying its
// questions to another type's draft.
//
// An edit reads the draft, changes it and writes it back, so the form
// carries the draft's revision (its updatedAt): a form posted from a page
// older than the draft is refused and shown again as it is now, rather
// than undoing a colleague's change.

func init() {
	pageNames = append(pageNames, "forms")
}

func (c *pages) formRoutes() []shell.Route {
	const base = "/console/events/{eventId}/forms/{typeId}"
	return []shell.Route{
		{Method: "GET", Path: "/console/events/{eventId}/forms", H: c.formsIndex},
		{Method: "GET", Path: base, H: c.formPage},
		{Method: "POST", Path: base + "/questions", H: c.addQuestion},
		{Method: "POST", Path: base + "/questions/{questionId}", H: c.editQuestion},
		{Method: "POST", Path: base + "/questions/{questionId}/move", H: c.moveQuestion},
		{Method: "POST", Path: base + "/questions/{questionId}/delete", H: c.deleteQuestion},
		{Method: "POST", Path: base + "/publish", H: c.publishForm},
		{Method: "POST", Path: base + "/copy", H: c.copyForm},
	}
}

// questionKind is a question type as the builder offers it.
type questionKind struct{ Value, Label string }

// questionKinds are the core's question types, in the order offered.
var questionKinds = []questionKind{
	{event.QText, "Text"},
	{event.QEmail, "Email address"},
	{event.QPhone, "Phone number"},
	{event.QSelect, "Choice (one answer)"},
	{event.QMultiSelect, "Choices (several answers)"},
	{event.QCheckbox, "Checkbox (yes or no)"},
	{event.QDate, "Date"},
}

func kindLabel(v string) string {
	for _, k := range questionKinds {
		if k.Value == v {
			return k.Label
		}
	}
	return v
}

func hasOptions(kind string) bool { return kind == event.QSelect || kind == event.QMultiSelect }

// qfieldArgs is what the question fields sub-template gets: an element
// id prefix, the values and errors of that form, and the kinds.
type qfieldArgs struct {
	P          string
	Vals, Errs map[string]string
	Kinds      []questionKind
}

func init() {
	funcs["kindLabel"] = kindLabel
	funcs["qargs"] = func(_ *shell.View, p string, vals, errs map[string]string, kinds []questionKind) qfieldArgs {
		return qfieldArgs{P: p, Vals: vals, Errs: errs, Kinds: kinds}
	}
}

// formData is the form builder page of one ticket type.
type formData struct {
	Types     []event.TicketType
	Type      event.TicketType
	Others    []event.TicketType // copy targets
	Form      event.RegistrationForm
	Rev       string
	Rows      []questionRow
	Kinds     []questionKind
	New       map[string]string
	NewErrs   map[string]string
	Unchanged bool // the draft is what the checkout asks
}

// questionRow is a draft question with what its edit form shows: the
// question, or what was typed when that form was refused.
type questionRow struct {
	event.Question
	Published   bool // asked at checkout as it is
	First, Last bool
	Vals, Errs  map[string]string
}

// notices are the flash messages of the form page, by the done parameter
// a write redirects with.
var notices = map[string]string{
	"added":     "Question added to the draft. Publish the form to ask it at checkout.",
	"saved":     "Question saved in the draft. Publish the form to ask it at checkout.",
	"moved":     "Question moved in the draft.",
	"removed":   "Question removed from the draft. Publish the form to stop asking it.",
	"published": "Published: the checkout asks these questions now.",
	"copied":    "Questions copied to the other ticket type's draft. Publish its form there.",
}

// formsIndex opens the form of the event's first ticket type.
func (c *pages) formsIndex(r *shell.Req) error {
	v := &shell.View{Title: "Registration forms"}
	eventID, _, err := c.EventHead(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	types, err := shell.AskOp(c.Console, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return err
	}
	if len(types.Data) == 0 {
		v.Any = formData{}
		c.Render(r.RC, 200, "forms", v)
		return nil
	}
	return shell.Redirect(r, "/console/events/"+eventID+"/forms/"+types.Data[0].ID)
}

// formPage shows a ticket type's form: the draft's questions with their
// edit, move and remove controls, the form that adds one, publish, and
// copy to another ticket type.
func (c *pages) formPage(r *shell.Req) error {
	return c.showForm(r, &shell.View{Notice: notices[string(r.RC.QueryArgs().Peek("done"))]}, 200)
}

// showForm renders the page; v.Form["edit"] names the refused form
// ("new" or a question id) that gets v.Form and v.Errors back.
func (c *pages) showForm(r *shell.Req, v *shell.View, status int) error {
	v.Title = "Registration forms"
	eventID, _, err := c.EventHead(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	typeID := shell.Param(r.RC, "typeId")
	types, err := shell.AskOp(c.Console, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return err
	}
	form, err := shell.AskOp(c.Console, eventID, event.GetForm{TypeID: typeID})
	if err != nil {
		return err
	}
	v.Typed()
	d := formData{Types: types.Data, Form: form, Rev: revision(form), Kinds: questionKinds,
		New: map[string]string{"type": event.QText}, Unchanged: form.Status == event.FormPublished}
	for _, t := range types.Data {
		if t.ID == typeID {
			d.Type = t
		} else {
			d.Others = append(d.Others, t)
		}
	}
	if d.Type.ID == "" { // beyond the first 100 types: still its own page
		d.Type = event.TicketType{ID: typeID, Name: typeID}
	}
	edit := v.Form["edit"]
	for i, q := range form.Questions {
		row := questionRow{Question: q, First: i == 0, Last: i == len(form.Questions)-1,
			Published: slices.ContainsFunc(form.PublishedQuestions, func(p event.Question) bool { return sameQuestion(p, q) }),
			Vals:      questionVals(q)}
		if edit == q.ID {
			row.Vals, row.Errs = v.Form, v.Errors
		}
		d.Rows = append(d.Rows, row)
	}
	if edit == "new" {
		d.New, d.NewErrs = v.Form, v.Errors
	}
	v.Any = d
	c.Render(r.RC, status, "forms", v)
	return nil
}

func sameQuestion(a, b event.Question) bool {
	return a.ID == b.ID && a.Type == b.Type && a.Label == b.Label && a.Required == b.Required && slices.Equal(a.Options, b.Options)
}

func questionVals(q event.Question) map[string]string {
	m := map[string]string{"label": q.Label, "type": q.Type, "options": strings.Join(q.Options, "\n"), "key": q.ID}
	if q.Required {
		m["required"] = "1"
	}
	return m
}

// revision is the draft's version as the page carries it.
func revision(f event.RegistrationForm) string {
	return f.UpdatedAt.Time.UTC().Format(time.RFC3339Nano)
}

// questionForm reads a question's fields: options one a line (kept only
// for the kinds that have options, so switching a choice to text does
// not fail on the options left in the box).
func questionForm(r *shell.Req, edit string) (map[string]string, event.Question) {
	f := map[string]string{"edit": edit}
	for _, k := range []string{"label", "type", "options", "required", "key"} {
		f[k] = shell.Form(r.RC, k)
	}
	q := event.Question{Label: f["label"], Type: f["type"], Required: f["required"] != ""}
	if hasOptions(q.Type) {
		for _, line := range strings.Split(f["options"], "\n") {
			if o := strings.TrimSpace(line); o != "" {
				q.Options = append(q.Options, o)
			}
		}
	}
	return f, q
}

// errStale refuses a form posted from a page older than the draft.
var errStale = errors.New("console: the form changed meanwhile")

// draft reads typeID's draft and checks the page's revision.
func (c *pages) draft(r *shell.Req, eventID, typeID string) (event.RegistrationForm, error) {
	f, err := shell.AskOp(c.Console, eventID, event.GetForm{TypeID: typeID})
	if err != nil {
		return f, err
	}
	if rev := shell.Form(r.RC, "rev"); rev != revision(f) {
		return f, errStale
	}
	return f, nil
}

// questionErrors puts a refused form's problems next to the builder's
// fields: the core names them questions[i].label and so on, and the page
// shows one question's form at a time.
func questionErrors(err error, v *shell.View) bool {
	if errors.Is(err, errStale) {
		v.Error = "The form changed since this page was opened (another member may be editing it). It is shown as it is now: make your change again."
		return true
	}
	var ee *event.Error
	if !errors.As(err, &ee) || ee.Code == event.NotFound {
		return false
	}
	if len(ee.Details) == 0 {
		v.Error = ee.Message
	}
	for _, d := range ee.Details {
		f := d.Field
		if i := strings.LastIndex(f, "."); i >= 0 {
			f = f[i+1:]
		}
		switch f {
		case "label", "type", "options":
			v.Errors[f] = shell.Say(f, d.Reason)
		case "id":
			v.Errors["key"] = shell.Say("key", d.Reason)
		default:
			v.Error = "The form was not saved: " + d.Reason + "."
		}
	}
	return true
}

// formWrite checks the caller may change the path's event and reads the
// draft, or shows a stale page again (done) with what was typed.
func (c *pages) formWrite(r *shell.Req, typed map[string]string) (eventID, unitID, typeID string, f event.RegistrationForm, done bool, err error) {
	if eventID, unitID, err = r.EventUnit(shell.PermWrite); err != nil {
		return
	}
	typeID = shell.Param(r.RC, "typeId")
	f, err = c.draft(r, eventID, typeID)
	if errors.Is(err, errStale) {
		v := &shell.View{Form: typed, Errors: map[string]string{}}
		questionErrors(err, v)
		return "", "", "", f, true, c.showForm(r, v, 409)
	}
	return
}

// changeDraft runs one edit of a draft: it reads the draft at the page's
// revision, lets change rework a copy of its questions (the view's slices
// are the machine's) and writes the result back through submit; done
// names the flash message the page shows after it. change answers the
// question it touched.
func (c *pages) changeDraft(r *shell.Req, typed map[string]string, done string, change func([]event.Question) ([]event.Question, string, error)) error {
	eventID, unitID, typeID, f, stale, err := c.formWrite(r, typed)
	if err != nil || stale {
		return err
	}
	qs, qid, err := change(slices.Clone(f.Questions))
	if err != nil {
		return err
	}
	return shell.Submit(r, shell.FormSubmit[event.PutForm, event.RegistrationForm]{EventID: eventID, UnitID: unitID, View: &shell.View{Form: typed},
		Cmd: event.PutForm{TypeID: typeID, Questions: orNone(qs)}, Op: "putRegistrationForm",
		Targets: func(event.RegistrationForm) map[string]string {
			return map[string]string{"eventId": eventID, "typeId": typeID, "questionId": qid}
		},
		Back: "/console/events/" + eventID + "/forms/" + url.PathEscape(typeID) + "?done=" + done,
		Show: c.showForm, Fields: questionErrors})
}

// questionIndex finds the path's question in qs.
func questionIndex(r *shell.Req, qs []event.Question) (string, int, error) {
	id := shell.Param(r.RC, "questionId")
	i := slices.IndexFunc(qs, func(q event.Question) bool { return q.ID == id })
	if i < 0 {
		return id, i, shell.ErrNotFound
	}
	return id, i, nil
}

// addQuestion adds a question at the end of the draft. Its key (the
// answer's name in responses and exports) is typed or made from the
// label.
func (c *pages) addQuestion(r *shell.Req) error {
	typed, q := questionForm(r, "new")
	return c.changeDraft(r, typed, "added", func(qs []event.Question) ([]event.Question, string, error) {
		if q.ID = typed["key"]; q.ID == "" {
			q.ID = newKey(q.Label, qs)
		}
		return append(qs, q), q.ID, nil
	})
}

// editQuestion changes a question's label, kind, required flag and
// options; its key stays (answers already given are filed under it).
func (c *pages) editQuestion(r *shell.Req) error {
	typed, q := questionForm(r, shell.Param(r.RC, "questionId"))
	return c.changeDraft(r, typed, "saved", func(qs []event.Question) ([]event.Question, string, error) {
		id, i, err := questionIndex(r, qs)
		if err == nil {
			q.ID = id
			qs[i] = q
		}
		return qs, id, err
	})
}

// moveQuestion moves a question one place up or down.
func (c *pages) moveQuestion(r *shell.Req) error {
	return c.changeDraft(r, nil, "moved", func(qs []event.Question) ([]event.Question, string, error) {
		id, i, err := questionIndex(r, qs)
		j := i + 1
		if shell.Form(r.RC, "direction") == "up" {
			j = i - 1
		}
		if err == nil && j >= 0 && j < len(qs) {
			qs[i], qs[j] = qs[j], qs[i]
		}
		return qs, id, err
	})
}

// deleteQuestion removes a question from the draft.
func (c *pages) deleteQuestion(r *shell.Req) error {
	return c.changeDraft(r, nil, "removed", func(qs []event.Question) ([]event.Question, string, error) {
		id, i, err := questionIndex(r, qs)
		if err == nil {
			qs = slices.Delete(qs, i, i+1)
		}
		return qs, id, err
	})
}

// publishForm makes the draft what the checkout asks.
func (c *pages) publishForm(r *shell.Req) error {
	eventID, unitID, typeID, _, done, err := c.formWrite(r, nil)
	if err != nil || done {
		return err
	}
	return shell.Submit(r, shell.FormSubmit[event.PublishForm, event.RegistrationForm]{EventID: eventID, UnitID: unitID, View: &shell.View{},
		Cmd: event.PublishForm{TypeID: typeID}, Op: "publishRegistrationForm",
		Targets: func(event.RegistrationForm) map[string]string {
			return map[string]string{"eventId": eventID, "typeId": typeID}
		},
		Back: "/console/events/" + eventID + "/forms/" + url.PathEscape(typeID) + "?done=published",
		Show: c.showForm, Fields: questionErrors, Refused: 409})
}

// copyForm replaces another ticket type's draft with this draft's
// questions: one form bound to several ticket types.
func (c *pages) copyForm(r *shell.Req) error {
	typed := map[string]string{"edit": "copy", "to": shell.Form(r.RC, "to")}
	eventID, unitID, typeID, f, done, err := c.formWrite(r, typed)
	if err != nil || done {
		return err
	}
	to := typed["to"]
	v := &shell.View{Form: typed, Errors: map[string]string{}}
	if to == "" || to == typeID {
		v.Errors["to"] = "It must be another ticket type of this event."
		return c.showForm(r, v, 400)
	}
	err = shell.Submit(r, shell.FormSubmit[event.PutForm, event.RegistrationForm]{EventID: eventID, UnitID: unitID, View: v,
		Cmd: event.PutForm{TypeID: to, Questions: orNone(slices.Clone(f.Questions))}, Op: "putRegistrationForm",
		Targets: func(event.RegistrationForm) map[string]string {
			return map[string]string{"eventId": eventID, "typeId": to, "copiedFrom": typeID}
		},
		Back: "/console/events/" + eventID + "/forms/" + url.PathEscape(typeID) + "?done=copied",
		Show: c.showForm, Fields: questionErrors})
	if shell.IsNotFound(err) {
		v.Errors["to"] = "It must be another ticket type of this event."
		return c.showForm(r, v, 400)
	}
	return err
}

func orNone(qs []event.Question) []event.Question {
	if qs == nil {
		return []event.Question{}
	}
	return qs
}

// newKey makes a question key from its label: lower-case letters and
// digits joined by "_", unique in the form ("q" when nothing is left).
func newKey(label string, qs []event.Question) string {
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(label) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			gap = false
		} else {
			gap = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	base := b.String()
	if base == "" {
		base = "q"
	}
	taken := func(k string) bool {
		return slices.ContainsFunc(qs, func(q event.Question) bool { return q.ID == k })
	}
	key := base
	for n := 2; taken(key); n++ {
		key = fmt.Sprintf("%s_%d", base, n)
	}
	return key
}
