package ops

import (
	"context"

	"ticketd/ask"
	"ticketd/event"
)

// fromView answers, without the event's actor, the two commonest requests
// of a drop (issue 34): a storefront order the event's published sale
// view is certain the machine refuses as SOLD_OUT, and a poll of a queue
// entry that waits (event/saleview.go, actors/saleview.go). ok false: ask
// the actor. The answer is the machine's own (the same *event.Error, the
// same QueueStatus), so every door renders it as it renders the actor's.
// A write that commits an idempotency record with its changes always
// asks: its refusal goes through the record's path.
func (o *Ops) fromView(ctx context.Context, eventID string, cmd event.Command) (res any, err error, ok bool) {
	inner, sf := event.StorefrontInner(cmd)
	if !sf {
		return nil, nil, false
	}
	switch c := inner.(type) {
	case event.PlaceOrder:
		if err := o.OrderFromView(ctx, eventID, &c); err != nil {
			return nil, err, true
		}
	case event.GetQueueStatus:
		if st, ok := o.QueueFromView(eventID, c.ID); ok {
			return st, nil, true
		}
	}
	return nil, nil, false
}

// OrderFromView is fromView for a storefront order the caller has not
// boxed into an event.Storefront yet: the view's SOLD_OUT refusal, or nil
// (ask). The storefront's order route asks it first, so a refusal costs
// no copy of the command into an interface (issue 34).
func (o *Ops) OrderFromView(ctx context.Context, eventID string, c *event.PlaceOrder) error {
	if !c.Storefront || ask.RecorderOf(ctx) != nil {
		return nil
	}
	if err := o.sys.SoldOut(eventID, *c); err != nil {
		o.viewAnswers[0].Add(1)
		return err
	}
	return nil
}

// QueueFromView is fromView for a poll of queue entry queueID the caller
// has not boxed into a command: the view's answer, or false (ask). The
// poll route asks it first (issue 34).
func (o *Ops) QueueFromView(eventID, queueID string) (event.QueueStatus, bool) {
	st, ok := o.sys.QueueStatus(eventID, queueID)
	if ok {
		o.viewAnswers[1].Add(1)
	}
	return st, ok
}
