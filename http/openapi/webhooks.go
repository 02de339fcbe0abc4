package openapi

// This file documents the outbound webhooks (the OpenAPI 3.1 webhooks
// section) and gives each enum concept one named schema.

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/webhooks"
)

// Webhook is one outbound webhook event type: its name and the Go type of
// its data member (what the JSON encoder writes there).
type Webhook struct {
	Type        string
	Description string
	Data        any
}

// webhookCheckin is the data of a checkin.created webhook, as the event
// actor writes it (webhooks' hookCheckin). An alias of an unnamed struct, so
// the document writes it inline: generators that prune the components
// only the paths use (oapi-codegen does) would otherwise drop it.
type webhookCheckin = struct {
	ID             string    `json:"id" doc:"The check-in's id (chk_...)."`
	EventID        string    `json:"eventId" doc:"The event's id."`
	RegistrationID string    `json:"registrationId" doc:"The registration that checked in."`
	SubjectType    string    `json:"subjectType" v:"enum=event|session|venue" doc:"The door: the event itself, a session or a venue."`
	SubjectID      string    `json:"subjectId,omitempty" doc:"The session or venue id at those doors; absent at the event door."`
	Method         string    `json:"method" v:"enum=scan|manual" doc:"How the registration was identified."`
	CheckedInAt    time.Time `json:"checkedInAt" doc:"When the check-in was recorded (UTC); an offline door scan's scannedAt."`
	DeviceID       string    `json:"deviceId,omitempty" doc:"The door device that scanned it; absent for the Developer API and the console."`
}

// Webhooks returns the service's outbound webhook event types, every one
// that an endpoint can subscribe to (webhooks.HookTypes).
func Webhooks() []Webhook {
	desc := map[string]Webhook{
		webhooks.HookRegistrationCreated: {Description: "A registration was created (API, order or hosted checkout), in any status: " +
			"pending, confirmed or waitlisted.", Data: event.Registration{}},
		webhooks.HookRegistrationConfirmed: {Description: "A registration became confirmed: approved, paid, or promoted from the waitlist.",
			Data: event.Registration{}},
		webhooks.HookRegistrationCancelled: {Description: "A registration was cancelled (its place is released).", Data: event.Registration{}},
		webhooks.HookCheckinCreated: {Description: "A registration checked in at a door (a repeat scan at the same door sends nothing).",
			Data: webhookCheckin{}},
		webhooks.HookOrderPaid: {Description: "An order was paid: a free order at confirm, a paid one when its payment settled.",
			Data: event.Order{}},
		webhooks.HookOrderRefunded: {Description: "A refund of a paid order succeeded at the payment provider, partial or full; " +
			"the order carries its refunds (status refunded once nothing is left).", Data: event.Order{}},
		webhooks.HookCheckinConflict: {Description: "A door conflict: a door device admitted someone offline on a pass the service " +
			"then refused or found used at that door by another device (decisions §18).", Data: event.DoorConflict{}},
	}
	var out []Webhook
	for _, t := range webhooks.HookTypes() {
		w, ok := desc[t]
		if !ok {
			// A new type must be documented here before it is served.
			w = Webhook{Description: "Undocumented.", Data: map[string]any{}}
		}
		w.Type = t
		out = append(out, w)
	}
	return out
}

// oaSignatureNote describes the Webhook-Signature scheme.
var oaSignatureNote = "`" + webhooks.SignatureHeader + ": t=<unix seconds>,v1=<hex HMAC-SHA256>`: the HMAC is over the bytes " +
	"`<t>.<raw body>` keyed by the endpoint's secret (the whole `whsec_...` string). Verify it before trusting the body, " +
	"and refuse a `t` older than 5 minutes (replays). After a secret rotation the header carries a second `v1` (new " +
	"first, old second) for the rotation grace period: accept the request when any `v1` matches."

// webhooks builds the webhooks section: one POST per event type, to the
// URL the endpoint was configured with.
func (g *oaGenerator) webhooks(list []Webhook) (map[string]any, error) {
	out := map[string]any{}
	for _, w := range list {
		data, err := g.schemaOf(reflect.TypeOf(w.Data), false, 0)
		if err != nil {
			return nil, fmt.Errorf("openapi: webhook %s: %w", w.Type, err)
		}
		body := map[string]any{
			"type":     "object",
			"required": []any{"id", "type", "createdAt", "data"},
			"properties": map[string]any{
				"id": map[string]any{"type": "string", "maxLength": 200,
					"description": "The webhook event's id: the same on every delivery attempt of this event, so a receiver drops repeats by it."},
				"type":      map[string]any{"type": "string", "enum": []any{w.Type}, "description": "The event type."},
				"createdAt": map[string]any{"type": "string", "format": "date-time", "maxLength": 35, "description": "When the change happened (UTC)."},
				"eventId":   map[string]any{"type": "string", "maxLength": 100, "description": "The event whose change feed `seq` counts."},
				"seq": map[string]any{"type": "integer", "minimum": 1, "description": "The change's `seq` in the event's change feed " +
					"(GET /v1/events/{eventId}/changes): a receiver that sees a gap (or a seq older than it expected) reads the " +
					"feed to fill it. Several webhooks of one change share its seq; webhooks of one endpoint arrive in order, " +
					"but a retried one may arrive after a later seq."},
				"data": oaWithDescription(data, "The record as the change left it."),
			},
		}
		name := oaExportName(strings.ReplaceAll(w.Type, ".", " "))
		out[w.Type] = map[string]any{"post": map[string]any{
			"operationId": "webhook" + name,
			"summary":     w.Type,
			"tags":        []any{"Webhooks"},
			"description": w.Description + "\n\nSent as a POST with a JSON body to every enabled endpoint of the business unit " +
				"subscribed to `" + w.Type + "`. Answer 2xx within the timeout to acknowledge; any other answer or none is " +
				"retried with exponential backoff, and an endpoint that keeps failing is disabled. Deliveries of one endpoint " +
				"are in order. " + oaSignatureNote,
			"parameters": []any{map[string]any{
				"name": webhooks.SignatureHeader, "in": "header", "required": true,
				"description": oaSignatureNote,
				"schema":      map[string]any{"type": "string", "maxLength": 400},
			}},
			"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": body}}},
			"responses": map[string]any{
				"200": map[string]any{"description": "Acknowledged (any 2xx is)."},
			},
			"security": []any{},
		}}
	}
	return out, nil
}

// oaEnumSchemas are the named enum concepts: a field whose v-tag enum is
// exactly one of these sets refers to the named schema instead of
// carrying its own copy.
var oaEnumSchemas = map[string][]string{
	"SellableStatus":        {event.SellDraft, event.SellOpen, event.SellClosed, event.SellArchived},
	"EventStatus":           {event.EventDraft, event.EventPublished, event.EventArchived},
	"RegistrationStatus":    {"pending", "confirmed", "waitlisted", "rejected", "cancelled"},
	"ItemType":              {"registration_type", "addon", "bundle"},
	"BundleItemType":        {"registration_type", "addon"},
	"CheckinMethod":         {"scan", "manual"},
	"CheckinSubjectType":    {"event", "session", "venue"},
	"CheckoutSessionStatus": {"open", "expired"},
	"Locale":                {"en", "zh-CN"},
	"OrderStatus":           {"open", "awaiting_payment", "paid", "cancelled", "expired", "refunded"},
	"CodeStatus":            {"active", "disabled", "expired", "exhausted"},
	"RefundStatus":          {"pending", "succeeded", "failed"},
	"QuestionType":          {"text", "email", "phone", "select", "multi_select", "checkbox", "date"},
	"ApiKeyType":            {"secret", "publishable"},
	"ApiVersion":            thttp.KnownVersions(),
	"WebhookEventType":      webhooks.HookTypes(),
}

var oaEnumDocs = map[string]string{
	"SellableStatus":        "Lifecycle of a ticket type, add-on or bundle: draft -> open <-> closed -> archived. Only open items sell.",
	"EventStatus":           "draft (created), published (on the storefront, sells), archived (final: no edits, no new orders).",
	"RegistrationStatus":    "pending (awaits approval, holds no place), confirmed, waitlisted, rejected, cancelled.",
	"ItemType":              "What an order or checkout line refers to: a ticket type, an add-on or a bundle.",
	"BundleItemType":        "What a bundle holds: a ticket type or an add-on.",
	"CheckinMethod":         "How the registration was identified at the door: a scanned code or a manual look-up.",
	"CheckinSubjectType":    "The door: the event itself, one of its sessions or one of its venues.",
	"CheckoutSessionStatus": "open until expiresAt, then expired.",
	"Locale":                "Language of the hosted pages.",
	"OrderStatus":           "open (places held), awaiting_payment, paid, cancelled, expired (hold lapsed), refunded (fully).",
	"CodeStatus":            "active, disabled, expired (past expiresAt) or exhausted (uses reached maxUses).",
	"RefundStatus":          "pending at the payment provider, succeeded or failed.",
	"QuestionType":          "The kind of answer a registration-form question takes.",
	"ApiKeyType":            "secret (Developer API, server side) or publishable (storefront, browser side).",
	"WebhookEventType":      "An outbound webhook event type (see the webhooks section).",
}

// oaEnumName returns the named enum schema of exactly this set of values,
// or "".
func oaEnumName(vals []string) string {
	key := oaEnumKey(vals)
	for name, set := range oaEnumSchemas {
		if oaEnumKey(set) == key {
			return name
		}
	}
	return ""
}

func oaEnumKey(vals []string) string {
	s := append([]string(nil), vals...)
	sort.Strings(s)
	return strings.Join(s, "|")
}

func oaEnumSchema(name string, vals []string) map[string]any {
	return map[string]any{"type": "string", "enum": oaStrings(vals), "description": oaEnumDocs[name]}
}
