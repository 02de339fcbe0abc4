// Package ops is ticketd's application layer: every operation a front
// door (the /v1, /storefront/v1 and /admin/v1 APIs, the web console, the
// hosted pages, the door and queue routes) asks of the service, once.
// Front doors decode, authorize, call an Ops method and render; none of
// them imports the actors or the store. app.Main is the only place that
// builds an Ops.
//
// An Ops owns:
//
//   - the typed ask of an event's actor (Ask, Do) with the one mapping of
//     the shell's failures to an *Error (busy, unavailable, storage fault,
//     a hosted provider down or refusing), whose Reason names it in the
//     event package's catalogue: the HTTP pipeline turns that reason into
//     its status;
//   - the directory's operations (units, keys, door devices) and the
//     event index reads the doors need;
//   - the operations that are more than one ask: cancelling an order
//     (CancelOrder: the checkout closer runs after it whatever door asked)
//     and, with a hosted provider, the hosted-payment saga
//     (payments.HostedCheckout: confirm makes the payment page outside the
//     actor, cancel closes it);
//   - the waiting room's joins in batches (JoinQueue: joins that arrive
//     while a batch of them is with the event's actor go together as the
//     next, one message and one log record);
//   - the audit of writes (RecordWrite: who, what, from where);
//   - the services that carry out owed work (refunds, mail, webhooks, the
//     checkout closer), built by app.Main and handed over in Config.
//
// # Errors
//
// A business refusal is the core's *event.Error and passes unchanged. A
// failure of the shell or of an outside provider is an *Error; it wraps
// its cause, so errors.Is(err, ErrUnavailable) tells a shell that did not
// answer (a write may still commit: OutcomeUnknown) from a busy event
// (ErrBusy: refused before anything was asked).
//
// # Concurrency
//
// An Ops is safe for concurrent use once built: it holds no state of its
// own beyond what it was given, counters and the join batchers (each
// under its own lock); the actor system serializes each event's
// commands and the audit log batches its records.
package ops
