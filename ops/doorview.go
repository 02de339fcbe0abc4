package ops

import (
	"context"

	"ticketd/event"
)

// RecordScans records a door device's batch of scans (c carries the
// device and its doors). The scans the event's published door view is
// certain of (repeats of a durable check-in: event/doorview.go) are looked
// up here, on the caller's goroutine, and handed to the actor with the
// batch, which records their answers without deciding them again: the
// actor's share of a batch is its new check-ins (issue 33). The answer is
// the machine's for every scan, in order.
func (o *Ops) RecordScans(ctx context.Context, eventID string, c event.RecordScans) (event.ScanResults, error) {
	if v := o.sys.DoorView(eventID); v != nil {
		var n int
		if c.Known, n = v.Known(c); n > 0 {
			o.sys.NoteDoorViewAnswers(eventID, n)
		}
	}
	return Do(ctx, o, eventID, c)
}
