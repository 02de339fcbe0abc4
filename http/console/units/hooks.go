package units

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"ticketd/http/console/shell"
	"ticketd/ops"
	"ticketd/webhooks"
)

// hooksData is the webhook endpoints page of a unit.
type hooksData struct {
	Endpoints  []webhooks.Endpoint
	Types      []string
	Selected   map[string]bool
	Open       string // the endpoint whose delivery log is shown
	Deliveries []webhooks.Delivery
	NewSecret  string // a created or rotated endpoint's secret
}

// hooksPage lists a unit's webhook endpoints (owners and admins: the
// page shows signing secrets), the delivery log of one, and the form
// that adds one.
func (c *pages) hooksPage(r *shell.Req) error {
	return c.showHooks(r, &shell.View{Req: r}, "", 200)
}

func (c *pages) showHooks(r *shell.Req, v *shell.View, secret string, status int) error {
	unitID := shell.Param(r.RC, "unitId")
	if err := r.Need(unitID, shell.PermWrite); err != nil {
		return err
	}
	if c.Ops.Webhooks() == nil {
		return shell.ErrNotFound
	}
	u, _ := r.Dir.Unit(unitID)
	v.Unit, v.Title, v.CanWrite = &u, "Webhooks · "+u.Name, true
	d := hooksData{Endpoints: c.Ops.Webhooks().List(unitID), Types: ops.HookTypes(), Selected: map[string]bool{},
		Open: string(r.RC.QueryArgs().Peek("deliveries")), NewSecret: secret}
	for _, t := range r.RC.PostArgs().PeekMulti("eventTypes") {
		d.Selected[string(t)] = true
	}
	if v.Notice == "" && string(r.RC.QueryArgs().Peek("resent")) != "" {
		v.Notice = "The delivery is queued again: its attempt shows in the log below."
	}
	if n := string(r.RC.QueryArgs().Peek("replayed")); v.Notice == "" && n != "" {
		v.Notice = "Replay queued: " + n + " webhook events are sent again, oldest first; their attempts show in the log below."
	}
	if d.Open != "" {
		ds, err := c.Ops.Webhooks().Deliveries(unitID, d.Open)
		if err != nil {
			return shell.ErrNotFound
		}
		d.Deliveries = ds
	}
	v.Typed()
	v.Any = d
	c.Render(r.RC, status, "hooks", v)
	return nil
}

// createHook adds an endpoint; its signing secret is shown on the page.
func (c *pages) createHook(r *shell.Req) error {
	unitID := shell.Param(r.RC, "unitId")
	if err := r.Need(unitID, shell.PermWrite); err != nil {
		return err
	}
	if c.Ops.Webhooks() == nil {
		return shell.ErrNotFound
	}
	u, desc := shell.Form(r.RC, "url"), shell.Form(r.RC, "description")
	var types []string
	for _, t := range r.RC.PostArgs().PeekMulti("eventTypes") {
		types = append(types, string(t))
	}
	e, err := c.Ops.Webhooks().Create(unitID, webhooks.Input{URL: &u, EventTypes: types, Description: &desc})
	if err != nil {
		v := &shell.View{Req: r, Form: map[string]string{"url": u, "description": desc}, Errors: map[string]string{}}
		if !errors.Is(err, webhooks.ErrInvalid) && !errors.Is(err, webhooks.ErrTooMany) {
			return err
		}
		msg := strings.TrimPrefix(err.Error(), webhooks.ErrInvalid.Error()+": ")
		field, reason, ok := strings.Cut(msg, ": ")
		if ok && (field == "url" || field == "eventTypes" || field == "description") {
			v.Errors[field] = "It " + strings.TrimPrefix(reason, "must ") + "."
			if strings.HasPrefix(reason, "must") {
				v.Errors[field] = "It must " + strings.TrimPrefix(reason, "must ") + "."
			}
		} else {
			v.Error = msg
		}
		return c.showHooks(r, v, "", 400)
	}
	r.Audit("createWebhookEndpoint", unitID, map[string]string{"unitId": unitID, "endpointId": e.ID}, hookRecord(e))
	return c.showHooks(r, &shell.View{Req: r, Notice: "Endpoint added. Its signing secret is below."}, e.Secret, 201)
}

// hookAction enables, disables, rotates the secret of or deletes an
// endpoint.
func (c *pages) hookAction(r *shell.Req) error {
	unitID, id, action := shell.Param(r.RC, "unitId"), shell.Param(r.RC, "endpointId"), shell.Param(r.RC, "action")
	if err := r.Need(unitID, shell.PermWrite); err != nil {
		return err
	}
	if c.Ops.Webhooks() == nil {
		return shell.ErrNotFound
	}
	if action == "replay" {
		return c.replayHooks(r, unitID, id)
	}
	var e webhooks.Endpoint
	var err error
	switch action {
	case "enable", "disable":
		e, err = c.Ops.Webhooks().SetEnabled(unitID, id, action == "enable")
	case "rotate-secret":
		e, err = c.Ops.Webhooks().RotateSecret(unitID, id)
	case "delete":
		err = c.Ops.Webhooks().Delete(unitID, id)
		e.ID = id
	default:
		return shell.ErrNotFound
	}
	if errors.Is(err, webhooks.ErrNotFound) {
		return shell.ErrNotFound
	}
	if err != nil {
		return err
	}
	r.Audit(action+"WebhookEndpoint", unitID, map[string]string{"unitId": unitID, "endpointId": id}, hookRecord(e))
	if action == "rotate-secret" {
		return c.showHooks(r, &shell.View{Req: r, Notice: "New signing secret below; the previous one keeps signing for a while."}, e.Secret, 200)
	}
	return shell.Redirect(r, "/console/units/"+unitID+"/webhooks")
}

// resendDelivery queues a logged delivery's body again (the same bytes
// and event id) as a new delivery of the endpoint.
func (c *pages) resendDelivery(r *shell.Req) error {
	unitID, id, delivery := shell.Param(r.RC, "unitId"), shell.Param(r.RC, "endpointId"), shell.Param(r.RC, "deliveryId")
	if err := r.Need(unitID, shell.PermWrite); err != nil {
		return err
	}
	if c.Ops.Webhooks() == nil {
		return shell.ErrNotFound
	}
	task, d, err := c.Ops.Webhooks().Resend(unitID, id, delivery)
	switch {
	case errors.Is(err, webhooks.ErrNotFound), errors.Is(err, webhooks.ErrNoDelivery):
		return shell.ErrNotFound
	case errors.Is(err, webhooks.ErrNoPayload), errors.Is(err, webhooks.ErrDisabled):
		r.RC.QueryArgs().Set("deliveries", id)
		msg := "This delivery was logged without its body, so it cannot be sent again."
		if errors.Is(err, webhooks.ErrDisabled) {
			msg = "The endpoint is disabled: enable it, then resend."
		}
		return c.showHooks(r, &shell.View{Req: r, Error: msg}, "", 409)
	case err != nil:
		return err
	}
	r.Audit("resendWebhookDelivery", unitID, map[string]string{"unitId": unitID, "endpointId": id, "deliveryId": delivery},
		map[string]string{"id": task, "resendOf": delivery, "eventId": d.EventID, "type": d.Type})
	return shell.Redirect(r, "/console/units/"+unitID+"/webhooks?deliveries="+url.QueryEscape(id)+"&resent=1")
}

// replayHooks queues again the endpoint's logged webhooks from a change
// feed seq of one event, or from a time (webhooks.Service.Replay).
func (c *pages) replayHooks(r *shell.Req, unitID, id string) error {
	var from webhooks.ReplayFrom
	from.EventID = shell.Form(r.RC, "eventId")
	seq, since := shell.Form(r.RC, "fromSeq"), shell.Form(r.RC, "since")
	fail := func(msg string) error {
		r.RC.QueryArgs().Set("deliveries", id)
		return c.showHooks(r, &shell.View{Req: r, Error: msg}, "", 400)
	}
	switch {
	case seq != "":
		n, err := strconv.ParseUint(seq, 10, 64)
		if err != nil || n == 0 {
			return fail("The seq must be a whole number from 1.")
		}
		if from.EventID == "" {
			return fail("A seq counts in one event's change feed: give the event id too.")
		}
		from.Seq = n
	case since != "":
		t, err := time.ParseInLocation("2006-01-02T15:04", since, time.UTC)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, since); err != nil {
				return fail("The time must be a date and time (UTC).")
			}
		}
		from.Since = t
	default:
		return fail("Give a seq (with its event) or a time to replay from.")
	}
	ids, err := c.Ops.Webhooks().Replay(unitID, id, from)
	switch {
	case errors.Is(err, webhooks.ErrNotFound):
		return shell.ErrNotFound
	case errors.Is(err, webhooks.ErrDisabled):
		return fail("The endpoint is disabled: enable it, then replay.")
	case err != nil:
		return err
	}
	r.Audit("replayWebhookDeliveries", unitID, map[string]string{"unitId": unitID, "endpointId": id},
		map[string]any{"eventId": from.EventID, "fromSeq": from.Seq, "since": from.Since, "queued": len(ids)})
	return shell.Redirect(r, "/console/units/"+unitID+"/webhooks?deliveries="+url.QueryEscape(id)+"&replayed="+strconv.Itoa(len(ids)))
}

// hookRecord is what the audit log keeps of an endpoint: no secret.
func hookRecord(e webhooks.Endpoint) any {
	return struct {
		ID         string   `json:"id"`
		URL        string   `json:"url"`
		EventTypes []string `json:"eventTypes"`
		Enabled    bool     `json:"enabled"`
	}{e.ID, e.URL, e.EventTypes, e.Enabled}
}
