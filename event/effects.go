package event

import "time"

// Effects: what a change owes the world outside the machine, the way
// raft's Ready says what to send. The core says it; the shell (package
// actors) carries it out in the batch of the change that owes it (an
// outbox entry, a webhook queue entry, a pending-refund index entry), so
// it is exactly as durable as that change. An effect names records by id:
// the shell reads what it sends from the machine after the change is
// applied, and only when somebody wants it (webhooks nobody subscribes to
// cost nothing).

// EffectKind says what an effect asks of the shell.
type EffectKind uint8

const (
	// EffectTicketMail: send registration ID its ticket email (pass link,
	// calendar file, and the receipt of its order when it was paid for).
	EffectTicketMail EffectKind = iota + 1
	// EffectWebhook: queue webhook Hook about registration or order ID
	// (for checkin.created, the check-in is Checkin).
	EffectWebhook
	// EffectRefundPending: refund RefundID of order ID awaits the payment
	// provider's answer (the shell's resumer finishes it after a crash).
	EffectRefundPending
	// EffectRefundSettled: refund RefundID of order ID is no longer pending.
	EffectRefundSettled
	// EffectWaitlistSeatedMail: registration ID was seated from the waitlist
	// (it took a place that came free); its ticket email (pass link,
	// calendar file) says so.
	EffectWaitlistSeatedMail
	// EffectRefundMail: refund RefundID of order ID succeeded; tell the
	// buyer how much went back and whether the order is refunded in full.
	EffectRefundMail
	// EffectCancelMail: registration ID was cancelled.
	EffectCancelMail
	// EffectOrderCancelMail: order ID was cancelled before it was paid.
	EffectOrderCancelMail
	// EffectCheckoutClose: order ID stopped holding while the hosted
	// provider's payment page Ref was open: the shell closes it (a
	// Checkout Session expired), retrying until the provider answers.
	EffectCheckoutClose
)

// cancelledByRefund is the Reason of the RegistrationStatusChanged that a
// full refund emits (refunds.go): the refund's email already says the
// place is cancelled, so that cancellation owes no second email.
const cancelledByRefund = "refunded"

// Webhook event types, the Hook of an EffectWebhook.
const (
	HookRegistrationCreated   = "registration.created"
	HookRegistrationConfirmed = "registration.confirmed"
	HookRegistrationCancelled = "registration.cancelled"
	HookCheckinCreated        = "checkin.created"
	HookOrderPaid             = "order.paid"
	// HookOrderRefunded fires when a refund of a paid order succeeds at
	// the payment provider, partial or full.
	HookOrderRefunded = "order.refunded"
)

// Effect is one thing a change owes the outside world.
type Effect struct {
	Kind     EffectKind
	Hook     string          // EffectWebhook: the webhook type
	ID       string          // the registration or order the effect is about
	RefundID string          // refund effects
	Ref      string          // EffectCheckoutClose: the provider's page
	At       time.Time       // when the change happened
	Checkin  CheckedIn       // HookCheckinCreated: the check-in
	Conflict CheckinConflict // HookCheckinConflict: the conflict (door.go)
}

// owing is implemented by the change kinds that owe something.
type owing interface {
	effects(dst []Effect) []Effect
}

// AppendEffects appends what ch owes the outside world to dst, in the
// order the shell must carry it out.
func AppendEffects(dst []Effect, ch Change) []Effect {
	if o, ok := ch.(owing); ok {
		return o.effects(dst)
	}
	return dst
}

func hook(typ, id string, at time.Time) Effect {
	return Effect{Kind: EffectWebhook, Hook: typ, ID: id, At: at}
}

func (c TicketIssued) effects(dst []Effect) []Effect {
	for _, id := range c.RegistrationIDs {
		dst = append(dst, Effect{Kind: EffectTicketMail, ID: id, At: c.At})
	}
	return dst
}

func (c RegistrationCreated) effects(dst []Effect) []Effect {
	dst = append(dst, hook(HookRegistrationCreated, c.ID, c.At))
	if c.Status == RegConfirmed {
		dst = append(dst, hook(HookRegistrationConfirmed, c.ID, c.At))
	}
	return dst
}

func (c RegistrationStatusChanged) effects(dst []Effect) []Effect {
	switch c.Status {
	case RegConfirmed:
		return append(dst, hook(HookRegistrationConfirmed, c.ID, c.At))
	case RegCancelled:
		dst = append(dst, hook(HookRegistrationCancelled, c.ID, c.At))
		if c.Reason != cancelledByRefund {
			dst = append(dst, Effect{Kind: EffectCancelMail, ID: c.ID, At: c.At})
		}
	}
	return dst
}

func (c CheckedIn) effects(dst []Effect) []Effect {
	e := hook(HookCheckinCreated, c.ID, c.At)
	e.Checkin = c
	return append(dst, e)
}

func (c OrderPaid) effects(dst []Effect) []Effect {
	dst = append(dst, hook(HookOrderPaid, c.ID, c.At))
	if c.RegistrationID != "" && !c.AlreadyRegistered {
		dst = append(dst, hook(HookRegistrationCreated, c.RegistrationID, c.At), hook(HookRegistrationConfirmed, c.RegistrationID, c.At))
	}
	return dst
}

func (c RefundRequested) effects(dst []Effect) []Effect {
	return append(dst, Effect{Kind: EffectRefundPending, ID: c.OrderID, RefundID: c.RefundID, At: c.At})
}

func (c RefundSettled) effects(dst []Effect) []Effect {
	dst = append(dst, Effect{Kind: EffectRefundSettled, ID: c.OrderID, RefundID: c.RefundID, At: c.At})
	if c.Status == RefundSucceeded {
		dst = append(dst, hook(HookOrderRefunded, c.OrderID, c.At),
			Effect{Kind: EffectRefundMail, ID: c.OrderID, RefundID: c.RefundID, At: c.At})
	}
	return dst
}

func (c WaitlistSeated) effects(dst []Effect) []Effect {
	for _, id := range c.RegistrationIDs {
		dst = append(dst, Effect{Kind: EffectWaitlistSeatedMail, ID: id, At: c.At})
	}
	return dst
}

// An order released by expiry owes the buyer no email: they walked away
// and were never charged. One cancelled (by the buyer or the developer)
// gets an email saying so. Either way a provider's payment page still
// open for it (CloseRef) is closed.
func (c OrderReleased) effects(dst []Effect) []Effect {
	if c.Status == OrderStatusCancelled {
		dst = append(dst, Effect{Kind: EffectOrderCancelMail, ID: c.ID, At: c.At})
	}
	if c.CloseRef != "" {
		dst = append(dst, Effect{Kind: EffectCheckoutClose, ID: c.ID, Ref: c.CloseRef, At: c.At})
	}
	return dst
}

// String says the effect in one line, for scripts and logs.
func (e Effect) String() string {
	switch e.Kind {
	case EffectWebhook:
		return e.Kind.String() + " " + e.Hook + " " + e.ID
	case EffectRefundPending, EffectRefundSettled, EffectRefundMail:
		return e.Kind.String() + " " + e.ID + " " + e.RefundID
	case EffectCheckoutClose:
		return e.Kind.String() + " " + e.ID + " " + e.Ref
	}
	return e.Kind.String() + " " + e.ID
}

// String names the kind for scripts and logs.
func (k EffectKind) String() string {
	switch k {
	case EffectTicketMail:
		return "mail.ticket"
	case EffectWebhook:
		return "webhook"
	case EffectRefundPending:
		return "refund.pending"
	case EffectRefundSettled:
		return "refund.settled"
	case EffectWaitlistSeatedMail:
		return "mail.promotion"
	case EffectRefundMail:
		return "mail.refund"
	case EffectCancelMail:
		return "mail.cancelled"
	case EffectOrderCancelMail:
		return "mail.order_cancelled"
	case EffectCheckoutClose:
		return "checkout.close"
	}
	return "effect?"
}
