package payments

import (
	"context"
	"fmt"

	"ticketd/event"
	"ticketd/persistence"
)

// System is what the refund workflow and the Closer need of the event
// actors (actors.System implements it, app.Main wires it): asking an
// event's actor a command of the core, and the store that holds the
// indexes Owed writes.
type System interface {
	// Ask sends cmd to the event's actor and answers its result once
	// durable.
	Ask(ctx context.Context, eventID string, cmd event.Command) (any, error)
	Store() *persistence.Store
}

// ask is System.Ask with the command's own result type. An answer of
// another type (a bug of the core) is an error, never a panic.
func ask[R any](ctx context.Context, sys System, eventID string, cmd event.Op[R]) (R, error) {
	res, err := sys.Ask(ctx, eventID, cmd)
	if err != nil {
		var zero R
		return zero, err
	}
	v, ok := res.(R)
	if !ok {
		return v, fmt.Errorf("payments: event %s answered %T, not %T", eventID, res, v)
	}
	return v, nil
}
