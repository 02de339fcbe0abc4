package console_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// TestConsoleWaitingRoom: the event page shows the shop page's address,
// sets up a waiting room (bad input kept with its error), shows its counts
// and pauses, resumes and turns it off.
func TestConsoleWaitingRoom(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Queue Unit")
	ev := op.newEvent(unit, "Drop Night")
	p := op.get("/console/events/" + ev)
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, `href="/e/`+ev+`"`, "the shop page to share")
	assert.Contains(t, p.Body, "Set up a waiting room")

	p = op.post("/console/events/"+ev+"/queue", "action", "save", "onSaleAt", "", "admitPerMinute", "0")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `class="field-error"`)
	p = op.post("/console/events/"+ev+"/queue", "action", "save", "onSaleAt", "2030-05-01T10:00", "admitPerMinute", "abc")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, "admitPerMinute: it must be a whole number.")

	require.Equal(t, 303, op.post("/console/events/"+ev+"/queue", "action", "save", "onSaleAt", "2030-05-01T10:00", "admitPerMinute", "120").Status)
	p = op.get("/console/events/" + ev)
	assert.Contains(t, p.Body, `id="queue-state">joining (sale not open)`)
	assert.Contains(t, p.Body, `id="queue-waiting">0`)
	assert.Contains(t, p.Body, "(at most 120)")
	assert.Contains(t, p.Body, `value="2030-05-01T10:00"`, "on sale at, in the event's timezone")

	require.Equal(t, 303, op.post("/console/events/"+ev+"/queue", "action", "pause").Status)
	assert.Contains(t, op.get("/console/events/"+ev).Body, `id="queue-state">paused`)
	require.Equal(t, 303, op.post("/console/events/"+ev+"/queue", "action", "resume").Status)
	assert.Contains(t, op.get("/console/events/"+ev).Body, `id="queue-pause"`)
	require.Equal(t, 303, op.post("/console/events/"+ev+"/queue", "action", "off").Status)
	assert.Contains(t, op.get("/console/events/"+ev).Body, `id="queue-state">off`)
}
