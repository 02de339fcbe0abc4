package api

import (
	"errors"
	"strconv"
	"strings"

	"ticketd/ask"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/bind"
	"ticketd/ops"
	"ticketd/webhooks"
)

// The console's automations (admin API): outbound webhook endpoints per
// business unit. Delivery is package webhooks'.

// CreateWebhookEndpointRequest is the body of POST .../webhook-endpoints.
type CreateWebhookEndpointRequest struct {
	URL         string   `json:"url" v:"required,minLen=8,maxLen=2048" doc:"Absolute http or https URL the events are POSTed to."`
	EventTypes  []string `json:"eventTypes" v:"required,minItems=1,maxItems=20,enum=registration.created|registration.confirmed|registration.cancelled|checkin.created|order.paid|order.refunded|checkin.conflict" doc:"Event types: registration.created, registration.confirmed, registration.cancelled, checkin.created, order.paid, order.refunded (a refund succeeded, partial or full), checkin.conflict (a door conflict)."`
	Description string   `json:"description,omitempty" v:"maxLen=500"`
}

// UpdateWebhookEndpointRequest is the body of PATCH .../webhook-endpoints/{endpointId}.
type UpdateWebhookEndpointRequest struct {
	URL         *string  `json:"url,omitempty" v:"minLen=8,maxLen=2048"`
	EventTypes  []string `json:"eventTypes,omitempty" v:"minItems=1,maxItems=20,enum=registration.created|registration.confirmed|registration.cancelled|checkin.created|order.paid|order.refunded|checkin.conflict"`
	Description *string  `json:"description,omitempty" v:"maxLen=500"`
}

// WebhookEndpoint is a webhook endpoint. Secret is set only in the answers
// of create and rotate-secret: it is shown once.
type WebhookEndpoint struct {
	ID                  string      `json:"id"`
	UnitID              string      `json:"unitId"`
	URL                 string      `json:"url"`
	EventTypes          []string    `json:"eventTypes" v:"enum=registration.created|registration.confirmed|registration.cancelled|checkin.created|order.paid|order.refunded|checkin.conflict"`
	Description         string      `json:"description"`
	Enabled             bool        `json:"enabled"`
	DisabledReason      *string     `json:"disabledReason"`
	ConsecutiveFailures int         `json:"consecutiveFailures"`
	Secret              *string     `json:"secret,omitempty" doc:"whsec_...; only in the create and rotate-secret answers."`
	PreviousSecretUntil *event.Time `json:"previousSecretUntil" doc:"Until when the previous secret also signs (a second v1), after a rotation."`
	CreatedAt           event.Time  `json:"createdAt"`
	UpdatedAt           event.Time  `json:"updatedAt"`
}

// WebhookDelivery is one delivery attempt in an endpoint's log.
type WebhookDelivery struct {
	ID         string     `json:"id" doc:"The delivery's id in the log (what resend takes)."`
	EventID    string     `json:"eventId"`
	Type       string     `json:"type"`
	Attempt    int        `json:"attempt"`
	StatusCode *int       `json:"statusCode" doc:"The endpoint's answer; null when it did not answer."`
	LatencyMS  float64    `json:"latencyMs"`
	Succeeded  bool       `json:"succeeded"`
	Refused    bool       `json:"refused" doc:"The attempt was not sent: its destination was not a public address when it was made (decisions §23); error says why."`
	Error      *string    `json:"error"`
	At         event.Time `json:"at"`
}

// WebhookResend answers a resend: the delivery queued again.
type WebhookResend struct {
	ID         string     `json:"id" doc:"The new delivery's queue id; its attempts appear in the delivery log."`
	EndpointID string     `json:"endpointId"`
	ResendOf   string     `json:"resendOf" doc:"The logged delivery whose body is sent again."`
	EventID    string     `json:"eventId" doc:"The webhook event's id, the same as the original's."`
	Type       string     `json:"type"`
	QueuedAt   event.Time `json:"queuedAt"`
}

// ReplayWebhooksRequest is the body of POST .../replay: where to start.
type ReplayWebhooksRequest struct {
	EventID *string     `json:"eventId,omitempty" v:"maxLen=100" doc:"The event whose change feed fromSeq counts in (required with fromSeq; with since, only that event's webhooks)."`
	FromSeq *int        `json:"fromSeq,omitempty" v:"min=1" doc:"Replay the webhooks of changes with this feed seq or later (the seq a receiver saw a gap after, plus one)."`
	Since   *event.Time `json:"since,omitempty" doc:"Replay the webhooks of changes made at this time or later (when fromSeq is absent)."`
}

// WebhookReplay answers a replay: the deliveries queued again.
type WebhookReplay struct {
	EndpointID string   `json:"endpointId"`
	Queued     int      `json:"queued" doc:"How many webhook events were queued again, each once, oldest first."`
	IDs        []string `json:"ids" doc:"The new deliveries' queue ids."`
}

func (a *api) webhookRoutes() []thttp.Route {
	const base = "/admin/v1/business-units/{unitId}/webhook-endpoints"
	adm := func(r thttp.Route) thttp.Route { r.Surface = thttp.Admin; r.Tag = "Automations"; return r }
	return []thttp.Route{
		adm(thttp.Route{Method: "POST", Path: base, OperationID: "createWebhookEndpoint",
			Summary: "Create a webhook endpoint; its signing secret is shown only in this answer",
			Body:    CreateWebhookEndpointRequest{}, Success: 201, Response: WebhookEndpoint{}, Errors: []int{400, 404, 409},
			Handle: a.createWebhookEndpoint}),
		adm(thttp.Route{Method: "GET", Path: base, OperationID: "listWebhookEndpoints", Summary: "List the unit's webhook endpoints",
			Query: bind.ListQuery{}, Success: 200, Response: bind.List[WebhookEndpoint]{}, Errors: []int{400, 404},
			Handle: a.listWebhookEndpoints}),
		adm(thttp.Route{Method: "GET", Path: base + "/{endpointId}", OperationID: "getWebhookEndpoint", Summary: "Get a webhook endpoint",
			Success: 200, Response: WebhookEndpoint{}, Errors: []int{404}, Handle: a.getWebhookEndpoint}),
		adm(thttp.Route{Method: "PATCH", Path: base + "/{endpointId}", OperationID: "updateWebhookEndpoint",
			Summary: "Change a webhook endpoint's url, event types or description", Body: UpdateWebhookEndpointRequest{},
			Success: 200, Response: WebhookEndpoint{}, Errors: []int{400, 404}, Handle: a.updateWebhookEndpoint}),
		adm(thttp.Route{Method: "DELETE", Path: base + "/{endpointId}", OperationID: "deleteWebhookEndpoint",
			Summary: "Delete a webhook endpoint; its pending deliveries are dropped", Success: 200, Response: WebhookEndpoint{},
			Errors: []int{404}, Handle: a.deleteWebhookEndpoint}),
		adm(thttp.Route{Method: "POST", Path: base + "/{endpointId}/rotate-secret", OperationID: "rotateWebhookSecret",
			Summary: "Rotate the signing secret; the old one also signs for a grace period. The new secret is shown only here",
			Success: 200, Response: WebhookEndpoint{}, Errors: []int{404}, Handle: a.rotateWebhookSecret}),
		adm(thttp.Route{Method: "POST", Path: base + "/{endpointId}/enable", OperationID: "enableWebhookEndpoint",
			Summary: "Enable a webhook endpoint (resets its failure count)", Success: 200, Response: WebhookEndpoint{},
			Errors: []int{404}, Handle: a.enableWebhookEndpoint(true)}),
		adm(thttp.Route{Method: "POST", Path: base + "/{endpointId}/disable", OperationID: "disableWebhookEndpoint",
			Summary: "Disable a webhook endpoint", Success: 200, Response: WebhookEndpoint{},
			Errors: []int{404}, Handle: a.enableWebhookEndpoint(false)}),
		adm(thttp.Route{Method: "GET", Path: base + "/{endpointId}/deliveries", OperationID: "listWebhookDeliveries",
			Summary: "List an endpoint's recent delivery attempts, newest first", Query: bind.ListQuery{}, Success: 200,
			Response: bind.List[WebhookDelivery]{}, Errors: []int{400, 404}, Handle: a.listWebhookDeliveries}),
		adm(thttp.Route{Method: "POST", Path: base + "/{endpointId}/deliveries/{deliveryId}/resend", OperationID: "resendWebhookDelivery",
			Summary: "Queue a logged delivery's body again as a new delivery", Success: 202, Response: WebhookResend{},
			Errors: []int{404, 412}, Handle: a.resendWebhookDelivery}),
		adm(thttp.Route{Method: "POST", Path: base + "/{endpointId}/replay", OperationID: "replayWebhookDeliveries",
			Summary: "Queue again the logged webhooks of an endpoint from a change feed seq (of one event) or from a time, each once, oldest first",
			Body:    ReplayWebhooksRequest{}, Success: 202, Response: WebhookReplay{}, Errors: []int{400, 404, 412},
			Handle: a.replayWebhooks}),
	}
}

func (a *api) replayWebhooks(c *thttp.Ctx) (any, error) {
	var req ReplayWebhooksRequest
	if err := c.Bind(&req); err != nil {
		return nil, err
	}
	var from webhooks.ReplayFrom
	if req.EventID != nil {
		from.EventID = *req.EventID
	}
	switch {
	case req.FromSeq != nil && req.Since != nil:
		return nil, event.FieldError("since", "give fromSeq or since, not both")
	case req.FromSeq != nil:
		if from.EventID == "" {
			return nil, event.FieldError("eventId", "required with fromSeq: a seq counts in one event's feed")
		}
		from.Seq = uint64(*req.FromSeq)
	case req.Since != nil:
		from.Since = req.Since.Time
	default:
		return nil, event.FieldError("fromSeq", "give fromSeq (with eventId) or since")
	}
	view := func(ids []string) WebhookReplay {
		return WebhookReplay{EndpointID: c.Param("endpointId"), Queued: len(ids), IDs: ids}
	}
	// A keyed replay commits its record with the tasks it queues.
	rec := recorder(c, func(res any) any { return view(res.([]string)) })
	ids, err := a.hooks.ReplayRecorded(c.Param("unitId"), c.Param("endpointId"), from, rec)
	if err != nil {
		return nil, hookErr(c, err)
	}
	return view(ids), nil
}

func webhookView(e webhooks.Endpoint, withSecret bool) WebhookEndpoint {
	v := WebhookEndpoint{ID: e.ID, UnitID: e.UnitID, URL: e.URL, EventTypes: e.EventTypes, Description: e.Description,
		Enabled: e.Enabled, ConsecutiveFailures: e.ConsecutiveFailures,
		CreatedAt: event.At(e.CreatedAt), UpdatedAt: event.At(e.UpdatedAt)}
	if v.EventTypes == nil {
		v.EventTypes = []string{}
	}
	if e.DisabledReason != "" {
		r := e.DisabledReason
		v.DisabledReason = &r
	}
	if withSecret {
		s := e.Secret
		v.Secret = &s
	}
	if e.PreviousSecret != "" {
		t := event.At(e.PreviousUntil)
		v.PreviousSecretUntil = &t
	}
	return v
}

// webhookErr maps the webhooks package's errors to statuses.
func webhookErr(err error) error {
	switch {
	case errors.Is(err, webhooks.ErrNotFound):
		return thttp.NewError(404, "webhook endpoint not found")
	case errors.Is(err, webhooks.ErrInvalid):
		msg := strings.TrimPrefix(err.Error(), webhooks.ErrInvalid.Error()+": ")
		field, reason, ok := strings.Cut(msg, ": ")
		if !ok {
			return thttp.NewError(400, msg)
		}
		return thttp.NewError(400, msg, event.Detail{Field: field, Reason: reason})
	case errors.Is(err, webhooks.ErrNoDelivery):
		return thttp.NewError(404, "webhook delivery not found")
	case errors.Is(err, webhooks.ErrNoPayload):
		return thttp.NewError(412, "this delivery was logged without its body and cannot be sent again").WithReason(event.ReasonWebhookPayloadUnavailable)
	case errors.Is(err, webhooks.ErrDisabled):
		return thttp.NewError(412, "the endpoint is disabled: enable it to resend").WithReason(event.ReasonWebhookEndpointDisabled)
	case errors.Is(err, webhooks.ErrTooMany):
		return thttp.NewError(409, "too many webhook endpoints in this business unit").WithReason(event.ReasonWebhookEndpointLimit)
	}
	return err
}

// hookRecord is the record of a keyed endpoint write whose answer shows
// the secret (create, rotate), committed with the endpoint
// (webhooks.Service.CreateRecorded): a retry whose answer was lost
// replays it instead of writing again. nil without an Idempotency-Key.
func hookRecord(c *thttp.Ctx) *ask.Recorder {
	return recorder(c, func(res any) any { return webhookView(res.(webhooks.Endpoint), true) })
}

// hookErr is webhookErr for a keyed write: a write made before (its
// answer lost, its key claimed again) answers its record.
func hookErr(c *thttp.Ctx, err error) error {
	if v, ok := ops.Replayed(err); ok {
		return c.Replay(v)
	}
	return webhookErr(err)
}

func (a *api) createWebhookEndpoint(c *thttp.Ctx) (any, error) {
	var req CreateWebhookEndpointRequest
	if err := c.Bind(&req); err != nil {
		return nil, err
	}
	unit, err := a.unitParam(c)
	if err != nil {
		return nil, err
	}
	in := webhooks.Input{URL: &req.URL, EventTypes: req.EventTypes, Description: &req.Description}
	e, err := a.hooks.CreateRecorded(unit, in, hookRecord(c))
	if err != nil {
		return nil, hookErr(c, err)
	}
	return webhookView(e, true), nil
}

func (a *api) listWebhookEndpoints(c *thttp.Ctx) (any, error) {
	var q bind.ListQuery
	if err := c.BindQuery(&q); err != nil {
		return nil, err
	}
	unit, err := a.unitParam(c)
	if err != nil {
		return nil, err
	}
	eps := a.hooks.List(unit)
	views := make([]WebhookEndpoint, len(eps))
	for i, e := range eps {
		views[i] = webhookView(e, false)
	}
	return paginate(views, q, func(e WebhookEndpoint) string { return e.ID })
}

func (a *api) getWebhookEndpoint(c *thttp.Ctx) (any, error) {
	e, err := a.hooks.Get(c.Param("unitId"), c.Param("endpointId"))
	if err != nil {
		return nil, webhookErr(err)
	}
	return webhookView(e, false), nil
}

func (a *api) updateWebhookEndpoint(c *thttp.Ctx) (any, error) {
	var req UpdateWebhookEndpointRequest
	if err := c.Bind(&req); err != nil {
		return nil, err
	}
	e, err := a.hooks.Update(c.Param("unitId"), c.Param("endpointId"),
		webhooks.Input{URL: req.URL, EventTypes: req.EventTypes, Description: req.Description})
	if err != nil {
		return nil, webhookErr(err)
	}
	return webhookView(e, false), nil
}

func (a *api) deleteWebhookEndpoint(c *thttp.Ctx) (any, error) {
	unit, id := c.Param("unitId"), c.Param("endpointId")
	e, err := a.hooks.Get(unit, id)
	if err != nil {
		return nil, webhookErr(err)
	}
	if err := a.hooks.Delete(unit, id); err != nil {
		return nil, webhookErr(err)
	}
	return webhookView(e, false), nil
}

func (a *api) rotateWebhookSecret(c *thttp.Ctx) (any, error) {
	e, err := a.hooks.RotateSecretRecorded(c.Param("unitId"), c.Param("endpointId"), hookRecord(c))
	if err != nil {
		return nil, hookErr(c, err)
	}
	return webhookView(e, true), nil
}

func (a *api) enableWebhookEndpoint(on bool) thttp.HandlerFunc {
	return func(c *thttp.Ctx) (any, error) {
		e, err := a.hooks.SetEnabledRecorded(c.Param("unitId"), c.Param("endpointId"), on,
			recorder(c, func(res any) any { return webhookView(res.(webhooks.Endpoint), false) }))
		if err != nil {
			return nil, hookErr(c, err)
		}
		return webhookView(e, false), nil
	}
}

func (a *api) listWebhookDeliveries(c *thttp.Ctx) (any, error) {
	var q bind.ListQuery
	if err := c.BindQuery(&q); err != nil {
		return nil, err
	}
	ds, err := a.hooks.Deliveries(c.Param("unitId"), c.Param("endpointId"))
	if err != nil {
		return nil, webhookErr(err)
	}
	views := make([]WebhookDelivery, len(ds))
	for i, d := range ds {
		v := WebhookDelivery{ID: d.ID, EventID: d.EventID, Type: d.Type, Attempt: d.Attempt, LatencyMS: d.LatencyMS,
			Succeeded: d.Succeeded, Refused: d.Refused, At: event.At(d.At)}
		if d.StatusCode != 0 {
			sc := d.StatusCode
			v.StatusCode = &sc
		}
		if d.Error != "" {
			msg := d.Error
			v.Error = &msg
		}
		views[i] = v
	}
	// Deliveries have no id of their own: the cursor is the position.
	return paginateIndex(views, q)
}

func (a *api) resendWebhookDelivery(c *thttp.Ctx) (any, error) {
	queued := event.At(a.now())
	view := func(r webhooks.Resent) WebhookResend {
		return WebhookResend{ID: r.ID, EndpointID: c.Param("endpointId"), ResendOf: r.Delivery.ID, EventID: r.Delivery.EventID,
			Type: r.Delivery.Type, QueuedAt: queued}
	}
	// A keyed resend commits its record with the task it queues.
	rec := recorder(c, func(res any) any { return view(res.(webhooks.Resent)) })
	id, d, err := a.hooks.ResendRecorded(c.Param("unitId"), c.Param("endpointId"), c.Param("deliveryId"), rec)
	if err != nil {
		return nil, hookErr(c, err)
	}
	return view(webhooks.Resent{ID: id, Delivery: d}), nil
}

// paginateIndex pages a short in-memory list by position.
func paginateIndex[T any](items []T, q bind.ListQuery) (any, error) {
	pos, err := bind.DecodeCursor(q.Cursor)
	if err != nil {
		return nil, err
	}
	start := 0
	if pos != "" {
		n, err := atoiStrict(pos)
		if err != nil || n < 0 || n > len(items) {
			return nil, event.FieldError("cursor", "is not a valid cursor")
		}
		start = n
	}
	end := min(start+q.Limit, len(items))
	more := end < len(items)
	next := ""
	if more {
		next = strconv.Itoa(end)
	}
	return bind.NewList(items[start:end], more, next), nil
}

func atoiStrict(s string) (int, error) {
	n := 0
	if s == "" || len(s) > 9 {
		return 0, errors.New("bad number")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errors.New("bad number")
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}
