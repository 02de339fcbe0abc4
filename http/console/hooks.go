package console

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"ticketd/actors"
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
func (c *Console) hooksPage(r *req) error {
	return c.showHooks(r, &view{req: r}, "", 200)
}

func (c *Console) showHooks(r *req, v *view, secret string, status int) error {
	unitID := param(r.rc, "unitId")
	if err := r.need(unitID, permWrite); err != nil {
		return err
	}
	if c.deps.Webhooks == nil {
		return errNotFound
	}
	u, _ := r.dir.Unit(unitID)
	v.Unit, v.Title, v.CanWrite = &u, "Webhooks · "+u.Name, true
	d := hooksData{Endpoints: c.deps.Webhooks.List(unitID), Types: actors.HookTypes(), Selected: map[string]bool{},
		Open: string(r.rc.QueryArgs().Peek("deliveries")), NewSecret: secret}
	for _, t := range r.rc.PostArgs().PeekMulti("eventTypes") {
		d.Selected[string(t)] = true
	}
	if v.Notice == "" && string(r.rc.QueryArgs().Peek("resent")) != "" {
		v.Notice = "The delivery is queued again: its attempt shows in the log below."
	}
	if n := string(r.rc.QueryArgs().Peek("replayed")); v.Notice == "" && n != "" {
		v.Notice = "Replay queued: " + n + " webhook events are sent again, oldest first; their attempts show in the log below."
	}
	if d.Open != "" {
		ds, err := c.deps.Webhooks.Deliveries(unitID, d.Open)
		if err != nil {
			return errNotFound
		}
		d.Deliveries = ds
	}
	v.typed()
	v.Any = d
	c.render(r.rc, status, "hooks", v)
	return nil
}

// createHook adds an endpoint; its signing secret is shown on the page.
func (c *Console) createHook(r *req) error {
	unitID := param(r.rc, "unitId")
	if err := r.need(unitID, permWrite); err != nil {
		return err
	}
	if c.deps.Webhooks == nil {
		return errNotFound
	}
	u, desc := form(r.rc, "url"), form(r.rc, "description")
	var types []string
	for _, t := range r.rc.PostArgs().PeekMulti("eventTypes") {
		types = append(types, string(t))
	}
	e, err := c.deps.Webhooks.Create(unitID, webhooks.Input{URL: &u, EventTypes: types, Description: &desc})
	if err != nil {
		v := &view{req: r, Form: map[string]string{"url": u, "description": desc}, Errors: map[string]string{}}
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
	r.audit("createWebhookEndpoint", unitID, map[string]string{"unitId": unitID, "endpointId": e.ID}, hookRecord(e))
	return c.showHooks(r, &view{req: r, Notice: "Endpoint added. Its signing secret is below."}, e.Secret, 201)
}

// hookAction enables, disables, rotates the secret of or deletes an
// endpoint.
func (c *Console) hookAction(r *req) error {
	unitID, id, action := param(r.rc, "unitId"), param(r.rc, "endpointId"), param(r.rc, "action")
	if err := r.need(unitID, permWrite); err != nil {
		return err
	}
	if c.deps.Webhooks == nil {
		return errNotFound
	}
	if action == "replay" {
		return c.replayHooks(r, unitID, id)
	}
	var e webhooks.Endpoint
	var err error
	switch action {
	case "enable", "disable":
		e, err = c.deps.Webhooks.SetEnabled(unitID, id, action == "enable")
	case "rotate-secret":
		e, err = c.deps.Webhooks.RotateSecret(unitID, id)
	case "delete":
		err = c.deps.Webhooks.Delete(unitID, id)
		e.ID = id
	default:
		return errNotFound
	}
	if errors.Is(err, webhooks.ErrNotFound) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	r.audit(action+"WebhookEndpoint", unitID, map[string]string{"unitId": unitID, "endpointId": id}, hookRecord(e))
	if action == "rotate-secret" {
		return c.showHooks(r, &view{req: r, Notice: "New signing secret below; the previous one keeps signing for a while."}, e.Secret, 200)
	}
	return redirect(r, "/console/units/"+unitID+"/webhooks")
}

// resendDelivery queues a logged delivery's body again (the same bytes
// and event id) as a new delivery of the endpoint.
func (c *Console) resendDelivery(r *req) error {
	unitID, id, delivery := param(r.rc, "unitId"), param(r.rc, "endpointId"), param(r.rc, "deliveryId")
	if err := r.need(unitID, permWrite); err != nil {
		return err
	}
	if c.deps.Webhooks == nil {
		return errNotFound
	}
	task, d, err := c.deps.Webhooks.Resend(unitID, id, delivery)
	switch {
	case errors.Is(err, webhooks.ErrNotFound), errors.Is(err, webhooks.ErrNoDelivery):
		return errNotFound
	case errors.Is(err, webhooks.ErrNoPayload), errors.Is(err, webhooks.ErrDisabled):
		r.rc.QueryArgs().Set("deliveries", id)
		msg := "This delivery was logged without its body, so it cannot be sent again."
		if errors.Is(err, webhooks.ErrDisabled) {
			msg = "The endpoint is disabled: enable it, then resend."
		}
		return c.showHooks(r, &view{req: r, Error: msg}, "", 409)
	case err != nil:
		return err
	}
	r.audit("resendWebhookDelivery", unitID, map[string]string{"unitId": unitID, "endpointId": id, "deliveryId": delivery},
		map[string]string{"id": task, "resendOf": delivery, "eventId": d.EventID, "type": d.Type})
	return redirect(r, "/console/units/"+unitID+"/webhooks?deliveries="+url.QueryEscape(id)+"&resent=1")
}

// replayHooks queues again the endpoint's logged webhooks from a change
// feed seq of one event, or from a time (webhooks.Service.Replay).
func (c *Console) replayHooks(r *req, unitID, id string) error {
	var from webhooks.ReplayFrom
	from.EventID = form(r.rc, "eventId")
	seq, since := form(r.rc, "fromSeq"), form(r.rc, "since")
	fail := func(msg string) error {
		r.rc.QueryArgs().Set("deliveries", id)
		return c.showHooks(r, &view{req: r, Error: msg}, "", 400)
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
	ids, err := c.deps.Webhooks.Replay(unitID, id, from)
	switch {
	case errors.Is(err, webhooks.ErrNotFound):
		return errNotFound
	case errors.Is(err, webhooks.ErrDisabled):
		return fail("The endpoint is disabled: enable it, then replay.")
	case err != nil:
		return err
	}
	r.audit("replayWebhookDeliveries", unitID, map[string]string{"unitId": unitID, "endpointId": id},
		map[string]any{"eventId": from.EventID, "fromSeq": from.Seq, "since": from.Since, "queued": len(ids)})
	return redirect(r, "/console/units/"+unitID+"/webhooks?deliveries="+url.QueryEscape(id)+"&replayed="+strconv.Itoa(len(ids)))
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
