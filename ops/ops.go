package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/actors"
	"ticketd/ask"
	"ticketd/audit"
	"ticketd/event"
	"ticketd/mail"
	"ticketd/payments"
	"ticketd/webhooks"
)

// Config is what app.Main hands the layer: the actor system (or, in
// cluster mode, the system whose asks the cluster router forwards) and
// the services that carry out owed work.
type Config struct {
	System *actors.System
	// Audit records writes (RecordWrite).
	Audit *audit.Log
	// Sandbox is the sandbox payment provider; Refunds the refund
	// workflow (over the sandbox and any hosted provider).
	Sandbox *payments.Sandbox
	Refunds *payments.Refunds
	// Hosted is the hosted-payment saga when a hosted provider (Stripe)
	// makes the payment pages of paid orders; nil: the sandbox.
	Hosted *payments.HostedCheckout
	// Checkouts closes the payment pages of orders that stopped holding
	// (nil: nothing to close, as with the sandbox).
	Checkouts *payments.Closer
	// Seen is the record of the hosted provider's webhook events acted on
	// (nil without a hosted provider).
	Seen *payments.Seen
	// Mail is the ticket-mail deliverer; Webhooks the webhook endpoints
	// and the deliverer of their queue.
	Mail     *mail.Mailer
	Webhooks *webhooks.Service
	Logger   *slog.Logger
}

// Ops is the application layer over one actor system. Safe for
// concurrent use.
type Ops struct {
	cfg Config
	sys *actors.System
	log *slog.Logger
	// viewAnswers counts the sold-out refusals and the queue polls
	// answered from the sale views (fromView).
	viewAnswers [2]atomic.Int64
	// joins are the events' join batchers (joins.go), by event id;
	// joinStats counts the batches sent and the joins in them.
	joins     sync.Map
	joinStats [2]atomic.Int64
}

// New returns the layer over cfg. Only System is required here; a front
// door checks for the services it uses (api.New wants them all): app.Main
// builds them, once.
func New(cfg Config) (*Ops, error) {
	if cfg.System == nil {
		return nil, errors.New("ops: no actor system")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Ops{cfg: cfg, sys: cfg.System, log: log}, nil
}

// The services that carry out owed work, as app.Main built them.

// Audit is the audit log.
func (o *Ops) Audit() *audit.Log { return o.cfg.Audit }

// Sandbox is the sandbox payment provider.
func (o *Ops) Sandbox() *payments.Sandbox { return o.cfg.Sandbox }

// Refunds is the refund workflow.
func (o *Ops) Refunds() *payments.Refunds { return o.cfg.Refunds }

// Hosted is the hosted-payment saga (nil: the sandbox makes the pages).
func (o *Ops) Hosted() *payments.HostedCheckout { return o.cfg.Hosted }

// Seen is the record of the hosted provider's webhook events acted on.
func (o *Ops) Seen() *payments.Seen { return o.cfg.Seen }

// Mail is the ticket-mail deliverer (its outbox is listed by the console
// and the admin API).
func (o *Ops) Mail() *mail.Mailer { return o.cfg.Mail }

// Webhooks is the webhook endpoints and their deliverer.
func (o *Ops) Webhooks() *webhooks.Service { return o.cfg.Webhooks }

// Ask sends cmd to the event's actor and answers its result; the shell's
// failures come back mapped (MapErr). With a hosted provider, confirm and
// cancel run the hosted-payment saga. A storefront order refused as sold
// out and a poll of a waiting queue entry are answered from the event's
// published sale view when it is certain (fromView). The caller must have checked that
// the event exists and is visible to its caller.
func (o *Ops) Ask(ctx context.Context, eventID string, cmd event.Command) (any, error) {
	if inner, _ := event.StorefrontInner(cmd); isCancel(inner) {
		return o.cancel(ctx, eventID, cmd)
	}
	if res, err, ok := o.fromView(ctx, eventID, cmd); ok {
		return res, err
	}
	return o.ask(ctx, eventID, cmd)
}

func (o *Ops) ask(ctx context.Context, eventID string, cmd event.Command) (any, error) {
	if h := o.cfg.Hosted; h != nil {
		if res, err, ok := h.Ask(ctx, o.sys.Ask, eventID, cmd); ok {
			return res, MapErr(err)
		}
	}
	res, err := o.sys.Ask(ctx, eventID, cmd)
	return res, MapErr(err)
}

// Do is Ask with the command's own result type: the answer of an
// event.Op[R] is an R. An answer of another type (a bug of the core) is
// an unavailable *Error, never a panic of the caller.
func Do[R any](ctx context.Context, o *Ops, eventID string, cmd event.Op[R]) (R, error) {
	res, err := o.Ask(ctx, eventID, cmd)
	return answerAs[R](eventID, res, err)
}

// answerAs is an event's answer res (or err) as an R; an answer of
// another type is an unavailable *Error.
func answerAs[R any](eventID string, res any, err error) (R, error) {
	if err != nil {
		var zero R
		return zero, err
	}
	v, ok := res.(R)
	if !ok {
		return v, MapErr(fmt.Errorf("%w: event %s answered %T, not %T", ask.ErrUnavailable, eventID, res, v))
	}
	return v, nil
}

// CancelOrder cancels an order (cmd is an event.CancelOrder, or one
// wrapped in event.Storefront for the storefront's rules): the one
// cancel every door calls (Ask routes a cancel here too, so no door can
// skip it). Once the cancel is durable the checkout closer is woken, so a
// hosted payment page of the order closes at once rather than at the
// closer's next pass.
func (o *Ops) CancelOrder(ctx context.Context, eventID string, cmd event.Command) (event.Order, error) {
	if inner, _ := event.StorefrontInner(cmd); !isCancel(inner) {
		return event.Order{}, fmt.Errorf("ops: CancelOrder of %T", inner)
	}
	res, err := o.cancel(ctx, eventID, cmd)
	if err != nil {
		return event.Order{}, err
	}
	ord, ok := res.(event.Order)
	if !ok {
		return ord, MapErr(fmt.Errorf("%w: event %s answered %T to a cancel", ask.ErrUnavailable, eventID, res))
	}
	return ord, nil
}

// cancel asks a cancel, then wakes the checkout closer.
func (o *Ops) cancel(ctx context.Context, eventID string, cmd event.Command) (any, error) {
	res, err := o.ask(ctx, eventID, cmd)
	if err == nil && o.cfg.Checkouts != nil {
		o.cfg.Checkouts.Wake()
	}
	return res, err
}

func isCancel(c event.Command) bool {
	_, ok := c.(event.CancelOrder)
	return ok
}

// Recorder is the idempotency record a write commits with its changes
// (the HTTP pipeline's keyed request; see actors.Recorder).
type Recorder struct {
	Key      []byte
	Value    func(result any) []byte
	Live     func(value []byte) bool
	Look     bool
	Portable any
	Release  func()
}

// WithRecorder returns ctx carrying rec: the write asked with it puts the
// record in the batch of its changes. A nil rec returns ctx.
func WithRecorder(ctx context.Context, rec *Recorder) context.Context {
	if rec == nil {
		return ctx
	}
	return ask.WithRecorder(ctx, &ask.Recorder{Key: rec.Key, Value: rec.Value, Live: rec.Live, Look: rec.Look, Portable: rec.Portable, Release: rec.Release})
}

// Replayed returns the record that answers a write made before (its
// answer lost, its key claimed again), when err says so.
func Replayed(err error) ([]byte, bool) {
	r, ok := ask.IsReplayed(err)
	if !ok {
		return nil, false
	}
	return r.Value, true
}

// OrderHold is how long a placed order holds its places.
func (o *Ops) OrderHold() time.Duration { return o.sys.OrderHold() }

// ValidOutboxKey reports whether k is the key of a position in the mail
// inbox (a listing's cursor).
func (o *Ops) ValidOutboxKey(k string) bool { return mail.ValidInboxKey(k) }
