package node

// Prefixes of the local store's keys that the cluster's parts read or
// carry, owned by other packages (the actors' owed entries and event
// index): copied here so that the cluster imports neither actors nor
// http.
//
// TODO(keys): replace with the key schema's names (issue 32 #3) at merge.
const (
	// OutboxPrefix starts the actors' mail inbox entries (actors.OutboxPrefix).
	OutboxPrefix = "mail/"
	// HookPrefix starts the webhook queue entries (actors.HookPrefix).
	HookPrefix = "hook/"
	// RefundPrefix starts the pending refunds (actors.RefundPrefix).
	RefundPrefix = "refund/"
	// CheckoutClosePrefix starts the checkout pages to close
	// (actors.CheckoutClosePrefix).
	CheckoutClosePrefix = "checkout-close/"
	// EventIndexPrefix starts the event index's entries (actors' "ev/").
	EventIndexPrefix = "ev/"
)
