package openapi

// This file holds the prose of the documents: what each operation does and
// its rules (with the specific error reasons it can answer), what each path
// parameter holds, and what each property means (units, defaults, bounds,
// what null means). It is kept here, beside the generator, rather than in
// the route table and the core's struct tags, so the words of the contract
// live in one place; a `doc` struct tag still wins over this table.
// The words follow the contract (api-spec.md and the decisions).

import (
	"reflect"
	"strings"

	"ticketd/event"
)

// oaOpDoc is the prose of one operation: its description (CommonMark) and
// the specific reasons it can answer beyond those every route of its
// surface can (authentication, rate limits, bodies, idempotency).
type oaOpDoc struct {
	text    string
	reasons []string
}

const (
	oaEventNotFound  = "An event of another business unit answers 404 exactly like one that does not exist."
	oaFeedCursorNote = " The `Feed-Cursor` header is the change feed's position this list reflects (read atomically with it): follow `GET /v1/events/{eventId}/changes?after=<Feed-Cursor>` from there to see every change made since, with nothing missed and nothing counted twice (when paging, keep the first page's)."
	oaListNote       = "Paged: `limit` 1 to 100 (default 50) and `cursor` (the previous page's `nextCursor`); `hasMore` says whether another page follows."
	oaHiddenNote     = "A hidden ticket type (isPublic false) needs a `redemptionCode` that unlocks it (REDEMPTION_CODE_REQUIRED)."
	oaOrderRules     = "Each item is a ticket type, add-on or bundle of the event that is open and within its sale window. One order admits one person, the buyer: at most one ticket type line (or a bundle holding one), with quantity 1; add-on lines take quantity 1 to 100. " +
		"The order holds its places for the order hold (15 minutes by default); confirm it before `holdExpiresAt` or it expires and its places return. " +
		"A buyer whose email is already registered in the event gets an order with `alreadyRegistered` true and no second seat. " +
		"Prices are snapshots: repricing later never changes this order."
)

var (
	oaSellReasons  = []string{event.ReasonSoldOut, event.ReasonNotOnSale, event.ReasonSaleNotStarted, event.ReasonSaleEnded, event.ReasonRedemptionCodeRequired}
	oaOrderReasons = append([]string{event.ReasonEventNotPublished, event.ReasonEventArchived}, oaSellReasons...)
)

var oaOperationDocs = map[string]oaOpDoc{
	// Door devices (decisions §18).
	"createDevice": {text: "Creates a door device of the event, `pending` until initialized. It admits at the `doors` given (each must exist in the event), or at every door of the event when none are given. " +
		"The answer is the only one that shows `setupCode`, and `setupUrl` (`{base_url}/door?setup=<setupCode>`) to open on the device or show as a QR code; the code works once, within 15 minutes."},
	"listDevices":  {text: "Lists the event's door devices, oldest first, with their status and when each was last seen. Never a setup code or a key."},
	"getDevice":    {text: "Gets one door device of the event. A device of another event or business unit answers the same 404 as a missing one."},
	"revokeDevice": {text: "Revokes a door device at once: its key answers 401 from the next request and its stream ends. Revoking a revoked device answers it unchanged."},
	"listDoorConflicts": {text: "Lists the event's door conflicts, newest first: scans a device admitted offline (`admittedOffline`) that the service then refused or found used at that door by another device or the API. " +
		"Each is also sent as the webhook `checkin.conflict`. " + oaListNote},
	"initializeDevice": {text: "Turns a setup code into the device's key `dk_...`, shown only in this answer. The code works once, within 15 minutes of the device's creation; an unknown, used or expired code answers 401. Needs no key."},
	"getDoorEvent":     {text: "The device's event (id, name, start, timezone), its doors with their names and counts (confirmed registrations expected, checked in at that door), the ticket types' names, and the event's devices by name (to say where a pass was used). `passCursor` is the passes cursor of now."},
	"listPasses": {text: "Pages through the event's passes in the order they changed. Without `cursor` it pages through every registration; the last page's `nextCursor` is never null, and called later with it the list holds only the passes changed since " +
		"(new, cancelled, approved, checked in anywhere), `hasMore` false once caught up. No change is ever skipped; a pass may repeat (the latest state wins). A cursor of another event, or garbage, answers 400. Answers gzip when asked (`Accept-Encoding: gzip`)."},
	"recordScans": {text: "Records 1 to 500 scans of this device in one request (counted once against the device's budget). Each scan gets its verdict, in order: `admitted` (a check-in was recorded, the same record as the Developer API's, `method` scan with `deviceId`), " +
		"`already_checked_in` (with `firstCheckin`), or `refused` with `reason` REGISTRATION_NOT_CONFIRMED, NOT_FOUND or DOOR_NOT_ALLOWED. A repeated `scanId` answers its first result unchanged. An `offline` scan's check-in keeps `scannedAt` when it lies within the last 7 days and not more than 5 minutes ahead. " +
		"One bad scan never fails the batch; a malformed batch answers 400 and records nothing."},
	"streamPasses": {text: "Server-Sent Events: each `data:` line is a pass (as GET /door/v1/passes answers it) as it changes, so a device learns another device's check-in within a second. Each batch ends with an `id:` line holding the passes cursor after it; " +
		"reconnecting with `Last-Event-ID` (or `?cursor=`) resumes there. Without either it starts now. Comment lines keep the connection alive; the stream ends after 10 minutes or when the device is revoked (EventSource reconnects by itself)."},
	"listChanges": {text: "The event's change feed (decisions §20), for integrators who mirror registrations, orders and check-ins: " +
		"every change, oldest first, each with `seq` counting the event's feed from 1 without gaps, its `type`, when it " +
		"happened and `object`: the record as its GET answered just after the change, in the key's API version " +
		"(registration.* changes carry a registration, order.* an order, checkin.* a check-in). A change is written with " +
		"the state it describes, atomically, so the feed never disagrees with the records.\n\n" +
		"**Following:** start from a list's `Feed-Cursor` header (or without `after`: from the oldest change kept), then " +
		"read with `after` = the previous page's `nextCursor` (always set). `hasMore` true: read again at once; false: " +
		"read again with `wait` (up to 30 s), which answers as soon as a change commits. `types` filters (the cursor " +
		"still moves past the others). `limit` 1 to 1000 (default 100).\n\n" +
		"**Retention:** changes are kept at least 30 days; a cursor whose next change is no longer kept answers 410 " +
		"CURSOR_EXPIRED (list the records again and follow the list's Feed-Cursor). A cursor is bound to its event: " +
		"another event's cursor, one ahead of the feed, or garbage answers 400 on `after`. " + oaEventNotFound,
		reasons: []string{event.ReasonCursorExpired}},
	// Events.
	"listEvents": {text: "Lists the business unit's events in every status (draft, published, archived), newest first. " + oaListNote},
	"createEvent": {text: "Creates an event as `draft`. `name` and `timezone` (an IANA name) are required; `startsAt` is needed later to publish. " +
		"`currency` (ISO 4217, upper case) defaults to USD and locks once the event takes an order. Publish it with updateEvent (status `published`) to put it on the storefront."},
	"getEvent": {text: "Returns one event. " + oaEventNotFound},
	"updateEvent": {text: "Changes any of name, dates, timezone, status, currency and the site fields; absent fields stay as they are. " +
		"Setting status `published` needs a start time (400 otherwise). Changing `currency` after the event has taken an order answers 412 CURRENCY_LOCKED. " +
		"Moving `startsAt` clears the agenda: the first attempt answers 412 AGENDA_RESET_UNCONFIRMED; repeat it with `confirmAgendaReset` true to perform it. An archived event takes no edits.",
		reasons: []string{event.ReasonEventArchived, event.ReasonCurrencyLocked, event.ReasonAgendaResetUnconfirmed}},
	"archiveEvent": {text: "Archives the event: final. It leaves the storefront and refuses new orders and edits; its records stay readable. Events are never deleted. Archiving an archived event answers it unchanged."},

	// Ticket types.
	"listTicketTypes": {text: "Lists the event's ticket types, each with `counts` (confirmed and waitlisted registrations). " + oaListNote},
	"createTicketType": {text: "Creates a ticket type as `draft`; open it with updateTicketType (status `open`) to sell it. " +
		"`capacity` null (the default) is unlimited. `priceAmount` is in the event currency's major unit, 0 is free. " +
		"`isPublic` false hides it from the storefront: only a redemption code reaches it. `requiresApproval` makes API registrations land `pending`. " +
		"`opensAt`/`closesAt` bound the sale window. An archived event refuses it.",
		reasons: []string{event.ReasonEventArchived}},
	"getTicketType": {text: "Returns one ticket type with its counts."},
	"updateTicketType": {text: "Changes any of the create fields and `status`; absent fields stay, null clears an optional one (capacity null is unlimited). " +
		"Status moves draft -> open <-> closed -> archived; any other move answers 412 STATUS_TRANSITION_NOT_ALLOWED. " +
		"A capacity below the places already confirmed and held answers 412 CAPACITY_BELOW_TAKEN; raising it promotes waitlisted registrations, oldest first. Repricing never rewrites existing orders.",
		reasons: []string{event.ReasonEventArchived, event.ReasonStatusTransition, event.ReasonCapacityBelowTaken}},
	"getTicketTypeAvailability": {text: "Returns the availability object: capacity (null is unlimited), confirmed, waitlisted, held (places held by open orders) and remaining (null when unlimited). Under version 2026-03-15 `held` is absent."},

	// Registrations.
	"listRegistrations": {text: "Lists the event's registrations, newest first. `status` filters by status; `email` by person (case-insensitive, trimmed). " + oaListNote + oaFeedCursorNote},
	"createRegistration": {text: "Registers a person on a ticket type (`registrationTypeId`, required when the event has ticket types). " +
		"It lands `pending` when the type requires approval (holds no place until approved), `waitlisted` when the type is full and allows a waitlist, and otherwise `confirmed` (a ticket email is sent). " +
		"A full type without a waitlist answers 412 SOLD_OUT; a type that is not open answers 412 NOT_ON_SALE. " +
		"An email already registered in the event (not cancelled or rejected; compared case-insensitively, trimmed) answers 200 with `created` false and the existing registration: retrying is safe.",
		reasons: []string{event.ReasonSoldOut, event.ReasonNotOnSale, event.ReasonEventArchived}},
	"getRegistration": {text: "Returns one registration with its `checkinCode` and `passUrl`."},
	"approveRegistration": {text: "Approves a pending application: it becomes `confirmed` (and gets its ticket email), or `waitlisted` when the type is full and allows a waitlist; a full type without one answers 412 SOLD_OUT. " +
		"A registration that is not pending answers 412 REGISTRATION_NOT_PENDING.",
		reasons: []string{event.ReasonRegistrationNotPending, event.ReasonSoldOut}},
	"rejectRegistration": {text: "Rejects a pending application (status `rejected`), with an optional `reason` kept on the record. A registration that is not pending answers 412 REGISTRATION_NOT_PENDING.",
		reasons: []string{event.ReasonRegistrationNotPending}},
	"cancelRegistration": {text: "Cancels a registration (status `cancelled`): its place is released, and the redemption code use if a code admitted it; the oldest waitlisted registration of the type is then confirmed. " +
		"Cancelling a cancelled registration answers 412 REGISTRATION_ALREADY_CANCELLED.",
		reasons: []string{event.ReasonRegistrationCancelled}},
	"rotateRegistrationPass": {text: "Issues a new `passUrl` for a leaked pass link; the old link stops working at once."},
	"getRegistrationPerks":   {text: "Returns the registration's effective perks: the union of its ticket type's perks, the perks of the code that admitted it and individual grants, each with its sources."},

	// Check-ins.
	"listCheckins": {text: "Lists check-ins, newest first; `subjectType`, `subjectId` and `registrationId` filter. " + oaListNote + oaFeedCursorNote},
	"recordCheckin": {text: "Records a registration's entry at a door. Identify the registration by `registrationId` or by `checkinCode` (one of the two is required). " +
		"`subjectType` is the door: `event`, or `session`/`venue` with their `subjectId` (required there, ignored at the event door). " +
		"Idempotent per (registration, door): a second scan answers 200 with `alreadyCheckedIn` true and creates nothing. " +
		"Only a `confirmed` registration may enter (412 REGISTRATION_NOT_CONFIRMED); the perk verdict in `access` is advisory.",
		reasons: []string{event.ReasonRegistrationNotConfirmed}},

	// Program.
	"listSessions":  {text: "Lists the event's agenda in time order. A session's `perkIds` gate entry (empty is open to all) on top of its venue's. " + oaListNote},
	"listSpeakers":  {text: "Lists the event's line-up. " + oaListNote},
	"listVenues":    {text: "Lists the event's rooms with their perk gates (`perkIds`; empty is open to all). " + oaListNote},
	"listAttendees": {text: "Lists one entry per person (email, case-insensitive) with their registration ids and standing status, in order of first registration. " + oaListNote},

	// Redemption codes.
	"listRedemptionCodes": {text: "Lists the event's redemption codes with their live `uses`, newest first. " + oaListNote},
	"mintRedemptionCodes": {text: "Mints codes that unlock a ticket type (hidden ones included): one by default, `count` of them, or one custom `code` (1 to 64 characters; forces count 1). " +
		"`maxUses` defaults to 1; null is unlimited. A code grants access, never a place: capacity and the sale window still apply. " +
		"A custom code that already exists in the event answers 409 ALREADY_EXISTS.",
		reasons: []string{event.ReasonAlreadyExists, event.ReasonEventArchived}},
	"lookupRedemptionCode": {text: "Validates a buyer's code: answers the ticket type it unlocks (hidden ones included), the perks it adds and the price. " +
		"Every invalid form (unknown, disabled, expired, exhausted) answers the same 404 NOT_FOUND."},
	"disableRedemptionCode": {text: "Disables a code (status `disabled`); codes are never deleted. Registrations it admitted stay."},

	// Add-ons and bundles.
	"listAddons": {text: "Lists the event's add-ons with `sold` and `held` counts. " + oaListNote},
	"createAddon": {text: "Creates an add-on as `draft` (open it to sell it). `capacity` null is unlimited; `priceAmount` is per unit in the major unit.",
		reasons: []string{event.ReasonEventArchived}},
	"getAddon": {text: "Returns one add-on."},
	"updateAddon": {text: "Changes an add-on; absent fields stay, null clears. Status moves draft -> open <-> closed -> archived (412 STATUS_TRANSITION_NOT_ALLOWED otherwise); a capacity below what is sold and held answers 412 CAPACITY_BELOW_TAKEN.",
		reasons: []string{event.ReasonEventArchived, event.ReasonStatusTransition, event.ReasonCapacityBelowTaken}},
	"listBundles": {text: "Lists the event's bundles with their `items`. " + oaListNote},
	"createBundle": {text: "Creates a bundle as `draft`: a package of ticket types and add-ons (at most 50 items) sold at one price. Every item must be a ticket type or add-on of the same event (400 otherwise).",
		reasons: []string{event.ReasonEventArchived}},
	"getBundle": {text: "Returns one bundle with its items."},
	"updateBundle": {text: "Changes a bundle; absent fields stay, null clears. Status moves like a ticket type's (412 STATUS_TRANSITION_NOT_ALLOWED otherwise).",
		reasons: []string{event.ReasonEventArchived, event.ReasonStatusTransition, event.ReasonCapacityBelowTaken}},
	"replaceBundleItems": {text: "Replaces the bundle's whole contents with the body: 1 to 50 items, each a ticket type or add-on of the same event (400 otherwise).",
		reasons: []string{event.ReasonEventArchived}},

	// Orders and checkout.
	"listOrders": {text: "Lists the event's orders with their line items, newest first; `status` filters. " + oaListNote + oaFeedCursorNote},
	"placeOrder": {text: "Places an order for the buyer `email` and holds its places. " + oaOrderRules + " " + oaHiddenNote +
		" The event must be published (412 EVENT_NOT_PUBLISHED, or EVENT_ARCHIVED); a full item answers 412 SOLD_OUT.",
		reasons: oaOrderReasons},
	"getOrder": {text: "Returns one order; `{orderNumber}` also takes the order's `id`. Poll it after confirm until `status` is `paid`."},
	"confirmOrder": {text: "Confirms an open order. A free order is paid at once (fulfilled, ticket email sent). A paid order becomes `awaiting_payment` and answers `paymentUrl`, the payment provider's page; its hold is extended by another hold period while the buyer pays. " +
		"`successUrl` and `cancelUrl` are required for a paid order: absolute https URLs (http for localhost). Confirming an order that is already awaiting payment or paid answers it unchanged. " +
		"An order past its hold answers 412 ORDER_HOLD_EXPIRED; a cancelled or expired one 412 ORDER_NOT_OPEN. `{orderNumber}` also takes the order's `id`.",
		reasons: []string{event.ReasonOrderNotOpen, event.ReasonOrderHoldExpired, event.ReasonSoldOut, event.ReasonPaymentProviderDown, event.ReasonPaymentProviderRefused}},
	"cancelOrder": {text: "Cancels an open or awaiting-payment order: its hold is released now. Idempotent: a cancelled or expired order answers unchanged. A paid order answers 412 ORDER_ALREADY_PAID (refunds are made in the console). `{orderNumber}` also takes the order's `id`.",
		reasons: []string{event.ReasonOrderPaid}},
	"createCheckoutSession": {text: "Creates a hosted checkout session: `url` is a page that collects what is missing (email, name, the registration form, add-ons), places the order, confirms it and hands a paid order to the payment page. " +
		"The session lives 24 hours (`expiresAt`) and holds no seat: places are held only when the buyer places the order. A supplied `email` is used unchanged and shown masked. " +
		"After payment the order page's button goes to `returnUrl` with `order` and `status` appended. The event must be published (412 EVENT_NOT_PUBLISHED); items are checked as for placeOrder except availability.",
		reasons: []string{event.ReasonEventNotPublished, event.ReasonEventArchived, event.ReasonNotOnSale, event.ReasonSaleNotStarted, event.ReasonSaleEnded, event.ReasonRedemptionCodeRequired}},

	// Storefront.
	"listPublishedEvents": {text: "Lists the business unit's published events, each with `siteUrl`. `lang` returns the organizer's translations where the event offers that language, falling back per field. " + oaListNote},
	"getCatalog": {text: "Returns everything a sales page needs for one published event: public ticket types (`soldOut`, never a count), `upcomingTicketTypes` (announced, not yet on sale, with `opensAt`), add-ons, bundles, the open agenda, speakers, sponsors and published registration forms. " +
		"Hidden ticket types are absent (reach them with a code). A draft event, another unit's event and an unknown id answer the same 404."},
	"lookupStorefrontRedemptionCode": {text: "Looks up a buyer's code: the only way to reach a hidden ticket type. Answers the ticket type it unlocks with its price and perks; never a count. Every invalid code answers the same 404 NOT_FOUND."},
	"createStorefrontCheckoutSession": {text: "Creates a hosted checkout session from the browser; same body and rules as the Developer API's createCheckoutSession. " +
		"`returnUrl` must be https (http for localhost) at one of the publishable key's origins. Limited per (key, client IP) on top of the key's budget.",
		reasons: []string{event.ReasonEventNotPublished, event.ReasonEventArchived, event.ReasonNotOnSale, event.ReasonSaleNotStarted, event.ReasonSaleEnded, event.ReasonRedemptionCodeRequired}},
	"placeStorefrontOrder": {text: "Places an order from the browser. " + oaOrderRules + " " + oaHiddenNote +
		" Only published events sell here. Limited per (key, client IP).",
		reasons: oaOrderReasons},
	"getStorefrontOrder": {text: "Polls an order by its `orderNumber` (not its id); the buyer's email is masked. Limited per (key, client IP)."},
	"confirmStorefrontOrder": {text: "Confirms an open order: a free one is paid at once, a paid one answers `paymentUrl`. `successUrl` and `cancelUrl` are optional (without them the payment page returns the buyer to the hosted order page); " +
		"when given they must be https (http for localhost) at one of the key's origins.",
		reasons: []string{event.ReasonOrderNotOpen, event.ReasonOrderHoldExpired, event.ReasonSoldOut, event.ReasonPaymentProviderDown, event.ReasonPaymentProviderRefused}},
	"cancelStorefrontOrder": {text: "Cancels an open order: its hold is released now; idempotent. A paid order answers 412 ORDER_ALREADY_PAID.",
		reasons: []string{event.ReasonOrderPaid}},

	// Admin: the reasons its 412s and 409s can carry.
	"refundOrder": {text: "Refunds a paid order through the payment provider: `amount` defaults to all that is refundable; the event's refund policy applies unless `force`. The refund is pending until the provider answers; the order's `refunds` show it.",
		reasons: []string{event.ReasonOrderNotPaid, event.ReasonOrderRefunded, event.ReasonOrderFree, event.ReasonRefundNotAllowed, event.ReasonRefundDeadlinePassed,
			event.ReasonRefundNotPending, event.ReasonRefundLimitReached, event.ReasonNothingToRefund, event.ReasonPaymentProviderRefused, event.ReasonPaymentProviderDown}},
	"setRefundPolicy":         {reasons: []string{event.ReasonEventArchived}},
	"createPromotionCode":     {reasons: []string{event.ReasonAlreadyExists, event.ReasonEventLimitReached, event.ReasonEventArchived}},
	"updatePromotionCode":     {reasons: []string{event.ReasonEventArchived}},
	"deletePromotionCode":     {reasons: []string{event.ReasonEventArchived}},
	"putRegistrationForm":     {reasons: []string{event.ReasonEventArchived}},
	"publishRegistrationForm": {reasons: []string{event.ReasonNoFormToPublish, event.ReasonEventArchived}},
	"setEventSite":            {reasons: []string{event.ReasonEventArchived}},
	"putTranslation":          {reasons: []string{event.ReasonEventLimitReached, event.ReasonEventArchived}},
	"deleteTranslation":       {reasons: []string{event.ReasonEventArchived}},
	"createWebhookEndpoint":   {reasons: []string{event.ReasonWebhookEndpointLimit}},
	"retryOutboxMail":         {reasons: []string{event.ReasonOutboxEntryNotParked, event.ReasonOutboxUnavailable}},
	"listOutbox":              {reasons: []string{event.ReasonOutboxUnavailable}},
	"previewOutboxMail":       {reasons: []string{event.ReasonOutboxMailUnrenderable, event.ReasonOutboxUnavailable}},
	"setEventLocation":        {reasons: []string{event.ReasonEventArchived}},

	"replayWebhookDeliveries": {text: "Sends again what an endpoint's delivery log holds from a point on: with `fromSeq` and `eventId`, the webhooks of that event's changes whose change feed `seq` is `fromSeq` or later; with `since`, those of changes made at that time or later (of `eventId` only, when given). Each webhook event goes once (its newest logged body: the same bytes and id, so receivers deduplicate), oldest first, queued like a resend. The log keeps an endpoint's newest attempts only; for anything older, read the change feed. A disabled endpoint answers 412. Answers 202 once queued.",
		reasons: []string{event.ReasonWebhookEndpointDisabled}},
	"resendWebhookDelivery": {text: "Sends a logged delivery again: its body (the same bytes and event id, so receivers can deduplicate) is queued as a new delivery on the endpoint's durable queue, signed with the current secret, retried and logged like any other. Answers 202 once queued.",
		reasons: []string{event.ReasonWebhookPayloadUnavailable, event.ReasonWebhookEndpointDisabled}},
}

// oaPathParamDocs says what each path parameter holds.
var oaPathParamDocs = map[string]string{
	"eventId":         "The event's id (evt_...).",
	"publicId":        "The published event's id (evt_...); a draft or another unit's event answers 404.",
	"typeId":          "The ticket type's id (tt_...).",
	"registrationId":  "The registration's id (reg_...).",
	"codeId":          "The redemption code's id (rc_..., not the code itself).",
	"addonId":         "The add-on's id (ao_...).",
	"bundleId":        "The bundle's id (bdl_...).",
	"orderNumber":     "The order's orderNumber; the Developer and Admin APIs also take its id (ord_...). The storefront takes the orderNumber only.",
	"unitId":          "The business unit's id (bu_...).",
	"keyId":           "The API key's id (key_..., not the key itself).",
	"endpointId":      "The webhook endpoint's id.",
	"deliveryId":      "The delivery's id, as the endpoint's delivery log lists it.",
	"perkId":          "The perk's id (prk_...).",
	"venueId":         "The venue's id (ven_...).",
	"sessionId":       "The session's id (ses_...).",
	"speakerId":       "The speaker's id (spk_...).",
	"sponsorId":       "The sponsor's id.",
	"promotionCodeId": "The promotion code's id (not the code itself).",
	"lang":            "A language tag the event offers, e.g. zh-CN.",
	"entryId":         "The outbox entry's id, as listOutbox shows it.",
	"id":              "The record's id.",
}

func oaPathParamDoc(name string) string {
	if d, ok := oaPathParamDocs[name]; ok {
		return d
	}
	return "The " + name + "."
}

// oaPropertyDocs describes properties by "GoType.jsonName", then by
// "jsonName" alone. Input and response forms of a type share an entry.
var oaPropertyDocs = map[string]string{
	// Identity and times.
	"id":        "The record's id: an opaque string with a type prefix (evt_, tt_, reg_, rc_, ao_, bdl_, ord_, cs_, chk_, ses_, spk_, ven_, prk_...).",
	"eventId":   "The event's id.",
	"createdAt": "When the record was created (RFC 3339, UTC).",
	"updatedAt": "When the record last changed (RFC 3339, UTC).",
	"at":        "When it happened (RFC 3339, UTC).",
	// Lists.
	"data":       "The page's records, in the order the operation states.",
	"hasMore":    "true when another page follows: pass nextCursor as cursor.",
	"nextCursor": "The cursor of the next page; null on the last page.",
	// Common fields.
	"name":               "Display name, 1 to 200 characters.",
	"description":        "Free text shown to buyers.",
	"email":              "An email address, at most 320 characters; compared case-insensitively. Surrounding spaces are refused.",
	"status":             "The record's status; see its enum for the lifecycle.",
	"timezone":           "IANA time zone of the event, e.g. Europe/Berlin; dates are shown to buyers in it.",
	"startsAt":           "Start time (RFC 3339; answered in UTC).",
	"endsAt":             "End time (RFC 3339; answered in UTC).",
	"currency":           "ISO 4217 currency code, upper case; default USD. Locks once the event has taken an order.",
	"siteUrl":            "The event's public page address set in the console; null until set.",
	"capacity":           "Places for sale; null means unlimited. Confirmed registrations and held places count against it.",
	"priceAmount":        "Price per unit in the currency's major unit, at most two decimals (49.99); 0 is free.",
	"isPublic":           "false hides the ticket type from the storefront; only a redemption code reaches it. Default true.",
	"allowWaitlist":      "When the ticket type is full and this is true, a new registration lands waitlisted instead of answering 412 SOLD_OUT. Default false.",
	"requiresApproval":   "When true, registrations made through the Developer API land pending until approved. Default false.",
	"opensAt":            "Start of the sale window (RFC 3339); null means on sale as soon as open.",
	"closesAt":           "End of the sale window (RFC 3339); null means no end.",
	"counts":             "Confirmed and waitlisted registrations of the type.",
	"confirmed":          "Confirmed registrations (places taken).",
	"waitlisted":         "Registrations on the waitlist.",
	"held":               "Places held by open orders that are not yet paid.",
	"sold":               "Units in paid orders.",
	"soldOut":            "true when nothing is left to sell; the storefront never shows counts.",
	"confirmAgendaReset": "Request-only: set true to move startsAt when the move clears the agenda (otherwise 412 AGENDA_RESET_UNCONFIRMED).",
	// Registrations.
	"registrationTypeId": "The ticket type's id; required to register when the event has ticket types.",
	"checkinCode":        "The badge credential: CHK- and at least 10 Crockford base32 characters, unique service-wide.",
	"passUrl":            "The hosted entry-pass page; it asks for the buyer's email before showing the pass.",
	"created":            "false when the email was already registered in the event: the answer is the existing registration (status 200).",
	"reason":             "Optional reason, at most 1000 characters.",
	"orderId":            "The order that created the registration; null for one made through the API.",
	"responses":          "Answers to the ticket type's registration form, by question id; free-form object.",
	"registrationId":     "The registration's id.",
	"registrationIds":    "The person's registrations in the event.",
	"registrationEmail":  "The registration's email.",
	"registrationName":   "The registration's name; null when none was given.",
	// Check-ins.
	"subjectType":      "The door: event, session or venue.",
	"subjectId":        "The session or venue id at those doors; required there and ignored at the event door.",
	"method":           "How the registration was identified: scan (default) or manual.",
	"checkedInAt":      "When the check-in was recorded (RFC 3339, UTC).",
	"checkin":          "The check-in (the first one at this door when alreadyCheckedIn).",
	"alreadyCheckedIn": "true when this registration had checked in at this door before: nothing new was recorded.",
	"access":           "The perk verdict for the door: advisory, it never refuses entry.",
	"allowed":          "true when the registration holds every perk the door requires.",
	"requiredPerkIds":  "The perks the door requires (the session's and its venue's).",
	"missingPerkIds":   "The required perks the registration lacks.",
	// Codes.
	"code":             "The code a buyer types, 1 to 64 characters.",
	"count":            "How many codes to mint, 1 to 1000; default 1. A custom code forces 1.",
	"label":            "A note for organizers, at most 200 characters.",
	"maxUses":          "How many registrations the code admits; default 1 at mint; null means unlimited.",
	"uses":             "Registrations the code admitted so far (a cancellation gives its use back).",
	"expiresAt":        "When it stops working (RFC 3339); null means never.",
	"redemptionCodes":  "The minted codes.",
	"registrationType": "The ticket type the code unlocks (hidden ones included).",
	"perks":            "Perks: what an admission carries (access to sessions and venues).",
	// Orders.
	"items":             "The lines: 1 to 50 entries.",
	"itemType":          "What the line refers to: registration_type, addon or bundle.",
	"itemId":            "The id of the ticket type, add-on or bundle, 1 to 100 characters.",
	"quantity":          "Units, 1 to 100; a ticket type line (or a bundle holding one) takes 1.",
	"orderNumber":       "The order's public number, shown to the buyer; order paths take it.",
	"orderUrl":          "The hosted order page.",
	"checkoutUrl":       "The hosted checkout page of this order; present while the order is open, null after.",
	"paymentUrl":        "The payment provider's page, after confirm of a paid order; null otherwise.",
	"paymentId":         "The payment provider's payment id; null until confirm of a paid order.",
	"holdExpiresAt":     "When the hold lapses and an open order expires (RFC 3339, UTC).",
	"alreadyRegistered": "true when the buyer was already registered in the event: no second seat is sold.",
	"redemptionCode":    "A code that unlocks a hidden ticket type, 1 to 64 characters.",
	"promotionCode":     "A promotion code that discounts the order, 1 to 64 characters.",
	"successUrl":        "Where the payment page sends the buyer after paying: absolute https (http for localhost).",
	"cancelUrl":         "Where the payment page sends a buyer who gives up: absolute https (http for localhost).",
	"returnUrl":         "Where the hosted order page's button goes, with order and status appended; at most 2000 characters. Without it, the event's public page.",
	"locale":            "Language of the hosted pages: en or zh-CN.",
	"url":               "The page's address.",
	"refunds":           "Refunds of the order, oldest first.",
	"force":             "true when the refund overrode the event's refund policy.",
	"full":              "true when the refund was of everything refundable.",
	"requestedAt":       "When the refund was requested (RFC 3339, UTC).",
	"error":             "Why the refund failed; null unless failed.",
	// Catalog and program.
	"event":               "The event.",
	"ticketTypes":         "Public ticket types on sale or sold out; hidden ones are absent.",
	"upcomingTicketTypes": "Ticket types announced but not yet on sale, with opensAt.",
	"addons":              "Add-ons on sale.",
	"bundles":             "Bundles on sale.",
	"agenda":              "The open agenda in time order.",
	"speakers":            "The line-up.",
	"sponsors":            "The sponsors.",
	"questions":           "The published registration form's questions.",
	"title":               "Title (a session's name, or a speaker's job title).",
	"bio":                 "A speaker's biography.",
	"sessionIds":          "The sessions the speaker speaks at.",
	"perkIds":             "Perks required to enter; an empty array is open to all.",
	"venueId":             "The session's venue; null when none.",
	"venue":               "The session's venue; null when none.",
	"tier":                "The sponsor's tier, free text.",
	"required":            "true when the question must be answered.",
	"type":                "The kind of answer the question takes.",
	// Errors.
	"field": "JSON path of the offending field, e.g. items[0].quantity; empty for the body as a whole.",
}

// oaPropertyDoc returns the description of property name of Go type t, or "".
func oaPropertyDoc(t reflect.Type, name string, input bool) string {
	if strings.HasSuffix(t.PkgPath(), "_test") {
		return "" // the generator's own test types say only what their tags say
	}
	tn := t.Name()
	if i := strings.IndexByte(tn, '['); i >= 0 {
		tn = tn[:i]
	}
	d, ok := oaPropertyDocs[tn+"."+name]
	if !ok {
		d = oaPropertyDocs[name]
	}
	if d != "" && input && strings.HasPrefix(tn, "Update") {
		d += " Absent leaves it unchanged."
	}
	return d
}

// oaTagDocs describes the operation groups.
var oaTagDocs = map[string]string{
	"Events":             "Events: created as drafts, published to sell, archived when done (never deleted).",
	"Ticket types":       "Ticket types (registration types): capacity, price, sale window and lifecycle draft -> open <-> closed -> archived.",
	"Registrations":      "Registrations: one per person and event; pending, confirmed, waitlisted, rejected or cancelled.",
	"Check-ins":          "Check-ins at the event, session and venue doors; idempotent per registration and door.",
	"Program":            "The agenda, speakers, venues and attendees.",
	"Redemption codes":   "Codes that unlock a ticket type, hidden ones included; they grant access, never a place.",
	"Add-ons":            "Add-ons sold with a ticket (merchandise, workshops, meals).",
	"Bundles":            "Packages of ticket types and add-ons sold at one price.",
	"Orders":             "Orders: placed (places held), confirmed, paid; the buyer's purchase.",
	"Checkout sessions":  "Hosted checkout: a page that collects what is missing, places and confirms the order.",
	"Checkout":           "Hosted checkout from the browser.",
	"Catalog":            "The published catalog a sales page shows; never a capacity number.",
	"Business units":     "Workspaces: an API key is bound to exactly one.",
	"API keys":           "Secret (sk_) and publishable (pk_) keys of a business unit.",
	"Mail":               "The durable outbox of ticket emails.",
	"Perks":              "Perks and their bindings to ticket types, codes and registrations.",
	"Promotion codes":    "Discount codes buyers enter at checkout.",
	"Registration forms": "The questions a ticket type asks its buyers.",
	"Site":               "The event's public page address and description.",
	"Translations":       "The event's content in other languages.",
	"Refunds":            "Refund policies and refunds of paid orders.",
	"Changes":            "The change feed: follow registrations, orders and check-ins as they change, with nothing missed.",
	"Automations":        "Webhook endpoints: where the service POSTs signed outbound webhooks.",
	"Logs":               "The developer request log and the audit log.",
}

func oaTagDoc(name string) string {
	if d, ok := oaTagDocs[name]; ok {
		return d
	}
	return name + "."
}

// oaTypeExtras are the conditional rules of a request type that struct
// tags cannot say, merged into its schema (the core enforces each).
var oaTypeExtras = map[string]map[string]any{
	"RecordCheckin": {
		// oneOf: both present match both branches, which oneOf refuses.
		"oneOf": []any{
			map[string]any{"required": []any{"registrationId"}},
			map[string]any{"required": []any{"checkinCode"}},
		},
		"if": map[string]any{
			"required":   []any{"subjectType"},
			"properties": map[string]any{"subjectType": map[string]any{"enum": []any{"session", "venue"}}},
		},
		"then": map[string]any{"required": []any{"subjectId"}, "properties": map[string]any{"subjectId": map[string]any{"minLength": 1}}},
	},
}

// oaBodyExtras say what a body's struct tags cannot: bounds of array
// bodies, and rules across fields, in JSON Schema where it can say them
// (minProperties, oneOf) and in an x- keyword where the rule depends on
// the event's state.
var oaBodyExtras = map[string]map[string]any{
	"replaceBundleItems": {"maxItems": 50},
	// siteUrl or description, at least one.
	"setEventSite": {"minProperties": 1},
	// Exactly one of percentOff and amountOff (the other absent or null):
	// each branch requires its field not null and the other absent or
	// null. The per-field conditions sit under not, where no property
	// list makes a validator close the object to other members.
	"createPromotionCode": {"oneOf": []any{oaOneOfBranch("percentOff", "amountOff"), oaOneOfBranch("amountOff", "percentOff")}},
	// A rule on the event's state, which no schema can know.
	"createRegistration": {"x-requiredWhen": map[string]any{
		"registrationTypeId": "the event has at least one ticket type (registration type): then it is required and names one of them; without ticket types leave it out. Refused otherwise with 400 naming registrationTypeId."}},
}

// oaOneOfBranch is the branch of a oneOf where field is set (present, not
// null) and other is not (absent or null).
func oaOneOfBranch(field, other string) map[string]any {
	notNull := map[string]any{"not": map[string]any{"type": "null"}}
	return map[string]any{
		"required": []any{field},
		"not": map[string]any{"anyOf": []any{
			map[string]any{"properties": map[string]any{field: map[string]any{"type": "null"}}},
			map[string]any{"required": []any{other}, "properties": map[string]any{other: notNull}},
		}},
	}
}

// oaSuccessExtraContent are other media types a success answers with,
// besides JSON (chosen by a query parameter).
var oaSuccessExtraContent = map[string]map[string]any{
	"previewOutboxMail": {"message/rfc822": map[string]any{
		"schema": map[string]any{"type": "string", "description": "The raw RFC 5322 message, as the SMTP server would receive it (format=eml)."}}},
}
