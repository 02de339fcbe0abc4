package event

// This file is the one catalogue of error reasons: the envelope's
// error.reason, a stable UPPER_SNAKE_CASE name of the cause that a program
// can switch on instead of parsing error.message. Every reason the service
// answers is a constant here with its HTTP status and a one-line
// description; the OpenAPI documents list them from Reasons(), and a test
// (reasons_test.go) scans the source of the error sites so that no reason
// is answered without being listed. Two causes never share a reason, and a
// reason once published keeps its name and meaning: add new ones, never
// rename.
//
// Field-level validation has one reason, INVALID_ARGUMENT, whose details
// name each offending field; the generic reasons of 404 and 409 (NOT_FOUND,
// ALREADY_EXISTS) are the cause itself ("no such record", "the value is
// taken"). A 412 always has a specific reason.

// Generic reasons, one per status, that the HTTP layer also fills in for
// an error that names none.
const (
	ReasonInvalidArgument    = "INVALID_ARGUMENT"
	ReasonUnauthenticated    = "UNAUTHENTICATED"
	ReasonPermissionDenied   = "PERMISSION_DENIED"
	ReasonNotFound           = "NOT_FOUND"
	ReasonAlreadyExists      = "ALREADY_EXISTS"
	ReasonFailedPrecondition = "FAILED_PRECONDITION"
	ReasonInternal           = "INTERNAL"
	ReasonUnavailable        = "UNAVAILABLE"
)

// Reasons of the HTTP pipeline (http/).
const (
	ReasonPathNotFound             = "PATH_NOT_FOUND"
	ReasonMethodNotAllowed         = "METHOD_NOT_ALLOWED"
	ReasonRequestTimeout           = "REQUEST_TIMEOUT"
	ReasonMalformedRequest         = "MALFORMED_REQUEST"
	ReasonPayloadTooLarge          = "PAYLOAD_TOO_LARGE"
	ReasonUnknownAPIVersion        = "UNKNOWN_API_VERSION"
	ReasonIdempotencyKeyReused     = "IDEMPOTENCY_KEY_REUSED"
	ReasonIdempotencyKeyInProgress = "IDEMPOTENCY_KEY_IN_PROGRESS"
	ReasonRateLimited              = "RATE_LIMITED"
	ReasonAuthThrottled            = "AUTH_THROTTLED"
	ReasonServiceBusy              = "SERVICE_BUSY"
	ReasonEventBusy                = "EVENT_BUSY"
	ReasonStorageUnavailable       = "STORAGE_UNAVAILABLE"
	ReasonOutboxUnavailable        = "OUTBOX_UNAVAILABLE"
	ReasonPaymentProviderRefused   = "PAYMENT_PROVIDER_REFUSED"
	ReasonPaymentProviderDown      = "PAYMENT_PROVIDER_UNAVAILABLE"
	ReasonWebhookPayloadInvalid    = "WEBHOOK_PAYLOAD_INVALID"
	ReasonOutboxMailUnrenderable   = "OUTBOX_MAIL_UNRENDERABLE"
	ReasonClusterNotReady          = "CLUSTER_NOT_READY"
	ReasonDirectoryUnavailable     = "DIRECTORY_UNAVAILABLE"
	ReasonWebhookSignatureInvalid  = "WEBHOOK_SIGNATURE_INVALID"
	ReasonWebhookEndpointLimit     = "WEBHOOK_ENDPOINT_LIMIT_REACHED"
	ReasonOutboxEntryNotParked     = "OUTBOX_ENTRY_NOT_PARKED"
	// Resending a logged webhook delivery.
	ReasonWebhookPayloadUnavailable = "WEBHOOK_PAYLOAD_UNAVAILABLE"
	ReasonWebhookEndpointDisabled   = "WEBHOOK_ENDPOINT_DISABLED"
	// The change feed (decisions §20).
	ReasonCursorExpired = "CURSOR_EXPIRED"
)

// Reasons of the event core.
const (
	ReasonSoldOut                  = "SOLD_OUT"
	ReasonNotOnSale                = "NOT_ON_SALE"
	ReasonSaleNotStarted           = "SALE_NOT_STARTED"
	ReasonSaleEnded                = "SALE_ENDED"
	ReasonRedemptionCodeRequired   = "REDEMPTION_CODE_REQUIRED"
	ReasonEventNotPublished        = "EVENT_NOT_PUBLISHED"
	ReasonEventArchived            = "EVENT_ARCHIVED"
	ReasonRegistrationNotPending   = "REGISTRATION_NOT_PENDING"
	ReasonRegistrationNotConfirmed = "REGISTRATION_NOT_CONFIRMED"
	ReasonRegistrationCancelled    = "REGISTRATION_ALREADY_CANCELLED"
	ReasonCurrencyLocked           = "CURRENCY_LOCKED"
	ReasonAgendaResetUnconfirmed   = "AGENDA_RESET_UNCONFIRMED"
	ReasonStatusTransition         = "STATUS_TRANSITION_NOT_ALLOWED"
	ReasonCapacityBelowTaken       = "CAPACITY_BELOW_TAKEN"
	ReasonOrderNotOpen             = "ORDER_NOT_OPEN"
	ReasonOrderHoldExpired         = "ORDER_HOLD_EXPIRED"
	ReasonOrderPaid                = "ORDER_ALREADY_PAID"
	ReasonOrderNotAwaitingPayment  = "ORDER_NOT_AWAITING_PAYMENT"
	ReasonPaymentAmountMismatch    = "PAYMENT_AMOUNT_MISMATCH"
	ReasonCheckoutSessionExpired   = "CHECKOUT_SESSION_EXPIRED"
	ReasonNoFormToPublish          = "NO_FORM_TO_PUBLISH"
	ReasonEventLimitReached        = "EVENT_LIMIT_REACHED"
	ReasonRefundNotAllowed         = "REFUND_NOT_ALLOWED"
	ReasonRefundDeadlinePassed     = "REFUND_DEADLINE_PASSED"
	ReasonRefundNotPending         = "REFUND_NOT_PENDING"
	ReasonOrderRefunded            = "ORDER_ALREADY_REFUNDED"
	ReasonOrderNotPaid             = "ORDER_NOT_PAID"
	ReasonOrderFree                = "ORDER_FREE"
	ReasonRefundLimitReached       = "REFUND_LIMIT_REACHED"
	ReasonNothingToRefund          = "NOTHING_TO_REFUND"
	ReasonWaitlistNotOffered       = "WAITLIST_NOT_OFFERED"
	ReasonPaymentPageExpired       = "PAYMENT_PAGE_EXPIRED"
)

// ReasonInfo describes one reason of the catalogue.
type ReasonInfo struct {
	Name string
	// Status is the HTTP status the reason is answered with (the http
	// package maps a Code to it; a reason of the pipeline has no Code).
	Status      int
	Description string
}

// reasons is the catalogue in the order the documents list it: by status,
// then as written.
var reasons = [...]ReasonInfo{
	{ReasonInvalidArgument, 400, "A body, query or header value is malformed or out of bounds; details name each field."},
	{ReasonMalformedRequest, 400, "The HTTP request itself could not be parsed."},
	{ReasonUnknownAPIVersion, 400, "The service-version header (or the key's version) is not a known version date."},
	{ReasonWebhookPayloadInvalid, 400, "An inbound payment webhook is signed but its body is not an event the provider sends."},
	{ReasonWebhookSignatureInvalid, 400, "An inbound payment webhook has a missing, wrong or stale signature."},
	{ReasonUnauthenticated, 401, "Missing, unknown, revoked or expired key, or a key of the other surface; every cause alike."},
	{ReasonPermissionDenied, 403, "The caller is authenticated but may not do this."},
	{ReasonNotFound, 404, "No such record in the key's business unit (a foreign id answers the same); every invalid redemption code."},
	{ReasonPathNotFound, 404, "No endpoint at this path."},
	{ReasonMethodNotAllowed, 405, "The path exists but not with this method; the Allow header lists the methods it serves."},
	{ReasonRequestTimeout, 408, "The request was not received in time."},
	{ReasonAlreadyExists, 409, "A unique value is taken, e.g. a custom redemption code or promotion code already in the event."},
	{ReasonIdempotencyKeyInProgress, 409, "A request with the same Idempotency-Key is still running; retry later."},
	{ReasonWebhookEndpointLimit, 409, "The business unit has the most webhook endpoints allowed."},
	{ReasonOutboxEntryNotParked, 409, "The outbox entry is not parked: it is still sent without a request."},
	{ReasonCursorExpired, 410, "The change feed's cursor is older than the feed keeps (30 days): list the records again and follow the list's Feed-Cursor."},
	{ReasonSoldOut, 412, "No place left for an item of the request (ticket type, add-on or bundle), and no waitlist takes it."},
	{ReasonNotOnSale, 412, "The ticket type, add-on or bundle is not open (its status is draft, closed or archived)."},
	{ReasonSaleNotStarted, 412, "The ticket type's sale window has not opened yet (opensAt is in the future)."},
	{ReasonSaleEnded, 412, "The ticket type's sale window has closed (closesAt has passed)."},
	{ReasonRedemptionCodeRequired, 412, "The ticket type is hidden and the request has no redemption code that unlocks it."},
	{ReasonEventNotPublished, 412, "The event is a draft: orders and checkout sessions need a published event."},
	{ReasonEventArchived, 412, "The event is archived: it takes no edits and no new orders."},
	{ReasonRegistrationNotPending, 412, "Approve or reject of a registration that is not pending."},
	{ReasonRegistrationNotConfirmed, 412, "Check-in of, or a ticket email resent for, a registration that is not confirmed."},
	{ReasonRegistrationCancelled, 412, "Cancel of a registration that is already cancelled."},
	{ReasonCurrencyLocked, 412, "The event's currency cannot change: the event has taken an order."},
	{ReasonAgendaResetUnconfirmed, 412, "Moving the start clears the agenda: repeat the update with confirmAgendaReset true."},
	{ReasonStatusTransition, 412, "The lifecycle does not allow this status change (draft -> open <-> closed -> archived)."},
	{ReasonCapacityBelowTaken, 412, "The new capacity is below the places already confirmed or held."},
	{ReasonOrderNotOpen, 412, "Confirm of an order that is cancelled or expired."},
	{ReasonOrderHoldExpired, 412, "The order's hold has lapsed; place a new order."},
	{ReasonOrderPaid, 412, "Cancel of a paid or refunded order: refunds are made in the console."},
	{ReasonOrderNotAwaitingPayment, 412, "A payment for an order that is not awaiting payment."},
	{ReasonPaymentAmountMismatch, 412, "A payment whose amount or currency differs from the order total."},
	{ReasonCheckoutSessionExpired, 412, "The checkout session has passed its expiresAt."},
	{ReasonNoFormToPublish, 412, "The ticket type has no registration form draft to publish."},
	{ReasonEventLimitReached, 412, "The event already holds the most records of this kind (sessions, promotion codes, languages...)."},
	{ReasonRefundNotAllowed, 412, "The event's refund policy allows no refunds (force overrides)."},
	{ReasonRefundDeadlinePassed, 412, "The refund policy's deadline has passed (force overrides)."},
	{ReasonRefundNotPending, 412, "Retry of a refund that is no longer pending."},
	{ReasonOrderRefunded, 412, "The order is refunded already."},
	{ReasonOrderNotPaid, 412, "Only paid orders are refunded."},
	{ReasonOrderFree, 412, "A free order has no payment to refund: cancel its registration instead."},
	{ReasonWaitlistNotOffered, 412, "The checkout session offers no waitlist to join (its admission is not sold out, is paid, or has no waitlist)."},
	{ReasonPaymentPageExpired, 412, "The provider's payment page would expire before now: the order cannot wait for it."},
	{ReasonOutboxMailUnrenderable, 412, "The queued outbox entry cannot be rendered as an email (an unknown kind or a broken record)."},
	{ReasonRefundLimitReached, 412, "The order has the most refunds allowed."},
	{ReasonNothingToRefund, 412, "The order's payments are refunded in full already."},
	{ReasonWebhookPayloadUnavailable, 412, "The logged webhook delivery was recorded before bodies were kept: it cannot be sent again."},
	{ReasonWebhookEndpointDisabled, 412, "The webhook endpoint is disabled: enable it before resending a delivery."},
	{ReasonFailedPrecondition, 412, "The record's state forbids the operation (fallback; the service names a specific reason)."},
	{ReasonPayloadTooLarge, 413, "The request body is over the size limit (1 MiB)."},
	{ReasonIdempotencyKeyReused, 422, "The Idempotency-Key was used before with another request body."},
	{ReasonRateLimited, 429, "The key's (or the key and client address's) request budget is spent; retry after Retry-After seconds."},
	{ReasonAuthThrottled, 429, "Too many failed authentications from this address; retry after Retry-After seconds."},
	{ReasonInternal, 500, "An unexpected error; it is logged with the Request-Id."},
	{ReasonUnavailable, 503, "The service cannot complete the request now; whether a write was applied is unknown."},
	{ReasonServiceBusy, 503, "The request did not finish in time under load; whether a write was applied is unknown."},
	{ReasonEventBusy, 503, "The event's queue is full; retry shortly. The request was not applied."},
	{ReasonStorageUnavailable, 503, "The store cannot make writes durable (e.g. after a disk fault)."},
	{ReasonOutboxUnavailable, 503, "The outbox is not available."},
	{ReasonPaymentProviderDown, 503, "The payment provider could not be reached or was slow; nothing was changed: retry the same request (same Idempotency-Key)."},
	{ReasonClusterNotReady, 503, "This node has not joined its cluster yet, or lost it: it cannot serve writes (retry, or ask another node)."},
	{ReasonDirectoryUnavailable, 503, "This node could not read the cluster's directory of keys, so it cannot tell whether the key is live (a key made on another node a moment ago, or revoked there); the key was neither accepted nor refused: retry."},
	{ReasonPaymentProviderRefused, 502, "The payment provider refused the request (e.g. a currency it does not take); a repeat will not help."},
}

// Reasons returns the catalogue: every reason the service answers, by
// status.
func Reasons() []ReasonInfo { return append([]ReasonInfo(nil), reasons[:]...) }

// DefaultReason is the generic reason of an HTTP status, for an error that
// names none.
func DefaultReason(status int) string {
	switch status {
	case 400:
		return ReasonInvalidArgument
	case 401:
		return ReasonUnauthenticated
	case 403:
		return ReasonPermissionDenied
	case 404:
		return ReasonNotFound
	case 405:
		return ReasonMethodNotAllowed
	case 408:
		return ReasonRequestTimeout
	case 409:
		return ReasonAlreadyExists
	case 412:
		return ReasonFailedPrecondition
	case 413:
		return ReasonPayloadTooLarge
	case 422:
		return ReasonIdempotencyKeyReused
	case 429:
		return ReasonRateLimited
	case 503:
		return ReasonUnavailable
	}
	if status >= 400 && status < 500 {
		return ReasonInvalidArgument
	}
	return ReasonInternal
}

// notPublishedReason names why an event that is not published refuses a
// sale: a draft is not published yet, an archived event never will be.
func notPublishedReason(status string) string {
	if status == EventArchived {
		return ReasonEventArchived
	}
	return ReasonEventNotPublished
}
