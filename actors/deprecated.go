package actors

import (
	"ticketd/event"
	"ticketd/persistence"
)

// Names that moved to the owners of owed work, kept while code of other
// branches (cluster, http) still uses them. Their owners cannot be
// imported from here (mail's and webhooks' tests open an actors.System),
// so each aliases persistence's or the core's definition.

// Deprecated: moved to mail.InboxPrefix.
const OutboxPrefix = persistence.PrefixMailInbox

// Deprecated: moved to webhooks.InboxPrefix.
const HookPrefix = persistence.PrefixHookInbox

// Deprecated: moved to payments.RefundPrefix.
const RefundPrefix = persistence.PrefixRefund

// Deprecated: moved to payments.CheckoutClosePrefix.
const CheckoutClosePrefix = persistence.PrefixCheckoutClose

// Deprecated: moved to webhooks.HookTypes.
func HookTypes() []string {
	return []string{event.HookRegistrationCreated, event.HookRegistrationConfirmed, event.HookRegistrationCancelled,
		event.HookCheckinCreated, event.HookOrderPaid, event.HookOrderRefunded, event.HookCheckinConflict}
}
